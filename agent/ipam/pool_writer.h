#pragma once
// PoolWriter: the agent's one writer of SpiderIPPool records — the pool side of IPAM, split
// from the request flow (service.h) so that data flows one way: the request flow asks the
// writer for IPs and releases; the writer reads the shared informer caches (never the request
// flow's state) and writes the pools through the GroupCommitter (committer.h) and this node's
// reservations (blocks.h).
//
// What it does:
//   - TakeOne: one IP for a NIC and family from the first candidate pool that has one — from
//     this node's reservation when it can (no write), else through a group-committed write
//     that also tops the reservation up; a pool full while other nodes hold idle reservations
//     makes it ask them (blocks.h point 6) and wait, bounded;
//   - Undo / ReleasePodRecords / ReleaseInBackground / ReassignRecords: the record changes of
//     the request flow's undo, DEL and re-created pods;
//   - the hooks NodeBlocks reads, from the caches: the pool objects, this node's endpoints'
//     IPs, the pods waiting here, another node's ask.
// The one thing it does not know is which pools the waiting pods will use (that is pool
// selection, the request flow's business): PoolWriterOptions::forecast supplies it.
// Thread-safe.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/ipam/blocks.h"
#include "agent/ipam/committer.h"
#include "agent/ipam/pool_cache.h"
#include "api/core.h"
#include "api/spider.h"
#include "base/clock.h"
#include "base/ip.h"
#include "ipam/pool.h"
#include "ipam/result.h"
#include "kube/informer/informer.h"
#include "kube/rest/client.h"

namespace spiderpool::agent::ipam {

// The agent's shared caches (owned by the caller, outliving the writer).
struct PoolCaches {
  PoolCache* pools = nullptr;  // reads pools when needed, remembers this agent's reads/writes
  const kube::Store<api::SpiderEndpoint>* endpoints = nullptr;
  const kube::Store<api::SpiderReservedIP>* reserved = nullptr;
  const kube::Store<api::Pod>* pods = nullptr;  // this node's pods
  std::function<bool()> synced;                 // every cache above has synced
};

struct PoolWriterOptions {
  std::string node_name;
  int64_t block_size = 0;                  // nodeIPBlockSize (0: node reservations off)
  int64_t max_allocated_ips_per_pool = 0;  // 0: no limit beyond the pool's
  base::Clock* clock = nullptr;
  // IPs kept reserved per pool with no pod waiting (blocks.h point 8; 0: none).
  int64_t block_standing = 0;
  // The longest random pause before a prewarm or the first standing write (blocks.h points 4
  // and 8).
  absl::Duration prewarm_stagger = absl::Seconds(1);
  // The pools this node's pods are expected to use (the prewarm and the standing blocks,
  // blocks.h points 4 and 8); nullptr: none.
  std::function<PoolForecast()> forecast;
};

class PoolWriter {
 public:
  PoolWriter(std::shared_ptr<kube::RestClient> rest, PoolWriterOptions options, PoolCaches caches);
  ~PoolWriter();  // Stop()

  void Start();
  void Stop();
  // The informers' events the writer acts on (the caller registers them): a pool's metadata
  // changed (PoolCache::metadata()), a pod was scheduled here.
  void OnPoolChanged(const api::ObjectMeta* before, const api::ObjectMeta& after);
  void OnPodAdded();

  // One IP taken by a request (for undo).
  struct Taken {
    std::string pool;
    base::IPAddress ip;
    ::spiderpool::ipam::FamilyAllocation family;  // prefix, gateway, routes for the result
    bool from_block = false;  // handed out from this node's reservations (not written yet)
  };
  absl::StatusOr<Taken> TakeOne(const std::vector<std::string>& pools, int ip_version,
                                const ::spiderpool::ipam::AllocationRequest& request,
                                absl::Time deadline);
  // Best-effort undo of `taken` (records of `uid` on those IPs).
  void Undo(const std::vector<Taken>& taken, const std::string& uid, absl::Time deadline);
  // Frees the records of `uid` (of `container_id`, or of none, when set) and waits for the
  // writes; `*all_released` is false when other records of `uid` remain.
  absl::Status ReleasePodRecords(const std::vector<std::string>& pools, const std::string& uid,
                                 const std::string& container_id, absl::Time deadline,
                                 bool* all_released);
  // A DEL's release without waiting for the pool writes (blocks.h point 5): false when node
  // reservations are off or not running (then ReleasePodRecords). Call it after the pod's
  // SpiderEndpoint is gone.
  bool ReleaseInBackground(const std::vector<std::string>& pools, const std::string& uid,
                           const std::string& container_id);
  // Whether records of `uid` in `pools` belong to a container other than `container_id`, per
  // the pools' newest status and this node's reservations.
  bool OtherContainerHolds(const std::vector<std::string>& pools, const std::string& uid,
                           const std::string& container_id) const;
  // Moves the records of `endpoint` to `owner` (its UID, node and container).
  absl::Status ReassignRecords(const api::SpiderEndpoint& endpoint,
                               const ::spiderpool::ipam::AllocationRequest& owner,
                               absl::Time deadline);
  // Pools where `uid` holds IPs handed out from this node's reservations, not yet written.
  std::vector<std::string> PoolsWithUnflushed(const std::string& uid) {
    return blocks_.PoolsWithUnflushed(uid);
  }

