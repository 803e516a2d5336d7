// SpiderIPPool, SpiderSubnet and SpiderReservedIP: upstream pkg/ippoolmanager,
// pkg/subnetmanager and pkg/reservedipmanager webhooks (reference §5, §2.7, §2.8, §13).

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "api/labels.h"
#include "api/validation/internal.h"
#include "api/validation/validation.h"
#include "base/strings.h"

namespace spiderpool::api::validation {

using base::StrCat;
using namespace internal;  // NOLINT(build/namespaces): the shared rule helpers

namespace {

constexpr std::string_view kIPPoolKind = "SpiderIPPool";
constexpr std::string_view kSubnetKind = "SpiderSubnet";
constexpr std::string_view kReservedIPKind = "SpiderReservedIP";

constexpr std::string_view kPoolVersionNil =
    "is not generated correctly, 'spec.subnet' may be invalid";
constexpr std::string_view kReservedVersionNil =
    "is not generated correctly, 'spec.ips' is empty or 'spec.ips[0]' may be invalid";
constexpr std::string_view kPoolTotalNote =
    "total IP addresses of an IPPool are jointly determined by 'spec.ips' and 'spec.excludeIPs'";
constexpr std::string_view kSubnetTotalNote =
    "total IP addresses of an Subnet are jointly determined by 'spec.ips' and 'spec.excludeIPs'";

Result NewResult(std::string_view kind, std::string_view name) {
  Result r;
  r.group = std::string(kGroup);
  r.kind = std::string(kind);
  r.name = std::string(name);
  return r;
}

// The family the IP checks use: spec.ipVersion when it is 4 or 6, else the family of
// spec.subnet (so that the other fields are still checked when ipVersion is wrong).
std::optional<IPFamily> CheckFamily(std::optional<IPFamily> from_version,
                                    std::string_view subnet) {
  if (from_version.has_value()) return from_version;
  return CIDRFamily(subnet);
}

// What later checks of a pool or subnet need.
struct Parsed {
  std::optional<IPFamily> family;
  std::optional<IPPrefix> subnet;  // canonical
  std::vector<std::pair<size_t, IPRange>> ips;  // parsed spec.ips entries, with their index
  std::vector<IPRange> exclude;                 // parsed spec.excludeIPs entries
  bool ranges_ok = true;                        // every ips/excludeIPs entry parsed
  std::vector<IPRange> total;                   // merged ips minus excludeIPs
};

// spec.subnet: a CIDR of the family; on create also in canonical form (IsFormatCIDR).
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

// One spec.ips / spec.excludeIPs entry of a pool, as upstream's ip.NewCIDR parses it.
absl::StatusOr<IPRange> ParsePoolEntry(std::string_view text, const Parsed& p) {
  size_t dashes = static_cast<size_t>(std::count(text.begin(), text.end(), '-'));
  if (dashes > 1 || (dashes == 0 && text.find('/') != std::string_view::npos)) {
    return absl::InvalidArgumentError(StrCat("invalid range: ", text));
  }
  std::vector<std::string_view> ends;
  if (dashes == 0) {
    ends = {text};
  } else {
    size_t d = text.find('-');
    ends = {text.substr(0, d), text.substr(d + 1)};
  }
  std::vector<IPAddress> ips;
  for (std::string_view e : ends) {
    auto ip = IPAddress::Parse(e);
    if (!ip.ok()) return absl::InvalidArgumentError(StrCat("invalid IP address: ", e));
    if (p.subnet.has_value() && !p.subnet->Contains(*ip)) {
      return absl::InvalidArgumentError(StrCat("not match base subnet: ", e, " (outside 'spec.subnet' ",
                                               p.subnet->ToString(), ")"));
    }
    if (!p.subnet.has_value() && p.family.has_value() && ip->family() != *p.family) {
      return absl::InvalidArgumentError(StrCat("not match base subnet IPv",
                                               FamilyNumber(*p.family), " version: ", e));
    }
    ips.push_back(*ip);
  }
  if (ips.size() == 1) return IPRange(ips[0], ips[0]);
  if (ips[0].family() != ips[1].family()) {
    return absl::InvalidArgumentError(StrCat("invalid range: ", text));
  }
  if (ips[1] < ips[0]) {
    return absl::InvalidArgumentError(StrCat("invalid range: ", text,
                                             " (its first IP is after its last: write it as ",
                                             ends[1], "-", ends[0], ")"));
  }
  return IPRange(ips[0], ips[1]);
}

// Pool spec.ips entries must not overlap each other (ip.NewCIDR's addIncludeRange). One error
// per entry that overlaps an entry with a lower index, worded as upstream words it.
void CheckPoolRangesDisjoint(const std::vector<std::string>& texts,
                             const std::vector<std::pair<size_t, IPRange>>& ranges,
                             ErrorList* errs) {
  std::vector<const std::pair<size_t, IPRange>*> sorted;
  sorted.reserve(ranges.size());
  for (const auto& r : ranges) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
    if (a->second.first() != b->second.first()) return a->second.first() < b->second.first();
    if (a->second.last() != b->second.last()) return b->second.last() < a->second.last();
    return a->first < b->first;
  });
  std::map<size_t, size_t> conflicts;  // later index -> earlier index
  const std::pair<size_t, IPRange>* widest = nullptr;
  for (const auto* cur : sorted) {
    if (widest != nullptr && widest->second.family() == cur->second.family() &&
        cur->second.first() <= widest->second.last()) {
      size_t a = std::max(cur->first, widest->first);
      size_t b = std::min(cur->first, widest->first);
      conflicts.emplace(a, b);
    }
    if (widest == nullptr || widest->second.family() != cur->second.family() ||
        widest->second.last() < cur->second.last()) {
      widest = cur;
    }
  }
  std::map<size_t, const IPRange*> by_index;
  for (const auto& r : ranges) by_index[r.first] = &r.second;
  for (const auto& [a, b] : conflicts) {
    const IPRange& ra = *by_index[a];
    const IPRange& rb = *by_index[b];
    std::string detail;
    if (rb.Contains(ra)) {
      detail = StrCat("range ", texts[a], " is already covered by ", texts[b]);
    } else if (ra.Contains(rb)) {
      detail = StrCat("range ", texts[a], " covers ", texts[b]);
    } else {
      detail = StrCat("range ", texts[a], " overlaps with ", texts[b]);
    }
    errs->push_back(Invalid(Index("spec.ips", a), BadValue::String(texts[a]), std::move(detail)));
  }
}

