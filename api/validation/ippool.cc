// SpiderIPPool: upstream pkg/ippoolmanager's webhook (reference §5, §2.7, §13).

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "api/names.h"
#include "api/validation/addresses.h"
#include "api/validation/internal.h"
#include "api/validation/validation.h"
#include "base/strings.h"

namespace spiderpool::api::validation {

using base::StrCat;
using namespace internal;  // NOLINT(build/namespaces): the shared rule helpers

namespace {

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
    const std::string user = api::IsNodeReservation(alloc)
                                 ? StrCat("reserved by the agent of node ", *alloc.node)
                                 : StrCat("being used by Pod ", alloc.pod);
    errs->push_back(Forbidden("spec.ips", StrCat("remove an IP address ", ip_text, " that is ",
                                                 user, ", ", kPoolTotalNote)));
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

bool IsAutoCreatedIPPool(const api::SpiderIPPool& pool) {
  return pool.metadata.labels.count(std::string(api::kLabelOwnerApplicationName)) > 0;
}

ErrorList ValidateLabelSelector(const api::LabelSelector& selector, std::string_view path) {
  ErrorList errs;
  std::string labels_path = Child(path, "matchLabels");
  for (const auto& [k, v] : selector.match_labels) {
    for (std::string& msg : api::IsQualifiedName(k)) {
      errs.push_back(Invalid(labels_path, BadValue::String(k), std::move(msg)));
    }
    for (std::string& msg : api::IsValidLabelValue(v)) {
      errs.push_back(Invalid(labels_path, BadValue::String(v), std::move(msg)));
    }
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
    for (std::string& msg : api::IsQualifiedName(r.key)) {
      errs.push_back(Invalid(Child(req_path, "key"), BadValue::String(r.key), std::move(msg)));
    }
    for (size_t j = 0; j < r.values.size(); ++j) {
      for (std::string& msg : api::IsValidLabelValue(r.values[j])) {
        errs.push_back(Invalid(Index(Child(req_path, "values"), j), BadValue::String(r.values[j]),
                               std::move(msg)));
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
  Parsed p = CheckAddressing(pool.spec.ip_version, pool.spec.subnet, /*check_canonical=*/true,
                             ctx, errs);
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
  CheckAddressingUnchanged(old_pool.spec.ip_version, pool.spec.ip_version, old_pool.spec.subnet,
                           pool.spec.subnet, errs);
  Parsed p = CheckAddressing(pool.spec.ip_version, pool.spec.subnet, /*check_canonical=*/false,
                             ctx, errs);
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
}  // namespace spiderpool::api::validation
