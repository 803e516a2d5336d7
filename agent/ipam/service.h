#pragma once
// The agent's IPAM request flow (reference §2.1, §2.5, §2.6, §2.10), on top of:
//   - the agent's informer caches (caches.h, shared; not owned): this node's Pods, Namespaces,
//     this Node, SpiderIPPools, SpiderReservedIPs, SpiderEndpoints (a cache miss falls back to
//     one GET);
//   - ipam/ (pure): candidate pools, the per-pool allocator, the result shape;
//   - GroupCommitter: every pool write, batched with whatever else is queued for the pool.
//
// ADD (Allocate):
//   1. the pod must exist, be on this node, match the UID the runtime gave, and be alive;
//   2. an endpoint of this pod (same UID) already holding this NIC answers from the endpoint
//      (a repeated ADD; a new sandbox of the same pod takes the records over);
//   3. a StatefulSet pod re-created under the same name gets its old IPs back (records are
//      re-assigned to the new UID) as long as its pools are still candidates;
//   4. otherwise: candidate pools (ipam::SelectPools), one IP per NIC x family, each pool of
//      a family tried in order; then the SpiderEndpoint is written.
//   Any failure undoes what this request allocated: no partial allocation survives.
// DEL (Release): the records of this pod UID *and this container* are removed from its pools
//   (a late DEL of an old sandbox cannot free the IPs of the pod's new sandbox), then the
//   endpoint goes. A StatefulSet pod whose StatefulSet still wants that ordinal keeps its IPs
//   (the controller's GC decides later). Releasing nothing is success (DEL is idempotent).
//
// Requests for one pod are serialised; requests for different pods run in parallel.
//
// A failed ADD of a pod that exists (and is alive) on this node is also recorded as a Warning
// Event on the pod (ServiceOptions::recorder; asynchronous, never fails or delays the ADD):
// reason kEventReasonIPPoolExhausted when every candidate pool was full, else
// kEventReasonAllocationFailed; the message names the NIC, the candidate IPPools and the error.

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/cni/ipam_conf.h"
#include "agent/ipam/blocks.h"
#include "agent/ipam/caches.h"
#include "agent/ipam/committer.h"
#include "agent/ipam/pool_writer.h"
#include "agent/ipam/config.h"
#include "agent/ipam/server.h"
#include "agent/ipamapi/ipamapi.h"
#include "api/core.h"
#include "api/nad.h"
#include "api/spider.h"
#include "base/clock.h"
#include "ipam/pool.h"
#include "ipam/result.h"
#include "ipam/selection.h"
#include "kube/events/recorder.h"
#include "kube/informer/informer.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/client.h"

namespace spiderpool::agent::ipam {

// Reasons of the Warning Event on a pod whose IPAM ADD failed.
inline constexpr char kEventReasonIPPoolExhausted[] = "IPPoolExhausted";
inline constexpr char kEventReasonAllocationFailed[] = "IPAMAllocationFailed";

struct ServiceOptions {
  std::string node_name;
  // Namespace spiderpool runs in (bare multusName entries refer to it).
  std::string agent_namespace = "kube-system";
  std::optional<std::string> multus_cluster_network;
  IPAMConfig config;
  base::Clock* clock = nullptr;
  kube::metrics::Registry* registry = nullptr;
  // Warning Events on pods whose ADD failed (not owned; must outlive the service); nullptr =
  // the failure is only logged.
  kube::EventRecorder* recorder = nullptr;
  // PoolWriterOptions::prewarm_stagger (tests that must see an ADD come before the prewarm).
  absl::Duration prewarm_stagger = absl::Seconds(1);
};


class IpamService : public IpamBackend {
 public:
  // Registers its handlers on `caches` (must outlive the service): before they run.
  IpamService(std::shared_ptr<kube::RestClient> rest, ServiceOptions options, Caches& caches);
  ~IpamService() override;  // Stop()

  // Starts and stops the pool writer's background threads; Ready() once every IPAM cache has
  // synced (the caches are run by their owner).
  void Start();
  void Stop();
  // Blocks until the caches are synced (or the timeout passes).
  bool WaitForSync(absl::Duration timeout);

  bool Ready() const override;
  absl::StatusOr<ipamapi::IpamAddResponse> Allocate(const ipamapi::IpamAddArgs& args,
                                                    absl::Time deadline) override;
  absl::Status Release(const ipamapi::IpamDelArgs& args, absl::Time deadline) override;