// spec.ips / spec.excludeIPs of a pool.
void CheckPoolRanges(const api::IPPoolSpec& spec, Parsed* p, ErrorList* errs) {
  for (size_t i = 0; i < spec.ips.size(); ++i) {
    auto r = ParsePoolEntry(spec.ips[i], *p);
    if (!r.ok()) {
      p->ranges_ok = false;
      errs->push_back(Invalid(Index("spec.ips", i), BadValue::String(spec.ips[i]),
                              std::string(base::FromAbsl(r.status().message()))));
      continue;
    }
    p->ips.emplace_back(i, *r);
  }
  CheckPoolRangesDisjoint(spec.ips, p->ips, errs);
  for (size_t i = 0; i < spec.exclude_ips.size(); ++i) {
    auto r = ParsePoolEntry(spec.exclude_ips[i], *p);
    if (!r.ok()) {
      p->ranges_ok = false;
      errs->push_back(Invalid(Index("spec.excludeIPs", i), BadValue::String(spec.exclude_ips[i]),
                              std::string(base::FromAbsl(r.status().message()))));
      continue;
    }
    p->exclude.push_back(*r);
  }
}

// spec.ips / spec.excludeIPs of a subnet (ValidateContainsIPRange).
void CheckSubnetRanges(const api::SubnetSpec& spec, Parsed* p, ErrorList* errs) {
  auto check = [&](std::string_view field, const std::vector<std::string>& texts, bool is_ips) {
    for (size_t i = 0; i < texts.size(); ++i) {
      auto r = ParseRange(p->family, texts[i]);
      if (!r.ok()) {
        p->ranges_ok = false;
        errs->push_back(Invalid(Index(field, i), BadValue::String(texts[i]),
                                std::string(base::FromAbsl(r.status().message()))));
        continue;
      }
      if (p->subnet.has_value() && !p->subnet->Contains(*r)) {
        p->ranges_ok = false;
        errs->push_back(Invalid(Index(field, i), BadValue::String(texts[i]),
                                StrCat("not pertains to the 'spec.subnet' ", p->subnet->ToString(),
                                       " of Subnet")));
        continue;
      }
      if (is_ips) {
        p->ips.emplace_back(i, *r);
      } else {
        p->exclude.push_back(*r);
      }
    }
  };
  check("spec.ips", spec.ips, true);
  check("spec.excludeIPs", spec.exclude_ips, false);
}

void ComputeTotal(Parsed* p) {
  std::vector<IPRange> in;
  in.reserve(p->ips.size());
  for (const auto& r : p->ips) in.push_back(r.second);
  p->total = base::SubtractIPRanges(std::move(in), p->exclude);
}

