// SpiderReservedIP: upstream pkg/reservedipmanager's webhook (reference §5).

#include "api/validation/addresses.h"
#include "api/validation/internal.h"
#include "api/validation/validation.h"
#include "base/strings.h"

namespace spiderpool::api::validation {

using base::StrCat;
using namespace internal;  // NOLINT(build/namespaces): the shared rule helpers

namespace {

void CheckReservedIPs(const api::SpiderReservedIP& rip, std::optional<IPFamily> f,
                      ErrorList* errs) {
  for (size_t i = 0; i < rip.spec.ips.size(); ++i) {
    auto r = ParseRange(f, rip.spec.ips[i]);
    if (r.ok()) continue;
    errs->push_back(Invalid(Index("spec.ips", i), BadValue::String(rip.spec.ips[i]),
                            std::string(base::FromAbsl(r.status().message()))));
  }
}

}  // namespace

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
