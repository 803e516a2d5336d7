#pragma once
// Pure IP accounting for SpiderIPPool / SpiderSubnet status (reference §1.1, §1.2, §2.8), with
// base/ip.h range math. No I/O.
//
//   totalIPCount     |ips - excludeIPs|                               (upstream)
//   allocatedIPCount pool: number of status.allocatedIPs records      (upstream; fixes drift)
//                    subnet: IPs handed to pools in controlledIPPools (upstream)
//   freeIPCount      |(ips - excludeIPs - SpiderReservedIPs) - allocated|   (our extension)
//
// freeIPCount counts addresses, so a reserved IP that a pod still holds (reserving does not
// evict, §2.8) is subtracted once, not twice. Counts saturate at INT64_MAX (huge IPv6 ranges).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/spider.h"
#include "base/ip.h"

namespace spiderpool::op::ipam {

struct IPCounts {
  int64_t total = 0;
  int64_t allocated = 0;
  int64_t free = 0;
  friend bool operator==(const IPCounts&, const IPCounts&) = default;
};

// The family of a pool or subnet: spec.ipVersion, else the family of spec.subnet.
std::optional<base::IPFamily> FamilyOf(const std::optional<int64_t>& ip_version,
                                       const std::string& subnet);

// ips - excludeIPs, merged and sorted. InvalidArgument naming the field on a bad entry.
absl::StatusOr<std::vector<base::IPRange>> UsableRanges(const std::vector<std::string>& ips,
                                                        const std::vector<std::string>& exclude,
                                                        std::optional<base::IPFamily> family);

// Every SpiderReservedIP's spec.ips merged (entries that do not parse are skipped: the webhook
// rejects them, and one bad object must not stop the accounting of every pool).
std::vector<base::IPRange> ReservedRanges(
    const std::vector<std::shared_ptr<const api::SpiderReservedIP>>& reserved);

// True if any of `ranges` overlaps the usable set of `pool` (used to requeue the pools a
// SpiderReservedIP change affects). Pools whose spec does not parse count as affected.
bool PoolOverlaps(const api::SpiderIPPool& pool, const std::vector<base::IPRange>& ranges);
bool SubnetOverlaps(const api::SpiderSubnet& subnet, const std::vector<base::IPRange>& ranges);

// Counts for a pool; `reserved` is ReservedRanges() of the cluster.
absl::StatusOr<IPCounts> ComputePoolCounts(const api::SpiderIPPool& pool,
                                           const std::vector<base::IPRange>& reserved);

// Counts for a subnet given the controlledIPPools it should hold (see SubnetController).
absl::StatusOr<IPCounts> ComputeSubnetCounts(const api::SpiderSubnet& subnet,
                                             const api::PoolIPPreAllocations& controlled,
                                             const std::vector<base::IPRange>& reserved);

// The IPs of one controlledIPPools entry, counted as upstream does (sum over entries; entries
// whose ranges do not parse count 0).
int64_t CountPreAllocation(const api::PoolIPPreAllocation& entry,
                           std::optional<base::IPFamily> family);

// uint128 -> int64, saturating.
int64_t ClampCount(absl::uint128 n);

}  // namespace spiderpool::op::ipam