// An IP that must lie in spec.subnet (ValidateContainsIP); `object` names the kind in the
// message ("IPPool", "Subnet").
void CheckContainsIP(const std::string& field, std::string_view ip_text, const Parsed& p,
                     std::string_view object, ErrorList* errs, IPAddress* out = nullptr,
                     bool* ok = nullptr) {
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

// spec.gateway: inside the subnet, and not handed out (in spec.ips but not in spec.excludeIPs).
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

// spec.routes (validateIPPoolRoutes / validateSubnetRoutes).
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

// spec.podAffinity (validateIPPoolPodAffinity).
void CheckPodAffinity(const api::SpiderIPPool& pool, ErrorList* errs) {
  if (!pool.spec.pod_affinity.has_value()) return;
  const api::LabelSelector& sel = *pool.spec.pod_affinity;
  const std::string path = "spec.podAffinity";
  if (IsAutoCreatedIPPool(pool)) {
    static const std::set<std::string_view> kAutoKeys = {
        api::kAppLabelAPIGroup, api::kAppLabelAPIVersion, api::kAppLabelKind,
        api::kAppLabelNamespace, api::kAppLabelName};
    for (const auto& [k, v] : sel.match_labels) {
      if (kAutoKeys.count(k) > 0) continue;
      errs->push_back(Invalid(path, BadValue::Raw(GoLabelSelector(sel)),
                              StrCat("it's invalid to add additional podAffinity matchLabels for "
                                     "auto-created SpiderIPPool (remove matchLabels[",
                                     k, "])")));
    }
    if (!sel.match_expressions.empty()) {
      errs->push_back(Invalid(path, BadValue::Raw(GoLabelSelector(sel)),
                              "it's invalid to add additional podAffinity matchExpressions for "
                              "auto-created SpiderIPPool"));
    }
    return;
  }
  ErrorList sel_errs = ValidateLabelSelector(sel, path);
  errs->insert(errs->end(), sel_errs.begin(), sel_errs.end());
  if (sel.Empty()) {
    errs->push_back(Invalid(path, BadValue::Raw(GoLabelSelector(sel)),
                            "empty podAffinity is invalid for SpiderIPPool (set matchLabels or "
                            "matchExpressions, or remove spec.podAffinity)"));
  }
}

// The other pool's usable IPs, parsed leniently (its own errors are not ours to report).
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

// CREATE: another pool's spec.subnet may equal ours but not overlap it (validateIPPoolCIDR).
void CheckPoolSubnetOverlap(const api::SpiderIPPool& pool, const Parsed& p, const Context& ctx,
                            ErrorList* errs) {
  if (!p.subnet.has_value()) return;
  for (const api::SpiderIPPool* other : ctx.ippools) {
    if (other == nullptr || other->metadata.name == pool.metadata.name) continue;
    if (ObjectFamily(other->spec.ip_version, other->spec.subnet) != p.family) continue;
    std::optional<IPPrefix> o = CanonicalSubnet(other->spec.subnet);
    if (!o.has_value() || *o == *p.subnet || !o->Overlaps(*p.subnet)) continue;
    errs->push_back(Invalid("spec.subnet", BadValue::String(pool.spec.subnet),
                            StrCat("overlap with IPPool ", other->metadata.name,
                                   " which 'spec.subnet' is ", other->spec.subnet)));
  }
}

// Pools with the same spec.subnet may not share IPs (validateIPPoolAvailableIPs, §13).
void CheckPoolIPsOverlap(const api::SpiderIPPool& pool, const Parsed& p, const Context& ctx,
                         ErrorList* errs) {
  if (!p.subnet.has_value() || p.total.empty()) return;
  for (const api::SpiderIPPool* other : ctx.ippools) {
    if (other == nullptr || other->metadata.name == pool.metadata.name) continue;
    std::optional<IPPrefix> o = CanonicalSubnet(other->spec.subnet);
    if (!o.has_value() || *o != *p.subnet) continue;
    std::vector<IPRange> shared = IntersectRanges(p.total, OtherPoolTotal(*other, p.family));
    if (shared.empty()) continue;
    errs->push_back(Forbidden("spec.ips", StrCat("overlap with IPPool ", other->metadata.name,
                                                 " in IP ranges ", RangesText(shared), ", ",
                                                 kPoolTotalNote)));
  }
}

// UPDATE: no IP in status.allocatedIPs may leave the pool (validateIPPoolIPInUse).
void CheckPoolIPsInUse(const api::SpiderIPPool& pool, const Parsed& p, ErrorList* errs) {
  if (!p.ranges_ok) return;  // the unparseable entries are reported already
  auto allocations = pool.AllocatedIPs();
  if (!allocations.ok()) {
    errs->push_back(Internal("spec.ips", StrCat("failed to unmarshal the allocated IP records of "
                                                "IPPool ",
                                                pool.metadata.name, ": ",
                                                base::FromAbsl(allocations.status().message()))));
    return;
  }
  for (const auto& [ip_text, alloc] : *allocations) {
    auto ip = IPAddress::Parse(ip_text);
    if (ip.ok() && RangesContain(p.total, *ip)) continue;
    errs->push_back(Forbidden("spec.ips", StrCat("remove an IP address ", ip_text,
                                                 " that is being used by Pod ", alloc.pod, ", ",
                                                 kPoolTotalNote)));
  }
}

const api::SpiderSubnet* FindSubnet(const Context& ctx, std::string_view name) {
  for (const api::SpiderSubnet* s : ctx.subnets) {
    if (s != nullptr && s->metadata.name == name) return s;
  }
  return nullptr;
}

// With subnets on, a pool controlled by a SpiderSubnet may only hold IPs of that subnet; an auto
// pool's IPs must be exactly its record in the subnet's status.controlledIPPools
// (validateSubnetTotalIPsContainsIPPoolTotalIPs).
void CheckPoolWithinSubnet(const api::SpiderIPPool& pool, const Parsed& p, const Context& ctx,
                           ErrorList* errs) {
  if (!ctx.config.enable_spider_subnet || !p.ranges_ok || p.total.empty()) return;
  const api::OwnerReference* owner = pool.metadata.ControllerRef();
  if (owner == nullptr || owner->kind != kSubnetKind) return;
  const api::SpiderSubnet* subnet = FindSubnet(ctx, owner->name);
  if (subnet == nullptr) {
    errs->push_back(Internal("spec.subnet", StrCat("failed to get controller Subnet ", owner->name,
                                                   ": spidersubnets.", kGroup, " \"",
                                                   owner->name, "\" not found")));
    return;
  }
  std::optional<IPFamily> sf = ObjectFamily(subnet->spec.ip_version, subnet->spec.subnet);
  std::vector<IPRange> subnet_total =
      TotalRanges(subnet->spec.ips, subnet->spec.exclude_ips, sf);
  std::vector<IPRange> outside = base::SubtractIPRanges(p.total, subnet_total);
  if (!outside.empty()) {
    errs->push_back(Forbidden("spec.ips", StrCat("add some IP ranges ", RangesText(outside),
                                                 " that are not contained in controller Subnet ",
                                                 subnet->metadata.name, ", ", kPoolTotalNote)));
    return;
  }
  if (!IsAutoCreatedIPPool(pool)) return;
  auto controlled = subnet->ControlledIPPools();
  if (!controlled.ok()) {
    errs->push_back(Internal("spec.subnet",
                             StrCat("failed to unmarshal SpiderSubnet ", subnet->metadata.name,
                                    " Status.ControlledIPPools: ",
                                    base::FromAbsl(controlled.status().message()))));
    return;
  }
  std::vector<IPRange> recorded;
  auto it = controlled->find(pool.metadata.name);
  if (it != controlled->end()) recorded = MergedRanges(it->second.ips, sf);
  if (recorded != p.total) {
    errs->push_back(Forbidden("spec.ips",
                              "it's illegal to update AutoPool.Spec.IPs that are different from "
                              "corresponding SpiderSubnet.Status.ControlledIPPools"));
  }
}

// The checks CREATE and UPDATE share (validateIPPoolSpec + podAffinity).
void CheckPoolSpec(const api::SpiderIPPool& pool, Parsed* p, const Context& ctx, ErrorList* errs) {
  CheckPoolRanges(pool.spec, p, errs);
  ComputeTotal(p);
  CheckPoolIPsOverlap(pool, *p, ctx, errs);
  CheckGateway(pool.spec.gateway, pool.spec.ips, *p, "IPPool", errs);
  CheckRoutes(pool.spec.routes, *p, "IPPool", errs);
  CheckPodAffinity(pool, errs);
}

// ---- Subnet cross-object checks ---------------------------------------------------------------

// CREATE: subnets of a family may not overlap (validateSubnetCIDR), and existing pools must fit
// (validateOrphanIPPool).
void CheckSubnetOverlaps(const api::SpiderSubnet& subnet, const Parsed& p, const Context& ctx,
                         ErrorList* errs) {
  if (!p.subnet.has_value()) return;
  for (const api::SpiderSubnet* other : ctx.subnets) {
    if (other == nullptr || other->metadata.name == subnet.metadata.name) continue;
    if (ObjectFamily(other->spec.ip_version, other->spec.subnet) != p.family) continue;
    std::optional<IPPrefix> o = CanonicalSubnet(other->spec.subnet);
    if (!o.has_value() || !o->Overlaps(*p.subnet)) continue;
    errs->push_back(Invalid("spec.subnet", BadValue::String(subnet.spec.subnet),
                            StrCat("overlap with Subnet ", other->metadata.name,
                                   " which 'spec.subnet' is ", other->spec.subnet)));
  }
  for (const api::SpiderIPPool* pool : ctx.ippools) {
    if (pool == nullptr) continue;
    if (ObjectFamily(pool->spec.ip_version, pool->spec.subnet) != p.family) continue;
    std::optional<IPPrefix> o = CanonicalSubnet(pool->spec.subnet);
    if (!o.has_value()) continue;
    if (*o != *p.subnet) {
      if (o->Overlaps(*p.subnet)) {
        errs->push_back(Invalid("spec.subnet", BadValue::String(subnet.spec.subnet),
                                StrCat("overlap with SpiderIPPool '", pool->metadata.name,
                                       "' resource 'spec.subnet' ", pool->spec.subnet)));
      }
      continue;
    }
    std::vector<IPRange> outside = base::SubtractIPRanges(OtherPoolTotal(*pool, p.family), p.total);
    if (outside.empty()) continue;
    errs->push_back(Invalid("spec.ips", BadValue::Strings(subnet.spec.ips),
                            StrCat("SpiderIPPool '", pool->metadata.name,
                                   "' owns some IP addresses that SpiderSubnet '",
                                   subnet.metadata.name, "' can't control: add ",
                                   RangesText(outside), " to 'spec.ips'")));
  }
}

// UPDATE: IPs handed to pools (status.controlledIPPools) must stay (validateSubnetIPInUse).
void CheckSubnetIPsInUse(const api::SpiderSubnet& subnet, const Parsed& p, ErrorList* errs) {
  if (!p.ranges_ok) return;
  auto controlled = subnet.ControlledIPPools();
  if (!controlled.ok()) {
    errs->push_back(Internal("status.controlledIPPools",
                             StrCat("failed to unmarshal the controlled IPPools of Subnet ",
                                    subnet.metadata.name, ": ",
                                    base::FromAbsl(controlled.status().message()))));
    return;
  }
  for (const auto& [pool_name, pre] : *controlled) {
    std::vector<IPRange> outside =
        base::SubtractIPRanges(MergedRanges(pre.ips, p.family), p.total);
    if (outside.empty()) continue;
    errs->push_back(Forbidden("spec.ips", StrCat("remove some IP ranges ", RangesText(outside),
                                                 " that is being used by IPPool ", pool_name,
                                                 ", ", kSubnetTotalNote)));
  }
}

void CheckSubnetSpec(const api::SpiderSubnet& subnet, Parsed* p, ErrorList* errs) {
  CheckSubnetRanges(subnet.spec, p, errs);
  ComputeTotal(p);
  CheckGateway(subnet.spec.gateway, subnet.spec.ips, *p, "Subnet", errs);
  CheckRoutes(subnet.spec.routes, *p, "Subnet", errs);
}

// ---- ReservedIP -------------------------------------------------------------------------------

void CheckReservedIPs(const api::SpiderReservedIP& rip, std::optional<IPFamily> f,
                      ErrorList* errs) {
  for (size_t i = 0; i < rip.spec.ips.size(); ++i) {
    auto r = ParseRange(f, rip.spec.ips[i]);
    if (r.ok()) continue;
    errs->push_back(Invalid(Index("spec.ips", i), BadValue::String(rip.spec.ips[i]),
                            std::string(base::FromAbsl(r.status().message()))));
  }
}

// ---- Mutation helpers -------------------------------------------------------------------------

// upstream ip.MergeIPRanges: every entry a range of the family, merged into minimal ranges.
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

std::string SubnetCIDRLabel(const api::SpiderSubnet& s) {
  auto it = s.metadata.labels.find(std::string(api::kLabelSubnetCIDR));
  if (it != s.metadata.labels.end()) return it->second;
  auto v = CIDRLabelValue(s.spec.subnet, s.spec.ip_version);
  return v.ok() ? *v : std::string();
}

// setControllerSubnet + InheritSubnetProperties.
absl::Status SetControllerSubnet(api::SpiderIPPool* pool, const Context& ctx,
                                 const std::string& cidr_label) {
  const api::OwnerReference* owner = pool->metadata.ControllerRef();
  auto label = pool->metadata.labels.find(std::string(api::kLabelOwnerSpiderSubnet));
  if (label != pool->metadata.labels.end() && owner != nullptr && owner->name == label->second) {
    return absl::OkStatus();
  }
  const api::SpiderSubnet* subnet = nullptr;
  for (const api::SpiderSubnet* s : ctx.subnets) {
    if (s == nullptr || s->metadata.IsDeleting() || SubnetCIDRLabel(*s) != cidr_label) continue;
    if (subnet == nullptr || s->metadata.name < subnet->metadata.name) subnet = s;
  }
  if (subnet == nullptr) return absl::OkStatus();

  bool controlled = owner != nullptr && owner->uid == subnet->metadata.uid;
  if (!controlled) {
    const std::string api_version(api::kSpiderApiVersion);
    auto same_object = [&](const api::OwnerReference& r) {
      return r.kind == kSubnetKind && r.name == subnet->metadata.name &&
             r.api_version.substr(0, r.api_version.find('/')) == api::kSpiderGroup;
    };
    if (owner != nullptr && !same_object(*owner)) {
      return absl::InternalError(StrCat(
          "failed to set the reference of the controller Subnet: failed to set owner reference: "
          "Object /",
          pool->metadata.name, " is already owned by another ", owner->kind, " controller ",
          owner->name));
    }
    api::OwnerReference ref{.api_version = api_version,
                            .kind = std::string(kSubnetKind),
                            .name = subnet->metadata.name,
                            .uid = subnet->metadata.uid,
                            .controller = true,
                            .block_owner_deletion = true};
    bool replaced = false;
    for (api::OwnerReference& r : pool->metadata.owner_references) {
      if (same_object(r)) {
        r = ref;
        replaced = true;
        break;
      }
    }
    if (!replaced) pool->metadata.owner_references.push_back(std::move(ref));
  }
  pool->metadata.labels[std::string(api::kLabelOwnerSpiderSubnet)] = subnet->metadata.name;

  if (subnet->spec.gateway.has_value() && !pool->spec.gateway.has_value()) {
    pool->spec.gateway = subnet->spec.gateway;
  }
  if (subnet->spec.routes.has_value() && !subnet->spec.routes->empty() &&
      !pool->spec.routes.has_value()) {
    pool->spec.routes = subnet->spec.routes;
  }
  return absl::OkStatus();
}

}  // namespace

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

