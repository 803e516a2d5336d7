#include "kube/workqueue/workqueue.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace spiderpool::kube::workqueue {
namespace {

// Get with a real-time safety net so a broken queue fails the test instead of hanging it.
// Not a synchronization tool: in a passing run the key arrives long before the timeout.
std::optional<std::string> GetOrTimeout(WorkQueue& q,
                                        std::chrono::seconds timeout = std::chrono::seconds(30)) {
  std::stop_source give_up;
  std::jthread timer([&](std::stop_token st) {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, st, timeout, [] { return false; }) && !st.stop_requested()) {
      give_up.request_stop();
    }
  });
  std::optional<std::string> key = q.Get(give_up.get_token());
  timer.request_stop();
  return key;
}

Options Simulated(base::SimulatedClock& clock, metrics::Registry* registry = nullptr) {
  Options o;
  o.clock = &clock;
  o.registry = registry;
  return o;
}

TEST(WorkQueue, DeduplicatesQueuedKeysInFifoOrder) {
  base::SimulatedClock clock;
  WorkQueue q(Simulated(clock));
  EXPECT_TRUE(q.Add("a"));
  EXPECT_TRUE(q.Add("b"));
  EXPECT_TRUE(q.Add("a"));
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(q.Get(), "a");
  EXPECT_EQ(q.Get(), "b");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueue, KeyAddedWhileProcessingIsRequeuedOnDone) {
  base::SimulatedClock clock;
  WorkQueue q(Simulated(clock));
  q.Add("a");
  ASSERT_EQ(q.Get(), "a");
  EXPECT_TRUE(q.Add("a"));  // dirty, not handed to another worker
  EXPECT_TRUE(q.Add("a"));
  EXPECT_EQ(q.Len(), 0u);
  q.Add("b");
  EXPECT_EQ(q.Get(), "b");  // "a" is not available while processing
  EXPECT_EQ(q.Len(), 0u);
  q.Done("a");
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(q.Get(), "a");
  q.Done("a");
  q.Done("b");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueue, DoneOfAKeyNotProcessingDoesNothing) {
  base::SimulatedClock clock;
  WorkQueue q(Simulated(clock));
  q.Add("a");
  q.Done("a");  // queued, not processing: must not be queued twice
  EXPECT_EQ(q.Len(), 1u);
  q.Done("zzz");
  EXPECT_EQ(q.Len(), 1u);
}

TEST(WorkQueue, ShutDownWakesAllGetters) {
  base::SimulatedClock clock;
  WorkQueue q(Simulated(clock));
  std::atomic<int> woke{0};
  {
    std::vector<std::jthread> getters;
    for (int i = 0; i < 4; ++i) {
      getters.emplace_back([&] {
        if (!q.Get().has_value()) ++woke;
      });
    }
    q.ShutDown();
  }
  EXPECT_EQ(woke.load(), 4);
  EXPECT_TRUE(q.ShuttingDown());
}

TEST(WorkQueue, GetReturnsNulloptWhenStopRequested) {
  base::SimulatedClock clock;
  WorkQueue q(Simulated(clock));
  std::stop_source stop;
  std::optional<std::string> got = "unset";
  std::jthread getter([&] { got = q.Get(stop.get_token()); });
  stop.request_stop();
  getter.join();
  EXPECT_EQ(got, std::nullopt);
  EXPECT_FALSE(q.ShuttingDown());
  q.Add("a");
  EXPECT_EQ(q.Get(), "a");  // the queue itself is still usable
}

TEST(WorkQueue, ShutDownHandsOutRemainingKeysAndRejectsNewOnes) {
  base::SimulatedClock clock;
  WorkQueue q(Simulated(clock));
  q.Add("a");
  q.Add("b");
  ASSERT_EQ(q.Get(), "a");
  q.ShutDown();
  EXPECT_FALSE(q.Add("c"));
  EXPECT_EQ(q.Get(), "b");
  EXPECT_EQ(q.Get(), std::nullopt);
  q.Done("a");
  q.Done("b");
}

