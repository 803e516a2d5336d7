#pragma once
// Keeps the books of SpiderIPPool and SpiderSubnet status (reference §1.1, §1.2, §2.8, §2.10).
//
// SpiderIPPool (workqueue "spiderippool-status"):
//   - status.totalIPCount = |ips - excludeIPs| = allocatedIPCount (pod records of
//     status.allocatedIPs, so drift is corrected) + reservedIPCount (node reservations and
//     SpiderReservedIP IPs no record holds) + freeIPCount (the last two our extensions), all from
//     api::CountPoolIPs (api/pool_counts.h, which the agent's writes use too); written only when
//     one differs, with UpdateStatus on the read resourceVersion (a 409 re-reads the pool and
//     recomputes).
//   - deletion: a pool being deleted keeps finalizer `spiderpool.spidernet.io` while any record
//     remains; once none does, the finalizer is removed (Update, conflict retry).
//   - requeued on: pool add/update; SpiderReservedIP add/update/delete (the pools it overlaps).
// SpiderSubnet (workqueue "spidersubnet-status", only when Caches::subnets is set):
//   - status.controlledIPPools rebuilt as upstream: entries of auto pools (with `application`;
//     keys "<pool>" and operator/subnet's "<pool>/releasing") are kept while their pool exists
//     (cache, then a live read) or their application still exists (a pre-allocation for a pool
//     not created yet); entries of manual pools are rebuilt from the pools labelled
//     `ipam.spidernet.io/owner-spider-subnet: <subnet>` (their usable IPs within the subnet's);
//   - status.totalIPCount = |ips - excludeIPs|, allocatedIPCount = IPs handed to pools (sum over
//     controlledIPPools), freeIPCount = usable - reserved - handed;
//   - deletion: the finalizer is removed once controlledIPPools is empty.
//   - requeued on: subnet add/update; pool add/update/delete (its owner subnet, by label or by
//     controlledIPPools entry); SpiderReservedIP changes (the subnets it overlaps).
// Status is never given fields the CRD lacks. Leader only (NeedsLeaderElection() = true).
//
// Metrics: spiderpool_total_ippool_counts, spiderpool_total_subnet_counts (gauges, from the
// caches, as upstream), plus the controllers' controller_runtime_* / workqueue_* series.

#include <functional>
#include <memory>
#include <stop_token>
#include <string>

#include "absl/status/statusor.h"
#include "api/spider.h"
#include "base/backoff.h"
#include "base/clock.h"
#include "base/ip.h"
#include "kube/controller/controller.h"
#include "kube/controller/manager.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/client.h"
#include "operator/ipam/caches.h"

namespace spiderpool::op::ipam {

struct PoolControllerOptions {
  int pool_workers = 3;    // SPIDERPOOL_IPPOOL_INFORMER_WORKERS
  int subnet_workers = 5;  // SPIDERPOOL_SUBNET_INFORMER_WORKERS
  base::Clock* clock = nullptr;            // nullptr = RealClock (work queue delays)
  kube::metrics::Registry* registry = nullptr;  // nullptr = Registry::Default()
  // Retries of one status write on 409 (re-reading in between); sleeps use the real clock.
  base::BackoffPolicy conflict_retry = {.initial = absl::Milliseconds(5),
                                        .max = absl::Milliseconds(200),
                                        .factor = 2.0,
                                        .jitter = 0.2,
                                        .steps = 10};
};

class PoolController : public kube::Runnable {
 public:
  // Needs caches.pools and caches.reserved_ips; caches.subnets enables the subnet part.
  // Registers handlers on those informers: construct before they run.
  PoolController(PoolControllerOptions options, std::shared_ptr<kube::RestClient> rest,
                 const Caches& caches);
  ~PoolController() override;
  PoolController(const PoolController&) = delete;
  PoolController& operator=(const PoolController&) = delete;

  std::string Name() const override { return "spiderpool-ippool-status"; }
  bool NeedsLeaderElection() const override { return true; }
  // Runs the pool (and subnet) workers until `stop`.
  absl::Status Run(std::stop_token stop) override;

  // One reconciliation, as a worker runs it (reads the caches; writes through the client).
  absl::StatusOr<kube::ReconcileResult> ReconcilePool(const std::string& name,
                                                      std::stop_token stop = {});
  absl::StatusOr<kube::ReconcileResult> ReconcileSubnet(const std::string& name,
                                                        std::stop_token stop = {});

  kube::Controller& pool_queue() { return *pool_ctrl_; }
  kube::Controller* subnet_queue() { return subnet_ctrl_.get(); }

 private:
  void RegisterHandlers();
  void EnqueueReservedChange(const api::SpiderReservedIP& r);
  // The owner subnet by label; with `search`, also subnets whose controlledIPPools name it.
  void EnqueueSubnetsOfPool(const api::SpiderIPPool& pool, bool search);
  std::vector<base::IPRange> Reserved() const;
  // Whether the application of an auto pool (upstream's "<group>_<version>_<Kind>_<ns>_<name>")
  // still exists; unparsable -> false; third-party kinds -> true (cannot be checked).
  absl::StatusOr<bool> ApplicationExists(const std::string& application) const;

  PoolControllerOptions options_;
  std::shared_ptr<kube::RestClient> rest_;
  Caches caches_;
  kube::Client<api::SpiderIPPool> pools_;
  kube::Client<api::SpiderSubnet> subnets_;
  std::unique_ptr<kube::Reconciler> pool_reconciler_;
  std::unique_ptr<kube::Reconciler> subnet_reconciler_;
  std::unique_ptr<kube::Controller> pool_ctrl_;
  std::unique_ptr<kube::Controller> subnet_ctrl_;
  kube::metrics::Registry& registry_;
  kube::metrics::Registry::HookId hook_ = 0;
};

}  // namespace spiderpool::op::ipam