  CommitterStats committer_stats() const { return writer_.committer_stats(); }
  NodeBlocks::Stats block_stats() const { return writer_.block_stats(); }
  // IPs of `pool` this node reserved and already handed to pods (NodeBlocks::HandedOut).
  std::set<base::IPAddress> HandedOutReservations(const std::string& pool) const {
    return writer_.HandedOutReservations(pool);
  }
  // Writes every IP handed out from this node's reservations as a pod record, and frees the
  // records of the DELs that returned, now (both are written in the background anyway; see
  // blocks.h).
  absl::Status FlushReservations(absl::Time deadline) { return writer_.FlushReservations(deadline); }
  // Pod records of DELs that returned and that the background has not freed yet (blocks.h).
  int64_t PendingReleases() const { return writer_.PendingReleases(); }


 private:
  class PodLock;

  absl::StatusOr<std::shared_ptr<const api::Pod>> LivePod(const std::string& ns,
                                                          const std::string& name,
                                                          const std::string& uid);
  absl::StatusOr<::spiderpool::ipam::PodOwner> ResolveOwner(const api::Pod& pod);
  absl::StatusOr<std::optional<api::SpiderEndpoint>> FindEndpoint(const std::string& ns,
                                                                   const std::string& name,
                                                                   bool cache_only);
  // The endpoint as the API server has it now (nullopt: none).
  absl::StatusOr<std::optional<api::SpiderEndpoint>> GetEndpoint(const std::string& ns,
                                                                 const std::string& name);
  absl::StatusOr<::spiderpool::ipam::SelectionRequest> BuildSelectionRequest(
      const api::Pod& pod, const ::spiderpool::ipam::PodOwner& owner,
      const ipamapi::IpamAddArgs& args);
  std::vector<const api::SpiderIPPool*> PoolSnapshot(
      std::vector<std::shared_ptr<const api::SpiderIPPool>>* keep) const;
  // NodeBlocks' prewarm and standing blocks: the pools the selection picks for the waiting
  // pods (first candidate per NIC and family) and for a pod without annotations on this node,
  // with the NIC and default pools of this node's last ADD (eth0 and none before the first
  // one). Predictions are kept per pod UID while it waits.
  PoolForecast Forecast();
  // `args` with the default pools of the NetworkAttachmentDefinition a pod with `annotations`
  // in `ns` attaches `args.if_name` through (ipam::NetworkForNIC: Multus passes that NAD's
  // config to the plugins, so its ADD will carry them), when that NAD's config uses the
  // spiderpool IPAM; else `args` unchanged. This is how the prewarm knows the pools of a
  // node's first pods, before any ADD has shown the agent a network configuration.
  ipamapi::IpamAddArgs WithNetworkDefaults(ipamapi::IpamAddArgs args,
                                           const std::map<std::string, std::string>& annotations,
                                           std::string_view ns);
  // The spiderpool IPAM section of NAD "ns/name", read at most once per kNadTtl (nullopt: no
  // such NAD, it cannot be read, or it does not use spiderpool; an unreadable one is logged).
  std::optional<cni::IPAMConf> NadIpamOf(const std::string& nad);
  static constexpr absl::Duration kNadTtl = absl::Seconds(30);
  ::spiderpool::ipam::SelectionConfig SelectionConfigFor() const;

  // The last sandbox (container) of pod `uid` whose ADD succeeded here.
  void NoteSandbox(const std::string& uid, const std::string& container_id);
  // Whether a sandbox of pod `uid` newer than `container_id` holds IPs: from NoteSandbox, else
  // (an ADD of an earlier agent run) OtherContainerHolds.
  bool NewerSandboxHolds(const std::vector<std::string>& pools, const std::string& uid,
                         const std::string& container_id);

  // What a failed ADD knows for the pod's Warning Event.
  struct AddFailure {
    std::shared_ptr<const api::Pod> pod;  // set once the pod is known to exist and be alive
    std::vector<std::string> pools;       // the candidate pools, once selected
  };
  void RecordAddFailure(const ipamapi::IpamAddArgs& args, const AddFailure& failure,
                        const absl::Status& error);

  absl::StatusOr<ipamapi::IpamAddResponse> DoAllocate(const ipamapi::IpamAddArgs& args,
                                                      absl::Time deadline, AddFailure* failure);
  absl::Status DoRelease(const ipamapi::IpamDelArgs& args, absl::Time deadline);
  void RegisterMetrics(kube::metrics::Registry& registry);

