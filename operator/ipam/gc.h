#pragma once
// IP garbage collection (reference §2.10; spiderpool-controller, leader only): reclaims the
// status.allocatedIPs records of SpiderIPPools, and the SpiderEndpoints, of pods that no longer
// use their IPs. The decision for each record is gc_policy.h's Decide(); this file is the
// machinery around it.
//
// Triggers (event handlers only enqueue a pod key "ns/name" on a work queue):
//   - pod informer: a pod deleted; a pod Terminating or Succeeded/Failed (added or updated);
//   - node informer: a node deleted (every cached pod bound to it);
//   - SpiderEndpoint informer: an endpoint whose pod is missing, has another UID or is dying;
//   - StatefulSet informer: a scale-down / ordinals change / deletion (the ordinals that left);
//   - a full scan once the caches have synced and then every `interval` (default 600 s, Helm
//     ipam.gc.gcAll.intervalInSecond), or on TriggerScan() (the CLI's POST /v1/ipam/gc_ips):
//     every pod named by a pool record or an endpoint.
// Handlers enqueue only while Run() is active (i.e. on the leader); the first scan covers
// whatever happened before.
//
// One reconcile of a pod key: decide every record of that pod name (found through a pool-cache
// index) and its endpoint from the caches; when something would be reclaimed, read the pod,
// endpoint, node and StatefulSet again from the API server (the caches may lag) and decide
// again. Then, per pool, remove the records from status.allocatedIPs with one UpdateStatus on
// the pool's resourceVersion (a 409 re-reads the pool and retries; only records still naming
// the same pod and UID are removed, so concurrent writers lose nothing; allocatedIPCount is
// rewritten, and with Caches::reserved_ips so are totalIPCount/reservedIPCount/freeIPCount, as
// PoolController computes them). Then, if the endpoint's UID was reclaimed
// (or the endpoint is stale) and none of its records failed: remove finalizer
// `spiderpool.spidernet.io` (Update) and delete it (preconditions uid + resourceVersion).
// A Terminating/terminated pod whose grace period has not run out is requeued for its deadline
// (on the injected clock, so tests move a SimulatedClock instead of sleeping).
//
// Metrics: spiderpool_ip_gc_counts_total and spiderpool_ip_gc_failure_counts_total (upstream's
// names), spiderpool_ip_gc_total{reason}, spiderpool_endpoint_gc_total{reason},
// spiderpool_ip_gc_scans_total, and the controller's controller_runtime_* / workqueue_*
// series (name "spiderpool-ip-gc").

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <functional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/apps.h"
#include "api/core.h"
#include "api/spider.h"
#include "base/backoff.h"
#include "base/clock.h"
#include "kube/controller/controller.h"
#include "kube/controller/manager.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/client.h"
#include "operator/ipam/caches.h"
#include "operator/ipam/gc_policy.h"

namespace spiderpool::op::ipam {

struct GCOptions {
  // SPIDERPOOL_GC_DEFAULT_INTERVAL_DURATION: the period of the full scan.
  absl::Duration interval = absl::Seconds(600);
  // SPIDERPOOL_GC_ADDITIONAL_GRACE_DELAY: added to every pod's grace period.
  absl::Duration additional_grace_delay = absl::ZeroDuration();
  // enableStatefulSet (spiderpool-conf): keep the IPs of valid StatefulSet pods.
  bool enable_statefulset = true;
  // SPIDERPOOL_GC_STATELESS_TERMINATING_POD_ON_{READY,NOT_READY}_NODE_ENABLED.
  bool gc_terminating_pod_on_ready_node = true;
  bool gc_terminating_pod_on_not_ready_node = true;
  // enableKubevirtStaticIP: keep the IPs of KubeVirt VMs (see GCPolicy).
  bool enable_kubevirt_static_ip = true;
  int workers = 3;  // upstream's 3 release workers
  base::Clock* clock = nullptr;                 // grace periods, scan period, queue delays
  kube::metrics::Registry* registry = nullptr;  // nullptr = Registry::Default()
  // Retries of one pool/endpoint write on 409 (re-reading in between); real-time sleeps.
  base::BackoffPolicy conflict_retry = {.initial = absl::Milliseconds(5),
                                        .max = absl::Milliseconds(200),
                                        .factor = 2.0,
                                        .jitter = 0.2,
                                        .steps = 10};
};

class IPGarbageCollector : public kube::Runnable {
 public:
  // The pool-cache index this class adds: pod "ns/name" -> pools with a record for it.
  static constexpr char kPoolPodIndex[] = "spiderpool.spidernet.io/allocated-pod";

