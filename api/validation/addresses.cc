// Rules shared by SpiderIPPool, SpiderSubnet and SpiderReservedIP (see addresses.h).

#include "api/validation/addresses.h"

#include <set>
#include <utility>

#include "base/strings.h"

namespace spiderpool::api::validation {

using base::StrCat;
using namespace internal;  // NOLINT(build/namespaces): the shared rule helpers

namespace internal {

Result NewResult(std::string_view kind, std::string_view name) {
  Result r;
  r.group = std::string(kGroup);
  r.kind = std::string(kind);
  r.name = std::string(name);
  return r;
}

std::optional<IPFamily> CheckFamily(std::optional<IPFamily> from_version,
                                    std::string_view subnet) {
  if (from_version.has_value()) return from_version;
  return CIDRFamily(subnet);
}

void CheckSubnetField(std::string_view subnet, bool check_canonical, Parsed* p, ErrorList* errs) {
  auto prefix = ParseCIDR(p->family, subnet);
  if (!prefix.ok()) {
    errs->push_back(Invalid("spec.subnet", BadValue::String(subnet),
                            std::string(base::FromAbsl(prefix.status().message()))));
    return;
  }
  std::string canonical = prefix->Canonical().ToString();
  if (check_canonical && canonical != subnet) {
    errs->push_back(Invalid("spec.subnet", BadValue::String(subnet),
                            StrCat("unformatted subnet ", subnet, ", please change it to ",
                                   canonical)));
  }
  p->subnet = prefix->Canonical();
}

void ComputeTotal(Parsed* p) {
  std::vector<IPRange> in;
  in.reserve(p->ips.size());
  for (const auto& r : p->ips) in.push_back(r.second);
  p->total = base::SubtractIPRanges(std::move(in), p->exclude);
}

void CheckContainsIP(const std::string& field, std::string_view ip_text, const Parsed& p,
                     std::string_view object, ErrorList* errs, IPAddress* out, bool* ok) {
  if (ok != nullptr) *ok = false;
  auto ip = ParseIP(p.family, ip_text);
  if (!ip.ok()) {
    errs->push_back(Invalid(field, BadValue::String(ip_text),
                            std::string(base::FromAbsl(ip.status().message()))));
    return;
  }
  if (p.subnet.has_value() && !p.subnet->Contains(*ip)) {
    errs->push_back(Invalid(field, BadValue::String(ip_text),
                            StrCat("not pertains to the 'spec.subnet' ", p.subnet->ToString(),
                                   " of ", object)));
    return;
  }
  if (out != nullptr) *out = *ip;
  if (ok != nullptr) *ok = p.subnet.has_value();
}

void CheckGateway(const std::optional<std::string>& gateway, const std::vector<std::string>& ips,
                  const Parsed& p, std::string_view object, ErrorList* errs) {
  if (!gateway.has_value()) return;
  IPAddress gw;
  bool ok = false;
  CheckContainsIP("spec.gateway", *gateway, p, object, errs, &gw, &ok);
  if (!ok) return;
  for (const IPRange& r : p.exclude) {
    if (r.Contains(gw)) return;
  }
  for (const auto& [i, r] : p.ips) {
    if (!r.Contains(gw)) continue;
    errs->push_back(Invalid(Index("spec.ips", i), BadValue::String(ips[i]),
                            StrCat("conflicts with 'spec.gateway' ", *gateway,
                                   ", add the gateway IP address to 'spec.excludeIPs' or remove "
                                   "it from 'spec.ips'")));
  }
}

void CheckRoutes(const std::optional<std::vector<api::Route>>& routes, const Parsed& p,
                 std::string_view object, ErrorList* errs) {
  if (!routes.has_value()) return;
  std::set<std::string> dsts;
  for (size_t i = 0; i < routes->size(); ++i) {
    const api::Route& r = (*routes)[i];
    std::string dst_path = Child(Index("spec.routes", i), "dst");
    bool v4_default = r.dst == "0.0.0.0/0" && p.family != IPFamily::kV6;
    bool v6_default = r.dst == "::/0" && p.family != IPFamily::kV4;
    if (v4_default || v6_default) {
      errs->push_back(Invalid(dst_path, BadValue::String(r.dst),
                              "please specify 'spec.gateway' to configure the default route"));
      continue;
    }
    if (!dsts.insert(r.dst).second) {
      errs->push_back(
          Invalid(dst_path, BadValue::String(r.dst), "duplicate route with the same dst"));
      continue;
    }
    auto dst = ParseCIDR(p.family, r.dst);
    if (!dst.ok()) {
      errs->push_back(Invalid(dst_path, BadValue::String(r.dst),
                              std::string(base::FromAbsl(dst.status().message()))));
    }
    CheckContainsIP(Child(Index("spec.routes", i), "gw"), r.gw, p, object, errs);
  }
}

std::vector<IPRange> OtherPoolTotal(const api::SpiderIPPool& other, std::optional<IPFamily> f) {
  return TotalRanges(other.spec.ips, other.spec.exclude_ips, f);
}

std::optional<IPPrefix> CanonicalSubnet(std::string_view subnet) {
  auto p = IPPrefix::Parse(subnet);
  if (!p.ok()) return std::nullopt;
  return p->Canonical();
}

std::optional<IPFamily> ObjectFamily(std::optional<int64_t> ip_version, std::string_view subnet) {
  std::optional<IPFamily> f = FamilyOf(ip_version);
  return f.has_value() ? f : CIDRFamily(subnet);
}

absl::Status MergeField(std::vector<std::string>* field, std::string_view name, IPFamily f) {
  if (field->size() <= 1) return absl::OkStatus();
  std::vector<IPRange> ranges;
  ranges.reserve(field->size());
  for (const std::string& t : *field) {
    auto r = ParseRange(f, t);
    if (!r.ok()) {
      return absl::InvalidArgumentError(
          StrCat("failed to merge '", name, "': ", base::FromAbsl(r.status().message())));
    }
    ranges.push_back(*r);
  }
  *field = base::FormatIPRanges(base::MergeIPRanges(std::move(ranges)));
  return absl::OkStatus();
}

Parsed CheckAddressing(std::optional<int64_t> ip_version, std::string_view subnet,
                       bool check_canonical, const Context& ctx, ErrorList* errs) {
  Parsed p;
  p.family = CheckFamily(CheckIPVersion(ip_version, ctx.config.enable_ipv4,
                                        ctx.config.enable_ipv6, kPoolVersionNil, errs),
                         subnet);
  CheckSubnetField(subnet, check_canonical, &p, errs);
  return p;
}

void CheckAddressingUnchanged(std::optional<int64_t> old_version, std::optional<int64_t> version,
                              std::string_view old_subnet, std::string_view subnet,
                              ErrorList* errs) {
  if (version.has_value() && old_version.has_value() && *version != *old_version) {
    errs->push_back(Forbidden("spec.ipVersion", "is not changeable"));
  }
  if (subnet != old_subnet) errs->push_back(Forbidden("spec.subnet", "is not changeable"));
}

}  // namespace internal

// ---- Public helpers -----------------------------------------------------------------------------

absl::StatusOr<std::string> CIDRLabelValue(std::string_view cidr,
                                           std::optional<int64_t> ip_version) {
  std::optional<IPFamily> f;
  if (ip_version.has_value()) {
    f = FamilyOf(ip_version);
    if (!f.has_value()) {
      return absl::InvalidArgumentError(StrCat("invalid IP version '", *ip_version, "'"));
    }
  }
  auto p = ParseCIDR(f, cidr);
  if (!p.ok()) return p.status();
  // strings.Replace with upstream's counts: 3 dots, 7 colons, 1 slash.
  std::string out(cidr);
  auto replace = [&out](char from, int max) {
    for (char& c : out) {
      if (max == 0) break;
      if (c == from) {
        c = '-';
        --max;
      }
    }
  };
  replace('.', 3);
  replace(':', 7);
  replace('/', 1);
  return out;
}
}  // namespace spiderpool::api::validation