  // Every SpiderReservedIP range (malformed ones are logged and reserve nothing).
  std::vector<base::IPRange> ReservedRanges() const;
  // The pool's resourceVersion as the metadata watch last saw it ("" if unknown).
  std::string MetaVersion(const std::string& pool) const;
  // Pods scheduled to this node whose ADD is still to come (no SpiderEndpoint of their UID).
  bool IsWaiting(const api::Pod& pod) const;
  std::set<std::string> WaitingPods() const;

  bool reservations_enabled() const { return blocks_.enabled(); }
  CommitterStats committer_stats() const { return committer_.stats(); }
  NodeBlocks::Stats block_stats() const { return blocks_.stats(); }
  std::set<base::IPAddress> HandedOutReservations(const std::string& pool) const {
    return blocks_.HandedOut(pool);
  }
  absl::Status FlushReservations(absl::Time deadline) { return blocks_.FlushAll(deadline); }
  int64_t PendingReleases() const { return blocks_.PendingReleases(); }

 private:
  // The API server, every answer remembered by the PoolCache.
  class KubePoolStore : public PoolStore {
   public:
    KubePoolStore(std::shared_ptr<kube::RestClient> rest, PoolCache* cache)
        : pools_(std::move(rest)), cache_(cache) {}
    absl::StatusOr<api::SpiderIPPool> Get(const std::string& name) override;
    absl::StatusOr<api::SpiderIPPool> UpdateStatus(const api::SpiderIPPool& pool) override;

   private:
    kube::Client<api::SpiderIPPool> pools_;
    PoolCache* cache_;
  };

  absl::StatusOr<::spiderpool::ipam::PoolState> BuildPool(const api::SpiderIPPool& pool) const;
  // This node's SpiderEndpoints' IPs in `pool` (NodeBlocks recovery).
  std::map<base::IPAddress, ::spiderpool::ipam::AllocationRequest> EndpointIPs(
      const std::string& pool) const;
  // Whether an IP is outside the SpiderReservedIPs (`*reserved`, read on first use).
  std::function<bool(const base::IPAddress&)> Usable(
      std::optional<std::vector<base::IPRange>>* reserved) const;
  // The fast path of TakeOne: an IP this node reserved earlier; nullopt: none.
  std::optional<Taken> TakeReserved(const std::string& pool,
                                    const ::spiderpool::ipam::AllocationRequest& request,
                                    std::optional<std::vector<base::IPRange>>* reserved,
                                    absl::Time deadline);
  // Writes the unflushed block assignments of `uid` in `pools` as pod records first.
  absl::Status FlushBlocks(const std::vector<std::string>& pools, const std::string& uid,
                           absl::Time deadline);
  // The other node whose fresh kAnnotationReservationsWanted `pool` carries; empty: none.
  std::string WantedBy(const std::string& pool) const;
  // Asks the other nodes for their idle reservations of `pool`: at most once per kAskEvery,
  // and not while another node's ask is that fresh (AskIsDue).
  void AskForReservations(const std::string& pool);
  static constexpr absl::Duration kAskEvery = absl::Seconds(1);

  PoolWriterOptions options_;
  PoolCaches caches_;
  base::Clock* clock_;
  KubePoolStore pool_store_;
  kube::Client<api::SpiderIPPool> pools_;  // the ask for reservations (a metadata patch)
  PoolCommitter committer_;
  NodeBlocks blocks_;

  absl::Mutex asked_mu_;
  std::map<std::string, absl::Time> asked_ ABSL_GUARDED_BY(asked_mu_);  // pool -> last ask
};

}  // namespace spiderpool::agent::ipam
