#include "base/ip.h"

#include <algorithm>
#include <boost/asio/ip/address.hpp>

#include "base/strings.h"
#include "absl/strings/str_split.h"

namespace spiderpool::base {
namespace {

constexpr absl::uint128 kV4Max = 0xffffffffu;

absl::uint128 FamilyMax(IPFamily f) { return f == IPFamily::kV4 ? kV4Max : absl::Uint128Max(); }

absl::uint128 HostMask(int bits, int length) {
  int host = bits - length;
  if (host <= 0) return 0;
  if (host >= 128) return absl::Uint128Max();
  return (absl::uint128(1) << host) - 1;
}

absl::uint128 SaturatingCount(absl::uint128 first, absl::uint128 last) {
  absl::uint128 diff = last - first;
  if (diff == absl::Uint128Max()) return diff;  // the whole IPv6 space: 2^128 saturates
  return diff + 1;
}

}  // namespace

absl::StatusOr<IPAddress> IPAddress::Parse(std::string_view text) {
  std::string s(text);
  if (s.empty() || s.find('%') != std::string::npos || s.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(StrCat("\"", text, "\" is not an IP"));
  }
  boost::system::error_code ec;
  if (s.find(':') == std::string::npos) {
    auto v4 = boost::asio::ip::make_address_v4(s, ec);
    if (ec) return absl::InvalidArgumentError(StrCat("\"", text, "\" is not an IP"));
    return IPAddress::V4(v4.to_uint());
  }
  auto v6 = boost::asio::ip::make_address_v6(s, ec);
  if (ec || v6.scope_id() != 0) {
    return absl::InvalidArgumentError(StrCat("\"", text, "\" is not an IP"));
  }
  auto bytes = v6.to_bytes();
  absl::uint128 v = 0;
  for (unsigned char b : bytes) v = (v << 8) | b;
  return IPAddress::V6(v);
}

std::string IPAddress::ToString() const {
  if (is_v4()) {
    return boost::asio::ip::address_v4(static_cast<uint32_t>(value_)).to_string();
  }
  boost::asio::ip::address_v6::bytes_type bytes;
  absl::uint128 v = value_;
  for (int i = 15; i >= 0; --i) {
    bytes[i] = static_cast<unsigned char>(absl::Uint128Low64(v) & 0xff);
    v >>= 8;
  }
  return boost::asio::ip::address_v6(bytes).to_string();
}

bool IPAddress::IsLast() const { return value_ == FamilyMax(family_); }
IPAddress IPAddress::Next() const { return IsLast() ? *this : IPAddress(family_, value_ + 1); }
IPAddress IPAddress::Prev() const { return value_ == 0 ? *this : IPAddress(family_, value_ - 1); }

absl::StatusOr<IPPrefix> IPPrefix::Parse(std::string_view text) {
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) {
    return absl::InvalidArgumentError(StrCat("\"", text, "\" is not a CIDR"));
  }
  auto addr = IPAddress::Parse(text.substr(0, slash));
  std::string_view len_text = text.substr(slash + 1);
  int len = 0;
  bool ok = addr.ok() && !len_text.empty() && len_text.size() <= 3;
  if (!ok) return absl::InvalidArgumentError(StrCat("\"", text, "\" is not a CIDR"));
  for (char c : len_text) {
    if (c < '0' || c > '9') ok = false;
    else len = len * 10 + (c - '0');
  }
  if (len_text.size() > 1 && len_text[0] == '0') ok = false;
  if (!ok || len > addr->bits()) {
    return absl::InvalidArgumentError(StrCat("\"", text, "\" is not a CIDR"));
  }
  return IPPrefix(*addr, len);
}

IPAddress IPPrefix::First() const {
  absl::uint128 mask = HostMask(address_.bits(), length_);
  return address_.is_v4() ? IPAddress::V4(static_cast<uint32_t>(address_.value() & ~mask))
                          : IPAddress::V6(address_.value() & ~mask);
}

IPAddress IPPrefix::Last() const {
  absl::uint128 mask = HostMask(address_.bits(), length_);
  return address_.is_v4() ? IPAddress::V4(static_cast<uint32_t>(address_.value() | mask))
                          : IPAddress::V6(address_.value() | mask);
}

IPRange IPPrefix::AsRange() const { return IPRange(First(), Last()); }
absl::uint128 IPPrefix::Size() const { return AsRange().Count(); }
bool IPPrefix::Contains(const IPAddress& ip) const {
  return ip.family() == family() && AsRange().Contains(ip);
}
bool IPPrefix::Contains(const IPRange& r) const {
  return r.family() == family() && AsRange().Contains(r);
}
bool IPPrefix::Overlaps(const IPPrefix& o) const { return AsRange().Overlaps(o.AsRange()); }
std::string IPPrefix::ToString() const {
  return StrCat(address_.ToString(), "/", length_);
}