TEST(WorkQueue, ShutDownWithDrainWaitsForProcessing) {
  base::SimulatedClock clock;
  WorkQueue q(Simulated(clock));
  q.Add("a");
  ASSERT_EQ(q.Get(), "a");
  std::atomic<bool> drained{false};
  std::jthread drainer([&] {
    q.ShutDownWithDrain();
    drained = true;
  });
  while (!q.ShuttingDown()) std::this_thread::yield();
  EXPECT_FALSE(drained.load());  // "a" is still processing
  q.Done("a");
  drainer.join();
  EXPECT_TRUE(drained.load());
}

TEST(WorkQueue, ShutDownWithDrainReturnsAtOnceWhenIdle) {
  base::SimulatedClock clock;
  WorkQueue q(Simulated(clock));
  q.ShutDownWithDrain();
  EXPECT_TRUE(q.ShuttingDown());
}

TEST(WorkQueue, AddAfterOrdersByDeadlineOnTheInjectedClock) {
  base::SimulatedClock clock;
  WorkQueue q(Simulated(clock));
  q.AddAfter("a", absl::Seconds(10));
  q.AddAfter("b", absl::Seconds(5));
  q.AddAfter("c", absl::Seconds(5));
  q.AddAfter("b", absl::Seconds(20));  // later than the pending deadline: ignored
  EXPECT_EQ(q.WaitingLen(), 3u);
  EXPECT_EQ(q.Len(), 0u);
  ASSERT_TRUE(clock.WaitForSleepers(1));
  clock.Advance(absl::Seconds(5));
  EXPECT_EQ(GetOrTimeout(q), "b");
  EXPECT_EQ(GetOrTimeout(q), "c");  // same deadline: arrival order
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_EQ(q.WaitingLen(), 1u);  // "a" is due at 10s
  clock.Advance(absl::Seconds(5));
  EXPECT_EQ(GetOrTimeout(q), "a");
  EXPECT_EQ(q.WaitingLen(), 0u);
}

TEST(WorkQueue, EarlierAddAfterWakesTheDelayThread) {
  base::SimulatedClock clock;
  WorkQueue q(Simulated(clock));
  q.AddAfter("late", absl::Hours(1));
  ASSERT_TRUE(clock.WaitForSleepers(1));  // parked until +1h
  q.AddAfter("soon", absl::Seconds(1));
  clock.Advance(absl::Seconds(1));
  // Without the early wake-up the delay thread would sleep until +1h and this would time out.
  EXPECT_EQ(GetOrTimeout(q), "soon");
  EXPECT_EQ(q.WaitingLen(), 1u);
}

TEST(WorkQueue, AddAfterMovesAWaitingKeyEarlier) {
  base::SimulatedClock clock;
  WorkQueue q(Simulated(clock));
  q.AddAfter("a", absl::Seconds(10));
  q.AddAfter("a", absl::Seconds(2));
  EXPECT_EQ(q.WaitingLen(), 1u);
  clock.Advance(absl::Seconds(2));
  EXPECT_EQ(GetOrTimeout(q), "a");
  EXPECT_EQ(q.WaitingLen(), 0u);
}

TEST(WorkQueue, AddAfterOnTheRealClock) {
  WorkQueue q;  // RealClock, default registry, unnamed
  q.AddAfter("a", absl::Milliseconds(1));
  EXPECT_EQ(GetOrTimeout(q), "a");
}

TEST(WorkQueue, AddAfterZeroAddsNow) {
  base::SimulatedClock clock;
  WorkQueue q(Simulated(clock));
  q.AddAfter("a", absl::ZeroDuration());
  q.AddAfter("b", absl::Seconds(-1));
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(q.WaitingLen(), 0u);
}

TEST(WorkQueue, ShutDownDropsWaitingKeys) {
  base::SimulatedClock clock;
  WorkQueue q(Simulated(clock));
  q.AddAfter("a", absl::Seconds(1));
  ASSERT_TRUE(clock.WaitForSleepers(1));
  q.ShutDown();
  EXPECT_EQ(q.WaitingLen(), 0u);
  q.AddAfter("b", absl::Seconds(1));
  EXPECT_EQ(q.WaitingLen(), 0u);
  clock.Advance(absl::Seconds(5));
  EXPECT_EQ(q.Get(), std::nullopt);
}

