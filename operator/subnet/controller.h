#pragma once
// The SpiderSubnet application controller (upstream pkg/applicationcontroller +
// SubnetManager.ReconcileAutoIPPool; reference §2.7): for every Deployment, ReplicaSet (without
// a controller owner), StatefulSet, DaemonSet, Job (without a controller owner) and CronJob
// whose pod template carries ipam.spidernet.io/subnet(s), it keeps one SpiderIPPool per
// app × NIC × family, with IPs taken from the SpiderSubnet, sized to the workload, and deletes
// it with the app when ipam.spidernet.io/ippool-reclaim is true (the default).
//
//   auto ctrl = op::subnet::AddToManager(&mgr, rest, {.enable_ipv6 = conf.enableIPv6, ...},
//                                        {.pools = &pools, .subnets = &subnets,
//                                         .reserved_ips = &reserved});
//
// Work queue "spidersubnet-application", keyed "Kind/namespace/name". One reconcile:
//   1. delete the app's pools labelled ippool-reclaim=true whose owner-application-uid is not
//      the live app's (the app is gone, or re-created with a new UID);
//   2. for each wanted pool (plan.h WantedAutoPools): find it by its labels (a kept,
//      reclaim=false pool of an earlier app of the same kind/ns/name is adopted) or name it
//      ipam::AutoPoolName; plan its IPs (plan.h PlanPoolIPs); then
//        a. SpiderSubnet status: record = target, releasing record = what the pool lists or
//           holds beyond it (UpdateStatus on the read resourceVersion);
//        b. create the pool, or update labels / ippool-ip-number / spec.ips (Update on the
//           read resourceVersion: an allocation by the agent in between is a 409);
//        c. once the pool (read live) no longer lists them, free the releasing record.
//      Any 409 (or AlreadyExists) re-reads the subnet and the pool live and starts again
//      (conflict_retry), so several apps scaling against one subnet never share an IP: an IP
//      is free in controlledIPPools only when no pool lists it. The record is written before
//      the pool, so the pool's spec.ips always equals its record when the validating webhook
//      looks (upstream's rule), and a crash between the writes is repaired by the next run;
//   3. free the subnet records of this app whose pool no longer exists (read live).
// status.totalIPCount / allocatedIPCount / freeIPCount of the subnet are written with every
// controlledIPPools change (operator/ipam/counts.h, as PoolController computes them).
//
// Problems the user must fix are Warning Events on the application (kube/events), logged, and
// not retried until something changes: a bad annotation ("InvalidSubnetAnnotation"), a subnet
// of the other family or a pool of another subnet ("ApplicationSubnetChanged"). Waiting states
// are Events too and are retried when the subnet or a SpiderReservedIP changes (and every
// `wait_requeue`): subnet missing or terminating ("SubnetNotReady"), too few free IPs
// ("InsufficientSubnetIPs": nothing is written, no partial pool). A pool that cannot shrink
// because its IPs are allocated stays larger and shrinks when its allocations change.
//
// Leader only (NeedsLeaderElection() = true). Informers: pass the ones the binary shares
// (pools, subnets and reserved IPs are also PoolController's); those left null are created here
// and run by Run() itself (after election, as upstream starts its app informers). Handlers and
// two indexers are registered in the constructor: construct BEFORE shared informers run; they
// must outlive Run.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/apps.h"
#include "api/spider.h"
#include "base/backoff.h"
#include "base/clock.h"
#include "kube/controller/controller.h"
#include "kube/controller/manager.h"
#include "kube/events/recorder.h"
#include "kube/informer/informer.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/client.h"
#include "operator/subnet/plan.h"

