#include "kube/controller/controller.h"

#include <chrono>
#include <exception>
#include <thread>

#include "base/log.h"
#include "base/strings.h"

namespace spiderpool::kube {
namespace {

metrics::Registry& Reg(metrics::Registry* r) {
  return r != nullptr ? *r : metrics::Registry::Default();
}

workqueue::Options QueueOptions(ControllerOptions& o) {
  workqueue::Options q;
  q.name = o.name;
  q.clock = o.clock;
  q.rate_limiter = std::move(o.rate_limiter);
  q.max_length = o.max_queue_length;
  q.registry = o.registry;
  return q;
}

}  // namespace

ReconcileRequest ReconcileRequest::FromKey(const std::string& key) {
  size_t slash = key.find('/');
  if (slash == std::string::npos) return ReconcileRequest{"", key};
  return ReconcileRequest{key.substr(0, slash), key.substr(slash + 1)};
}

Controller::Controller(ControllerOptions options, Reconciler* reconciler)
    : name_(options.name),
      workers_(options.workers > 0 ? options.workers : 1),
      clock_(options.clock != nullptr ? *options.clock : base::RealClock::Get()),
      reconciler_(reconciler),
      cache_synced_(std::move(options.cache_synced)),
      queue_(QueueOptions(options)),
      reconcile_total_(Reg(options.registry)
                           .AddCounter("controller_runtime_reconcile_total",
                                       "Total number of reconciliations per controller")),
      reconcile_errors_(Reg(options.registry)
                            .AddCounter("controller_runtime_reconcile_errors_total",
                                        "Total number of reconciliation errors per controller")),
      reconcile_time_(Reg(options.registry)
                          .AddHistogram("controller_runtime_reconcile_time_seconds",
                                        "Length of time per reconciliation per controller",
                                        metrics::ExponentialBuckets(0.001, 2, 16))
                          .WithLabels({{"controller", options.name}})),
      active_workers_(Reg(options.registry)
                          .AddGauge("controller_runtime_active_workers",
                                    "Number of currently used workers per controller")
                          .WithLabels({{"controller", options.name}})) {
  Reg(options.registry)
      .AddGauge("controller_runtime_max_concurrent_reconciles",
                "Maximum number of concurrent reconciles per controller")
      .WithLabels({{"controller", name_}})
      .Set(workers_);
  reconcile_errors_.WithLabels({{"controller", name_}});
  for (const char* result : {"success", "error", "requeue", "requeue_after"}) {
    reconcile_total_.WithLabels({{"controller", name_}, {"result", result}});
  }
}

Controller::~Controller() { queue_.ShutDown(); }

absl::Status Controller::Run(std::stop_token stop) {
  // Wait for the caches the reconciler reads (controller-runtime's WaitForCacheSync).
  for (;;) {
    bool all = true;
    for (const auto& synced : cache_synced_) all = all && synced();
    if (all) break;
    if (!base::RealClock::Get().SleepFor(absl::Milliseconds(20), stop)) {
      queue_.ShutDown();
      return absl::CancelledError(
          base::StrCat("controller ", name_, ": stopped before caches synced"));
    }
  }
  SP_LOG(Info).Msg("starting workers").KV("controller", name_).KV("workers", workers_);
  {
    std::vector<std::jthread> threads;
    threads.reserve(workers_);
    for (int i = 0; i < workers_; ++i) {
      threads.emplace_back([this, stop] { Worker(stop); });
    }
    std::stop_callback on_stop(stop, [this] { queue_.ShutDown(); });
    for (auto& t : threads) t.join();
  }
  SP_LOG(Info).Msg("workers stopped").KV("controller", name_);
  return absl::OkStatus();
}

void Controller::Worker(std::stop_token stop) {
  while (auto key = queue_.Get(stop)) {
    active_workers_.Inc();
    ProcessOne(*key, stop);
    active_workers_.Dec();
    queue_.Done(*key);
  }
}

void Controller::ProcessOne(const std::string& key, std::stop_token stop) {
  const ReconcileRequest req = ReconcileRequest::FromKey(key);
  const absl::Time start = clock_.Now();
  absl::StatusOr<ReconcileResult> result;
  try {
    result = reconciler_->Reconcile(req, stop);
  } catch (const std::exception& e) {
    // Our code does not throw; a third-party throw must not take the process down.
    result = absl::InternalError(base::StrCat("reconciler threw: ", e.what()));
  }
  reconcile_time_.Observe(absl::ToDoubleSeconds(clock_.Now() - start));
  if (!result.ok()) {
    reconcile_total_.WithLabels({{"controller", name_}, {"result", "error"}}).Inc();
    reconcile_errors_.WithLabels({{"controller", name_}}).Inc();
    SP_LOG(Error)
        .Msg("reconcile failed")
        .KV("controller", name_)
        .KV("key", key)
        .KV("retries", queue_.NumRequeues(key))
        .KV("err", result.status());
    queue_.AddRateLimited(key);
    return;
  }
  if (result->requeue_after > absl::ZeroDuration()) {
    reconcile_total_.WithLabels({{"controller", name_}, {"result", "requeue_after"}}).Inc();
    queue_.Forget(key);
    queue_.AddAfter(key, result->requeue_after);
    return;
  }
  if (result->requeue) {
    reconcile_total_.WithLabels({{"controller", name_}, {"result", "requeue"}}).Inc();
    queue_.AddRateLimited(key);
    return;
  }
  reconcile_total_.WithLabels({{"controller", name_}, {"result", "success"}}).Inc();
  queue_.Forget(key);
}

}  // namespace spiderpool::kube
