#include "kube/controller/manager.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <thread>

#include "kube/leaderelection/testing/fake_lease_lock.h"

namespace spiderpool::kube {
namespace {

// Runs until stopped; counts starts.
std::unique_ptr<Runnable> Blocking(std::string name, bool leader, std::atomic<int>* running) {
  return std::make_unique<FuncRunnable>(std::move(name), leader,
                                        [running](std::stop_token stop) -> absl::Status {
                                          ++*running;
                                          running->notify_all();
                                          std::mutex m;
                                          std::condition_variable_any cv;
                                          std::unique_lock<std::mutex> l(m);
                                          cv.wait(l, stop, [] { return false; });
                                          --*running;
                                          return absl::OkStatus();
                                        });
}

void WaitFor(std::atomic<int>& v, int want) {
  for (int cur = v.load(); cur != want; cur = v.load()) v.wait(cur);
}

TEST(Manager, RunsEverythingWithoutLeaderElectionAndServesProbes) {
  ManagerOptions opts;
  opts.health = health::ServerOptions{.address = "127.0.0.1", .port = 0};
  Manager m(std::move(opts));
  std::atomic<int> running{0};
  m.Add(Blocking("informer", false, &running));
  m.Add(Blocking("controller", true, &running));
  std::stop_source stop;
  absl::Status result;
  std::jthread t([&] { result = m.Run(stop.get_token()); });
  WaitFor(running, 2);
  httplib::Client cli("127.0.0.1", m.health()->port());
  auto res = cli.Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  stop.request_stop();
  t.join();
  EXPECT_TRUE(result.ok()) << result;
  EXPECT_EQ(running.load(), 0);
}

// Start order, and which of the others had stopped when each one was asked to stop.
TEST(Manager, OrderedStartsInOrderAndStopsInReverse) {
  Manager m(ManagerOptions{.ordered = true});
  std::mutex mu;
  std::vector<std::string> events;
  auto note = [&](std::string e) {
    std::lock_guard<std::mutex> l(mu);
    events.push_back(std::move(e));
  };
  for (std::string name : {"caches", "service", "socket"}) {
    m.Add(std::make_unique<StartStopRunnable>(
        name,
        [&, name] {
          // Slow starts: without the wait for each start, a later one would start first.
          std::this_thread::sleep_for(std::chrono::milliseconds(name == "caches" ? 50 : 0));
          note("start " + name);
          return absl::OkStatus();
        },
        [&, name] { note("stop " + name); }));
  }
  std::stop_source stop;
  absl::Status result;
  std::jthread t([&] { result = m.Run(stop.get_token()); });
  for (;;) {
    {
      std::lock_guard<std::mutex> l(mu);
      if (events.size() == 3) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop.request_stop();
  t.join();
  EXPECT_TRUE(result.ok()) << result;
  EXPECT_EQ(events, (std::vector<std::string>{"start caches", "start service", "start socket",
                                              "stop socket", "stop service", "stop caches"}));
}

TEST(Manager, OrderedStopsStartingAtAFailedStart) {
  Manager m(ManagerOptions{.ordered = true});
  std::vector<std::string> events;  // written by one runnable thread at a time (ordered)
  m.Add(std::make_unique<StartStopRunnable>(
      "caches", [&] { events.push_back("start caches"); return absl::OkStatus(); },
      [&] { events.push_back("stop caches"); }));
  m.Add(std::make_unique<StartStopRunnable>(
      "socket", [] { return absl::UnavailableError("cannot bind"); },
      [&] { events.push_back("stop socket"); }));
  m.Add(std::make_unique<StartStopRunnable>(
      "plugin", [&] { events.push_back("start plugin"); return absl::OkStatus(); },
      [&] { events.push_back("stop plugin"); }));
  absl::Status result = m.Run(std::stop_token{});
  EXPECT_EQ(result.code(), absl::StatusCode::kUnavailable) << result;
  EXPECT_EQ(result.message(), "socket: cannot bind");
  EXPECT_EQ(events, (std::vector<std::string>{"start caches", "stop caches"}));
}

TEST(Manager, AFailingRunnableStopsTheOthers) {
  Manager m(ManagerOptions{});
  std::atomic<int> running{0};
  m.Add(Blocking("informer", false, &running));
  m.Add(std::make_unique<FuncRunnable>("webhook", false, [&](std::stop_token) {
    WaitFor(running, 1);
    return absl::InternalError("cannot bind :5722");
  }));
  absl::Status result = m.Run(std::stop_token{});
  EXPECT_EQ(result.code(), absl::StatusCode::kInternal);
  EXPECT_NE(std::string(result.message()).find("webhook: cannot bind :5722"), std::string::npos);
  EXPECT_EQ(running.load(), 0);
}

TEST(Manager, OnlyTheLeaderRunsLeaderRunnablesAndHandsOverOnStop) {
  base::SimulatedClock clock;
  testing::FakeLeaseStore store;
  auto make = [&](const std::string& id) {
    ManagerOptions o;
    o.name = id;
    LeaderElectionConfig le;
    le.identity = id;
    le.clock = &clock;
    o.leader_election = le;
    o.lease_lock = [&] { return std::make_unique<testing::FakeLeaseLock>(&store); };
    return std::make_unique<Manager>(std::move(o));
  };
  auto a = make("a");
  auto b = make("b");
  std::atomic<int> a_ctrl{0}, b_ctrl{0}, informers{0};
  a->Add(Blocking("controller", true, &a_ctrl));
  a->Add(Blocking("informer", false, &informers));
  b->Add(Blocking("controller", true, &b_ctrl));
  b->Add(Blocking("informer", false, &informers));

  std::stop_source stop_a, stop_b;
  std::jthread ta([&] { EXPECT_TRUE(a->Run(stop_a.get_token()).ok()); });
  WaitFor(a_ctrl, 1);  // a leads
  std::jthread tb([&] { EXPECT_TRUE(b->Run(stop_b.get_token()).ok()); });
  WaitFor(informers, 2);  // both caches run on both replicas
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(clock.WaitForSleepers(2));
    clock.Advance(absl::Seconds(1));
  }
  EXPECT_EQ(b_ctrl.load(), 0);
  EXPECT_TRUE(a->IsLeader());

  stop_a.request_stop();  // releases the lease after its controllers stopped
  ta.join();
  EXPECT_EQ(a_ctrl.load(), 0);
  while (b_ctrl.load() == 0) {
    ASSERT_TRUE(clock.WaitForSleepers(1));
    clock.Advance(absl::Seconds(1));
  }
  EXPECT_TRUE(b->IsLeader());
  stop_b.request_stop();
  tb.join();
}

}  // namespace
}  // namespace spiderpool::kube
