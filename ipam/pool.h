#pragma once
// PoolState: one SpiderIPPool as the allocator sees it — its usable set, its
// status.allocatedIPs records, and upstream's allocate/release rules (reference §2.5, §2.6,
// §2.8). Pure: the caller (the agent) reads the pool from its cache or a fresh GET, calls
// Allocate/Release here, writes the result back with WriteStatus() + a status update, and
// retries on a 409 by rebuilding from the fresh object.
//
//   SP_ASSIGN_OR_RETURN(PoolState st, PoolState::Build(pool, reserved));
//   SP_ASSIGN_OR_RETURN(PoolAllocation a, st.Allocate({.pod = "ns/p", .pod_uid = uid,
//                                                      .interface_ = "eth0"}));
//   st.WriteStatus(&pool);   // status.allocatedIPs and the four counts (api/pool_counts.h)
//
// Error codes (messages follow upstream's):
//   FailedPrecondition  "disabled IPPool <name>"
//   ResourceExhausted   "all IP addresses used out" (no free IP) or
//                       "all IP addresses used out, threshold of IP records(<=N) for IPPool
//                        <name> exceeded" (the max-records cap)
//   InvalidArgument     malformed spec/status (Build), or a bad request (empty pod/uid)

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "api/pool_counts.h"
#include "api/spider_ippool.h"
#include "base/ip.h"
#include "ipam/allocator.h"

namespace spiderpool::ipam {

// Upstream SPIDERPOOL_IPPOOL_MAX_ALLOCATED_IPS.
inline constexpr int64_t kDefaultMaxAllocatedIPs = 5000;

struct PoolOptions {
  // Allocate fails once the pool would hold more records than this.
  int64_t max_allocated_ips = kDefaultMaxAllocatedIPs;
};

// Who asks for an IP. pod and pod_uid are required; the rest is recorded when non-empty.
struct AllocationRequest {
  std::string pod;           // "ns/name" (the VM name for KubeVirt)
  std::string pod_uid;
  std::string node;          // recorded as "node"
  std::string container_id;  // recorded as "containerID"
  std::string interface_;    // the pod NIC, recorded as "interface"
};

struct PoolAllocation {
  base::IPAddress ip;
  // True when no new record was made: the pod already held `ip` here (idempotent ADD), or
  // the pool was full and an old record of the same ns/name + UID was reused (#2517).
  bool reused = false;
};

// status counts, computed as the controller computes them (api/pool_counts.h): totalIPCount
// is upstream's |spec.ips − excludeIPs| (reserved IPs still count) = allocatedIPCount (pod
// records) + reservedIPCount (node reservations and SpiderReservedIP IPs no record holds) +
// freeIPCount (what the next pod can get).
using PoolCounts = api::PoolIPCounts;

// SpiderReservedIP objects -> their ranges (both families; invalid entries are reported).
absl::StatusOr<std::vector<base::IPRange>> ReservedRanges(
    const std::vector<api::SpiderReservedIP>& reserved);

// The counts of a pool without keeping a PoolState (PoolState::Counts()).
absl::StatusOr<PoolCounts> ComputePoolCounts(const api::SpiderIPPool& pool,
                                             const std::vector<base::IPRange>& reserved);

class PoolState {
 public:
  // `reserved`: every SpiderReservedIP range of the cluster (any family; the other family is
  // ignored). Fails on a malformed spec (subnet, ips, excludeIPs, gateway, ipVersion not
  // matching the subnet) or status.allocatedIPs, with field paths in the message.
  static absl::StatusOr<PoolState> Build(const api::SpiderIPPool& pool,
                                         const std::vector<base::IPRange>& reserved,
                                         PoolOptions options = {});

  const std::string& name() const { return name_; }
  base::IPFamily family() const { return subnet_.family(); }
  int ip_version() const { return family() == base::IPFamily::kV4 ? 4 : 6; }
  const base::IPPrefix& subnet() const { return subnet_; }
  const std::optional<base::IPAddress>& gateway() const { return gateway_; }
  const std::vector<api::Route>& routes() const { return routes_; }  // spec.routes
  bool disabled() const { return disabled_; }
  const Allocator& allocator() const { return allocator_; }

  // (1) disabled -> FailedPrecondition (upstream filters disabled pools out before
  // allocating); (2) a record with this pod UID whose interface is unset or equals the
  // request's (either side empty matches) -> that IP, reused (idempotent ADD; this also covers
  // #2517, "full pool, old record with the same ns/name and UID", which upstream checks
  // separately); (3) no free usable IP -> ResourceExhausted "all IP addresses used out";
  // (4) records + 1 > max_allocated_ips -> ResourceExhausted (threshold message); (5) the
  // lowest free usable IP (spec.ips − excludeIPs − reserved − records) with a new record
  // {pod, podUid, node, containerID, interface} (empty request fields are not written).
  // (Upstream matches on UID only, so two NICs of one pod drawing from the same pool got the
  // same IP; recording the interface tells them apart.)
  absl::StatusOr<PoolAllocation> Allocate(const AllocationRequest& request);