bool IsAutoCreatedIPPool(const api::SpiderIPPool& pool) {
  return pool.metadata.labels.count(std::string(api::kLabelOwnerApplicationName)) > 0;
}

ErrorList ValidateLabelSelector(const api::LabelSelector& selector, std::string_view path) {
  ErrorList errs;
  std::string labels_path = Child(path, "matchLabels");
  for (const auto& [k, v] : selector.match_labels) {
    std::string msg = api::ValidateLabelKey(k);
    if (!msg.empty()) errs.push_back(Invalid(labels_path, BadValue::String(k), msg));
    msg = api::ValidateLabelValue(v);
    if (!msg.empty()) errs.push_back(Invalid(labels_path, BadValue::String(v), msg));
  }
  for (size_t i = 0; i < selector.match_expressions.size(); ++i) {
    const api::LabelSelectorRequirement& r = selector.match_expressions[i];
    std::string req_path = Index(Child(path, "matchExpressions"), i);
    if (r.op == "In" || r.op == "NotIn") {
      if (r.values.empty()) {
        errs.push_back(Required(Child(req_path, "values"),
                                "must be specified when `operator` is 'In' or 'NotIn'"));
      }
    } else if (r.op == "Exists" || r.op == "DoesNotExist") {
      if (!r.values.empty()) {
        errs.push_back(Forbidden(Child(req_path, "values"),
                                 "may not be specified when `operator` is 'Exists' or "
                                 "'DoesNotExist'"));
      }
    } else {
      errs.push_back(Invalid(Child(req_path, "operator"), BadValue::String(r.op),
                             "not a valid selector operator"));
    }
    std::string msg = api::ValidateLabelKey(r.key);
    if (!msg.empty()) errs.push_back(Invalid(Child(req_path, "key"), BadValue::String(r.key), msg));
    for (size_t j = 0; j < r.values.size(); ++j) {
      msg = api::ValidateLabelValue(r.values[j]);
      if (!msg.empty()) {
        errs.push_back(Invalid(Index(Child(req_path, "values"), j), BadValue::String(r.values[j]),
                               msg));
      }
    }
  }
  return errs;
}