absl::StatusOr<IPRange> IPRange::Parse(std::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(ToAbsl(text), '-');
  if (parts.size() == 1) {
    auto ip = IPAddress::Parse(FromAbsl(parts[0]));
    if (!ip.ok()) return ip.status();
    return IPRange(*ip, *ip);
  }
  if (parts.size() != 2) {
    return absl::InvalidArgumentError(StrCat("\"", text, "\" is not an IP range"));
  }
  auto a = IPAddress::Parse(FromAbsl(parts[0]));
  if (!a.ok()) return a.status();
  auto b = IPAddress::Parse(FromAbsl(parts[1]));
  if (!b.ok()) return b.status();
  if (a->family() != b->family()) {
    return absl::InvalidArgumentError(
        StrCat("\"", text, "\" mixes IPv4 and IPv6"));
  }
  if (*b < *a) {
    return absl::InvalidArgumentError(
        StrCat("\"", text, "\" is not an IP range: its first IP is after its last"));
  }
  return IPRange(*a, *b);
}

absl::uint128 IPRange::Count() const { return SaturatingCount(first_.value(), last_.value()); }

std::string IPRange::ToString() const {
  if (first_ == last_) return first_.ToString();
  return StrCat(first_.ToString(), "-", last_.ToString());
}

IPRange::Iterator IPRange::begin() const {
  Iterator it(first_, false);
  it.last_ = last_;
  return it;
}

IPRange::Iterator& IPRange::Iterator::operator++() {
  if (end_) return *this;
  if (cur_ == last_) {
    end_ = true;
  } else {
    cur_ = cur_.Next();
  }
  return *this;
}

absl::StatusOr<std::vector<IPRange>> ParseIPRanges(const std::vector<std::string>& texts,
                                                   std::optional<IPFamily> family) {
  std::vector<IPRange> out;
  out.reserve(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    auto r = IPRange::Parse(texts[i]);
    if (!r.ok()) {
      return absl::InvalidArgumentError(StrCat("[", i, "]: ", r.status().message()));
    }
    if (family && r->family() != *family) {
      return absl::InvalidArgumentError(StrCat("[", i, "]: \"", texts[i], "\" is not IPv",
                                                     static_cast<int>(*family)));
    }
    out.push_back(*r);
  }
  return out;
}

std::vector<IPRange> MergeIPRanges(std::vector<IPRange> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const IPRange& a, const IPRange& b) {
    return a.first() < b.first() || (a.first() == b.first() && a.last() < b.last());
  });
  std::vector<IPRange> out;
  for (const IPRange& r : ranges) {
    if (!out.empty() && out.back().family() == r.family() &&
        (r.first() <= out.back().last() ||
         (!out.back().last().IsLast() && r.first() == out.back().last().Next()))) {
      if (r.last() > out.back().last()) out.back() = IPRange(out.back().first(), r.last());
      continue;
    }
    out.push_back(r);
  }
  return out;
}

std::vector<IPRange> SubtractIPRanges(std::vector<IPRange> from, std::vector<IPRange> remove) {
  from = MergeIPRanges(std::move(from));
  remove = MergeIPRanges(std::move(remove));
  std::vector<IPRange> out;
  for (const IPRange& r : from) {
    IPAddress cur = r.first();
    bool done = false;
    for (const IPRange& x : remove) {
      if (done) break;
      if (x.family() != r.family() || x.last() < cur || x.first() > r.last()) continue;
      if (x.first() > cur) out.emplace_back(cur, x.first().Prev());
      if (x.last() >= r.last()) {
        done = true;
      } else {
        cur = x.last().Next();
      }
    }
    if (!done) out.emplace_back(cur, r.last());
  }
  return out;
}

absl::uint128 CountIPs(const std::vector<IPRange>& merged) {
  absl::uint128 total = 0;
  for (const IPRange& r : merged) {
    absl::uint128 c = r.Count();
    if (total > absl::Uint128Max() - c) return absl::Uint128Max();
    total += c;
  }
  return total;
}

std::vector<std::string> FormatIPRanges(const std::vector<IPRange>& ranges) {
  std::vector<std::string> out;
  out.reserve(ranges.size());
  for (const IPRange& r : ranges) out.push_back(r.ToString());
  return out;
}

std::string Uint128ToString(absl::uint128 v) {
  if (v == 0) return "0";
  std::string s;
  while (v > 0) {
    s.push_back(static_cast<char>('0' + static_cast<int>(absl::Uint128Low64(v % 10))));
    v /= 10;
  }
  std::reverse(s.begin(), s.end());
  return s;
}

}  // namespace spiderpool::base