  // Upstream ReleaseIP: removes the record of `ip` iff its podUid is `pod_uid`. True if a
  // record was removed.
  bool Release(const base::IPAddress& ip, std::string_view pod_uid);

  struct ReleaseFilter {
    std::string container_id;  // when set, only records with this containerID (or none)
    std::string interface_;    // when set, only records with this interface (or none)
  };
  // Removes every record of `pod_uid` that passes the filter; returns the IPs released,
  // ascending.
  std::vector<base::IPAddress> ReleasePod(std::string_view pod_uid,
                                          const ReleaseFilter& filter = {});

  struct ReassignResult {
    int updated = 0;                       // records whose owner fields changed
    std::vector<base::IPAddress> missing;  // requested IPs with no record (nothing done)
  };
  // StatefulSet / KubeVirt fixed IPs (upstream UpdateAllocatedIPs): for each of `ips` (or,
  // when empty, every record whose pod is owner.pod) rewrite podUid, and node/containerID
  // when non-empty, to `owner`'s (owner.interface_ is not used). A record held by another pod ns/name is an error
  // (FailedPrecondition "failed to update allocated IP because of data broken: IPPool <p>
  // IP <ip> allocation detail ... mistach namespacedName <ns/name>") and nothing changes.
  absl::StatusOr<ReassignResult> ReassignUID(const AllocationRequest& owner,
                                             const std::vector<base::IPAddress>& ips = {});

  // ---- node reservations (api::IsNodeReservation; agent/ipam/blocks.h) ----
  // Reserves up to `n` of the lowest free usable IPs for `node` (fewer when fewer are free or
  // the record cap is near). disabled -> FailedPrecondition; nothing free -> ResourceExhausted
  // (the same messages as Allocate).
  absl::StatusOr<std::vector<base::IPAddress>> Reserve(std::string_view node, int64_t n);
  // Turns `node`'s reservation of `ip` into `request`'s pod record. Already that pod's record
  // (same UID and interface): OK, nothing changes. Anything else: FailedPrecondition.
  absl::Status AssignReserved(const base::IPAddress& ip, std::string_view node,
                              const AllocationRequest& request);
  // Gives a free usable `ip` to `request`'s pod (no record holds it). The repair of an IP a node
  // handed out whose reservation is gone: recording it while nobody else holds it is what keeps
  // it from being handed out twice. Held, not usable, or over the record cap: FailedPrecondition.
  absl::Status AssignFree(const base::IPAddress& ip, const AllocationRequest& request);
  // Removes `node`'s reservation of `ip`. False if `ip` is not reserved for `node`.
  bool Unreserve(const base::IPAddress& ip, std::string_view node);
  // `node`'s reservations, ascending.
  std::vector<base::IPAddress> ReservedFor(std::string_view node) const;
  size_t reservation_count() const;
  // Nodes holding at least one reservation.
  size_t reserving_nodes() const { return reserved_.size(); }
  // "N IPs, N held by pods, N reserved by nodes (node-a: 3, node-b: 1)": who holds a full pool.
  std::string HoldersSummary() const;
  // Per node named by a record: its pods' records and its reservations (the fair parts of a
  // pool that cannot serve every node, agent/ipam/blocks.h).
  struct NodeHolding {
    int64_t pods = 0;
    int64_t reserved = 0;
  };
  std::map<std::string, NodeHolding, std::less<>> HoldingsByNode() const;

  // Records, keyed by the canonical IP text (as upstream writes them).
  api::PoolIPAllocations Records() const;
  size_t record_count() const { return records_.size(); }
  const api::PoolIPAllocation* RecordOf(const base::IPAddress& ip) const;
  // The IPs this pod UID holds here, ascending.
  std::vector<base::IPAddress> IPsOf(std::string_view pod_uid) const;

  // api::CountPoolIPs over the usable set, the SpiderReservedIPs and the records.
  PoolCounts Counts() const;
  // pool->SetAllocatedIPs(Records()), then all four counts from Counts(). Spec and metadata are
  // untouched.
  void WriteStatus(api::SpiderIPPool* pool) const;

 private:
  PoolState() = default;
  void AddRecord(const base::IPAddress& ip, api::PoolIPAllocation record);
  void RemoveRecord(std::map<base::IPAddress, api::PoolIPAllocation>::iterator it);

  std::string name_;
  base::IPPrefix subnet_;
  std::optional<base::IPAddress> gateway_;
  std::vector<api::Route> routes_;
  bool disabled_ = false;
  PoolOptions options_;
  std::vector<base::IPRange> total_ranges_;     // spec.ips − excludeIPs
  std::vector<base::IPRange> reserved_ranges_;  // SpiderReservedIPs of the pool's family
  Allocator allocator_;                         // usable = total − reserved
  api::PoolRecordsByIP records_;
  absl::flat_hash_map<std::string, std::vector<base::IPAddress>> by_uid_;  // pod records only
  std::map<std::string, std::set<base::IPAddress>, std::less<>> reserved_;   // node -> IPs
};

}  // namespace spiderpool::ipam