// ---- SpiderIPPool -------------------------------------------------------------------------------

absl::Status MutateIPPool(api::SpiderIPPool* pool, const Context& ctx) {
  if (pool->metadata.IsDeleting()) return absl::OkStatus();
  pool->metadata.AddFinalizer(api::kSpiderFinalizer);
  if (!pool->spec.ip_version.has_value()) {
    std::optional<IPFamily> f = CIDRFamily(pool->spec.subnet);
    if (!f.has_value()) {
      return absl::InvalidArgumentError(StrCat("failed to generate 'spec.ipVersion' from "
                                               "'spec.subnet' ",
                                               pool->spec.subnet, ", nothing to mutate"));
    }
    pool->spec.ip_version = FamilyNumber(*f);
  }
  auto cidr = CIDRLabelValue(pool->spec.subnet, pool->spec.ip_version);
  if (!cidr.ok()) {
    return absl::InvalidArgumentError(StrCat("failed to parse 'spec.subnet' ", pool->spec.subnet,
                                             " as a valid label value: ",
                                             base::FromAbsl(cidr.status().message())));
  }
  pool->metadata.labels[std::string(api::kLabelIPPoolCIDR)] = *cidr;
  if (ctx.config.enable_spider_subnet) {
    absl::Status s = SetControllerSubnet(pool, ctx, *cidr);
    if (!s.ok()) return s;
  }
  IPFamily f = *FamilyOf(pool->spec.ip_version);
  absl::Status s = MergeField(&pool->spec.ips, "spec.ips", f);
  if (!s.ok()) return s;
  return MergeField(&pool->spec.exclude_ips, "spec.excludeIPs", f);
}

