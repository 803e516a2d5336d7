// The loopback API server's latency model (LatencyModel): off by default, per-request and
// per-write delays, writes of one object serialized, watch events delivered late but in order.
// Delays run on the server's clock: most tests give it a SimulatedClock and move time by hand,
// so they assert exactly which requests may have completed at each instant (no timing bounds).
// The watch test runs on the real clock and asserts only a lower bound.

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/apiserver.h"
#include "kube/testing/apiserver_test_fixture.h"
#include "kube/testing/test_client.h"

namespace spiderpool::kube::testing {
namespace {

using base::Json;
using namespace apiserver_test;  // NOLINT(build/namespaces)

// Real time allowed for something that must happen (generous: the machine is loaded).
constexpr absl::Duration kEventually = absl::Seconds(20);
// Real time given to something that must NOT happen before we look again.
constexpr absl::Duration kSettle = absl::Milliseconds(300);

bool WaitUntil(const std::function<bool()>& done, absl::Duration timeout = kEventually) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

// Requests on their own threads; counts those answered.
class Requests {
 public:
  ~Requests() { threads_.clear(); }
  void Run(std::function<HttpResult()> fn) {
    threads_.emplace_back([this, fn = std::move(fn)] {
      HttpResult r = fn();
      std::lock_guard<std::mutex> l(mu_);
      codes_.push_back(r.status);
      done_.fetch_add(1);
    });
  }
  int done() const { return done_.load(); }
  std::vector<int> codes() const {
    std::lock_guard<std::mutex> l(mu_);
    return codes_;
  }

