#include "agent/ifacer/netconf.h"

#include <arpa/inet.h>
#include <linux/if_link.h>

#include <cctype>
#include <charconv>
#include <limits>
#include <set>

#include "api/codec.h"
#include "base/strings.h"

namespace spiderpool::agent::ifacer {

namespace {

using Kind = BondOption::Kind;

struct OptionSpec {
  std::string_view key;
  int attr;
  Kind kind;
};

// Upstream's keys (cmd/ifacer BondOptions json tags), each mapped to its kernel attribute.
// `peer_notif_delay` is the kernel's peer_notif_delay (ms); upstream fed it to num_peer_notif.
constexpr OptionSpec kOptions[] = {
    {"active_slave", IFLA_BOND_ACTIVE_SLAVE, Kind::kLinkName},
    {"ad_actor_sys_prio", IFLA_BOND_AD_ACTOR_SYS_PRIO, Kind::kU16},
    {"ad_actor_system", IFLA_BOND_AD_ACTOR_SYSTEM, Kind::kMac},
    {"ad_select", IFLA_BOND_AD_SELECT, Kind::kU8},
    {"ad_user_port_key", IFLA_BOND_AD_USER_PORT_KEY, Kind::kU16},
    {"all_slaves_active", IFLA_BOND_ALL_SLAVES_ACTIVE, Kind::kU8},
    {"arp_interval", IFLA_BOND_ARP_INTERVAL, Kind::kU32},
    {"arp_ip_target", IFLA_BOND_ARP_IP_TARGET, Kind::kIPv4List},
    {"arp_validate", IFLA_BOND_ARP_VALIDATE, Kind::kU32},
    {"arp_all_targets", IFLA_BOND_ARP_ALL_TARGETS, Kind::kU32},
    {"downdelay", IFLA_BOND_DOWNDELAY, Kind::kU32},
    {"fail_over_mac", IFLA_BOND_FAIL_OVER_MAC, Kind::kU8},
    {"lacp_rate", IFLA_BOND_AD_LACP_RATE, Kind::kU8},
    {"miimon", IFLA_BOND_MIIMON, Kind::kU32},
    {"min_links", IFLA_BOND_MIN_LINKS, Kind::kU32},
    {"packets_per_slave", IFLA_BOND_PACKETS_PER_SLAVE, Kind::kU32},
    {"primary", IFLA_BOND_PRIMARY, Kind::kLinkName},
    {"primary_reselect", IFLA_BOND_PRIMARY_RESELECT, Kind::kU8},
    {"tlb_dynamic_lb", IFLA_BOND_TLB_DYNAMIC_LB, Kind::kU8},
    {"up_delay", IFLA_BOND_UPDELAY, Kind::kU32},
    {"use_carrier", IFLA_BOND_USE_CARRIER, Kind::kU8},
    {"xmit_hash_policy", IFLA_BOND_XMIT_HASH_POLICY, Kind::kU8},
    {"lp_interval", IFLA_BOND_LP_INTERVAL, Kind::kU32},
    {"resend_igmp", IFLA_BOND_RESEND_IGMP, Kind::kU32},
    {"peer_notif_delay", IFLA_BOND_PEER_NOTIF_DELAY, Kind::kU32},
};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string Quote(std::string_view s) { return base::DumpJson(Json(std::string(s))); }

std::string KnownKeys() {
  std::string out;
  for (const OptionSpec& o : kOptions) {
    if (!out.empty()) out += ", ";
    out += o.key;
  }
  return out;
}

absl::Status OptionError(std::string_view key, std::string_view value, std::string_view why) {
  return absl::InvalidArgumentError(
      base::ToAbsl(base::StrCat("option ", key, "=", value, ": ", why)));
}

bool ParseHexByte(std::string_view s, uint8_t* out) {
  if (s.size() != 2) return false;
  unsigned v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + 2, v, 16);
  if (ec != std::errc() || p != s.data() + 2) return false;
  *out = static_cast<uint8_t>(v);
  return true;
}

absl::Status ParseValue(const OptionSpec& spec, std::string_view value, BondOption* out) {
  switch (spec.kind) {
    case Kind::kU8:
    case Kind::kU16:
    case Kind::kU32: {
      uint64_t max = spec.kind == Kind::kU8    ? 0xff
                     : spec.kind == Kind::kU16 ? 0xffff
                                               : std::numeric_limits<uint32_t>::max();
      uint64_t v = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || p != value.data() + value.size()) {
        return OptionError(spec.key, value, "expected a non-negative integer");
      }
      if (v > max) {
        return OptionError(spec.key, value, base::StrCat("out of range [0,", max, "]"));
      }
      out->number = static_cast<uint32_t>(v);
      return absl::OkStatus();
    }
    case Kind::kLinkName: {
      if (auto why = InvalidLinkName(value)) return OptionError(spec.key, value, *why);
      out->link_name = std::string(value);
      return absl::OkStatus();
    }
    case Kind::kMac: {
      // aa:bb:cc:dd:ee:ff (or '-' separated)
      if (value.size() != 17) return OptionError(spec.key, value, "expected a MAC address");
      for (size_t i = 0; i < 6; ++i) {
        if (i > 0 && value[i * 3 - 1] != ':' && value[i * 3 - 1] != '-') {
          return OptionError(spec.key, value, "expected a MAC address");
        }
        if (!ParseHexByte(value.substr(i * 3, 2), &out->mac[i])) {
          return OptionError(spec.key, value, "expected a MAC address");
        }
      }
      return absl::OkStatus();
    }
    case Kind::kIPv4List: {
      // Upstream's form is a JSON-like list: [10.0.0.1,10.0.0.2] (quotes allowed); a bare
      // comma-separated list is accepted too.
      std::string_view list = value;
      if (!list.empty() && list.front() == '[') {
        if (list.back() != ']') return OptionError(spec.key, value, "unterminated list");
        list = list.substr(1, list.size() - 2);
      }
      while (true) {
        size_t comma = list.find(',');
        std::string_view item = Trim(list.substr(0, comma));
        if (item.size() >= 2 && item.front() == '"' && item.back() == '"') {
          item = item.substr(1, item.size() - 2);
        }
        in_addr a{};
        std::string s(item);
        if (item.empty() || inet_pton(AF_INET, s.c_str(), &a) != 1) {
          return OptionError(spec.key, value,
                             base::StrCat(Quote(item), " is not an IPv4 address"));
        }
        out->ipv4.push_back(a.s_addr);
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
      }
      if (out->ipv4.size() > kMaxArpIPTargets) {
        return OptionError(spec.key, value,
                           base::StrCat("at most ", kMaxArpIPTargets, " targets"));
      }
      return absl::OkStatus();
    }
  }
  return absl::InternalError("unknown option kind");
}

