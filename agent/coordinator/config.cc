#include "agent/coordinator/config.h"

#include <cctype>
#include <charconv>

#include "absl/strings/ascii.h"
#include "base/log.h"
#include "base/strings.h"

namespace spiderpool::agent::coordinator {
namespace {

using cni::CniError;

std::string Trim(std::string_view s) {
  return std::string(base::FromAbsl(absl::StripAsciiWhitespace(base::ToAbsl(s))));
}

CniError Invalid(std::string msg, std::string details = "") {
  return CniError{cni::kErrInvalidNetworkConfig,
                  base::StrCat("invalid coordinator config: ", msg), std::move(details)};
}

// upstream: ParseCIDR after TrimSpace; the prefix keeps its host bits out (route dst).
std::optional<CniError> AppendCIDRs(std::string_view key, const std::vector<std::string>& in,
                                    std::vector<base::IPPrefix>* out) {
  for (size_t i = 0; i < in.size(); ++i) {
    std::string text = Trim(in[i]);
    absl::StatusOr<base::IPPrefix> p = base::IPPrefix::Parse(text);
    if (!p.ok()) {
      return Invalid(base::StrCat(key, "[", i, "]: \"", in[i], "\" is not a CIDR"));
    }
    out->push_back(p->Canonical());
  }
  return std::nullopt;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string_view ModeName(Mode m) {
  switch (m) {
    case Mode::kAuto: return "auto";
    case Mode::kUnderlay: return "underlay";
    case Mode::kOverlay: return "overlay";
    case Mode::kDisable: return "disable";
  }
  return "?";
}

std::optional<CniError> DecodeNetConf(const base::Json& json, NetConf* out) {
  api::DecodeErrors errs;
  *out = api::DecodeInto<NetConf>(json, &errs);
  if (errs.ok()) return std::nullopt;
  std::string details;
  for (const auto& e : errs.errors) {
    if (!details.empty()) details += "; ";
    details += e.ToString();
  }
  return CniError{cni::kErrDecoding, base::StrCat("error decoding network config: ", details), ""};
}

std::optional<std::array<uint8_t, 2>> ParseMacPrefix(std::string_view text, std::string* error) {
  // "xx:yy" or "xx-yy"
  if (text.size() != 5 || (text[2] != ':' && text[2] != '-')) {
    *error = "must be two hex bytes like \"0a:1b\"";
    return std::nullopt;
  }
  int d[4] = {HexDigit(text[0]), HexDigit(text[1]), HexDigit(text[3]), HexDigit(text[4])};
  for (int x : d) {
    if (x < 0) {
      *error = "must be two hex bytes like \"0a:1b\"";
      return std::nullopt;
    }
  }
  std::array<uint8_t, 2> out = {static_cast<uint8_t>(d[0] << 4 | d[1]),
                                static_cast<uint8_t>(d[2] << 4 | d[3])};
  if (out[0] & 1) {
    *error = "not a unicast MAC: the lowest bit of the first byte must be 0";
    return std::nullopt;
  }
  return out;
}

std::array<uint8_t, 6> PodMac(const std::array<uint8_t, 2>& prefix, const base::IPAddress& ip) {
  absl::uint128 v = ip.value();
  uint32_t low = static_cast<uint32_t>(absl::Uint128Low64(v) & 0xffffffffu);
  return {prefix[0], prefix[1], static_cast<uint8_t>(low >> 24), static_cast<uint8_t>(low >> 16),
          static_cast<uint8_t>(low >> 8), static_cast<uint8_t>(low)};
}

std::string HostVethName(std::string_view container_id) {
  return base::StrCat("veth", container_id.substr(0, 11));
}

std::optional<int> RuleTableFor(std::string_view if_name, std::string_view prefix) {
  if (prefix.empty() || if_name.size() <= prefix.size() || if_name.substr(0, prefix.size()) != prefix) {
    return std::nullopt;
  }
  std::string_view digits = if_name.substr(prefix.size());
  int n = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || p != digits.data() + digits.size() || n < 1 || n > 10000) {
    return std::nullopt;
  }
  return kDefaultPodRuleTable + n - 1;
}

std::optional<CniError> Resolve(const NetConf& conf,
                                const std::optional<ipamapi::CoordinatorConfig>& cluster,
                                Config* out) {
  Config c;
  const ipamapi::CoordinatorConfig fallback;  // the SpiderCoordinator defaults
  const ipamapi::CoordinatorConfig& cl = cluster.has_value() ? *cluster : fallback;

  std::string mode = !conf.mode.empty() ? conf.mode : cl.mode;
  if (mode.empty() || mode == "auto") {
    c.mode = Mode::kAuto;
  } else if (mode == "underlay") {
    c.mode = Mode::kUnderlay;
  } else if (mode == "overlay") {
    c.mode = Mode::kOverlay;
  } else if (mode == "disable" || mode == "disabled") {
    // The CRD says "disabled", upstream's plugin only knows "disable": accept both.
    c.mode = Mode::kDisable;
  } else {
    return Invalid(base::StrCat("mode: unknown tuneMode \"", mode, "\""),
                   "supported: auto, underlay, overlay, disable");
  }

  c.tune_pod_routes = conf.tune_pod_routes.value_or(cl.tune_pod_routes);
  c.pod_default_route_nic =
      !conf.pod_default_route_nic.empty() ? conf.pod_default_route_nic : cl.pod_default_route_nic;
  if (!conf.pod_default_cni_nic.empty()) c.pod_default_cni_nic = conf.pod_default_cni_nic;
  if (!conf.multus_nic_prefix.empty()) c.multus_nic_prefix = conf.multus_nic_prefix;
  for (const auto& [key, value] : {std::pair<std::string_view, const std::string*>{
                                       "podDefaultRouteNic", &c.pod_default_route_nic},
                                   {"podDefaultCniNic", &c.pod_default_cni_nic}}) {
    if (!value->empty()) {
      if (std::optional<CniError> e = cni::ValidateInterfaceName(*value)) {
        return Invalid(base::StrCat(key, ": ", e->msg));
      }
    }
  }

  std::string mac = !conf.pod_mac_prefix.empty() ? conf.pod_mac_prefix : cl.pod_mac_prefix;
  if (!mac.empty()) {
    std::string why;
    c.mac_prefix = ParseMacPrefix(mac, &why);
    if (!c.mac_prefix.has_value()) {
      return Invalid(base::StrCat("podMACPrefix: \"", mac, "\" ", why));
    }
  }

  // Each list: the netconf's when it has one, else the cluster's.
  const std::vector<std::string>& overlay =
      !conf.overlay_pod_cidr.empty() ? conf.overlay_pod_cidr : cl.overlay_pod_cidr;
  const std::vector<std::string>& service =
      !conf.service_cidr.empty() ? conf.service_cidr : cl.service_cidr;
  const std::vector<std::string>& hijack =
      !conf.hijack_cidr.empty() ? conf.hijack_cidr : cl.hijack_cidr;
  if (auto e = AppendCIDRs("overlayPodCIDR", overlay, &c.hijack)) return e;
  if (auto e = AppendCIDRs("serviceCIDR", service, &c.hijack)) return e;
  // hijackCIDR may hold bare IPs (the webhook turns them into /32 or /128).
  for (size_t i = 0; i < hijack.size(); ++i) {
    std::string text = Trim(hijack[i]);
    if (text.find('/') == std::string::npos) {
      absl::StatusOr<base::IPAddress> ip = base::IPAddress::Parse(text);
      if (ip.ok()) text = base::StrCat(text, "/", ip->bits());
    }
    if (auto e = AppendCIDRs(base::StrCat("hijackCIDR[", i, "]"), {text}, &c.hijack)) {
      return Invalid(base::StrCat("hijackCIDR[", i, "]: \"", hijack[i], "\" is not an IP or CIDR"));
    }
  }

  const std::vector<ipamapi::CoordinatorRoute>& routes =
      !conf.policy_routes.empty() ? conf.policy_routes : cl.policy_routes;
  for (size_t i = 0; i < routes.size(); ++i) {
    absl::StatusOr<base::IPPrefix> dst = base::IPPrefix::Parse(routes[i].dst);
    if (!dst.ok()) {
      absl::StatusOr<base::IPAddress> ip = base::IPAddress::Parse(routes[i].dst);
      if (ip.ok()) dst = base::IPPrefix::Parse(base::StrCat(routes[i].dst, "/", ip->bits()));
    }
    if (!dst.ok()) {
      return Invalid(base::StrCat("policyRoutes[", i, "].dst: \"", routes[i].dst,
                                  "\" is not an IP or CIDR"));
    }
    absl::StatusOr<base::IPAddress> gw = base::IPAddress::Parse(routes[i].gw);
    if (!gw.ok()) {
      return Invalid(base::StrCat("policyRoutes[", i, "].gw: \"", routes[i].gw,
                                  "\" is an invalid IP address"));
    }
    if (gw->family() != dst->family()) {
      return Invalid(base::StrCat("policyRoutes[", i, "]: dst and gw must use the same IP family"));
    }
    c.policy_routes.push_back(Route{dst->Canonical(), *gw});
  }

  int64_t table = conf.host_rule_table.value_or(cl.host_rule_table > 0 ? cl.host_rule_table : 500);
  if (table < 1 || table > 0xffffffffLL || table == 253 || table == 254 || table == 255) {
    return Invalid(base::StrCat("hostRuleTable: ", table,
                                " is not a usable routing table (1..2^32-1, not 253/254/255)"));
  }
  c.host_rule_table = static_cast<int>(table);

  int64_t rp = conf.pod_rp_filter.value_or(cl.pod_rp_filter);
  if (rp > 2) {
    return Invalid(base::StrCat("podRPFilter: invalid rp_filter value ", rp),
                   "available options: [-1,0,1,2]");
  }
  c.pod_rp_filter = rp < 0 ? -1 : static_cast<int>(rp);

  int64_t txq = conf.tx_queue_len.value_or(cl.tx_queue_len);
  if (txq < 0 || txq > 0xffffffffLL) {
    return Invalid(base::StrCat("txQueueLen: ", txq, " can't be less than 0"));
  }
  c.tx_queue_len = txq;

  std::string link_addr =
      !conf.veth_link_address.empty() ? conf.veth_link_address : cl.veth_link_address;
  if (!link_addr.empty()) {
    absl::StatusOr<base::IPAddress> ip = base::IPAddress::Parse(link_addr);
    if (!ip.ok() || !ip->is_v4()) {
      return Invalid(base::StrCat("vethLinkAddress: \"", link_addr, "\" is an invalid IP address"),
                     "an IPv4 (link-local) address, e.g. 169.254.200.1");
    }
    c.veth_link_address = *ip;
  }

  int64_t mtu = conf.veth_mtu.value_or(cl.veth_mtu > 0 ? cl.veth_mtu : 1500);
  if (mtu < 68 || mtu > 65535) {
    return Invalid(base::StrCat("vethMTU: ", mtu, " is out of range (68..65535)"));
  }
  c.veth_mtu = static_cast<int>(mtu);

  if (conf.log_options.has_value()) {
    if (!conf.log_options->log_level.empty()) c.log_level = conf.log_options->log_level;
    if (!conf.log_options->log_file.empty()) c.log_file = conf.log_options->log_file;
  }
  std::string lower;
  for (char ch : c.log_level) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  base::LogLevel level;
  if (!base::ParseLogLevel(lower, &level) && lower != "fatal" && lower != "panic") {
    return Invalid(base::StrCat("logOptions.logLevel: unsupported value \"", c.log_level, "\""),
                   "supported values: debug, info, warn, error, fatal, panic");
  }
  *out = std::move(c);
  return std::nullopt;
}

}  // namespace spiderpool::agent::coordinator