TEST(WorkQueue, AddRateLimitedBacksOffAndForgetResets) {
  base::SimulatedClock clock;
  WorkQueue q(Simulated(clock));  // DefaultControllerRateLimiter on the simulated clock
  q.AddRateLimited("a");
  EXPECT_EQ(q.NumRequeues("a"), 1);
  EXPECT_EQ(q.Len(), 0u);
  clock.Advance(absl::Milliseconds(5));
  ASSERT_EQ(GetOrTimeout(q), "a");
  q.AddRateLimited("a");  // second failure: 10ms
  q.Done("a");
  EXPECT_EQ(q.NumRequeues("a"), 2);
  clock.Advance(absl::Milliseconds(9));
  // "a" is not due yet: nothing queued even after the delay thread has looked at the time.
  ASSERT_TRUE(clock.WaitForSleepers(1));
  EXPECT_EQ(q.Len(), 0u);
  clock.Advance(absl::Milliseconds(1));
  ASSERT_EQ(GetOrTimeout(q), "a");
  q.Forget("a");
  q.Done("a");
  EXPECT_EQ(q.NumRequeues("a"), 0);
}

TEST(WorkQueue, CustomRateLimiterIsUsed) {
  base::SimulatedClock clock;
  Options o = Simulated(clock);
  o.rate_limiter =
      std::make_unique<ItemExponentialFailureRateLimiter>(absl::Seconds(1), absl::Seconds(3));
  WorkQueue q(std::move(o));
  q.AddRateLimited("a");
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(GetOrTimeout(q), "a");
}

TEST(WorkQueue, MaxLengthDropsNewKeys) {
  base::SimulatedClock clock;
  metrics::Registry registry;
  Options o = Simulated(clock, &registry);
  o.name = "bounded";
  o.max_length = 2;
  WorkQueue q(std::move(o));
  EXPECT_TRUE(q.Add("a"));
  EXPECT_TRUE(q.Add("b"));
  EXPECT_FALSE(q.Add("c"));
  EXPECT_TRUE(q.Add("a"));  // already pending: not new, not dropped
  EXPECT_EQ(q.Dropped(), 1u);
  EXPECT_EQ(q.Len(), 2u);
  ASSERT_EQ(q.Get(), "a");
  EXPECT_TRUE(q.Add("a"));   // dirty while processing: pending again (2 of 2)
  EXPECT_FALSE(q.Add("c"));  // still full
  q.Done("a");
  EXPECT_EQ(q.Len(), 2u);
  // Delayed keys are checked when they come due.
  q.AddAfter("d", absl::Seconds(1));
  clock.Advance(absl::Seconds(1));
  while (q.WaitingLen() > 0) std::this_thread::yield();
  EXPECT_EQ(q.Dropped(), 3u);
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_NE(registry.Expose().find("workqueue_dropped_total{name=\"bounded\"} 3\n"),
            std::string::npos);
}

// Every exposition line of `text` that starts with `prefix`.
std::vector<std::string> Lines(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    std::string line = text.substr(pos, end - pos);
    if (line.starts_with(prefix)) out.push_back(line);
    pos = end + 1;
  }
  return out;
}

