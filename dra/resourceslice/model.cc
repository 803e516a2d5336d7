#include "dra/resourceslice/model.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <set>
#include <utility>

#include "base/strings.h"

namespace spiderpool::dra::resourceslice {

using api::Device;
using api::DeviceAttribute;
using base::StrCat;

namespace {

constexpr std::string_view kNormalizedPrefix = "normalized-";
constexpr size_t kMaxLabelLength = 63 - 5;  // room for "-1023"

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool IsDnsLabel(std::string_view s, size_t max_len) {
  if (s.empty() || s.size() > max_len || !IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) {
    return false;
  }
  for (char c : s) {
    if (!IsLowerAlnum(c) && c != '-') return false;
  }
  return true;
}

// RFC 4648 base32, lower-case alphabet, no padding.
std::string Base32(std::string_view data) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char c : data) {
    buffer = (buffer << 8) | c;
    bits += 8;
    while (bits >= 5) {
      out.push_back(kAlphabet[(buffer >> (bits - 5)) & 31]);
      bits -= 5;
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(buffer << (5 - bits)) & 31]);
  return out;
}

uint64_t Fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

bool AnyMatch(const std::vector<std::string>& patterns, std::string_view name) {
  for (const std::string& p : patterns) {
    if (::fnmatch(p.c_str(), std::string(name).c_str(), 0) == 0) return true;
  }
  return false;
}

std::optional<base::IPPrefix> FirstOf(const std::vector<base::IPPrefix>& prefixes,
                                      base::IPFamily family) {
  for (const base::IPPrefix& p : prefixes) {
    if (p.family() == family) return p.Canonical();
  }
  return std::nullopt;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  return a > std::numeric_limits<int64_t>::max() - b ? std::numeric_limits<int64_t>::max() : a + b;
}

bool IsInfiniBand(const nic::Nic& n) { return n.mac.size() > 17; }  // 20-byte address

}  // namespace

// ---- naming ---------------------------------------------------------------------------------

std::string DeviceLabel(std::string_view interface_name) {
  if (IsDnsLabel(interface_name, kMaxLabelLength) &&
      interface_name.substr(0, kNormalizedPrefix.size()) != kNormalizedPrefix) {
    return std::string(interface_name);
  }
  std::string encoded = Base32(interface_name);
  if (kNormalizedPrefix.size() + encoded.size() > kMaxLabelLength) {
    // Longer than any Linux interface name (IFNAMSIZ is 16): fall back to a hash.
    std::string h(8, '\0');
    uint64_t v = Fnv1a64(interface_name);
    for (int i = 0; i < 8; ++i) h[i] = static_cast<char>(v >> (56 - 8 * i));
    encoded = Base32(h);
  }
  if (encoded.empty()) encoded = "0";  // the empty name
  return StrCat(kNormalizedPrefix, encoded);
}

std::string SlotDeviceName(std::string_view interface_name, int slot) {
  return StrCat(DeviceLabel(interface_name), "-", slot);
}

std::string PoolAttributeName(std::string_view pool) {
  constexpr size_t kMaxReadable = api::resourceslice::kDeviceMaxIDLength - 5;  // "pool_"
  bool readable = !pool.empty() && pool.size() <= kMaxReadable;
  for (char c : pool) {
    if (!IsLowerAlnum(c) && c != '-') readable = false;
  }
  if (readable && IsLowerAlnum(pool.front())) {
    std::string out = StrCat("pool_", pool);
    std::replace(out.begin(), out.end(), '-', '_');
    return out;
  }
  std::string h(8, '\0');
  const uint64_t v = Fnv1a64(pool);
  for (int i = 0; i < 8; ++i) h[i] = static_cast<char>(v >> (56 - 8 * i));
  return StrCat("pool__", Base32(h));
}

