#pragma once
// Pure IP accounting for SpiderIPPool / SpiderSubnet status (reference §1.1, §1.2, §2.8), with
// base/ip.h range math. No I/O.
//
// Pools: api::CountPoolIPs (api/pool_counts.h, shared with the agent's writes), which splits
// |ips - excludeIPs| into allocated + reserved + free:
//   totalIPCount     |ips - excludeIPs|                                 (upstream)
//   allocatedIPCount pod records in status.allocatedIPs                 (upstream; fixes drift)
//   reservedIPCount  node reservations + SpiderReservedIP IPs no record holds (our extension)
//   freeIPCount      the rest: what the next pod can get                (our extension)
// Subnets:
//   totalIPCount     |ips - excludeIPs|                                 (upstream)
//   allocatedIPCount IPs handed to pools in controlledIPPools           (upstream)
//   freeIPCount      |(ips - excludeIPs - SpiderReservedIPs) - handed|  (our extension)
//
// Counts saturate at INT64_MAX (huge IPv6 ranges).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/pool_counts.h"
#include "api/spider.h"
#include "base/ip.h"

namespace spiderpool::op::ipam {

// A subnet's counts.
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

// Counts for a pool (api::CountPoolIPs); `reserved` is ReservedRanges() of the cluster.
// InvalidArgument naming the field when spec.ips/excludeIPs or status.allocatedIPs do not parse.
absl::StatusOr<api::PoolIPCounts> ComputePoolCounts(const api::SpiderIPPool& pool,
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
