#pragma once
// The status counts of a SpiderIPPool, computed in ONE place for every writer (the
// controller's PoolController and IP GC, the agent's committer through ipam::PoolState).
// Pure: no I/O.
//
// Every address of the pool's usable set U = spec.ips − excludeIPs is exactly one of
//
//   allocated  a pod's record in status.allocatedIPs             allocatedIPCount (upstream)
//   reserved   held back from pods: a node reservation record     reservedIPCount  (our extension)
//              (api::IsNodeReservation, agent/ipam/blocks.h), or
//              in a SpiderReservedIP with no record
//   free       neither: what the next pod can get                 freeIPCount      (our extension)
//
// and totalIPCount = |U| (upstream), so allocated + reserved + free == total. allocatedIPCount
// keeps upstream's meaning: upstream writes a record only for a pod, and counts its records;
// we count the pod records (a node reservation is not a pod's IP, so it is not "allocated").
// A pod record whose IP is not in U (the validating webhook forbids taking an IP in use out
// of the pool) still counts as allocated, as upstream counts it; only then can the sum exceed
// total. A reserved IP that a pod still holds (reserving does not evict) is allocated, once.
// Counts saturate at INT64_MAX (huge IPv6 ranges; the sum is exact below that).

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "api/spider_ippool.h"
#include "base/ip.h"

namespace spiderpool::api {

struct PoolIPCounts {
  int64_t total = 0;      // status.totalIPCount
  int64_t allocated = 0;  // status.allocatedIPCount: pod records
  int64_t reserved = 0;   // status.reservedIPCount: node reservations + unheld SpiderReservedIPs
  int64_t free = 0;       // status.freeIPCount
  friend bool operator==(const PoolIPCounts&, const PoolIPCounts&) = default;
};

// status.allocatedIPs by parsed IP (one entry per address).
using PoolRecordsByIP = std::map<base::IPAddress, PoolIPAllocation>;

// `usable`: spec.ips − excludeIPs of the pool's family (any order; merged here).
// `reserved_ips`: SpiderReservedIP ranges (any order and family; the other family is ignored).
PoolIPCounts CountPoolIPs(const std::vector<base::IPRange>& usable,
                          const std::vector<base::IPRange>& reserved_ips,
                          const PoolRecordsByIP& records);

// Writes the four counts into `status`.
void SetPoolIPCounts(const PoolIPCounts& counts, IPPoolStatus* status);
// True if `status` already holds exactly `counts` (nothing to write).
bool HasPoolIPCounts(const IPPoolStatus& status, const PoolIPCounts& counts);

}  // namespace spiderpool::api
