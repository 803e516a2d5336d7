// SpiderSubnet: upstream pkg/subnetmanager's webhook (reference §5, §2.8).

#include <utility>

#include "api/validation/addresses.h"
#include "api/validation/internal.h"
#include "api/validation/validation.h"
#include "base/strings.h"

namespace spiderpool::api::validation {

using base::StrCat;
using namespace internal;  // NOLINT(build/namespaces): the shared rule helpers

namespace {

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

}  // namespace

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
  Parsed p = CheckAddressing(subnet.spec.ip_version, subnet.spec.subnet,
                             /*check_canonical=*/true, ctx, errs);
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
  CheckAddressingUnchanged(old_subnet.spec.ip_version, subnet.spec.ip_version,
                           old_subnet.spec.subnet, subnet.spec.subnet, errs);
  Parsed p = CheckAddressing(subnet.spec.ip_version, subnet.spec.subnet,
                             /*check_canonical=*/false, ctx, errs);
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
}  // namespace spiderpool::api::validation
