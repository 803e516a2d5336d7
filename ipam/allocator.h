#pragma once
// Allocator: the free addresses of one pool, as a set of disjoint free intervals.
//
//   Allocator a(base::IPFamily::kV4, usable_ranges, allocated_ips);
//   std::optional<base::IPAddress> ip = a.AllocateLowest();   // upstream order: ascending
//   a.Release(*ip);
//
// Representation: std::map<start, end> of maximal FREE intervals (inclusive, values are the
// addresses as uint128) plus the sorted, merged usable ranges. Building from k allocated IPs
// sorts them (O(k log k)) and walks them against the usable ranges once; it never iterates
// addresses, so a 10.0.0.0/8 or a /64 costs the same as a /24 with the same k. Every
// operation is O(log n) in the number of free intervals n (n <= usable ranges + k + 1).
// Why intervals and not a bitmap: pools may be a whole /64 (2^64 addresses); a bitmap or an
// address list is impossible there, and allocation state is sparse (≤ 5000 records per pool
// upstream), so intervals stay small.
//
// Not thread-safe (callers serialise per pool, as upstream's per-pool limiter does).

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "absl/numeric/int128.h"
#include "base/ip.h"

namespace spiderpool::ipam {

// For status counters: a uint128 count clamped to int64's maximum.
int64_t SaturatingInt64(absl::uint128 v);

class Allocator {
 public:
  Allocator() = default;  // empty IPv4 allocator: nothing usable
  // `usable`: the pool's usable ranges (spec.ips − excludeIPs − reserved), any order,
  // overlaps allowed; ranges of the other family are ignored. `allocated`: IPs that are
  // taken; those outside the usable set (or of the other family) are ignored, duplicates are
  // fine.
  Allocator(base::IPFamily family, std::vector<base::IPRange> usable,
            std::vector<base::IPAddress> allocated);

  base::IPFamily family() const { return family_; }

  // Takes the lowest free address, or nullopt when none is left.
  std::optional<base::IPAddress> AllocateLowest();
  // The lowest free address without taking it.
  std::optional<base::IPAddress> LowestFree() const;
  // Takes `ip`. False if it is not usable or already taken.
  bool Allocate(const base::IPAddress& ip);
  // Gives `ip` back. False if it is not usable or already free.
  bool Release(const base::IPAddress& ip);

  bool IsUsable(const base::IPAddress& ip) const;
  bool IsFree(const base::IPAddress& ip) const;

  absl::uint128 UsableCount() const { return usable_count_; }  // saturating for ::/0
  absl::uint128 FreeCount() const { return free_count_; }
  absl::uint128 AllocatedCount() const { return usable_count_ - free_count_; }

  // Sorted, merged usable ranges.
  const std::vector<base::IPRange>& usable_ranges() const { return usable_; }
  // The free intervals, ascending (for tests and debugging; O(n)).
  std::vector<base::IPRange> FreeRanges() const;
  size_t free_interval_count() const { return free_.size(); }

 private:
  base::IPAddress Addr(absl::uint128 v) const;

  base::IPFamily family_ = base::IPFamily::kV4;
  std::vector<base::IPRange> usable_;
  std::map<absl::uint128, absl::uint128> free_;  // start -> end (inclusive), disjoint
  absl::uint128 usable_count_ = 0;
  absl::uint128 free_count_ = 0;
};

}  // namespace spiderpool::ipam