Result ValidateIPPoolCreate(const api::SpiderIPPool& pool, const Context& ctx) {
  Result r = NewResult(kIPPoolKind, pool.metadata.name);
  for (const api::SpiderIPPool* other : ctx.ippools) {
    if (other != nullptr && other->metadata.name == pool.metadata.name) {
      r.denied = AlreadyExistsStatus(kGroup, kIPPoolKind, pool.metadata.name);
      return r;
    }
  }
  ErrorList* errs = &r.errors;
  Parsed p;
  p.family = CheckFamily(CheckIPVersion(pool.spec.ip_version, ctx.config.enable_ipv4,
                                        ctx.config.enable_ipv6, kPoolVersionNil, errs),
                         pool.spec.subnet);
  CheckSubnetField(pool.spec.subnet, /*check_canonical=*/true, &p, errs);
  CheckPoolSubnetOverlap(pool, p, ctx, errs);
  CheckPoolSpec(pool, &p, ctx, errs);
  CheckPoolWithinSubnet(pool, p, ctx, errs);
  return r;
}

Result ValidateIPPoolUpdate(const api::SpiderIPPool& old_pool, const api::SpiderIPPool& pool,
                            const Context& ctx) {
  Result r = NewResult(kIPPoolKind, pool.metadata.name);
  if (pool.metadata.IsDeleting()) {
    if (pool.metadata.HasFinalizer(api::kSpiderFinalizer)) {
      r.denied = ForbiddenStatus("", "", "", "cannot update a terminating IPPool");
    }
    return r;
  }
  ErrorList* errs = &r.errors;
  if (pool.spec.ip_version.has_value() && old_pool.spec.ip_version.has_value() &&
      *pool.spec.ip_version != *old_pool.spec.ip_version) {
    errs->push_back(Forbidden("spec.ipVersion", "is not changeable"));
  }
  if (pool.spec.subnet != old_pool.spec.subnet) {
    errs->push_back(Forbidden("spec.subnet", "is not changeable"));
  }
  Parsed p;
  p.family = CheckFamily(CheckIPVersion(pool.spec.ip_version, ctx.config.enable_ipv4,
                                        ctx.config.enable_ipv6, kPoolVersionNil, errs),
                         pool.spec.subnet);
  CheckSubnetField(pool.spec.subnet, /*check_canonical=*/false, &p, errs);
  CheckPoolSpec(pool, &p, ctx, errs);
  CheckPoolIPsInUse(pool, p, errs);
  CheckPoolWithinSubnet(pool, p, ctx, errs);
  return r;
}