TEST(WorkQueue, MetricsFollowControllerRuntime) {
  base::SimulatedClock clock;
  metrics::Registry registry;
  Options o = Simulated(clock, &registry);
  o.name = "test";
  WorkQueue q(std::move(o));

  q.Add("a");
  q.Add("b");
  q.Add("a");  // de-duplicated: not an add
  EXPECT_EQ(Lines(registry.Expose(), "workqueue_adds_total{"),
            std::vector<std::string>{"workqueue_adds_total{name=\"test\"} 2"});
  EXPECT_EQ(Lines(registry.Expose(), "workqueue_depth{"),
            std::vector<std::string>{"workqueue_depth{name=\"test\"} 2"});

  clock.Advance(absl::Seconds(1));
  ASSERT_EQ(q.Get(), "a");  // waited 1s
  clock.Advance(absl::Seconds(2));
  std::string text = registry.Expose();
  EXPECT_EQ(Lines(text, "workqueue_unfinished_work_seconds{"),
            std::vector<std::string>{"workqueue_unfinished_work_seconds{name=\"test\"} 2"});
  EXPECT_EQ(
      Lines(text, "workqueue_longest_running_processor_seconds{"),
      std::vector<std::string>{"workqueue_longest_running_processor_seconds{name=\"test\"} 2"});

  ASSERT_EQ(q.Get(), "b");  // waited 3s
  clock.Advance(absl::Milliseconds(500));
  text = registry.Expose();
  EXPECT_EQ(Lines(text, "workqueue_unfinished_work_seconds{"),
            std::vector<std::string>{"workqueue_unfinished_work_seconds{name=\"test\"} 3"});
  EXPECT_EQ(
      Lines(text, "workqueue_longest_running_processor_seconds{"),
      std::vector<std::string>{"workqueue_longest_running_processor_seconds{name=\"test\"} 2.5"});
  q.Done("a");  // worked 2.5s
  q.Done("b");  // worked 0.5s
  q.AddAfter("c", absl::ZeroDuration());
  q.AddRateLimited("d");

  text = registry.Expose();
  EXPECT_EQ(Lines(text, "workqueue_retries_total{"),
            std::vector<std::string>{"workqueue_retries_total{name=\"test\"} 2"});
  EXPECT_EQ(Lines(text, "workqueue_adds_total{"),
            std::vector<std::string>{"workqueue_adds_total{name=\"test\"} 3"});
  EXPECT_EQ(Lines(text, "workqueue_depth{"),
            std::vector<std::string>{"workqueue_depth{name=\"test\"} 1"});
  EXPECT_EQ(Lines(text, "workqueue_unfinished_work_seconds{"),
            std::vector<std::string>{"workqueue_unfinished_work_seconds{name=\"test\"} 0"});
  EXPECT_EQ(Lines(text, "workqueue_queue_duration_seconds_"),
            (std::vector<std::string>{
                "workqueue_queue_duration_seconds_bucket{name=\"test\",le=\"1e-08\"} 0",
                "workqueue_queue_duration_seconds_bucket{name=\"test\",le=\"1e-07\"} 0",
                "workqueue_queue_duration_seconds_bucket{name=\"test\",le=\"1e-06\"} 0",
                "workqueue_queue_duration_seconds_bucket{name=\"test\",le=\"9.999999999999999e-06\"} 0",
                "workqueue_queue_duration_seconds_bucket{name=\"test\",le=\"9.999999999999999e-05\"} 0",
                "workqueue_queue_duration_seconds_bucket{name=\"test\",le=\"0.001\"} 0",
                "workqueue_queue_duration_seconds_bucket{name=\"test\",le=\"0.01\"} 0",
                "workqueue_queue_duration_seconds_bucket{name=\"test\",le=\"0.1\"} 0",
                "workqueue_queue_duration_seconds_bucket{name=\"test\",le=\"1\"} 1",
                "workqueue_queue_duration_seconds_bucket{name=\"test\",le=\"10\"} 2",
                "workqueue_queue_duration_seconds_bucket{name=\"test\",le=\"100\"} 2",
                "workqueue_queue_duration_seconds_bucket{name=\"test\",le=\"1000\"} 2",
                "workqueue_queue_duration_seconds_bucket{name=\"test\",le=\"+Inf\"} 2",
                "workqueue_queue_duration_seconds_sum{name=\"test\"} 4",
                "workqueue_queue_duration_seconds_count{name=\"test\"} 2",
            }));
  EXPECT_EQ(Lines(text, "workqueue_work_duration_seconds_sum{"),
            std::vector<std::string>{"workqueue_work_duration_seconds_sum{name=\"test\"} 3"});
  EXPECT_EQ(Lines(text, "workqueue_work_duration_seconds_count{"),
            std::vector<std::string>{"workqueue_work_duration_seconds_count{name=\"test\"} 2"});
  EXPECT_EQ(Lines(text, "# HELP workqueue_work_duration_seconds "),
            std::vector<std::string>{"# HELP workqueue_work_duration_seconds How long in seconds "
                                     "processing an item from workqueue takes."});
  EXPECT_EQ(Lines(text, "# TYPE workqueue_"),
            (std::vector<std::string>{
                "# TYPE workqueue_adds_total counter",
                "# TYPE workqueue_depth gauge",
                "# TYPE workqueue_dropped_total counter",
                "# TYPE workqueue_longest_running_processor_seconds gauge",
                "# TYPE workqueue_queue_duration_seconds histogram",
                "# TYPE workqueue_retries_total counter",
                "# TYPE workqueue_unfinished_work_seconds gauge",
                "# TYPE workqueue_work_duration_seconds histogram",
            }));
}

