#include "operator/ipam/counts.h"

#include <algorithm>
#include <limits>

#include "base/strings.h"

namespace spiderpool::op::ipam {

namespace {

bool AnyOverlap(const std::vector<base::IPRange>& a, const std::vector<base::IPRange>& b) {
  for (const base::IPRange& x : a) {
    for (const base::IPRange& y : b) {
      if (x.Overlaps(y)) return true;
    }
  }
  return false;
}

}  // namespace

int64_t ClampCount(absl::uint128 n) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return n > absl::uint128(static_cast<uint64_t>(kMax)) ? kMax : static_cast<int64_t>(n);
}

std::optional<base::IPFamily> FamilyOf(const std::optional<int64_t>& ip_version,
                                       const std::string& subnet) {
  if (ip_version == 4) return base::IPFamily::kV4;
  if (ip_version == 6) return base::IPFamily::kV6;
  auto prefix = base::IPPrefix::Parse(subnet);
  if (!prefix.ok()) return std::nullopt;
  return prefix->family();
}

absl::StatusOr<std::vector<base::IPRange>> UsableRanges(const std::vector<std::string>& ips,
                                                        const std::vector<std::string>& exclude,
                                                        std::optional<base::IPFamily> family) {
  auto in = base::ParseIPRanges(ips, family);
  if (!in.ok()) {
    return absl::InvalidArgumentError(
        base::StrCat("spec.ips", base::FromAbsl(in.status().message())));
  }
  auto out = base::ParseIPRanges(exclude, family);
  if (!out.ok()) {
    return absl::InvalidArgumentError(
        base::StrCat("spec.excludeIPs", base::FromAbsl(out.status().message())));
  }
  return base::SubtractIPRanges(std::move(*in), std::move(*out));
}

std::vector<base::IPRange> ReservedRanges(
    const std::vector<std::shared_ptr<const api::SpiderReservedIP>>& reserved) {
  std::vector<base::IPRange> all;
  for (const auto& r : reserved) {
    if (r == nullptr) continue;
    for (const std::string& text : r->spec.ips) {
      auto range = base::IPRange::Parse(text);
      if (range.ok()) all.push_back(*range);
    }
  }
  return base::MergeIPRanges(std::move(all));
}

bool PoolOverlaps(const api::SpiderIPPool& pool, const std::vector<base::IPRange>& ranges) {
  auto usable = base::ParseIPRanges(pool.spec.ips);
  return !usable.ok() || AnyOverlap(*usable, ranges);
}

bool SubnetOverlaps(const api::SpiderSubnet& subnet, const std::vector<base::IPRange>& ranges) {
  auto usable = base::ParseIPRanges(subnet.spec.ips);
  return !usable.ok() || AnyOverlap(*usable, ranges);
}

absl::StatusOr<api::PoolIPCounts> ComputePoolCounts(const api::SpiderIPPool& pool,
                                                    const std::vector<base::IPRange>& reserved) {
  const auto family = FamilyOf(pool.spec.ip_version, pool.spec.subnet);
  auto usable = UsableRanges(pool.spec.ips, pool.spec.exclude_ips, family);
  if (!usable.ok()) return usable.status();
  auto records = pool.AllocatedIPs();
  if (!records.ok()) return records.status();
  api::PoolRecordsByIP by_ip;
  for (auto& [ip_text, record] : *records) {
    auto ip = base::IPAddress::Parse(ip_text);  // keys were checked by AllocatedIPs()
    if (ip.ok()) by_ip.emplace(*ip, std::move(record));  // one entry per address
  }
  return api::CountPoolIPs(*usable, reserved, by_ip);
}

int64_t CountPreAllocation(const api::PoolIPPreAllocation& entry,
                           std::optional<base::IPFamily> family) {
  auto ranges = base::ParseIPRanges(entry.ips, family);
  if (!ranges.ok()) return 0;
  return ClampCount(base::CountIPs(base::MergeIPRanges(std::move(*ranges))));
}

absl::StatusOr<IPCounts> ComputeSubnetCounts(const api::SpiderSubnet& subnet,
                                             const api::PoolIPPreAllocations& controlled,
                                             const std::vector<base::IPRange>& reserved) {
  const auto family = FamilyOf(subnet.spec.ip_version, subnet.spec.subnet);
  auto usable = UsableRanges(subnet.spec.ips, subnet.spec.exclude_ips, family);
  if (!usable.ok()) return usable.status();

  IPCounts c;
  c.total = ClampCount(base::CountIPs(*usable));
  std::vector<base::IPRange> handed;
  for (const auto& [pool, entry] : controlled) {
    const int64_t n = CountPreAllocation(entry, family);
    c.allocated = n > std::numeric_limits<int64_t>::max() - c.allocated
                      ? std::numeric_limits<int64_t>::max()
                      : c.allocated + n;
    auto ranges = base::ParseIPRanges(entry.ips, family);
    if (ranges.ok()) handed.insert(handed.end(), ranges->begin(), ranges->end());
  }
  std::vector<base::IPRange> available = base::SubtractIPRanges(*usable, reserved);
  available = base::SubtractIPRanges(std::move(available), std::move(handed));
  c.free = ClampCount(base::CountIPs(available));
  return c;
}

}  // namespace spiderpool::op::ipam