namespace spiderpool::op::subnet {

struct AutoPoolOptions {
  bool enable_spider_subnet = true;              // ipam.spiderSubnet.enable
  bool enable_auto_pool_for_application = true;  // ipam.spiderSubnet.autoPool.enable
  // Helm ipam.spiderSubnet.autoPool.defaultRedundantIPNumber: the flexible IPs of an app
  // without ipam.spidernet.io/ippool-ip-number.
  int64_t cluster_subnet_default_flexible_ip_number = 1;
  bool enable_ipv4 = true;   // ipam.enableIPv4: families switched off get no pool
  bool enable_ipv6 = false;  // ipam.enableIPv6
  int workers = 3;
  // Only applications of this namespace (and their pools); "" = all namespaces.
  std::string namespace_;
  // Retries of one pool's write sequence on 409 Conflict / AlreadyExists (re-reading live).
  base::BackoffPolicy conflict_retry = {.initial = absl::Milliseconds(5),
                                        .max = absl::Milliseconds(300),
                                        .factor = 2.0,
                                        .jitter = 0.5,
                                        .steps = 20};
  // Re-check of a waiting app (missing subnet, too few IPs) besides the event-driven wake-up.
  absl::Duration wait_requeue = absl::Seconds(30);
  base::Clock* clock = nullptr;                 // work queue delays; nullptr = RealClock
  kube::metrics::Registry* registry = nullptr;  // nullptr = Registry::Default()
  // Where Events go; nullptr = an own recorder (component "spiderpool-controller").
  kube::EventRecorder* recorder = nullptr;
  // Labels added to every auto pool created here (tests use them to scope their informers on
  // a shared cluster); empty in production.
  std::map<std::string, std::string> extra_pool_labels;
};

// Informers the controller reads. Null ones are created (all namespaces, or
// AutoPoolOptions::namespace_ for the workloads) and run by the controller.
struct Informers {
  kube::Informer<api::SpiderIPPool>* pools = nullptr;
  kube::Informer<api::SpiderSubnet>* subnets = nullptr;
  kube::Informer<api::SpiderReservedIP>* reserved_ips = nullptr;
  kube::Informer<api::Deployment>* deployments = nullptr;
  kube::Informer<api::ReplicaSet>* replicasets = nullptr;
  kube::Informer<api::StatefulSet>* statefulsets = nullptr;
  kube::Informer<api::DaemonSet>* daemonsets = nullptr;
  kube::Informer<api::Job>* jobs = nullptr;
  kube::Informer<api::CronJob>* cronjobs = nullptr;
  // Pods, for applications of third-party controllers (OpenKruise CloneSet, ...): never created
  // here (the binary shares its pod informer); null = no auto pools for third-party apps.
  kube::Informer<api::Pod>* pods = nullptr;
};

class AutoPoolController : public kube::Runnable {
 public:
  // Work-queue key of an application: "Deployment/ns/name".
  static std::string AppKey(std::string_view kind, std::string_view ns, std::string_view name);
  // Work-queue key of a third-party application: "apps.kruise.io/v1alpha1:CloneSet/ns/name".
  static std::string ThirdPartyAppKey(std::string_view api_version, std::string_view kind,
                                      std::string_view ns, std::string_view name);
  // Index on the pool informer: IdentityKey of an auto pool's owner labels.
  static constexpr char kPoolAppIndex[] = "spiderpool.op.subnet/application";
  // Index on the subnet informer: the `application` strings of its controlledIPPools.
  static constexpr char kSubnetAppIndex[] = "spiderpool.op.subnet/controlled-application";

  AutoPoolController(AutoPoolOptions options, std::shared_ptr<kube::RestClient> rest,
                     Informers informers = {});
  ~AutoPoolController() override;
  AutoPoolController(const AutoPoolController&) = delete;
  AutoPoolController& operator=(const AutoPoolController&) = delete;

  std::string Name() const override { return "spidersubnet-application"; }
  bool NeedsLeaderElection() const override { return true; }
  // Runs the informers it owns and the workers until `stop`.
  absl::Status Run(std::stop_token stop) override;

  // One reconciliation of an application key, as a worker runs it.
  absl::StatusOr<kube::ReconcileResult> Reconcile(const std::string& app_key);

  kube::Controller& controller() { return *ctrl_; }
  const Informers& informers() const { return inf_; }

 private:
  enum class Outcome { kDone, kWaiting, kUserError };

