#include "ipam/allocator.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace spiderpool::ipam {
namespace {

constexpr absl::uint128 kMax128 = absl::Uint128Max();

// Addresses in [s, e], saturating (only [0, 2^128-1] overflows).
absl::uint128 Span(absl::uint128 s, absl::uint128 e) {
  absl::uint128 d = e - s;
  return d == kMax128 ? kMax128 : d + 1;
}

absl::uint128 SatAdd(absl::uint128 a, absl::uint128 b) {
  return a > kMax128 - b ? kMax128 : a + b;
}

}  // namespace

int64_t SaturatingInt64(absl::uint128 v) {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (absl::Uint128High64(v) != 0 || absl::Uint128Low64(v) > kMax) {
    return std::numeric_limits<int64_t>::max();
  }
  return static_cast<int64_t>(absl::Uint128Low64(v));
}

Allocator::Allocator(base::IPFamily family, std::vector<base::IPRange> usable,
                     std::vector<base::IPAddress> allocated)
    : family_(family) {
  usable.erase(std::remove_if(usable.begin(), usable.end(),
                              [family](const base::IPRange& r) { return r.family() != family; }),
               usable.end());
  usable_ = base::MergeIPRanges(std::move(usable));
  usable_count_ = base::CountIPs(usable_);

  std::vector<absl::uint128> taken;
  taken.reserve(allocated.size());
  for (const base::IPAddress& ip : allocated) {
    if (ip.family() == family) taken.push_back(ip.value());
  }
  std::sort(taken.begin(), taken.end());
  taken.erase(std::unique(taken.begin(), taken.end()), taken.end());

  // One pass over the sorted usable ranges and the sorted taken addresses: the gaps between
  // taken addresses inside each range are the free intervals, produced in ascending order
  // (so each map insertion is amortised O(1) with the end() hint).
  auto t = taken.begin();
  for (const base::IPRange& r : usable_) {
    const absl::uint128 first = r.first().value();
    const absl::uint128 last = r.last().value();
    t = std::lower_bound(t, taken.end(), first);
    absl::uint128 cur = first;
    bool done = false;  // `cur` passed `last` (careful: last may be the maximum value)
    for (; t != taken.end() && *t <= last; ++t) {
      if (*t > cur) {
        free_.emplace_hint(free_.end(), cur, *t - 1);
        free_count_ = SatAdd(free_count_, Span(cur, *t - 1));
      }
      if (*t == last) {
        done = true;
        ++t;
        break;
      }
      cur = *t + 1;
    }
    if (!done) {
      free_.emplace_hint(free_.end(), cur, last);
      free_count_ = SatAdd(free_count_, Span(cur, last));
    }
  }
}

base::IPAddress Allocator::Addr(absl::uint128 v) const {
  return family_ == base::IPFamily::kV4 ? base::IPAddress::V4(static_cast<uint32_t>(v))
                                        : base::IPAddress::V6(v);
}

std::optional<base::IPAddress> Allocator::LowestFree() const {
  if (free_.empty()) return std::nullopt;
  return Addr(free_.begin()->first);
}

std::optional<base::IPAddress> Allocator::AllocateLowest() {
  if (free_.empty()) return std::nullopt;
  auto it = free_.begin();
  const absl::uint128 v = it->first;
  if (it->first == it->second) {
    free_.erase(it);
  } else {
    // Re-key the node in place (no allocation): start + 1 stays the smallest key.
    auto node = free_.extract(it);
    node.key() = v + 1;
    free_.insert(free_.begin(), std::move(node));
  }
  free_count_ -= 1;
  return Addr(v);
}

bool Allocator::Allocate(const base::IPAddress& ip) {
  if (ip.family() != family_) return false;
  const absl::uint128 v = ip.value();
  auto it = free_.upper_bound(v);
  if (it == free_.begin()) return false;
  --it;
  if (v > it->second) return false;  // not free (taken, or not usable)
  const absl::uint128 start = it->first;
  const absl::uint128 end = it->second;
  if (start == v && end == v) {
    free_.erase(it);
  } else if (start == v) {
    auto node = free_.extract(it);
    node.key() = v + 1;
    free_.insert(std::move(node));
  } else if (end == v) {
    it->second = v - 1;
  } else {
    it->second = v - 1;
    free_.emplace_hint(std::next(it), v + 1, end);
  }
  free_count_ -= 1;
  return true;
}

bool Allocator::Release(const base::IPAddress& ip) {
  if (!IsUsable(ip)) return false;
  const absl::uint128 v = ip.value();
  auto next = free_.upper_bound(v);  // first interval starting after v
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (v <= prev->second) return false;  // already free
  }
  // Merge with the neighbours when adjacent (v-1 ends the previous, v+1 starts the next).
  bool join_prev = false;
  auto prev = free_.end();
  if (next != free_.begin()) {
    prev = std::prev(next);
    join_prev = v != 0 && prev->second == v - 1;
  }
  const bool join_next = next != free_.end() && v != kMax128 && next->first == v + 1;
  if (join_prev && join_next) {
    prev->second = next->second;
    free_.erase(next);
  } else if (join_prev) {
    prev->second = v;
  } else if (join_next) {
    const absl::uint128 end = next->second;
    auto hint = free_.erase(next);
    free_.emplace_hint(hint, v, end);
  } else {
    free_.emplace_hint(next, v, v);
  }
  free_count_ += 1;
  return true;
}

bool Allocator::IsUsable(const base::IPAddress& ip) const {
  if (ip.family() != family_) return false;
  auto it = std::upper_bound(usable_.begin(), usable_.end(), ip,
                             [](const base::IPAddress& a, const base::IPRange& r) {
                               return a < r.first();
                             });
  if (it == usable_.begin()) return false;
  return std::prev(it)->Contains(ip);
}

bool Allocator::IsFree(const base::IPAddress& ip) const {
  if (ip.family() != family_) return false;
  const absl::uint128 v = ip.value();
  auto it = free_.upper_bound(v);
  if (it == free_.begin()) return false;
  --it;
  return v <= it->second;
}

std::vector<base::IPRange> Allocator::FreeRanges() const {
  std::vector<base::IPRange> out;
  out.reserve(free_.size());
  for (const auto& [s, e] : free_) out.emplace_back(Addr(s), Addr(e));
  return out;
}

}  // namespace spiderpool::ipam
