#include "api/spider.h"

#include "base/ip.h"
#include "base/strings.h"

namespace spiderpool::api {

namespace {

ResourceInfo SpiderResource(std::string kind, std::string plural, std::string singular,
                            bool namespaced, bool has_status, std::string short_name) {
  return ResourceInfo{.group = std::string(kSpiderGroup),
                      .version = std::string(kSpiderVersion),
                      .kind = std::move(kind),
                      .plural = std::move(plural),
                      .singular = std::move(singular),
                      .namespaced = namespaced,
                      .has_status = has_status,
                      .short_names = {std::move(short_name)}};
}

// Parses a status string holding a JSON object into map<string, T>, reporting every error
// under `path`. `check_key` validates each key (returns "" when fine).
template <typename T, typename KeyCheck>
absl::StatusOr<std::map<std::string, T>> ParseStatusMap(const std::optional<std::string>& text,
                                                        std::string_view path,
                                                        KeyCheck check_key) {
  std::map<std::string, T> out;
  if (!text.has_value() || text->empty()) return out;
  // Member by member: a pool's records never exist as one DOM (thousands of them are the
  // agent's largest transient allocation otherwise).
  DecodeErrors errs;
  absl::Status parsed = base::ForEachJsonMember(*text, [&](std::string key, Json value) {
    std::string key_path = codec_internal::KeyPath(path, key);
    std::string msg = check_key(key);
    if (!msg.empty()) errs.Add(key_path, msg);
    T& slot = out[key];
    slot = T{};  // a repeated key: the last one wins, as in a DOM
    codec_internal::DecodeValue(value, slot, FieldOpts{}, key_path, &errs);
  });
  if (!parsed.ok()) {
    const std::string_view m = base::FromAbsl(parsed.message());
    if (m.rfind("expected a JSON object", 0) == 0) {
      errs.Add(std::string(path), std::string(m));
      return errs.ToStatus();
    }
    return absl::InvalidArgumentError(base::StrCat(path, ": not valid JSON: ", m));
  }
  if (!errs.ok()) return errs.ToStatus();
  return out;
}

// The same text as DumpJson(Encode(m)) (keys in map order), one entry's DOM at a time.
template <typename T>
std::optional<std::string> SerializeStatusMap(const std::map<std::string, T>& m) {
  if (m.empty()) return std::nullopt;
  std::string out = "{";
  for (const auto& [key, value] : m) {
    if (out.size() > 1) out += ',';
    out += base::DumpJson(Json(key));
    out += ':';
    out += base::DumpJson(Encode(value));
  }
  out += '}';
  return out;
}

}  // namespace

// ---- Resource() ---------------------------------------------------------------------------

const ResourceInfo& SpiderIPPool::Resource() {
  static const ResourceInfo info =
      SpiderResource("SpiderIPPool", "spiderippools", "spiderippool", false, true, "sp");
  return info;
}

const ResourceInfo& SpiderSubnet::Resource() {
  static const ResourceInfo info =
      SpiderResource("SpiderSubnet", "spidersubnets", "spidersubnet", false, true, "ss");
  return info;
}

const ResourceInfo& SpiderReservedIP::Resource() {
  static const ResourceInfo info = SpiderResource("SpiderReservedIP", "spiderreservedips",
                                                  "spiderreservedip", false, false, "sr");
  return info;
}

const ResourceInfo& SpiderEndpoint::Resource() {
  // Upstream's CRD has `subresources: {}`: the status is written with a plain update.
  static const ResourceInfo info =
      SpiderResource("SpiderEndpoint", "spiderendpoints", "spiderendpoint", true, false, "se");
  return info;
}

const ResourceInfo& SpiderMultusConfig::Resource() {
  static const ResourceInfo info = SpiderResource("SpiderMultusConfig", "spidermultusconfigs",
                                                  "spidermultusconfig", true, false, "smc");
  return info;
}

const ResourceInfo& SpiderCoordinator::Resource() {
  static const ResourceInfo info = SpiderResource("SpiderCoordinator", "spidercoordinators",
                                                  "spidercoordinator", false, true, "scc");
  return info;
}

const ResourceInfo& SpiderClaimParameter::Resource() {
  static const ResourceInfo info =
      SpiderResource("SpiderClaimParameter", "spiderclaimparameters", "spiderclaimparameter",
                     true, false, "scp");
  return info;
}

// ---- status maps --------------------------------------------------------------------------

absl::StatusOr<PoolIPAllocations> ParsePoolIPAllocations(const std::optional<std::string>& text) {
  return ParseStatusMap<PoolIPAllocation>(text, "status.allocatedIPs", [](const std::string& k) {
    auto ip = base::IPAddress::Parse(k);
    return ip.ok() ? std::string() : std::string(ip.status().message());
  });
}

std::optional<std::string> SerializePoolIPAllocations(const PoolIPAllocations& allocations) {
  return SerializeStatusMap(allocations);
}

absl::StatusOr<PoolIPPreAllocations> ParsePoolIPPreAllocations(
    const std::optional<std::string>& text) {
  return ParseStatusMap<PoolIPPreAllocation>(
      text, "status.controlledIPPools",
      [](const std::string& k) { return k.empty() ? std::string("empty pool name") : ""; });
}

std::optional<std::string> SerializePoolIPPreAllocations(const PoolIPPreAllocations& pools) {
  return SerializeStatusMap(pools);
}

absl::StatusOr<PoolIPAllocations> SpiderIPPool::AllocatedIPs() const {
  return ParsePoolIPAllocations(status.allocated_ips);
}

void SpiderIPPool::SetAllocatedIPs(const PoolIPAllocations& allocations) {
  status.allocated_ips = SerializePoolIPAllocations(allocations);
  int64_t pods = 0;
  for (const auto& [ip, rec] : allocations) pods += !IsNodeReservation(rec);
  status.allocated_ip_count = pods;
}

absl::StatusOr<PoolIPPreAllocations> SpiderSubnet::ControlledIPPools() const {
  return ParsePoolIPPreAllocations(status.controlled_ip_pools);
}

void SpiderSubnet::SetControlledIPPools(const PoolIPPreAllocations& pools) {
  status.controlled_ip_pools = SerializePoolIPPreAllocations(pools);
}

}  // namespace spiderpool::api
