#pragma once
// A rate-limited, delaying work queue of string keys with client-go's semantics
// (k8s.io/client-go/util/workqueue: Type + delayingType + rateLimitingType in one class):
//
// - De-duplicating FIFO: a key added while it is queued is not queued twice.
// - A key is never handed to two workers at once: a key added while being processed
//   (between Get and Done) is marked dirty and queued again only when Done is called.
// - AddAfter parks a key until a deadline on the injected clock (an earlier AddAfter of a
//   waiting key moves its deadline earlier; a later one is ignored); AddRateLimited is
//   AddAfter(key, rate_limiter.When(key)).
// - ShutDown: Add is ignored from then on, Get hands out what is still queued and then
//   returns nullopt to every waiter; waiting (delayed) keys are dropped.
//
// Typical worker:
//   while (auto key = queue.Get(stop)) {
//     absl::Status s = Reconcile(*key);
//     if (s.ok()) queue.Forget(*key); else queue.AddRateLimited(*key);
//     queue.Done(*key);
//   }

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "absl/time/time.h"
#include "base/clock.h"
#include "kube/metrics/metrics.h"
#include "kube/workqueue/rate_limiter.h"

namespace spiderpool::kube::workqueue {

struct Options {
  // Queue name: the `name` label of the workqueue_* metrics. Empty = no metrics.
  std::string name;
  // Time source for delays, rate limiting and metrics. nullptr = base::RealClock::Get().
  base::Clock* clock = nullptr;
  // nullptr = DefaultControllerRateLimiter(*clock).
  std::unique_ptr<RateLimiter> rate_limiter;
  // When > 0, at most this many keys may be pending (queued, or dirty while processing);
  // further new keys are dropped (Add returns false, workqueue_dropped_total counts them).
  // Spiderpool's MAX_WORKQUEUE_LENGTH is 10000.
  size_t max_length = 0;
  // Where the metrics go. nullptr = metrics::Registry::Default().
  metrics::Registry* registry = nullptr;
};

class WorkQueue {
 public:
  explicit WorkQueue(Options options = {});
  // Shuts down (without drain) and joins the delay thread.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `key` unless it is already pending. True if `key` is pending afterwards (newly
  // or already); false if the queue is shutting down or full (dropped).
  bool Add(const std::string& key);
  // Blocks until a key is available and marks it processing; the caller must call
  // Done(key). nullopt once the queue is shut down and empty, or when `stop` is requested.
  std::optional<std::string> Get(std::stop_token stop = {});
  // Ends processing of `key`; if it was added meanwhile, it is queued again.
  void Done(const std::string& key);

  // Adds `key` after `delay` (immediately if delay <= 0). Counts a retry in the metrics.
  void AddAfter(const std::string& key, absl::Duration delay);
  // AddAfter(key, rate_limiter->When(key)).
  void AddRateLimited(const std::string& key);
  // Resets the rate limiter's failure count for `key` (does not remove it from the queue).
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key);

  // Keys queued and ready for Get (not counting processing or waiting ones).
  size_t Len() const;
  // Keys parked by AddAfter/AddRateLimited, not yet due.
  size_t WaitingLen() const;
  // New keys dropped because of max_length.
  uint64_t Dropped() const;

  void ShutDown();
  // ShutDown, then block until every key handed out by Get is Done (a concurrent
  // ShutDown() stops the wait).
  void ShutDownWithDrain();
  bool ShuttingDown() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spiderpool::kube::workqueue