  // Needs caches.pools, .endpoints, .pods, .nodes, and .statefulsets when enable_statefulset
  // (without it, StatefulSet checks read the API server); .reserved_ips is optional.
  // Adds kPoolPodIndex and event handlers to those informers: construct before they run.
  IPGarbageCollector(GCOptions options, std::shared_ptr<kube::RestClient> rest,
                     const Caches& caches);
  ~IPGarbageCollector() override;
  IPGarbageCollector(const IPGarbageCollector&) = delete;
  IPGarbageCollector& operator=(const IPGarbageCollector&) = delete;

  std::string Name() const override { return "spiderpool-ip-gc"; }
  bool NeedsLeaderElection() const override { return true; }
  // Workers + the periodic scan, until `stop`.
  absl::Status Run(std::stop_token stop) override;

  // Enqueues every pod named by a pool record or an endpoint (what the periodic scan does).
  // Returns how many keys were enqueued; 0 and nothing done unless Run() is active.
  size_t TriggerScan();
  // Completed scans (TriggerScan calls that enqueued), for tests and health.
  uint64_t scans() const { return scans_.load(); }

  // One reconcile of pod `ns/name`, as a worker runs it.
  absl::StatusOr<kube::ReconcileResult> ReconcilePod(const std::string& ns,
                                                     const std::string& name,
                                                     std::stop_token stop = {});

  kube::Controller& queue() { return *ctrl_; }

 private:
  struct Record {
    std::string pool;
    std::string ip;
    std::string uid;
  };
  void RegisterHandlers();
  void Enqueue(const std::string& key);
  bool CachesSynced() const;
  std::vector<Record> CachedRecords(const std::string& key) const;
  // The records of pod `key` in the live pools: those of `cached` and those `endpoint` names.
  absl::StatusOr<std::vector<Record>> LiveRecords(const std::string& key,
                                                  const std::vector<Record>& cached,
                                                  const api::SpiderEndpoint* endpoint) const;
  PodFacts CachedFacts(const std::string& ns, const std::string& name) const;
  absl::StatusOr<PodFacts> LiveFacts(const std::string& ns, const std::string& name) const;
  // Whether the KubeVirt VM behind VMI `ns`/`vmi` still wants its IPs (live GETs).
  absl::StatusOr<bool> VMWantsItsIPs(const std::string& ns, const std::string& vmi) const;
  void NoteTerminal(PodFacts* facts, absl::Time now);
  // Frees `node`'s reservations `ips` in `pool` once a live read confirms the node is gone.
  void ReleaseReservationsOfGoneNode(const std::string& pool, const std::string& node,
                                     const std::vector<std::string>& ips);
  // Removes the records of `pool` that `remove` selects (live read, conflict retries, counts
  // kept); returns the IPs removed.
  absl::StatusOr<std::vector<std::string>> RemoveRecords(
      const std::string& pool,
      const std::function<bool(const std::string& ip, const api::PoolIPAllocation& rec)>& remove);
  // Removes the (ip -> uid) records of pod `key` from `pool`; returns the IPs removed.
  absl::StatusOr<std::vector<std::string>> ReleaseFromPool(
      const std::string& pool, const std::string& key,
      const std::map<std::string, std::string>& ip_to_uid);
  // Removes the endpoint's finalizer and deletes it if it still belongs to `uid`.
  absl::StatusOr<bool> DeleteEndpoint(const std::string& ns, const std::string& name,
                                      const std::string& uid);

  GCOptions options_;
  GCPolicy policy_;
  base::Clock& clock_;
  std::shared_ptr<kube::RestClient> rest_;
  Caches caches_;
  kube::Client<api::SpiderIPPool> pools_;
  kube::Client<api::SpiderEndpoint> endpoints_;
  kube::Client<api::Pod> pods_;
  kube::Client<api::Node> nodes_;
  kube::Client<api::StatefulSet> statefulsets_;
  std::unique_ptr<kube::Reconciler> reconciler_;
  std::unique_ptr<kube::Controller> ctrl_;
  std::atomic<bool> running_{false};
  std::atomic<uint64_t> scans_{0};

  mutable std::mutex mu_;
  std::map<std::string, absl::Time> first_terminal_;  // pod uid -> first seen terminal; mu_

  kube::metrics::Counter& gc_counts_;
  kube::metrics::Counter& gc_failures_;
  kube::metrics::Family<kube::metrics::Counter>& gc_by_reason_;
  kube::metrics::Family<kube::metrics::Counter>& endpoint_gc_;
  kube::metrics::Counter& scans_total_;
};

}  // namespace spiderpool::op::ipam