std::string PCIeRootOf(std::string_view pci) {
  // dddd:bb:dd.f
  auto hex = [](std::string_view s) {
    if (s.empty()) return false;
    for (char c : s) {
      if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    }
    return true;
  };
  size_t c1 = pci.find(':');
  if (c1 == std::string_view::npos) return "";
  size_t c2 = pci.find(':', c1 + 1);
  if (c2 == std::string_view::npos) return "";
  size_t dot = pci.find('.', c2 + 1);
  if (dot == std::string_view::npos) return "";
  std::string_view domain = pci.substr(0, c1);
  std::string_view bus = pci.substr(c1 + 1, c2 - c1 - 1);
  std::string_view dev = pci.substr(c2 + 1, dot - c2 - 1);
  std::string_view fn = pci.substr(dot + 1);
  if (domain.size() != 4 || bus.size() != 2 || dev.size() != 2 || fn.size() != 1 ||
      !hex(domain) || !hex(bus) || !hex(dev) || !hex(fn)) {
    return "";
  }
  std::string out = StrCat("pci", domain, ":", bus);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

// ---- devices --------------------------------------------------------------------------------

std::vector<NicPlan> PlanNics(const std::vector<nic::Nic>& nics,
                              const std::vector<PoolCapacity>& pools, const ModelOptions& options) {
  int max_slots = std::clamp(options.slots_per_nic, 0, kMaxSlotsPerNic);
  std::vector<const nic::Nic*> sorted;
  for (const nic::Nic& n : nics) sorted.push_back(&n);
  std::sort(sorted.begin(), sorted.end(),
            [](const nic::Nic* a, const nic::Nic* b) { return a->name < b->name; });
  std::vector<const PoolCapacity*> sorted_pools;
  for (const PoolCapacity& p : pools) sorted_pools.push_back(&p);
  std::stable_sort(sorted_pools.begin(), sorted_pools.end(),
                   [](const PoolCapacity* a, const PoolCapacity* b) { return a->name < b->name; });
  std::vector<NicPlan> out;
  std::set<std::string> seen;
  for (const nic::Nic* n : sorted) {
    if (!seen.insert(n->name).second) continue;  // a duplicate record: first one wins
    NicPlan plan{.nic = n->name, .label = DeviceLabel(n->name)};
    if (n->name == "lo") {
      plan.skipped = "loopback";
    } else if (!n->up) {
      plan.skipped = "down";
    } else if ((!options.include_interfaces.empty() &&
                !AnyMatch(options.include_interfaces, n->name)) ||
               AnyMatch(options.exclude_interfaces, n->name)) {
      plan.skipped = "excluded";
    }
    if (!plan.skipped.empty()) {
      out.push_back(std::move(plan));
      continue;
    }
    plan.ipv4_subnet = FirstOf(n->ipv4, base::IPFamily::kV4);
    plan.ipv6_subnet = FirstOf(n->ipv6, base::IPFamily::kV6);
    if (auto d = options.declared_subnets.find(n->name); d != options.declared_subnets.end()) {
      if (!plan.ipv4_subnet) plan.ipv4_subnet = FirstOf(d->second, base::IPFamily::kV4);
      if (!plan.ipv6_subnet) plan.ipv6_subnet = FirstOf(d->second, base::IPFamily::kV6);
    }
    // The serving pools: on the NIC's subnets; for a NIC without any, the pools naming this
    // node (their subnets become the NIC's, the first pool by name per family).
    const bool addressless = !plan.ipv4_subnet && !plan.ipv6_subnet;
    std::vector<const PoolCapacity*> serving;
    for (const PoolCapacity* p : sorted_pools) {
      if (p->free_ips <= 0) continue;
      const base::IPPrefix subnet = p->subnet.Canonical();
      if (addressless ? p->selects_node
                      : (subnet == plan.ipv4_subnet || subnet == plan.ipv6_subnet)) {
        serving.push_back(p);
      }
    }
    if (addressless) {
      for (const PoolCapacity* p : serving) {
        auto& slot = p->subnet.family() == base::IPFamily::kV4 ? plan.ipv4_subnet : plan.ipv6_subnet;
        if (!slot) slot = p->subnet.Canonical();
      }
    }
    if (!plan.ipv4_subnet && !plan.ipv6_subnet) {
      plan.skipped = "no subnet";
      out.push_back(std::move(plan));
      continue;
    }
    int64_t free_v4 = 0, free_v6 = 0;
    for (const PoolCapacity* p : serving) {
      int64_t& f = p->subnet.family() == base::IPFamily::kV4 ? free_v4 : free_v6;
      f = SaturatingAdd(f, p->free_ips);
      if (!p->name.empty() &&
          std::find(plan.pools.begin(), plan.pools.end(), p->name) == plan.pools.end()) {
        plan.pools.push_back(p->name);
      }
    }
    plan.free_ips = std::max(free_v4, free_v6);
    if (plan.free_ips <= 0) {
      plan.skipped = "no pool with free IPs";
    } else {
      plan.slots = static_cast<int>(std::min<int64_t>(max_slots, plan.free_ips));
      if (plan.slots == 0) plan.skipped = "slots_per_nic is 0";
    }
    out.push_back(std::move(plan));
  }
  return out;
}

std::vector<Device> BuildDevices(const std::vector<nic::Nic>& nics,
                                 const std::vector<PoolCapacity>& pools,
                                 const ModelOptions& options) {
  std::map<std::string, const nic::Nic*> by_name;
  for (const nic::Nic& n : nics) by_name.emplace(n.name, &n);
  std::vector<Device> out;
  for (NicPlan& plan : PlanNics(nics, pools, options)) {
    if (plan.slots <= 0) continue;
    const nic::Nic& n = *by_name.at(plan.nic);
    std::map<std::string, DeviceAttribute> attrs;
    auto put_string = [&](std::string_view key, const std::string& v) {
      if (!v.empty()) attrs[std::string(key)] = DeviceAttribute::String(v);
    };
    put_string(attr::kIfName, n.name);
    put_string(attr::kMac, n.mac);
    if (n.mtu > 0) attrs[std::string(attr::kMtu)] = DeviceAttribute::Int(n.mtu);
    put_string(attr::kState, n.up ? "up" : "down");
    if (plan.ipv4_subnet) put_string(attr::kIPv4Subnet, plan.ipv4_subnet->ToString());
    if (plan.ipv6_subnet) put_string(attr::kIPv6Subnet, plan.ipv6_subnet->ToString());
    put_string(attr::kPciAddress, n.pci_address);
    if (n.sriov_total_vfs > 0) {
      attrs[std::string(attr::kSriovTotalVfs)] = DeviceAttribute::Int(n.sriov_total_vfs);
    }
    attrs[std::string(attr::kSriovVf)] = DeviceAttribute::Bool(n.sriov_vf);
    attrs[std::string(attr::kRdma)] = DeviceAttribute::Bool(n.rdma);
    if (!n.pci_address.empty()) {
      std::string root = options.pcie_root_resolver ? options.pcie_root_resolver(n.pci_address)
                                                    : PCIeRootOf(n.pci_address);
      put_string(attr::kPcieRoot, root);
      put_string(attr::kMultusDeviceID, n.pci_address);
    }
    if (n.numa_node >= 0) attrs[std::string(attr::kNumaNode)] = DeviceAttribute::Int(n.numa_node);
    if (auto r = options.resource_names.find(n.name); r != options.resource_names.end()) {
      put_string(attr::kMultusResourceName, r->second);
    }
    auto put_true = [&](std::string_view key) { attrs[std::string(key)] = DeviceAttribute::Bool(true); };
    const bool sriov = n.sriov_total_vfs > 0 || n.sriov_vf;
    if (IsInfiniBand(n)) {
      put_true(attr::kCniIpoib);
      if (sriov) put_true(attr::kCniIbSriov);
    } else {
      put_true(attr::kCniMacvlan);
      put_true(attr::kCniIpvlan);
      put_true(attr::kCniVlan);
      if (sriov) put_true(attr::kCniSriov);
    }
    // Pool attributes fill what the API's per-device limit leaves (one is the slot's).
    const size_t room = static_cast<size_t>(api::resourceslice::kMaxAttributesAndCapacitiesPerDevice) -
                        attrs.size() - 1;
    for (size_t i = 0; i < plan.pools.size(); ++i) {
      if (i < room) {
        attrs[PoolAttributeName(plan.pools[i])] = DeviceAttribute::Bool(true);
      } else {
        plan.dropped_pools.push_back(plan.pools[i]);
      }
    }
    for (int k = 0; k < plan.slots; ++k) {
      Device d{.name = StrCat(plan.label, "-", k), .attributes = attrs};
      d.attributes[std::string(attr::kSlot)] = DeviceAttribute::Int(k);
      if (options.allow_multiple_allocations) d.allow_multiple_allocations = true;
      out.push_back(std::move(d));
    }
  }
  return out;
}

std::vector<std::vector<Device>> SplitDevices(const std::vector<Device>& devices,
                                              int max_per_slice) {
  size_t per = static_cast<size_t>(std::max(1, max_per_slice));
  std::vector<std::vector<Device>> out;
  for (size_t i = 0; i < devices.size(); i += per) {
    out.emplace_back(devices.begin() + static_cast<std::ptrdiff_t>(i),
                     devices.begin() + static_cast<std::ptrdiff_t>(std::min(devices.size(), i + per)));
  }
  if (out.empty()) out.emplace_back();
  return out;
}

// ---- DeviceClass and selectors --------------------------------------------------------------

api::DeviceClass BuildDeviceClass(std::string_view driver) {
  api::DeviceClass c;
  c.SetTypeMeta();
  c.metadata.name = std::string(driver);
  api::DeviceClassSpec::Selector s;
  s.cel = api::DeviceClassSpec::CELSelector{StrCat("device.driver == ", CelQuote(driver))};
  c.spec.selectors.push_back(std::move(s));
  return c;
}

std::string CelQuote(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\x";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 15]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out += "\"";
  return out;
}

namespace {

// `"<name>" in device.attributes["<domain>"] && device.attributes["<domain>"].<name> <op>`:
// an attribute a device lacks would otherwise be a CEL runtime error, which aborts the
// allocation of the whole claim rather than skipping the device.
std::string AttributeMatch(std::string_view domain, std::string_view name,
                           const std::vector<std::string>& values) {
  std::string ref = StrCat("device.attributes[", CelQuote(domain), "].", name);
  std::string guard = StrCat(CelQuote(name), " in device.attributes[", CelQuote(domain), "] && ");
  if (values.size() == 1) return StrCat(guard, ref, " == ", CelQuote(values[0]));
  std::string list;
  for (size_t i = 0; i < values.size(); ++i) {
    list += StrCat(i ? ", " : "", CelQuote(values[i]));
  }
  return StrCat(guard, ref, " in [", list, "]");
}

void AddUnique(std::vector<std::string>* v, const std::string& s) {
  if (!s.empty() && std::find(v->begin(), v->end(), s) == v->end()) v->push_back(s);
}

}  // namespace

absl::StatusOr<std::vector<std::string>> SelectorFor(const api::SpiderMultusConfig& smc,
                                                     const ClaimNetwork& network,
                                                     std::string_view driver) {
  std::vector<std::string> masters;
  std::string resource_name;
  const api::MultusCNIConfigSpec& spec = smc.spec;
  std::string type = spec.cni_type.value_or(std::string(api::kCniTypeCustom));
  auto from_master_list = [&](const std::vector<std::string>& list,
                              const std::optional<api::BondConfig>& bond) {
    if (bond.has_value() && !bond->name.empty()) {
      AddUnique(&masters, bond->name);
      return;
    }
    for (const std::string& m : list) AddUnique(&masters, m);
  };
  std::string_view cni_attr;
  if (type == api::kCniTypeMacvlan) {
    cni_attr = attr::kCniMacvlan;
    if (spec.macvlan) from_master_list(spec.macvlan->master, spec.macvlan->bond);
  } else if (type == api::kCniTypeIPvlan) {
    cni_attr = attr::kCniIpvlan;
    if (spec.ipvlan) from_master_list(spec.ipvlan->master, spec.ipvlan->bond);
  } else if (type == api::kCniTypeVlan) {
    cni_attr = attr::kCniVlan;
    if (spec.vlan) from_master_list(spec.vlan->master, spec.vlan->bond);
  } else if (type == api::kCniTypeIPoIB) {
    cni_attr = attr::kCniIpoib;
    if (spec.ipoib) AddUnique(&masters, spec.ipoib->master);
  } else if (type == api::kCniTypeSriov) {
    cni_attr = attr::kCniSriov;
    if (spec.sriov) resource_name = spec.sriov->resource_name.value_or("");
  } else if (type == api::kCniTypeIBSriov) {
    cni_attr = attr::kCniIbSriov;
    if (spec.ibsriov) resource_name = spec.ibsriov->resource_name.value_or("");
  }
  for (const std::string& m : masters) {
    if (m.size() > static_cast<size_t>(api::resourceslice::kDeviceAttributeMaxValueLength)) {
      return absl::InvalidArgumentError(StrCat("SpiderMultusConfig ", smc.metadata.namespace_, "/",
                                               smc.metadata.name, ": master \"", m,
                                               "\" is longer than an attribute value may be"));
    }
  }

  const std::string attrs = StrCat("device.attributes[", CelQuote(driver), "]");
  auto pools_selector = [&](const std::vector<std::string>& pools) {
    std::vector<std::string> unique;
    for (const std::string& p : pools) AddUnique(&unique, PoolAttributeName(p));
    std::string out;
    for (size_t i = 0; i < unique.size(); ++i) {
      out += StrCat(i ? " || " : "", CelQuote(unique[i]), " in ", attrs);
    }
    return unique.size() > 1 ? StrCat("(", out, ")") : out;
  };
  auto bool_selector = [&](std::string_view name) {
    return StrCat(CelQuote(name), " in ", attrs, " && ", attrs, ".", name, " == true");
  };

  std::vector<std::string> out;
  if (!masters.empty()) out.push_back(AttributeMatch(driver, attr::kIfName, masters));
  if (!resource_name.empty()) {
    out.push_back(AttributeMatch("k8s.cni.cncf.io", "resourceName", {resource_name}));
  }
  if (!cni_attr.empty()) out.push_back(bool_selector(cni_attr));
  if (!network.ipv4_pools.empty()) out.push_back(pools_selector(network.ipv4_pools));
  if (!network.ipv6_pools.empty()) out.push_back(pools_selector(network.ipv6_pools));
  if (network.rdma) out.push_back(bool_selector(attr::kRdma));
  return out;
}

}  // namespace spiderpool::dra::resourceslice
