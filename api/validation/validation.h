#pragma once
// The admission rules of upstream Spiderpool's webhooks (reference docs/reference/spiderpool.md
// §5), as pure functions over api/ types: one Validate<Kind>{Create,Update,Delete} per webhook
// operation upstream registers, and one Mutate<Kind> per mutating webhook. Used by the admission
// webhook server, by the controller (to check objects it writes) and by the agent.
//
//   validation::Context ctx;
//   ctx.config.enable_ipv6 = false;
//   ctx.ippools = validation::Refs<api::SpiderIPPool>(pool_store.List());
//   ctx.subnets = validation::Refs<api::SpiderSubnet>(subnet_store.List());
//   api::SpiderIPPool pool = ...;
//   absl::Status m = validation::MutateIPPool(&pool, ctx);  // log m, never reject on it
//   validation::Result r = validation::ValidateIPPoolCreate(pool, ctx);
//   if (!r.ok()) return api::DenyWithStatus(uid, r.ToStatus());  // 422/403/409, with causes
//
// Differences from upstream, all deliberate:
//   - Every error of the object is reported at once (upstream stops at the first one in most
//     places), each at the most precise field path (spec.ips[2], not spec.subnet).
//   - Field names in messages are the JSON names (upstream's SpiderMultusConfig messages say
//     spec.macvlanConfig for spec.macvlan, and its coordinator paths say spec.extraCIDR for
//     spec.hijackCIDR). Upstream's wording is otherwise kept as the core of every message.
//   - A few holes are closed: reversed IP ranges ("10.0.0.9-10.0.0.1") are rejected, two
//     subnets with the identical CIDR overlap, a pool's IPs may not overlap each other even if
//     the mutating webhook did not run.
// See README.md for the rule table.
//
// Mutate* functions apply upstream's defaults in place and are idempotent (mutating a mutated
// object changes nothing). Like upstream's webhooks, a Mutate error is meant to be logged, not to
// reject the request: the validating step reports the problem with its field path.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/meta.h"
#include "api/spider.h"
#include "api/validation/errors.h"

