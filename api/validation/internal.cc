#include "api/validation/internal.h"

#include <algorithm>

#include "base/strings.h"

namespace spiderpool::api::validation::internal {

using base::StrCat;

std::string Child(std::string_view parent, std::string_view name) {
  if (parent.empty()) return std::string(name);
  return StrCat(parent, ".", name);
}
std::string Index(std::string_view parent, size_t i) { return StrCat(parent, "[", i, "]"); }
std::string Key(std::string_view parent, std::string_view key) {
  return StrCat(parent, "[", key, "]");
}

std::optional<IPFamily> FamilyOf(std::optional<int64_t> ip_version) {
  if (ip_version == 4) return IPFamily::kV4;
  if (ip_version == 6) return IPFamily::kV6;
  return std::nullopt;
}

int FamilyNumber(IPFamily f) { return f == IPFamily::kV4 ? 4 : 6; }

namespace {

std::string FormatError(std::string_view what, std::optional<IPFamily> f, std::string_view text) {
  if (!f.has_value()) return StrCat("invalid ", what, " format '", text, "'");
  return StrCat("invalid ", what, " format in IPv", FamilyNumber(*f), " '", text, "'");
}

}  // namespace

absl::StatusOr<IPPrefix> ParseCIDR(std::optional<IPFamily> f, std::string_view text) {
  auto p = IPPrefix::Parse(text);
  if (!p.ok() || (f.has_value() && p->family() != *f)) {
    return absl::InvalidArgumentError(FormatError("CIDR", f, text));
  }
  return *p;
}

absl::StatusOr<IPAddress> ParseIP(std::optional<IPFamily> f, std::string_view text) {
  auto ip = IPAddress::Parse(text);
  if (!ip.ok() || (f.has_value() && ip->family() != *f)) {
    return absl::InvalidArgumentError(FormatError("IP", f, text));
  }
  return *ip;
}

absl::StatusOr<IPRange> ParseRange(std::optional<IPFamily> f, std::string_view text) {
  auto r = IPRange::Parse(text);
  if (!r.ok() || (f.has_value() && r->family() != *f)) {
    return absl::InvalidArgumentError(FormatError("IP range", f, text));
  }
  return *r;
}

std::optional<IPFamily> CIDRFamily(std::string_view text) {
  auto p = IPPrefix::Parse(text);
  if (!p.ok()) return std::nullopt;
  return p->family();
}

std::vector<IPRange> MergedRanges(const std::vector<std::string>& texts, std::optional<IPFamily> f,
                                  bool* all_ok) {
  std::vector<IPRange> out;
  out.reserve(texts.size());
  bool ok = true;
  for (const std::string& t : texts) {
    auto r = ParseRange(f, t);
    if (r.ok()) {
      out.push_back(*r);
    } else {
      ok = false;
    }
  }
  if (all_ok != nullptr) *all_ok = ok;
  return base::MergeIPRanges(std::move(out));
}

std::vector<IPRange> TotalRanges(const std::vector<std::string>& ips,
                                 const std::vector<std::string>& exclude_ips,
                                 std::optional<IPFamily> f, bool* all_ok) {
  bool ok1 = true, ok2 = true;
  std::vector<IPRange> in = MergedRanges(ips, f, &ok1);
  std::vector<IPRange> ex = MergedRanges(exclude_ips, f, &ok2);
  if (all_ok != nullptr) *all_ok = ok1 && ok2;
  if (ex.empty()) return in;
  return base::SubtractIPRanges(std::move(in), std::move(ex));
}

std::vector<IPRange> IntersectRanges(const std::vector<IPRange>& a, const std::vector<IPRange>& b) {
  // Both merged and sorted: a linear sweep.
  std::vector<IPRange> out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const IPRange& x = a[i];
    const IPRange& y = b[j];
    if (x.family() != y.family()) {
      if (x.family() < y.family()) ++i; else ++j;
      continue;
    }
    if (x.Overlaps(y)) {
      out.emplace_back(std::max(x.first(), y.first()), std::min(x.last(), y.last()));
    }
    if (x.last() < y.last()) ++i; else ++j;
  }
  return out;
}

bool RangesContain(const std::vector<IPRange>& merged, const IPAddress& ip) {
  auto it = std::upper_bound(merged.begin(), merged.end(), ip,
                             [](const IPAddress& v, const IPRange& r) { return v < r.first(); });
  if (it == merged.begin()) return false;
  --it;
  return it->Contains(ip);
}

std::string RangesText(const std::vector<IPRange>& ranges) {
  std::string out = "[";
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (i > 0) out += " ";
    out += ranges[i].ToString();
  }
  out += "]";
  return out;
}

std::optional<IPFamily> CheckIPVersion(std::optional<int64_t> version, bool enable_ipv4,
                                       bool enable_ipv6, std::string_view nil_detail,
                                       ErrorList* errs) {
  const std::string path = "spec.ipVersion";
  if (!version.has_value()) {
    errs->push_back(Invalid(path, BadValue::Null(), std::string(nil_detail)));
    return std::nullopt;
  }
  std::optional<IPFamily> f = FamilyOf(version);
  if (!f.has_value()) {
    errs->push_back(NotSupported(path, BadValue::Int(*version), {"4", "6"}));
    return std::nullopt;
  }
  if (*f == IPFamily::kV4 && !enable_ipv4) {
    errs->push_back(Forbidden(path, "IPv4 is disabled"));
  }
  if (*f == IPFamily::kV6 && !enable_ipv6) {
    errs->push_back(Forbidden(path, "IPv6 is disabled"));
  }
  return f;
}

std::string GoLabelSelector(const api::LabelSelector& s) {
  std::string out = "v1.LabelSelector{MatchLabels:";
  if (s.match_labels.empty()) {
    out += "map[string]string(nil)";
  } else {
    out += "map[string]string{";
    bool first = true;
    for (const auto& [k, v] : s.match_labels) {
      if (!first) out += ", ";
      first = false;
      out += StrCat(GoQuote(k), ":", GoQuote(v));
    }
    out += "}";
  }
  out += ", MatchExpressions:";
  if (s.match_expressions.empty()) {
    out += "[]v1.LabelSelectorRequirement(nil)";
  } else {
    out += "[]v1.LabelSelectorRequirement{";
    for (size_t i = 0; i < s.match_expressions.size(); ++i) {
      const api::LabelSelectorRequirement& r = s.match_expressions[i];
      if (i > 0) out += ", ";
      out += StrCat("v1.LabelSelectorRequirement{Key:", GoQuote(r.key),
                    ", Operator:", GoQuote(r.op),
                    ", Values:", BadValue::Strings(r.values).rendered(), "}");
    }
    out += "}";
  }
  out += "}";
  return out;
}

}  // namespace spiderpool::api::validation::internal