  void RegisterHandlers();
  void EnqueueApp(const Application& app, bool deleted);
  void EnqueuePool(const api::SpiderIPPool& pool);
  void AddWaiting(const std::string& subnet, const std::string& key);
  void WakeWaiting(const std::string& subnet);  // "" = every waiting app
  bool Synced() const;
  bool InScope(std::string_view ns) const;

  // A third-party application as its pods show it: the annotations of its newest live pod;
  // nullopt when none is live. *any_uid: the controller UID that some pod (live or not) still
  // names, "" when no pod of the application is left.
  std::optional<Application> LookupThirdPartyApp(std::string_view api_version,
                                                 std::string_view kind, std::string_view ns,
                                                 std::string_view name, std::string* any_uid) const;
  std::string KeyOf(const Application& app) const;
  std::optional<Application> LookupApp(std::string_view kind, std::string_view ns,
                                       std::string_view name) const;
  // Step 2 for one wanted pool; sets *pool_name to the pool's name.
  absl::StatusOr<Outcome> EnsurePool(
      const Application& app, const AutoPoolWant& want,
      const std::vector<std::shared_ptr<const api::SpiderIPPool>>& app_pools,
      const std::string& key, std::string* pool_name);
  absl::Status DeleteReclaimedPools(
      const std::vector<std::shared_ptr<const api::SpiderIPPool>>& app_pools,
      const std::string& live_uid);
  absl::Status FreeStaleRecords(const std::string& application,
                                const std::set<std::string>& keep_pools);
  // Removes `keys` (those still recorded for `application`) from the controlledIPPools of
  // `subnet` (a live re-read on 409).
  absl::Status EraseRecords(api::SpiderSubnet subnet, const std::set<std::string>& keys,
                            const std::string& application);
  // Writes status.controlledIPPools (and the counts) of `subnet`.
  absl::StatusOr<api::SpiderSubnet> WriteControlled(api::SpiderSubnet subnet,
                                                    const api::PoolIPPreAllocations& controlled);
  std::vector<base::IPRange> Reserved(base::IPFamily family) const;
  void Warn(const Application& app, const std::string& reason, const std::string& message);

  AutoPoolOptions options_;
  std::shared_ptr<kube::RestClient> rest_;
  Informers inf_;
  // Informers created here (run by Run()).
  std::unique_ptr<kube::Informer<api::SpiderIPPool>> own_pools_;
  std::unique_ptr<kube::Informer<api::SpiderSubnet>> own_subnets_;
  std::unique_ptr<kube::Informer<api::SpiderReservedIP>> own_reserved_;
  std::unique_ptr<kube::Informer<api::Deployment>> own_deployments_;
  std::unique_ptr<kube::Informer<api::ReplicaSet>> own_replicasets_;
  std::unique_ptr<kube::Informer<api::StatefulSet>> own_statefulsets_;
  std::unique_ptr<kube::Informer<api::DaemonSet>> own_daemonsets_;
  std::unique_ptr<kube::Informer<api::Job>> own_jobs_;
  std::unique_ptr<kube::Informer<api::CronJob>> own_cronjobs_;
  std::unique_ptr<kube::EventRecorder> own_recorder_;
  kube::EventRecorder* recorder_ = nullptr;

  kube::Client<api::SpiderIPPool> pools_;
  kube::Client<api::SpiderSubnet> subnets_;
  std::unique_ptr<kube::Reconciler> reconciler_;
  std::unique_ptr<kube::Controller> ctrl_;

  std::mutex mu_;
  std::map<std::string, std::set<std::string>> waiting_;  // subnet -> app keys; guarded by mu_
};

// Builds the controller and adds it to `mgr` (which owns it) when both enable_spider_subnet and
// enable_auto_pool_for_application are on; returns it, or nullptr when the feature is off.
// InvalidArgument for a negative flexible IP number, no enabled family or workers < 1. Call
// before mgr->Run and before the shared informers run.
absl::StatusOr<AutoPoolController*> AddToManager(kube::Manager* mgr,
                                                 std::shared_ptr<kube::RestClient> rest,
                                                 AutoPoolOptions options, Informers informers = {});

}  // namespace spiderpool::op::subnet