  absl::StatusOr<ipamapi::IpamAddResponse> AllocateFresh(
      const ipamapi::IpamAddArgs& args, const api::Pod& pod,
      const ::spiderpool::ipam::PodOwner& owner, const std::optional<api::SpiderEndpoint>& old,
      absl::Time deadline, std::vector<std::string>* candidate_pools);
  absl::Status WriteEndpoint(const std::optional<api::SpiderEndpoint>& old, const api::Pod& pod,
                             const ::spiderpool::ipam::PodOwner& owner,
                             std::vector<api::IPAllocationDetail> details);
  absl::Status DeleteEndpoint(const api::SpiderEndpoint& endpoint);
  // A StatefulSet pod whose StatefulSet still wants its ordinal (reference §2.6).
  absl::StatusOr<bool> ValidStatefulSetPod(const std::string& ns, const std::string& pod_name,
                                           const std::string& sts_name);
  // KubeVirt static IPs (reference §2.6): whether `owner` is a VMI and the feature is on; the
  // endpoint (and record) name of a pod: its VMI's name then, else its own.
  bool KubevirtStaticIP(const ::spiderpool::ipam::PodOwner& owner) const;
  std::string EndpointName(const api::Pod& pod, const ::spiderpool::ipam::PodOwner& owner) const;
  // enableIPConflictDetection for this pod's reply: off for the target pod of a VM's live
  // migration (its VirtualMachineInstanceMigration exists), where the source still holds the IP.
  bool ConflictDetectionFor(const api::Pod& pod, const ::spiderpool::ipam::PodOwner& owner);
  // Whether the VM behind VMI `ns`/`vmi` still wants its IPs (api/kubevirt.h), from live GETs.
  absl::StatusOr<bool> VMWantsItsIPs(const std::string& ns, const std::string& vmi);
  // The pools that hold records of a pod UID (their newest status: PoolCache::Fresh), and the
  // "ns/name" those records name.
  struct UidRecords {
    std::vector<std::string> pools;
    std::set<std::string> owners;
  };
  UidRecords RecordsOf(const std::string& uid) const;
  // The VMI name of a released pod of UID `uid`: from the cached pod, else from its pool
  // records kept under another name. nullopt: not a VM's pod.
  std::optional<std::string> VMIOfPod(const std::string& ns, const std::string& pod_name,
                                      const std::string& uid, const UidRecords& records) const;
  ipamapi::IpamAddResponse ToWire(const std::vector<api::IPAllocationDetail>& details,
                                  bool conflict_detection) const;
  std::vector<std::string> PoolsOf(const api::SpiderEndpoint& endpoint) const;

  std::shared_ptr<kube::RestClient> rest_;
  ServiceOptions options_;
  base::Clock* clock_;
  kube::Client<api::Pod> pods_;
  kube::Client<api::SpiderEndpoint> endpoints_;
  kube::Client<api::NetworkAttachmentDefinition> nads_;

  // The shared caches (caches.h).
  Caches& caches_;
  // After the informers: it reads their stores.
  PoolWriter writer_;

  struct Metrics {
    kube::metrics::Counter* allocations = nullptr;
    kube::metrics::Counter* allocation_failures = nullptr;
    kube::metrics::Histogram* allocation_seconds = nullptr;
    kube::metrics::Counter* releases = nullptr;
    kube::metrics::Counter* release_failures = nullptr;
    kube::metrics::Histogram* release_seconds = nullptr;
  } metrics_;
  kube::metrics::Registry* registry_ = nullptr;
  kube::metrics::Registry::HookId collect_hook_ = 0;


  // ReplicaSet/Job UID -> its top controller (Deployment/CronJob); bounded.
  static constexpr size_t kMaxCachedOwners = 4096;
  absl::Mutex owners_mu_;
  std::map<std::string, ::spiderpool::ipam::PodOwner> top_owners_ ABSL_GUARDED_BY(owners_mu_);

  // What Forecast() predicts with: the last ADD's NIC and default pools, and its
  // predictions per waiting pod UID.
  absl::Mutex prewarm_mu_;
  ipamapi::IpamAddArgs add_template_ ABSL_GUARDED_BY(prewarm_mu_);
  std::map<std::string, std::vector<std::string>> predicted_ ABSL_GUARDED_BY(prewarm_mu_);
  std::map<std::string, std::string> sandboxes_ ABSL_GUARDED_BY(prewarm_mu_);  // uid -> container
  std::map<std::string, std::pair<absl::Time, std::optional<cni::IPAMConf>>> nad_ipam_
      ABSL_GUARDED_BY(prewarm_mu_);  // NadIpamOf: "ns/name" -> (read at, what it said)

  absl::Mutex locks_mu_;
  std::map<std::string, std::pair<std::unique_ptr<absl::Mutex>, int>> pod_locks_
      ABSL_GUARDED_BY(locks_mu_);
};

}  // namespace spiderpool::agent::ipam
