#pragma once
// IPv4/IPv6 addresses, prefixes (CIDRs) and inclusive ranges ("a-b") as numbers, so that
// containment, overlap, iteration and counting are integer math. Parsing and printing go
// through Boost.Asio (inet_pton semantics: "10.0.0.300" and "010.0.0.1" are rejected).
// Counts are absl::uint128; the only count that does not fit (all of IPv6, 2^128) saturates
// to the maximum value.

#include <compare>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/status/statusor.h"

namespace spiderpool::base {

enum class IPFamily : uint8_t { kV4 = 4, kV6 = 6 };

class IPAddress {
 public:
  IPAddress() = default;
  static IPAddress V4(uint32_t v) { return IPAddress(IPFamily::kV4, v); }
  static IPAddress V6(absl::uint128 v) { return IPAddress(IPFamily::kV6, v); }
  // Accepts a bare address only (no zone, no prefix).
  static absl::StatusOr<IPAddress> Parse(std::string_view text);

  IPFamily family() const { return family_; }
  bool is_v4() const { return family_ == IPFamily::kV4; }
  int bits() const { return is_v4() ? 32 : 128; }
  absl::uint128 value() const { return value_; }
  std::string ToString() const;

  // Saturating neighbours: Next() of the family's last address is itself.
  IPAddress Next() const;
  IPAddress Prev() const;
  bool IsLast() const;

  friend bool operator==(const IPAddress&, const IPAddress&) = default;
  friend std::strong_ordering operator<=>(const IPAddress& a, const IPAddress& b) {
    if (a.family_ != b.family_) return a.family_ <=> b.family_;
    if (a.value_ == b.value_) return std::strong_ordering::equal;
    return a.value_ < b.value_ ? std::strong_ordering::less : std::strong_ordering::greater;
  }
  template <typename H>
  friend H AbslHashValue(H h, const IPAddress& a) {
    return H::combine(std::move(h), a.family_, absl::Uint128High64(a.value_),
                      absl::Uint128Low64(a.value_));
  }

 private:
  IPAddress(IPFamily f, absl::uint128 v) : family_(f), value_(v) {}
  IPFamily family_ = IPFamily::kV4;
  absl::uint128 value_ = 0;
};

class IPRange;

class IPPrefix {
 public:
  IPPrefix() = default;
  // "10.0.0.0/24". Host bits may be set; IsCanonical() tells (upstream rejects those).
  static absl::StatusOr<IPPrefix> Parse(std::string_view text);

  const IPAddress& address() const { return address_; }
  int length() const { return length_; }
  IPFamily family() const { return address_.family(); }
  bool IsCanonical() const { return address_ == First(); }
  IPPrefix Canonical() const { return IPPrefix(First(), length_); }
  IPAddress First() const;
  IPAddress Last() const;
  IPRange AsRange() const;
  absl::uint128 Size() const;  // saturating for ::/0
  bool Contains(const IPAddress& ip) const;
  bool Contains(const IPRange& r) const;
  bool Overlaps(const IPPrefix& other) const;
  std::string ToString() const;
  friend bool operator==(const IPPrefix&, const IPPrefix&) = default;

 private:
  IPPrefix(IPAddress a, int len) : address_(a), length_(len) {}
  IPAddress address_;
  int length_ = 0;
};

// Inclusive range [first, last] of one family.
class IPRange {
 public:
  IPRange() = default;
  IPRange(IPAddress first, IPAddress last) : first_(first), last_(last) {}
  // "10.0.0.1-10.0.0.9" or a single "10.0.0.5". Both ends one family, first <= last.
  static absl::StatusOr<IPRange> Parse(std::string_view text);

  const IPAddress& first() const { return first_; }
  const IPAddress& last() const { return last_; }
  IPFamily family() const { return first_.family(); }
  absl::uint128 Count() const;  // saturating for the whole IPv6 space
  bool Contains(const IPAddress& ip) const { return ip >= first_ && ip <= last_; }
  bool Contains(const IPRange& r) const { return r.first_ >= first_ && r.last_ <= last_; }
  bool Overlaps(const IPRange& o) const {
    return family() == o.family() && first_ <= o.last_ && o.first_ <= last_;
  }
  // Upstream's text form: "a" for one address, else "a-b".
  std::string ToString() const;
  friend bool operator==(const IPRange&, const IPRange&) = default;

  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = IPAddress;
    using difference_type = std::ptrdiff_t;
    using pointer = const IPAddress*;
    using reference = const IPAddress&;
    Iterator() = default;
    Iterator(IPAddress cur, bool end) : cur_(cur), end_(end) {}
    reference operator*() const { return cur_; }
    pointer operator->() const { return &cur_; }
    Iterator& operator++();
    Iterator operator++(int) {
      Iterator t = *this;
      ++*this;
      return t;
    }
    friend bool operator==(const Iterator& a, const Iterator& b) {
      return a.end_ == b.end_ && (a.end_ || a.cur_ == b.cur_);
    }

   private:
    friend class IPRange;
    IPAddress cur_;
    IPAddress last_;
    bool end_ = true;
  };
  Iterator begin() const;
  Iterator end() const { return Iterator(); }

 private:
  IPAddress first_;
  IPAddress last_;
};

// Parses a list of range strings (as in spec.ips). Every entry must be of `family` when
// given. The error names the index: `[2]: "10.0.0.300" is not an IP`.
absl::StatusOr<std::vector<IPRange>> ParseIPRanges(const std::vector<std::string>& texts,
                                                   std::optional<IPFamily> family = {});
// Sorts and merges overlapping or adjacent ranges into the minimal list.
std::vector<IPRange> MergeIPRanges(std::vector<IPRange> ranges);
// Subtracts `remove` from `from` (both any order); result is merged and sorted.
std::vector<IPRange> SubtractIPRanges(std::vector<IPRange> from, std::vector<IPRange> remove);
absl::uint128 CountIPs(const std::vector<IPRange>& merged);  // saturating
std::vector<std::string> FormatIPRanges(const std::vector<IPRange>& ranges);

// Decimal text of a uint128 (absl's operator<< exists, this avoids streams).
std::string Uint128ToString(absl::uint128 v);

}  // namespace spiderpool::base
