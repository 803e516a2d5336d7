#include "api/pool_counts.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>

namespace spiderpool::api {

namespace {

int64_t Clamp(absl::uint128 n) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return n > absl::uint128(static_cast<uint64_t>(kMax)) ? kMax : static_cast<int64_t>(n);
}

// Whether `ip` lies in one of the sorted, merged `ranges`.
bool InRanges(const std::vector<base::IPRange>& ranges, const base::IPAddress& ip) {
  auto it = std::upper_bound(
      ranges.begin(), ranges.end(), ip,
      [](const base::IPAddress& a, const base::IPRange& r) { return a < r.first(); });
  if (it == ranges.begin()) return false;
  return std::prev(it)->Contains(ip);
}

}  // namespace

PoolIPCounts CountPoolIPs(const std::vector<base::IPRange>& usable,
                          const std::vector<base::IPRange>& reserved_ips,
                          const PoolRecordsByIP& records) {
  // SubtractIPRanges merges; ranges of the other family never overlap and drop out.
  std::vector<base::IPRange> total = base::MergeIPRanges(usable);
  std::vector<base::IPRange> open = base::SubtractIPRanges(total, reserved_ips);
  const absl::uint128 total_n = base::CountIPs(total);
  const absl::uint128 open_n = base::CountIPs(open);

  absl::uint128 pods = 0;            // every pod record (upstream's allocatedIPCount)
  absl::uint128 node_held = 0;       // node reservations in U
  absl::uint128 open_held = 0;       // records (any kind) in U − SpiderReservedIPs
  absl::uint128 blocked_held = 0;    // records (any kind) in U ∩ SpiderReservedIPs
  for (const auto& [ip, rec] : records) {
    const bool reservation = IsNodeReservation(rec);
    pods += !reservation;
    if (!InRanges(total, ip)) continue;
    node_held += reservation;
    if (InRanges(open, ip)) {
      ++open_held;
    } else {
      ++blocked_held;
    }
  }
  // U ∩ SpiderReservedIPs, minus what records hold there (counted as allocated or node held).
  const absl::uint128 blocked_n = total_n - open_n;
  PoolIPCounts c;
  c.total = Clamp(total_n);
  c.allocated = Clamp(pods);
  c.reserved = Clamp(node_held + (blocked_n - blocked_held));
  c.free = Clamp(open_n - open_held);
  return c;
}

void SetPoolIPCounts(const PoolIPCounts& counts, IPPoolStatus* status) {
  status->total_ip_count = counts.total;
  status->allocated_ip_count = counts.allocated;
  status->reserved_ip_count = counts.reserved;
  status->free_ip_count = counts.free;
}

bool HasPoolIPCounts(const IPPoolStatus& status, const PoolIPCounts& counts) {
  return status.total_ip_count == counts.total && status.allocated_ip_count == counts.allocated &&
         status.reserved_ip_count == counts.reserved && status.free_ip_count == counts.free;
}

}  // namespace spiderpool::api
