#include "kube/controller/controller.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "base/testing/wait.h"

namespace spiderpool::kube {
namespace {

using ::spiderpool::base::testing::WaitUntil;

// Records reconciles and lets the test decide each outcome.
class ScriptedReconciler : public Reconciler {
 public:
  absl::StatusOr<ReconcileResult> Reconcile(const ReconcileRequest& r, std::stop_token) override {
    std::unique_lock<std::mutex> l(mu_);
    int n = ++calls_[r.Key()];
    ++total_;
    cv_.notify_all();
    auto it = script_.find(r.Key());
    if (it != script_.end() && n <= static_cast<int>(it->second.size())) {
      return it->second[n - 1];
    }
    return ReconcileResult{};
  }
  void Script(const std::string& key, std::vector<absl::StatusOr<ReconcileResult>> outcomes) {
    std::lock_guard<std::mutex> l(mu_);
    script_[key] = std::move(outcomes);
  }
  int Calls(const std::string& key) {
    std::lock_guard<std::mutex> l(mu_);
    return calls_[key];
  }
  // Waits (bounded, real time) until `key` has been reconciled `n` times.
  bool WaitCalls(const std::string& key, int n) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::seconds(30), [&] { return calls_[key] >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, int> calls_;
  std::map<std::string, std::vector<absl::StatusOr<ReconcileResult>>> script_;
  int total_ = 0;
};

TEST(ReconcileRequest, KeyRoundTrip) {
  EXPECT_EQ(ReconcileRequest::FromKey("ns/a"), (ReconcileRequest{"ns", "a"}));
  EXPECT_EQ(ReconcileRequest::FromKey("pool"), (ReconcileRequest{"", "pool"}));
  EXPECT_EQ((ReconcileRequest{"ns", "a"}).Key(), "ns/a");
}

TEST(Controller, ReconcilesRetriesAndRequeues) {
  base::SimulatedClock clock;
  metrics::Registry registry;
  ScriptedReconciler rec;
  rec.Script("ns/fails", {absl::UnavailableError("api down"), absl::UnavailableError("again"),
                          ReconcileResult{}});
  rec.Script("later", {ReconcileResult{.requeue_after = absl::Seconds(30)}, ReconcileResult{}});
  ControllerOptions opts;
  opts.name = "test";
  opts.workers = 2;
  opts.clock = &clock;
  opts.registry = &registry;
  Controller c(std::move(opts), &rec);
  std::stop_source stop;
  std::jthread runner([&] { EXPECT_TRUE(c.Run(stop.get_token()).ok()); });

  c.Enqueue({"ns", "ok"});
  c.Enqueue({"ns", "fails"});
  c.EnqueueKey("later");
  ASSERT_TRUE(rec.WaitCalls("ns/ok", 1));
  ASSERT_TRUE(rec.WaitCalls("ns/fails", 1));
  ASSERT_TRUE(rec.WaitCalls("later", 1));

  // Failures back off on the (simulated) clock: 5ms, then 10ms. Advance only once the
  // failed key is parked (next to "later").
  ASSERT_TRUE(WaitUntil([&] { return c.queue().WaitingLen() == 2; }));
  ASSERT_TRUE(clock.WaitForSleepers(1));
  clock.Advance(absl::Milliseconds(4));
  EXPECT_EQ(rec.Calls("ns/fails"), 1);
  clock.Advance(absl::Milliseconds(1));
  ASSERT_TRUE(rec.WaitCalls("ns/fails", 2));
  ASSERT_TRUE(WaitUntil([&] { return c.queue().WaitingLen() == 2; }));
  ASSERT_TRUE(clock.WaitForSleepers(1));
  clock.Advance(absl::Milliseconds(10));
  ASSERT_TRUE(rec.WaitCalls("ns/fails", 3));
  EXPECT_TRUE(WaitUntil([&] { return c.queue().NumRequeues("ns/fails") == 0; }));  // Forget

  // requeue_after: not before 30s.
  ASSERT_TRUE(WaitUntil([&] { return c.queue().WaitingLen() == 1; }));
  EXPECT_EQ(rec.Calls("later"), 1);
  clock.Advance(absl::Seconds(29));
  EXPECT_EQ(rec.Calls("later"), 1);
  clock.Advance(absl::Seconds(1));
  ASSERT_TRUE(rec.WaitCalls("later", 2));
  EXPECT_EQ(rec.Calls("ns/ok"), 1);

  stop.request_stop();
  runner.join();
  std::string text = registry.Expose();
  EXPECT_NE(text.find("controller_runtime_reconcile_errors_total{controller=\"test\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("controller_runtime_reconcile_total{controller=\"test\",result=\"success\"} 3"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("workqueue_adds_total{name=\"test\"}"), std::string::npos);
}

TEST(Controller, NeverReconcilesOneKeyConcurrently) {
  metrics::Registry registry;
  std::atomic<int> in_flight{0};
  std::atomic<int> max_in_flight{0};
  std::atomic<int> calls{0};
  FuncReconciler rec(
      [&](const ReconcileRequest&, std::stop_token) -> absl::StatusOr<ReconcileResult> {
        int now = ++in_flight;
        int prev = max_in_flight.load();
        while (now > prev && !max_in_flight.compare_exchange_weak(prev, now)) {
        }
        std::this_thread::yield();
        --in_flight;
        ++calls;
        calls.notify_all();
        return ReconcileResult{};
      });
  ControllerOptions opts;
  opts.name = "concurrency";
  opts.workers = 4;
  opts.registry = &registry;
  Controller c(std::move(opts), &rec);
  std::stop_source stop;
  std::jthread runner([&] { (void)c.Run(stop.get_token()); });
  for (int i = 0; i < 2000; ++i) c.EnqueueKey("same");
  // Every burst of adds is coalesced: at least one reconcile, never two at once.
  while (calls.load() == 0) calls.wait(0);
  stop.request_stop();
  runner.join();
  EXPECT_EQ(max_in_flight.load(), 1);
  EXPECT_LE(calls.load(), 2000);
}

TEST(Controller, WaitsForCachesAndStopsCleanly) {
  metrics::Registry registry;
  std::atomic<bool> synced{false};
  FuncReconciler rec(
      [](const ReconcileRequest&, std::stop_token) -> absl::StatusOr<ReconcileResult> {
        return ReconcileResult{};
      });
  ControllerOptions opts;
  opts.name = "sync";
  opts.registry = &registry;
  opts.cache_synced = {[&] { return synced.load(); }};
  Controller c(std::move(opts), &rec);
  std::stop_source stop;
  absl::Status result;
  std::jthread runner([&] { result = c.Run(stop.get_token()); });
  stop.request_stop();
  runner.join();
  EXPECT_EQ(result.code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace spiderpool::kube