Result ValidateIPPoolDelete(const api::SpiderIPPool& pool, const Context& ctx) {
  Result r = NewResult(kIPPoolKind, pool.metadata.name);
  if (!ctx.config.enable_validating_resources_deleted_webhook) return r;
  int64_t n = pool.status.allocated_ip_count.value_or(0);
  if (n > 0) {
    r.denied = ForbiddenStatus(kGroup, "spiderippools", pool.metadata.name,
                               StrCat("cannot delete an IPPool with allocated IPs(", n, ")"));
  }
  return r;
}

// ---- SpiderSubnet -------------------------------------------------------------------------------

absl::Status MutateSubnet(api::SpiderSubnet* subnet, const Context& /*ctx*/) {
  if (subnet->metadata.IsDeleting()) return absl::OkStatus();
  subnet->metadata.AddFinalizer(api::kSpiderFinalizer);
  if (!subnet->spec.ip_version.has_value()) {
    std::optional<IPFamily> f = CIDRFamily(subnet->spec.subnet);
    if (!f.has_value()) {
      return absl::InvalidArgumentError(StrCat("failed to generate 'spec.ipVersion' from "
                                               "'spec.subnet' ",
                                               subnet->spec.subnet, ", nothing to mutate"));
    }
    subnet->spec.ip_version = FamilyNumber(*f);
  }
  auto cidr = CIDRLabelValue(subnet->spec.subnet, subnet->spec.ip_version);
  if (!cidr.ok()) {
    return absl::InvalidArgumentError(StrCat("failed to parse 'spec.subnet' ",
                                             subnet->spec.subnet, " as a valid label value: ",
                                             base::FromAbsl(cidr.status().message())));
  }
  subnet->metadata.labels[std::string(api::kLabelSubnetCIDR)] = *cidr;
  IPFamily f = *FamilyOf(subnet->spec.ip_version);
  absl::Status s = MergeField(&subnet->spec.ips, "spec.ips", f);
  if (!s.ok()) return s;
  return MergeField(&subnet->spec.exclude_ips, "spec.excludeIPs", f);
}

Result ValidateSubnetCreate(const api::SpiderSubnet& subnet, const Context& ctx) {
  Result r = NewResult(kSubnetKind, subnet.metadata.name);
  for (const api::SpiderSubnet* other : ctx.subnets) {
    if (other != nullptr && other->metadata.name == subnet.metadata.name) {
      r.denied = AlreadyExistsStatus(kGroup, kSubnetKind, subnet.metadata.name);
      return r;
    }
  }
  ErrorList* errs = &r.errors;
  Parsed p;
  p.family = CheckFamily(CheckIPVersion(subnet.spec.ip_version, ctx.config.enable_ipv4,
                                        ctx.config.enable_ipv6, kPoolVersionNil, errs),
                         subnet.spec.subnet);
  CheckSubnetField(subnet.spec.subnet, /*check_canonical=*/true, &p, errs);
  CheckSubnetSpec(subnet, &p, errs);
  CheckSubnetOverlaps(subnet, p, ctx, errs);
  return r;
}