 private:
  std::atomic<int> done_{0};
  mutable std::mutex mu_;
  std::vector<int> codes_;
  std::vector<std::jthread> threads_;  // last: joined before the counters go
};

class LatencyTest : public ApiServerTest {
 protected:
  void SetUp() override {}
  void StartWith(LatencyModel model) {
    LoopbackOptions o;
    o.clock = &clock_;
    o.latency = model;
    Start(std::move(o));
  }
  base::SimulatedClock clock_;
};

TEST_F(LatencyTest, OffByDefault) {
  EXPECT_FALSE(LoopbackOptions{}.latency.enabled());
  LoopbackOptions o;
  o.clock = &clock_;  // frozen: any wait on it would never end
  Start(std::move(o));
  EXPECT_FALSE(server_->latency_model().enabled());
  Requests reqs;
  reqs.Run([&] { return client_->Post(kCmPath, ConfigMap("a")); });
  reqs.Run([&] { return client_->Get(kCmPath); });
  ASSERT_TRUE(WaitUntil([&] { return reqs.done() == 2; })) << "a request waited with the model off";
  EXPECT_THAT(reqs.codes(), ::testing::UnorderedElementsAre(201, 200));
  EXPECT_EQ(clock_.sleepers(), 0u);
}

TEST_F(LatencyTest, PerRequestAndPerWrite) {
  StartWith({.per_request = absl::Seconds(1), .per_write = absl::Seconds(2)});
  ASSERT_EQ(server_->Call("POST", kCmPath, ConfigMap("a")).code, 201);  // in-process: exempt

  Requests get;
  get.Run([&] { return client_->Get(std::string(kCmPath) + "/a"); });
  ASSERT_TRUE(clock_.WaitForSleepers(1));
  absl::SleepFor(kSettle);
  EXPECT_EQ(get.done(), 0);
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(WaitUntil([&] { return get.done() == 1; }));
  EXPECT_EQ(get.codes()[0], 200);

  Requests put;
  put.Run([&] { return client_->Patch(std::string(kCmPath) + "/a", {{"data", {{"k", "v"}}}}); });
  ASSERT_TRUE(clock_.WaitForSleepers(1));
  clock_.Advance(absl::Seconds(2));  // per_request only: a write also pays per_write
  absl::SleepFor(kSettle);
  EXPECT_EQ(put.done(), 0);
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(WaitUntil([&] { return put.done() == 1; }));
  EXPECT_EQ(put.codes()[0], 200);
}

TEST_F(LatencyTest, WritesOfOneObjectAreSerialized) {
  StartWith({.per_object_write = absl::Seconds(1)});
  ASSERT_EQ(server_->Call("POST", kCmPath, ConfigMap("a")).code, 201);
  constexpr int kWriters = 4;
  Requests reqs;
  for (int i = 0; i < kWriters; ++i) {
    reqs.Run([&, i] {
      return client_->Patch(std::string(kCmPath) + "/a",
                            {{"data", {{"k" + std::to_string(i), "v"}}}});
    });
  }
  // Each second of (simulated) time lets exactly one more write through: N concurrent writes of
  // one object take N x per_object_write. The one in its turn is the only one on the clock.
  for (int k = 1; k <= kWriters; ++k) {
    ASSERT_TRUE(clock_.WaitForSleepers(1)) << "write " << k;
    absl::SleepFor(kSettle);
    ASSERT_EQ(reqs.done(), k - 1) << "before " << k << " s";
    EXPECT_EQ(clock_.sleepers(), 1u) << "writes of one object overlapped";
    clock_.Advance(absl::Seconds(1));
    ASSERT_TRUE(WaitUntil([&] { return reqs.done() >= k; })) << "after " << k << " s";
  }
  EXPECT_THAT(reqs.codes(), ::testing::Each(200));
  Json cm = server_->Call("GET", std::string(kCmPath) + "/a").body;
  EXPECT_EQ(cm["data"].size(), static_cast<size_t>(kWriters));
}

TEST_F(LatencyTest, WritesOfDifferentObjectsOverlap) {
  StartWith({.per_object_write = absl::Seconds(1)});
  constexpr int kWriters = 4;
  for (int i = 0; i < kWriters; ++i) {
    ASSERT_EQ(server_->Call("POST", kCmPath, ConfigMap("cm" + std::to_string(i))).code, 201);
  }
  Requests reqs;
  for (int i = 0; i < kWriters; ++i) {
    reqs.Run([&, i] {
      return client_->Patch(std::string(kCmPath) + "/cm" + std::to_string(i),
                            {{"data", {{"k", "v"}}}});
    });
  }
  ASSERT_TRUE(clock_.WaitForSleepers(kWriters));
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(WaitUntil([&] { return reqs.done() == kWriters; }));
  EXPECT_THAT(reqs.codes(), ::testing::Each(200));
}

// kube-apiserver answers a failed precondition without an etcd write: the stale writer waits
// for the write in flight, then gets its 409 without holding the object.
TEST_F(LatencyTest, StaleWriterWaitsItsTurnThenConflictsWithoutHolding) {
  StartWith({.per_object_write = absl::Seconds(1)});
  Json created = server_->Call("POST", kCmPath, ConfigMap("a")).body;
  Requests reqs;
  for (int i = 0; i < 2; ++i) {
    Json put = created;
    put["data"] = {{"writer", std::to_string(i)}};
    reqs.Run([&, put] { return client_->Put(std::string(kCmPath) + "/a", put); });
  }
  ASSERT_TRUE(clock_.WaitForSleepers(1));  // the write that landed holds the object
  absl::SleepFor(kSettle);
  EXPECT_EQ(reqs.done(), 0);
  clock_.Advance(absl::Seconds(1));
  // No more time passes: the loser answers without a hold of its own.
  ASSERT_TRUE(WaitUntil([&] { return reqs.done() == 2; }));
  EXPECT_THAT(reqs.codes(), ::testing::UnorderedElementsAre(200, 409));
}

// kube-apiserver's request deadline: a write still queued for its object when its `timeout`
// query parameter runs out is answered 504 Timeout and never performed; the writers behind it
// move up in its place.
TEST_F(LatencyTest, AQueuedWritePastItsTimeoutGets504AndIsNotPerformed) {
  StartWith({.per_object_write = absl::Seconds(10)});
  ASSERT_EQ(server_->Call("POST", kCmPath, ConfigMap("a")).code, 201);
  const std::string path = std::string(kCmPath) + "/a";
  Requests first, late, third;
  first.Run([&] { return client_->Patch(path, {{"data", {{"first", "1"}}}}); });
  ASSERT_TRUE(clock_.WaitForSleepers(1));  // holds the object for 10 s
  late.Run([&] { return client_->Patch(path + "?timeout=2s", {{"data", {{"late", "1"}}}}); });
  // Queued behind the first, its deadline set: only then may the clock move (a fixed pause
  // was not enough on a loaded machine: the late write arrived after the clock had moved).
  ASSERT_TRUE(WaitUntil([&] { return server_->WritesWaitingForTurn() == 1; }));
  third.Run([&] { return client_->Patch(path, {{"data", {{"third", "1"}}}}); });
  ASSERT_TRUE(WaitUntil([&] { return server_->WritesWaitingForTurn() == 2; }));
  clock_.Advance(absl::Seconds(2));
  ASSERT_TRUE(WaitUntil([&] { return late.done() == 1; })) << "no answer at its deadline";
  EXPECT_THAT(late.codes(), ::testing::ElementsAre(504));
  EXPECT_EQ(first.done(), 0);
  clock_.Advance(absl::Seconds(8));
  ASSERT_TRUE(WaitUntil([&] { return first.done() == 1; }));
  ASSERT_TRUE(clock_.WaitForSleepers(1));  // the third holds now: the late one left the queue
  clock_.Advance(absl::Seconds(10));
  ASSERT_TRUE(WaitUntil([&] { return third.done() == 1; }));
  EXPECT_THAT(first.codes(), ::testing::ElementsAre(200));
  EXPECT_THAT(third.codes(), ::testing::ElementsAre(200));
  Json cm = server_->Call("GET", path).body;
  EXPECT_EQ(cm["data"], Json({{"first", "1"}, {"third", "1"}}));
  RequestCounts n = server_->request_counts();
  EXPECT_EQ(n.timed_out, 1);
  EXPECT_EQ(n.abandoned, 0);
}

// Without a `timeout` parameter the deadline is --request-timeout (request_timeout); a write
// that landed but is still holding its object then is answered 504 all the same (its answer is
// lost, the change stays).
TEST_F(LatencyTest, AWriteHoldingPastTheRequestTimeoutLandsButIsAnswered504) {
  LoopbackOptions o;
  o.clock = &clock_;
  o.latency = {.per_object_write = absl::Seconds(90)};
  Start(std::move(o));
  ASSERT_EQ(server_->Call("POST", kCmPath, ConfigMap("a")).code, 201);
  Requests w;
  w.Run([&] { return client_->Patch(std::string(kCmPath) + "/a", {{"data", {{"k", "v"}}}}); });
  ASSERT_TRUE(clock_.WaitForSleepers(1));
  clock_.Advance(absl::Seconds(60));
  ASSERT_TRUE(WaitUntil([&] { return w.done() == 1; }));
  EXPECT_THAT(w.codes(), ::testing::ElementsAre(504));
  EXPECT_EQ(server_->Call("GET", std::string(kCmPath) + "/a").body["data"], Json({{"k", "v"}}));
  EXPECT_EQ(server_->request_counts().timed_out, 1);
}

// kube-apiserver cancels a request whose client went away: a write waiting for its object
// leaves the queue and is never performed.
TEST_F(LatencyTest, AWriteWhoseClientLeftIsDroppedUnserved) {
  StartWith({.per_object_write = absl::Seconds(10)});
  ASSERT_EQ(server_->Call("POST", kCmPath, ConfigMap("a")).code, 201);
  const std::string path = std::string(kCmPath) + "/a";
  Requests first, impatient;
  first.Run([&] { return client_->Patch(path, {{"data", {{"first", "1"}}}}); });
  ASSERT_TRUE(clock_.WaitForSleepers(1));
  TestClient quick(*server_);
  quick.set_read_timeout(absl::Milliseconds(300));  // real time: the server's clock stands still
  impatient.Run([&] { return quick.Patch(path, {{"data", {{"impatient", "1"}}}}); });
  ASSERT_TRUE(WaitUntil([&] { return impatient.done() == 1; }));
  EXPECT_THAT(impatient.codes(), ::testing::ElementsAre(0));  // the client gave up
  ASSERT_TRUE(WaitUntil([&] { return server_->request_counts().abandoned == 1; }))
      << "the server still holds the request of a client that left";
  clock_.Advance(absl::Seconds(10));
  ASSERT_TRUE(WaitUntil([&] { return first.done() == 1; }));
  absl::SleepFor(kSettle);
  EXPECT_EQ(server_->Call("GET", path).body["data"], Json({{"first", "1"}}));
  EXPECT_EQ(clock_.sleepers(), 0u) << "the dropped write took a turn";
  EXPECT_EQ(server_->request_counts().timed_out, 0);
}

TEST_F(LatencyTest, AnInvalidTimeoutParameterIs400) {
  StartWith({});
  HttpResult r = client_->Get(std::string(kCmPath) + "?timeout=soon");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["message"],
            "invalid timeout specified in the request URL - time: invalid duration \"soon\"");
  EXPECT_EQ(client_->Get(std::string(kCmPath) + "?timeout=1m30s").status, 200);
  EXPECT_EQ(client_->Get(std::string(kCmPath) + "?timeout=0").status, 200);
}

TEST_F(LatencyTest, SetAtRunTime) {
  StartWith({});
  ASSERT_EQ(client_->Post(kCmPath, ConfigMap("a")).status, 201);  // off: no wait

  server_->SetLatencyModel({.per_request = absl::Seconds(1)});
  EXPECT_EQ(server_->latency_model().per_request, absl::Seconds(1));
  Requests reqs;
  reqs.Run([&] { return client_->Get(kCmPath); });
  ASSERT_TRUE(clock_.WaitForSleepers(1));
  absl::SleepFor(kSettle);
  EXPECT_EQ(reqs.done(), 0);
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(WaitUntil([&] { return reqs.done() == 1; }));

  server_->SetLatencyModel({});
  EXPECT_FALSE(server_->latency_model().enabled());
  EXPECT_EQ(client_->Get(kCmPath).status, 200);
}

// Real clock: events come no sooner than watch_delay after their write, in order.
TEST_F(ApiServerTest, WatchEventsAreDeliveredLateAndInOrder) {
  const absl::Duration kDelay = absl::Milliseconds(400);
  server_->SetLatencyModel({.watch_delay = kDelay, .jitter = 0.5});
  const std::string rv = std::to_string(server_->CurrentResourceVersion());
  WatchReader w(*client_, std::string(kCmPath) + "?watch=true&resourceVersion=" + rv);
  ASSERT_TRUE(server_->WaitForWatches(1));
  const absl::Time written = absl::Now();
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_EQ(server_->Call("POST", kCmPath, ConfigMap(name)).code, 201);
  }
  std::vector<std::string> names;
  for (int i = 0; i < 3; ++i) {
    auto e = w.NextNonBookmark(kEventually);
    ASSERT_TRUE(e) << "event " << i;
    if (i == 0) {
      EXPECT_GE(absl::Now() - written, kDelay);
    }
    names.push_back((*e)["object"]["metadata"]["name"].get<std::string>());
  }
  EXPECT_THAT(names, ::testing::ElementsAre("a", "b", "c"));
}

TEST(CalibratedLatencyModel, IsOnAndSerializesOneObject) {
  LatencyModel m = CalibratedLatencyModel();
  EXPECT_TRUE(m.enabled());
  EXPECT_GT(m.per_object_write, absl::ZeroDuration());
  EXPECT_GT(m.watch_delay, absl::ZeroDuration());
}

}  // namespace
}  // namespace spiderpool::kube::testing