namespace spiderpool::api::validation {

// The spiderpool-controller switches the rules depend on.
struct Config {
  bool enable_ipv4 = true;           // ipam.enableIPv4
  bool enable_ipv6 = true;           // ipam.enableIPv6
  bool enable_spider_subnet = true;  // ipam.spiderSubnet.enable
  // Whether DELETE of pools/subnets is checked (upstream
  // ENABLE_VALIDATING_RESOURCES_DELETED_WEBHOOK; off by default).
  bool enable_validating_resources_deleted_webhook = false;
};

// Owner references of an existing NetworkAttachmentDefinition ns/name; nullopt when it does not
// exist; an error when the lookup failed.
using NetAttachDefOwnersFn =
    std::function<absl::StatusOr<std::optional<std::vector<api::OwnerReference>>>(
        std::string_view ns, std::string_view name)>;
// Whether SpiderMultusConfig ns/name exists; an error when the lookup failed.
using MultusConfigExistsFn =
    std::function<absl::StatusOr<bool>(std::string_view ns, std::string_view name)>;

// What the cross-object rules need. Lists are the existing objects as the API server has them
// (the object under validation may be among them; it is recognised by name). The pointers must
// outlive the call.
struct Context {
  Config config;
  std::vector<const api::SpiderIPPool*> ippools;  // pool overlap; subnet's "orphan pool" check
  std::vector<const api::SpiderSubnet*> subnets;  // subnet overlap; a pool's controller Subnet
  // SpiderMultusConfig: "the NAD may not belong to another SpiderMultusConfig". Unset = skipped.
  NetAttachDefOwnersFn net_attach_def_owners;
  // SpiderClaimParameter: referenced SpiderMultusConfigs must exist. Unset = skipped.
  MultusConfigExistsFn multus_config_exists;
};

// Pointers to the objects of a container of T, const T*, or (shared/unique) pointers to T.
template <typename T, typename Container>
std::vector<const T*> Refs(const Container& c) {
  std::vector<const T*> out;
  out.reserve(c.size());
  for (const auto& e : c) {
    using E = std::decay_t<decltype(e)>;
    if constexpr (std::is_same_v<E, T>) {
      out.push_back(&e);
    } else if constexpr (std::is_pointer_v<E>) {
      out.push_back(e);
    } else {
      out.push_back(e.get());
    }
  }
  return out;
}

// ---- SpiderIPPool (mutate, validate CREATE/UPDATE/DELETE) ---------------------------------

// Finalizer; ipVersion from spec.subnet; label ipam.spidernet.io/ippool-cidr; with
// enable_spider_subnet: the SpiderSubnet of the same CIDR becomes the controller owner (label
// ipam.spidernet.io/owner-spider-subnet) and gateway/routes are inherited when unset (routes only
// when spec.routes is absent: an explicit [] blocks inheritance); spec.ips and spec.excludeIPs
// merged into minimal sorted ranges. No-op on a terminating pool.
absl::Status MutateIPPool(api::SpiderIPPool* pool, const Context& ctx);
Result ValidateIPPoolCreate(const api::SpiderIPPool& pool, const Context& ctx);
Result ValidateIPPoolUpdate(const api::SpiderIPPool& old_pool, const api::SpiderIPPool& pool,
                            const Context& ctx);
Result ValidateIPPoolDelete(const api::SpiderIPPool& pool, const Context& ctx);

// ---- SpiderSubnet (mutate, validate CREATE/UPDATE/DELETE) ---------------------------------

// Finalizer; ipVersion; label ipam.spidernet.io/subnet-cidr; ranges merged.
absl::Status MutateSubnet(api::SpiderSubnet* subnet, const Context& ctx);
Result ValidateSubnetCreate(const api::SpiderSubnet& subnet, const Context& ctx);
Result ValidateSubnetUpdate(const api::SpiderSubnet& old_subnet, const api::SpiderSubnet& subnet,
                            const Context& ctx);
Result ValidateSubnetDelete(const api::SpiderSubnet& subnet, const Context& ctx);

// ---- SpiderReservedIP (mutate, validate CREATE/UPDATE) ------------------------------------

// ipVersion from spec.ips[0]; ranges merged. Errors on empty spec.ips.
absl::Status MutateReservedIP(api::SpiderReservedIP* rip, const Context& ctx);
Result ValidateReservedIPCreate(const api::SpiderReservedIP& rip, const Context& ctx);
Result ValidateReservedIPUpdate(const api::SpiderReservedIP& old_rip,
                                const api::SpiderReservedIP& rip, const Context& ctx);

// ---- SpiderCoordinator (mutate, validate CREATE/UPDATE) -----------------------------------

// Defaults mode=auto, tunePodRoutes=true, hostRuleTable=500, podRPFilter=0, txQueueLen=0,
// vethLinkAddress="", vethMTU=1500; bare IPs in hijackCIDR and policyRoutes[].dst become /32 or
// /128; finalizer. Errors (after the defaults) when podCIDRType is unset.
absl::Status MutateCoordinator(api::SpiderCoordinator* coord, const Context& ctx);
Result ValidateCoordinatorCreate(const api::SpiderCoordinator& coord, const Context& ctx);
Result ValidateCoordinatorUpdate(const api::SpiderCoordinator& old_coord,
                                 const api::SpiderCoordinator& coord, const Context& ctx);
// The coordinator-spec rules under `path` ("spec" for a SpiderCoordinator, "spec.coordinator"
// in a SpiderMultusConfig, where podCIDRType and podRPFilter are optional).
ErrorList ValidateCoordinatorSpec(const api::CoordinatorSpec& spec, std::string_view path,
                                  bool require_optional_fields);

// ---- SpiderMultusConfig (validate CREATE/UPDATE; defaults live in multus/) ----------------

Result ValidateMultusConfigCreate(const api::SpiderMultusConfig& smc, const Context& ctx);
Result ValidateMultusConfigUpdate(const api::SpiderMultusConfig& old_smc,
                                  const api::SpiderMultusConfig& smc, const Context& ctx);

// ---- SpiderClaimParameter (validate CREATE/UPDATE) ----------------------------------------

Result ValidateClaimParameterCreate(const api::SpiderClaimParameter& scp, const Context& ctx);
Result ValidateClaimParameterUpdate(const api::SpiderClaimParameter& old_scp,
                                    const api::SpiderClaimParameter& scp, const Context& ctx);

// ---- Helpers other code needs -------------------------------------------------------------

// A CIDR as a label value, as upstream writes ipam.spidernet.io/ippool-cidr and subnet-cidr:
// "10.148.4.0/24" -> "10-148-4-0-24", "fd00:10::/64" -> "fd00-10---64". The text must be a CIDR
// (of `ip_version` when given); it is converted as written, not canonicalised.
absl::StatusOr<std::string> CIDRLabelValue(std::string_view cidr,
                                           std::optional<int64_t> ip_version = std::nullopt);
// Auto pools carry the ipam.spidernet.io/owner-application-name label.
bool IsAutoCreatedIPPool(const api::SpiderIPPool& pool);
// metav1 validation.ValidateLabelSelector (label values must be valid) under `path`.
ErrorList ValidateLabelSelector(const api::LabelSelector& selector, std::string_view path);

}  // namespace spiderpool::api::validation
