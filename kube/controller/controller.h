#pragma once
// A controller in controller-runtime's shape: event sources only enqueue keys; N workers take
// keys from a rate-limited, de-duplicating work queue and call Reconcile(request), which reads
// current state (from informer caches) and converges it. Reconcile never sees event types.
//
//   result ok, requeue_after > 0  -> Forget + AddAfter(requeue_after)
//   result ok, requeue            -> AddRateLimited (backoff grows)
//   result ok                     -> Forget
//   error                         -> AddRateLimited, logged, counted
//
// Metrics (controller-runtime's names): controller_runtime_reconcile_total{controller,result},
// controller_runtime_reconcile_errors_total{controller},
// controller_runtime_reconcile_time_seconds{controller},
// controller_runtime_max_concurrent_reconciles, controller_runtime_active_workers, plus the queue's
// workqueue_* series (label name=<controller>).

#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "kube/metrics/metrics.h"
#include "kube/workqueue/workqueue.h"

namespace spiderpool::kube {

struct ReconcileRequest {
  std::string namespace_;  // empty for cluster-scoped objects
  std::string name;
  // "ns/name" or "name": the informer cache key.
  std::string Key() const { return namespace_.empty() ? name : namespace_ + "/" + name; }
  static ReconcileRequest FromKey(const std::string& key);
  friend bool operator==(const ReconcileRequest&, const ReconcileRequest&) = default;
};

struct ReconcileResult {
  bool requeue = false;
  absl::Duration requeue_after = absl::ZeroDuration();
};

class Reconciler {
 public:
  virtual ~Reconciler() = default;
  virtual absl::StatusOr<ReconcileResult> Reconcile(const ReconcileRequest& request,
                                                    std::stop_token stop) = 0;
};

// Adapts a lambda.
class FuncReconciler : public Reconciler {
 public:
  using Fn =
      std::function<absl::StatusOr<ReconcileResult>(const ReconcileRequest&, std::stop_token)>;
  explicit FuncReconciler(Fn fn) : fn_(std::move(fn)) {}
  absl::StatusOr<ReconcileResult> Reconcile(const ReconcileRequest& r,
                                            std::stop_token stop) override {
    return fn_(r, stop);
  }

 private:
  Fn fn_;
};

struct ControllerOptions {
  std::string name;  // required: logs and metrics
  int workers = 1;
  base::Clock* clock = nullptr;                          // nullptr = RealClock
  metrics::Registry* registry = nullptr;                 // nullptr = Registry::Default()
  size_t max_queue_length = 0;                           // 0 = unbounded
  std::unique_ptr<workqueue::RateLimiter> rate_limiter;  // nullptr = client-go default
  // Readiness of the caches the reconciler reads; workers start only once all return true.
  std::vector<std::function<bool()>> cache_synced;
};

class Controller {
 public:
  Controller(ControllerOptions options, Reconciler* reconciler);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  const std::string& name() const { return name_; }
  // Event-source side: thread-safe, cheap, never blocks on reconciliation.
  void Enqueue(const ReconcileRequest& r) { queue_.Add(r.Key()); }
  void EnqueueKey(const std::string& key) { queue_.Add(key); }
  void EnqueueAfter(const ReconcileRequest& r, absl::Duration d) { queue_.AddAfter(r.Key(), d); }

  // Waits for cache sync, runs the workers until `stop`, then shuts the queue down and
  // joins them. Returns an error if stopped before the caches synced.
  absl::Status Run(std::stop_token stop);

  workqueue::WorkQueue& queue() { return queue_; }

 private:
  void Worker(std::stop_token stop);
  void ProcessOne(const std::string& key, std::stop_token stop);

  std::string name_;
  int workers_;
  base::Clock& clock_;
  Reconciler* reconciler_;
  std::vector<std::function<bool()>> cache_synced_;
  workqueue::WorkQueue queue_;
  metrics::Family<metrics::Counter>& reconcile_total_;
  metrics::Family<metrics::Counter>& reconcile_errors_;
  metrics::Histogram& reconcile_time_;
  metrics::Gauge& active_workers_;
};

}  // namespace spiderpool::kube