CniError Invalid(std::string msg, std::string details = "") {
  return CniError{cni::kErrInvalidNetworkConfig, std::move(msg), std::move(details)};
}

}  // namespace

std::optional<std::string> InvalidLinkName(std::string_view name) {
  if (name.empty()) return "empty";
  if (name.size() > 15) return base::StrCat(Quote(name), " is longer than 15 bytes");
  if (name == "." || name == "..") return base::StrCat(Quote(name), " is not a link name");
  for (char c : name) {
    if (c == '/' || c == ':' || std::isspace(static_cast<unsigned char>(c)) || c == '\0') {
      return base::StrCat(Quote(name), " contains '/', ':', NUL or whitespace");
    }
  }
  return std::nullopt;
}

absl::StatusOr<std::vector<BondOption>> ParseBondOptions(std::string_view text) {
  std::vector<BondOption> out;
  std::set<std::string_view> seen;
  text = Trim(text);
  while (!text.empty()) {
    size_t semi = text.find(';');
    std::string_view segment = Trim(text.substr(0, semi));
    text = semi == std::string_view::npos ? std::string_view() : text.substr(semi + 1);
    if (segment.empty()) continue;
    size_t eq = segment.find('=');
    if (eq == std::string_view::npos || segment.find('=', eq + 1) != std::string_view::npos) {
      return absl::InvalidArgumentError(base::ToAbsl(
          base::StrCat(Quote(segment), " is not key=value (options are \"k=v;k=v\")")));
    }
    std::string_view key = Trim(segment.substr(0, eq));
    std::string_view value = Trim(segment.substr(eq + 1));
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& o : kOptions) {
      if (o.key == key) spec = &o;
    }
    if (spec == nullptr) {
      return absl::InvalidArgumentError(base::ToAbsl(base::StrCat(
          "unknown option ", Quote(key), " (known: ", KnownKeys(), ")")));
    }
    if (value.empty()) return OptionError(key, value, "empty value");
    if (!seen.insert(spec->key).second) return OptionError(key, value, "given more than once");
    BondOption opt{.key = std::string(spec->key), .attr = spec->attr, .kind = spec->kind};
    if (absl::Status s = ParseValue(*spec, value, &opt); !s.ok()) return s;
    out.push_back(std::move(opt));
  }
  return out;
}

