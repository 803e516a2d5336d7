#pragma once
// Rules shared by the address-holding kinds (SpiderIPPool, SpiderSubnet, SpiderReservedIP):
// what their webhooks parse once (family, canonical subnet, spec.ips / spec.excludeIPs) and the
// checks that read the same fields the same way (gateway, routes, immutable addressing).
// Internal to api/validation: ippool.cc, subnet.cc and reservedip.cc use it.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "api/spider.h"
#include "api/validation/errors.h"
#include "api/validation/internal.h"
#include "api/validation/validation.h"
#include "base/ip.h"

namespace spiderpool::api::validation::internal {

inline constexpr std::string_view kIPPoolKind = "SpiderIPPool";
inline constexpr std::string_view kSubnetKind = "SpiderSubnet";
inline constexpr std::string_view kReservedIPKind = "SpiderReservedIP";

inline constexpr std::string_view kPoolVersionNil =
    "is not generated correctly, 'spec.subnet' may be invalid";
inline constexpr std::string_view kReservedVersionNil =
    "is not generated correctly, 'spec.ips' is empty or 'spec.ips[0]' may be invalid";
inline constexpr std::string_view kPoolTotalNote =
    "total IP addresses of an IPPool are jointly determined by 'spec.ips' and 'spec.excludeIPs'";
inline constexpr std::string_view kSubnetTotalNote =
    "total IP addresses of an Subnet are jointly determined by 'spec.ips' and 'spec.excludeIPs'";

Result NewResult(std::string_view kind, std::string_view name);

// The family the IP checks use: spec.ipVersion when it is 4 or 6, else the family of
// spec.subnet (so that the other fields are still checked when ipVersion is wrong).
std::optional<IPFamily> CheckFamily(std::optional<IPFamily> from_version, std::string_view subnet);

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
void CheckSubnetField(std::string_view subnet, bool check_canonical, Parsed* p, ErrorList* errs);
// spec.ipVersion (against the enabled families) and spec.subnet of a pool or subnet.
Parsed CheckAddressing(std::optional<int64_t> ip_version, std::string_view subnet,
                       bool check_canonical, const Context& ctx, ErrorList* errs);
// UPDATE: spec.ipVersion (once set) and spec.subnet are immutable.
void CheckAddressingUnchanged(std::optional<int64_t> old_version, std::optional<int64_t> version,
                              std::string_view old_subnet, std::string_view subnet,
                              ErrorList* errs);

// p->total = merged p->ips minus p->exclude.
void ComputeTotal(Parsed* p);
// An IP that must lie in spec.subnet (ValidateContainsIP); `object` names the kind in the
// message ("IPPool", "Subnet").
void CheckContainsIP(const std::string& field, std::string_view ip_text, const Parsed& p,
                     std::string_view object, ErrorList* errs, IPAddress* out = nullptr,
                     bool* ok = nullptr);
// spec.gateway: inside the subnet, and not handed out (in spec.ips but not in spec.excludeIPs).
void CheckGateway(const std::optional<std::string>& gateway, const std::vector<std::string>& ips,
                  const Parsed& p, std::string_view object, ErrorList* errs);
// spec.routes (validateIPPoolRoutes / validateSubnetRoutes).
void CheckRoutes(const std::optional<std::vector<api::Route>>& routes, const Parsed& p,
                 std::string_view object, ErrorList* errs);

// Lenient parses of another object's fields (its own errors are not ours to report).
std::optional<IPPrefix> CanonicalSubnet(std::string_view subnet);
// Another pool's usable IPs (spec.ips - excludeIPs) of family `f`.
std::vector<IPRange> OtherPoolTotal(const api::SpiderIPPool& other, std::optional<IPFamily> f);
std::optional<IPFamily> ObjectFamily(std::optional<int64_t> ip_version, std::string_view subnet);

// upstream ip.MergeIPRanges: every entry a range of the family, merged into minimal ranges.
absl::Status MergeField(std::vector<std::string>* field, std::string_view name, IPFamily f);

}  // namespace spiderpool::api::validation::internal
