#pragma once
// Shared pieces of the validation rules (not part of the public API): field paths, upstream's
// IP parsing helpers with their exact messages, and range set math on merged range lists.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "api/meta.h"
#include "api/validation/errors.h"
#include "base/ip.h"

namespace spiderpool::api::validation::internal {

using base::IPAddress;
using base::IPFamily;
using base::IPPrefix;
using base::IPRange;

inline constexpr std::string_view kGroup = "spiderpool.spidernet.io";

// field.Path rendering.
std::string Child(std::string_view parent, std::string_view name);
std::string Index(std::string_view parent, size_t i);
std::string Key(std::string_view parent, std::string_view key);

// 4 -> kV4, 6 -> kV6, anything else -> nullopt.
std::optional<IPFamily> FamilyOf(std::optional<int64_t> ip_version);
int FamilyNumber(IPFamily f);

// upstream pkg/ip IsCIDR / IsIP / IsIPRange for a family: "invalid CIDR format in IPv4 'x'",
// "invalid IP format in IPv4 'x'", "invalid IP range format in IPv4 'x'". With no family, any
// family is accepted and the message omits "in IPv4".
absl::StatusOr<IPPrefix> ParseCIDR(std::optional<IPFamily> f, std::string_view text);
absl::StatusOr<IPAddress> ParseIP(std::optional<IPFamily> f, std::string_view text);
absl::StatusOr<IPRange> ParseRange(std::optional<IPFamily> f, std::string_view text);

// The family a CIDR text is of (upstream IsIPv4CIDR / IsIPv6CIDR).
std::optional<IPFamily> CIDRFamily(std::string_view text);

// The entries of a range list that parse (of `f` when given), merged. Unparseable entries are
// skipped: callers report them separately.
std::vector<IPRange> MergedRanges(const std::vector<std::string>& texts, std::optional<IPFamily> f,
                                  bool* all_ok = nullptr);
// ips minus excludeIPs (upstream AssembleTotalIPs, as ranges).
std::vector<IPRange> TotalRanges(const std::vector<std::string>& ips,
                                 const std::vector<std::string>& exclude_ips,
                                 std::optional<IPFamily> f, bool* all_ok = nullptr);
std::vector<IPRange> IntersectRanges(const std::vector<IPRange>& a, const std::vector<IPRange>& b);
bool RangesContain(const std::vector<IPRange>& merged, const IPAddress& ip);
// Go's %v of the ranges as strings: "[10.0.0.1-10.0.0.9 10.0.0.20]".
std::string RangesText(const std::vector<IPRange>& ranges);

// The ipVersion checks every IP kind shares (upstream validate*IPVersion). `nil_detail` is the
// kind's "is not generated correctly, ..." text. Returns the family when the version is 4 or 6.
std::optional<IPFamily> CheckIPVersion(std::optional<int64_t> version, bool enable_ipv4,
                                       bool enable_ipv6, std::string_view nil_detail,
                                       ErrorList* errs);

// Go's %#v of a *metav1.LabelSelector (how upstream's podAffinity errors print the bad value).
std::string GoLabelSelector(const api::LabelSelector& s);

}  // namespace spiderpool::api::validation::internal