Action ActionFor(const IfacerConf& conf) {
  if (conf.interfaces.size() == 1) return conf.vlan_id == 0 ? Action::kNothing : Action::kVlan;
  if (conf.interfaces.size() < 2 || !conf.bond.has_value()) return Action::kNothing;
  return conf.vlan_id == 0 ? Action::kBond : Action::kBondVlan;
}

std::string VlanName(std::string_view master, int64_t vlan_id) {
  return base::StrCat(master, ".", vlan_id);
}

std::optional<CniError> DecodeIfacerConf(const Json& json, IfacerConf* out) {
  api::DecodeErrors errs;
  *out = api::DecodeInto<IfacerConf>(json, &errs);
  if (!errs.ok()) {
    std::string details;
    for (const auto& e : errs.errors) {
      if (!details.empty()) details += "; ";
      details += e.ToString();
    }
    return CniError{cni::kErrDecoding, base::StrCat("failed to parse config: ", details), ""};
  }
  // Upstream's messages, with the field named where upstream's does not.
  if (out->interfaces.empty()) {
    return Invalid("invalid config: interfaces have at least one interface",
                   "\"interfaces\" must list the master interface(s)");
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < out->interfaces.size(); ++i) {
    const std::string& name = out->interfaces[i];
    if (auto why = InvalidLinkName(name)) {
      return Invalid(base::StrCat("invalid config: interfaces[", i, "]: ", *why));
    }
    if (!seen.insert(name).second) {
      return Invalid(base::StrCat("invalid config: interfaces[", i, "]: ", Quote(name),
                                  " is listed twice"));
    }
  }
  if (out->vlan_id < 0 || out->vlan_id > kMaxVlanID) {
    return Invalid(base::StrCat("invalid vlanID ", out->vlan_id,
                                ": vlanID must be in range [0,4094]"));
  }
  if (out->bond.has_value()) {
    BondConf& bond = *out->bond;
    if (bond.name.empty()) bond.name = std::string(kDefaultBondName);
    if (auto why = InvalidLinkName(bond.name)) {
      return Invalid(base::StrCat("invalid config: bond.name: ", *why));
    }
    if (bond.mode < 0 || bond.mode > kMaxBondMode) {
      return Invalid(base::StrCat("invalid config: bond.mode: unknown bond mode: ", bond.mode,
                                  ", available mode: [0,6]"));
    }
    auto opts = ParseBondOptions(bond.options);
    if (!opts.ok()) {
      return Invalid(base::StrCat("invalid config: bond.options: ",
                                  base::FromAbsl(opts.status().message())),
                     base::StrCat("bond.options=", Quote(bond.options)));
    }
    out->bond_options = std::move(*opts);
    for (const BondOption& o : out->bond_options) {
      if (o.kind != Kind::kLinkName || seen.count(o.link_name)) continue;
      return Invalid(base::StrCat("invalid config: bond.options: option ", o.key, "=",
                                  o.link_name, ": not one of interfaces"));
    }
  }
  Action action = ActionFor(*out);
  if (action == Action::kVlan || action == Action::kBondVlan) {
    std::string master = action == Action::kVlan ? out->interfaces[0] : out->bond->name;
    std::string vlan = VlanName(master, out->vlan_id);
    if (vlan.size() > 15) {
      return Invalid(base::StrCat("invalid config: vlanID: the vlan interface name ",
                                  Quote(vlan), " (", action == Action::kVlan ? "interfaces[0]"
                                                                             : "bond.name",
                                  " + \".\" + vlanID) is longer than 15 bytes"));
    }
  }
  return std::nullopt;
}

}  // namespace spiderpool::agent::ifacer
