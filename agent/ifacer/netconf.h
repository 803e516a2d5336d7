#pragma once
// The `ifacer` plugin's network configuration (stdin): upstream's keys (`interfaces`, `vlanID`,
// `bond` {name, mode, options}) decoded and validated without touching the host. Pure
// functions; the link work is in links.h. See README.md for the rules and the error codes.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/cni/cni.h"
#include "base/json.h"

namespace spiderpool::agent::ifacer {

using base::Json;
using cni::CniError;

inline constexpr std::string_view kDefaultBondName = "sp_bond0";  // upstream's default
inline constexpr int64_t kMaxVlanID = 4094;
inline constexpr int64_t kMaxBondMode = 6;  // balance-rr(0) ... balance-alb(6)
inline constexpr size_t kMaxArpIPTargets = 16;  // the kernel's BOND_MAX_ARP_TARGETS

// One bond option of `bond.options` ("k=v;k=v"), typed for its netlink attribute.
struct BondOption {
  enum class Kind { kU8, kU16, kU32, kLinkName, kMac, kIPv4List };
  std::string key;     // as written ("miimon")
  int attr = 0;        // IFLA_BOND_*
  Kind kind = Kind::kU32;
  uint32_t number = 0;                 // kU8 / kU16 / kU32 (kLinkName: the ifindex, set later)
  std::string link_name;               // kLinkName: "primary", "active_slave"
  std::array<uint8_t, 6> mac{};        // kMac: "ad_actor_system"
  std::vector<uint32_t> ipv4;          // kIPv4List (network byte order): "arp_ip_target"
};

// Parses "k=v;k=v" (whitespace around keys and values ignored, empty segments skipped). Every
// segment must be exactly key=value with a known key (README.md lists them), its value of the
// key's type and range, each key at most once. Errors name the option. Pure.
absl::StatusOr<std::vector<BondOption>> ParseBondOptions(std::string_view text);

struct BondConf {
  std::string name;
  int64_t mode = 0;
  std::string options;
  template <typename V>
  void Visit(V& v) {
    v.Field("name", name);
    v.Field("mode", mode);
    v.Field("options", options);
  }
};

struct IfacerConf {
  std::string cni_version;
  std::string name;
  std::string type;
  std::vector<std::string> interfaces;
  int64_t vlan_id = 0;
  std::optional<BondConf> bond;
  std::optional<Json> prev_result;
  template <typename V>
  void Visit(V& v) {
    v.Field("cniVersion", cni_version);
    v.Field("name", name);
    v.Field("type", type);
    v.Field("interfaces", interfaces);
    v.Field("vlanID", vlan_id);
    v.Field("bond", bond);
    v.Field("prevResult", prev_result);
  }
  // Filled by DecodeIfacerConf from bond->options.
  std::vector<BondOption> bond_options;
};

// What ADD has to do for a valid config (upstream's decision table).
enum class Action {
  kNothing,       // one interface and vlanID 0, or several interfaces and no bond
  kVlan,          // one interface: <interface>.<vlanID>
  kBond,          // several interfaces, bond, vlanID 0
  kBondVlan,      // several interfaces, bond, then <bond>.<vlanID>
};
Action ActionFor(const IfacerConf& conf);

// The VLAN sub-interface name "<master>.<vlanID>".
std::string VlanName(std::string_view master, int64_t vlan_id);

// Decodes a JSON object (already checked by cni::ParseStdin). Type errors -> 6 with every
// field path; semantic errors -> 7 naming the field: interfaces empty / not valid link names /
// repeated, vlanID outside [0,4094], VLAN name longer than 15 bytes, bond.name not a valid
// link name, bond.mode outside [0,6], bond.options malformed. Sets bond.name's default.
std::optional<CniError> DecodeIfacerConf(const Json& json, IfacerConf* out);

// Linux link-name rules (dev_valid_name): 1..15 bytes, not "." or "..", no '/', ':' or
// whitespace. nullopt when valid, else the reason.
std::optional<std::string> InvalidLinkName(std::string_view name);

}  // namespace spiderpool::agent::ifacer