TEST(WorkQueue, UnnamedQueueHasNoMetrics) {
  base::SimulatedClock clock;
  metrics::Registry registry;
  WorkQueue q(Simulated(clock, &registry));
  q.Add("a");
  EXPECT_EQ(registry.Expose(), "");
}

TEST(WorkQueue, DestroyedQueueStopsRefreshingMetrics) {
  base::SimulatedClock clock;
  metrics::Registry registry;
  {
    Options o = Simulated(clock, &registry);
    o.name = "gone";
    WorkQueue q(std::move(o));
    q.Add("a");
    ASSERT_EQ(q.Get(), "a");
  }
  clock.Advance(absl::Seconds(7));
  // The collect hook was removed with the queue: exposing must not touch it.
  EXPECT_EQ(Lines(registry.Expose(), "workqueue_unfinished_work_seconds{"),
            std::vector<std::string>{"workqueue_unfinished_work_seconds{name=\"gone\"} 0"});
}

// Many producers and consumers: no key is processed by two workers at once, and every add
// is followed by a processing of that key that starts after it (client-go's guarantee).
TEST(WorkQueue, ConcurrentProducersAndConsumers) {
  constexpr int kKeys = 16;
  constexpr int kProducers = 4;
  constexpr int kConsumers = 4;
  constexpr int kAddsPerProducer = 3000;
  base::SimulatedClock clock;
  metrics::Registry registry;
  Options o = Simulated(clock, &registry);
  o.name = "stress";
  WorkQueue q(std::move(o));

  std::array<std::atomic<int>, kKeys> in_flight{};
  std::array<std::atomic<uint64_t>, kKeys> version{};  // bumped by producers before Add
  std::array<std::atomic<uint64_t>, kKeys> seen{};     // latest version a consumer processed
  std::atomic<int> overlaps{0};
  std::atomic<uint64_t> processed{0};
  std::mutex done_mu;
  std::condition_variable done_cv;

  auto caught_up = [&] {
    for (int k = 0; k < kKeys; ++k) {
      if (seen[k].load() != version[k].load()) return false;
    }
    return true;
  };

  std::vector<std::jthread> consumers;
  for (int c = 0; c < kConsumers; ++c) {
    consumers.emplace_back([&] {
      while (auto key = q.Get()) {
        int k = std::stoi(*key);
        if (in_flight[k].fetch_add(1) != 0) ++overlaps;
        uint64_t v = version[k].load();
        uint64_t prev = seen[k].load();
        while (prev < v && !seen[k].compare_exchange_weak(prev, v)) {
        }
        ++processed;
        std::this_thread::yield();  // widen the window in which an overlap would show
        in_flight[k].fetch_sub(1);
        q.Done(*key);
        std::lock_guard<std::mutex> lock(done_mu);
        done_cv.notify_all();
      }
    });
  }
  {
    std::vector<std::jthread> producers;
    for (int p = 0; p < kProducers; ++p) {
      producers.emplace_back([&, p] {
        for (int i = 0; i < kAddsPerProducer; ++i) {
          int k = (i * 7 + p) % kKeys;
          version[k].fetch_add(1);
          if (i % 10 == 0) {
            q.AddAfter(std::to_string(k), absl::Milliseconds(i % 50));
          } else {
            q.Add(std::to_string(k));
          }
        }
      });
    }
  }
  clock.Advance(absl::Seconds(1));  // every delayed key is due
  {
    std::unique_lock<std::mutex> lock(done_mu);
    ASSERT_TRUE(done_cv.wait_for(lock, std::chrono::seconds(60), caught_up));
  }
  q.ShutDown();
  consumers.clear();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_GT(processed.load(), 0u);
  EXPECT_LE(processed.load(), static_cast<uint64_t>(kProducers * kAddsPerProducer));
  EXPECT_EQ(Lines(registry.Expose(), "workqueue_depth{"),
            std::vector<std::string>{"workqueue_depth{name=\"stress\"} 0"});
}

}  // namespace
}  // namespace spiderpool::kube::workqueue