Result ValidateSubnetUpdate(const api::SpiderSubnet& old_subnet, const api::SpiderSubnet& subnet,
                            const Context& ctx) {
  Result r = NewResult(kSubnetKind, subnet.metadata.name);
  if (subnet.metadata.IsDeleting()) {
    if (subnet.metadata.HasFinalizer(api::kSpiderFinalizer)) {
      r.denied = ForbiddenStatus("", "", "", "cannot update a terminaing Subnet");
    }
    return r;
  }
  ErrorList* errs = &r.errors;
  if (subnet.spec.ip_version.has_value() && old_subnet.spec.ip_version.has_value() &&
      *subnet.spec.ip_version != *old_subnet.spec.ip_version) {
    errs->push_back(Forbidden("spec.ipVersion", "is not changeable"));
  }
  if (subnet.spec.subnet != old_subnet.spec.subnet) {
    errs->push_back(Forbidden("spec.subnet", "is not changeable"));
  }
  Parsed p;
  p.family = CheckFamily(CheckIPVersion(subnet.spec.ip_version, ctx.config.enable_ipv4,
                                        ctx.config.enable_ipv6, kPoolVersionNil, errs),
                         subnet.spec.subnet);
  CheckSubnetField(subnet.spec.subnet, /*check_canonical=*/false, &p, errs);
  CheckSubnetSpec(subnet, &p, errs);
  CheckSubnetIPsInUse(subnet, p, errs);
  return r;
}

Result ValidateSubnetDelete(const api::SpiderSubnet& subnet, const Context& ctx) {
  Result r = NewResult(kSubnetKind, subnet.metadata.name);
  if (!ctx.config.enable_validating_resources_deleted_webhook) return r;
  int64_t n = subnet.status.allocated_ip_count.value_or(0);
  if (n > 0) {
    r.denied = ForbiddenStatus(kGroup, "spidersubnets", subnet.metadata.name,
                               StrCat("cannot delete an Subnet with allocated IPs(", n, ")"));
  }
  return r;
}

// ---- SpiderReservedIP ---------------------------------------------------------------------------

absl::Status MutateReservedIP(api::SpiderReservedIP* rip, const Context& /*ctx*/) {
  if (rip->metadata.IsDeleting()) return absl::OkStatus();
  if (rip->spec.ips.empty()) return absl::InvalidArgumentError("empty 'spec.ips', noting to mutate");
  if (!rip->spec.ip_version.has_value()) {
    if (ParseRange(IPFamily::kV4, rip->spec.ips[0]).ok()) {
      rip->spec.ip_version = 4;
    } else if (ParseRange(IPFamily::kV6, rip->spec.ips[0]).ok()) {
      rip->spec.ip_version = 6;
    } else {
      return absl::InvalidArgumentError(StrCat("failed to generate 'spec.ipVersion' from "
                                               "'spec.ips[0]' ",
                                               rip->spec.ips[0], ", nothing to mutate"));
    }
  }
  std::optional<IPFamily> f = FamilyOf(rip->spec.ip_version);
  if (!f.has_value()) return absl::OkStatus();  // reported by validation
  return MergeField(&rip->spec.ips, "spec.ips", *f);
}

Result ValidateReservedIPCreate(const api::SpiderReservedIP& rip, const Context& ctx) {
  Result r = NewResult(kReservedIPKind, rip.metadata.name);
  std::optional<IPFamily> f =
      CheckIPVersion(rip.spec.ip_version, ctx.config.enable_ipv4, ctx.config.enable_ipv6,
                     kReservedVersionNil, &r.errors);
  if (f.has_value()) CheckReservedIPs(rip, f, &r.errors);
  return r;
}

Result ValidateReservedIPUpdate(const api::SpiderReservedIP& old_rip,
                                const api::SpiderReservedIP& rip, const Context& ctx) {
  Result r = NewResult(kReservedIPKind, rip.metadata.name);
  if (rip.metadata.IsDeleting()) {
    if (old_rip.metadata.IsDeleting()) {
      r.denied = ForbiddenStatus("", "", "", "cannot update a terminating ReservedIP");
    }
    return r;
  }
  if (rip.spec.ip_version.has_value() && old_rip.spec.ip_version.has_value() &&
      *rip.spec.ip_version != *old_rip.spec.ip_version) {
    r.errors.push_back(Forbidden("spec.ipVersion", "is not changeable"));
  }
  std::optional<IPFamily> f =
      CheckIPVersion(rip.spec.ip_version, ctx.config.enable_ipv4, ctx.config.enable_ipv6,
                     kReservedVersionNil, &r.errors);
  if (f.has_value()) CheckReservedIPs(rip, f, &r.errors);
  return r;
}

}  // namespace spiderpool::api::validation
