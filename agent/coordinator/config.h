#pragma once
// The `coordinator` plugin's configuration: its netconf keys (upstream cmd/coordinator's
// Config), merged with the cluster's settings from spiderpool-agent
// (GET /v1/coordinator/config, the SpiderCoordinator "default"), then checked. Pure functions.
// The netconf's own keys win; a key it leaves unset takes the agent's value (upstream's
// ParseConfig rules).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/cni/cni.h"
#include "agent/ipamapi/ipamapi.h"
#include "api/codec.h"
#include "base/ip.h"
#include "base/json.h"

namespace spiderpool::agent::coordinator {

inline constexpr std::string_view kDefaultLogFile = "/var/log/spidernet/coordinator.log";
inline constexpr std::string_view kPodVethName = "veth0";   // underlay: the pod end of the pair
inline constexpr std::string_view kDefaultCniNic = "eth0";  // the pod's first NIC
inline constexpr std::string_view kDefaultMultusNicPrefix = "net";
inline constexpr int kDefaultPodRuleTable = 100;  // net1 -> 100, net2 -> 101, ...
inline constexpr int kMainTable = 254;

struct LogOptions {
  std::string log_level;  // "logLevel"
  std::string log_file;   // "logFile"
  int64_t log_max_size = 100;
  int64_t log_max_age = 30;
  int64_t log_max_count = 7;
  template <typename V>
  void Visit(V& v) {
    v.Field("logLevel", log_level);
    v.Field("logFile", log_file);
    v.Field("logMaxSize", log_max_size, {.minimum = 0});
    v.Field("logMaxAge", log_max_age, {.minimum = 0});
    v.Field("logMaxCount", log_max_count, {.minimum = 0});
  }
};

// The netconf as written in a NAD (every key optional; upstream's JSON names).
struct NetConf {
  std::string cni_version;
  std::string name;
  std::string type;
  std::optional<base::Json> prev_result;
  std::optional<base::Json> args;
  std::string mode;
  std::optional<bool> tune_pod_routes;
  std::string pod_default_route_nic;  // "podDefaultRouteNic"
  std::string pod_default_cni_nic;    // "podDefaultCniNic"
  std::string pod_mac_prefix;         // "podMACPrefix"
  std::string multus_nic_prefix;      // "multusNicPrefix"
  std::vector<std::string> overlay_pod_cidr;
  std::vector<std::string> service_cidr;
  std::vector<std::string> hijack_cidr;
  std::vector<ipamapi::CoordinatorRoute> policy_routes;
  std::optional<int64_t> host_rule_table;
  std::optional<int64_t> host_rp_filter;  // accepted; upstream no longer applies it
  std::optional<int64_t> pod_rp_filter;
  std::optional<int64_t> tx_queue_len;
  std::string veth_link_address;
  std::optional<int64_t> veth_mtu;  // "vethMTU"
  std::optional<bool> detect_gateway;      // deprecated: detection is the IPAM plugin's
  std::optional<bool> detect_ip_conflict;  // "detectIPConflict", deprecated
  std::optional<base::Json> detect_options;
  std::optional<LogOptions> log_options;
  // ours: where the agent listens, and the budget for asking it
  std::string ipam_unix_socket_path;
  template <typename V>
  void Visit(V& v) {
    v.Field("cniVersion", cni_version);
    v.Field("name", name);
    v.Field("type", type);
    v.Field("prevResult", prev_result);
    v.Field("args", args);
    v.Field("mode", mode);
    v.Field("tunePodRoutes", tune_pod_routes);
    v.Field("podDefaultRouteNic", pod_default_route_nic);
    v.Field("podDefaultCniNic", pod_default_cni_nic);
    v.Field("podMACPrefix", pod_mac_prefix);
    v.Field("multusNicPrefix", multus_nic_prefix);
    v.Field("overlayPodCIDR", overlay_pod_cidr);
    v.Field("serviceCIDR", service_cidr);
    v.Field("hijackCIDR", hijack_cidr);
    v.Field("policyRoutes", policy_routes);
    v.Field("hostRuleTable", host_rule_table);
    v.Field("hostRPFilter", host_rp_filter);
    v.Field("podRPFilter", pod_rp_filter);
    v.Field("txQueueLen", tx_queue_len);
    v.Field("vethLinkAddress", veth_link_address);
    v.Field("vethMTU", veth_mtu);
    v.Field("detectGateway", detect_gateway);
    v.Field("detectIPConflict", detect_ip_conflict);
    v.Field("detectOptions", detect_options);
    v.Field("logOptions", log_options);
    v.Field("ipam_unix_socket_path", ipam_unix_socket_path);
  }
};

enum class Mode { kAuto, kUnderlay, kOverlay, kDisable };
std::string_view ModeName(Mode m);

struct Route {
  base::IPPrefix dst;
  base::IPAddress gw;
};

// Everything checked and typed: what ADD/DEL/CHECK act on.
struct Config {
  Mode mode = Mode::kAuto;
  bool tune_pod_routes = true;
  std::string pod_default_route_nic;  // "" = keep the default route where it is
  std::string pod_default_cni_nic = std::string(kDefaultCniNic);
  std::string multus_nic_prefix = std::string(kDefaultMultusNicPrefix);
  std::optional<std::array<uint8_t, 2>> mac_prefix;
  std::vector<base::IPPrefix> hijack;  // overlayPodCIDR + serviceCIDR + hijackCIDR, in that order
  std::vector<Route> policy_routes;
  int host_rule_table = 500;
  int pod_rp_filter = 0;  // < 0: leave as is
  int64_t tx_queue_len = 0;  // 0: unchanged
  std::optional<base::IPAddress> veth_link_address;
  int veth_mtu = 1500;
  std::string log_level = "debug";
  std::string log_file = std::string(kDefaultLogFile);
};

// Decodes stdin's JSON (after cni::ParseStdin and the version check). Type errors -> 6 with
// every field path.
std::optional<cni::CniError> DecodeNetConf(const base::Json& json, NetConf* out);

// Merges the netconf with the agent's settings (nullopt: the agent was not asked, e.g. DEL
// could not reach it) and checks every value. Errors -> 7, naming the key:
// `mode: unknown tuneMode "x" (auto, underlay, overlay, disable)`,
// `hijackCIDR[1]: "10.0.0.0/33" is not a CIDR`, `podMACPrefix: ...`, `podRPFilter: ...`.
std::optional<cni::CniError> Resolve(const NetConf& conf,
                                     const std::optional<ipamapi::CoordinatorConfig>& cluster,
                                     Config* out);

// "0a:1b" -> {0x0a, 0x1b}; the first byte must be unicast (lowest bit 0).
std::optional<std::array<uint8_t, 2>> ParseMacPrefix(std::string_view text, std::string* error);
// The pod MAC upstream derives: prefix (2 bytes) + the 4 last bytes of the IP.
std::array<uint8_t, 6> PodMac(const std::array<uint8_t, 2>& prefix, const base::IPAddress& ip);

// The host end of the underlay veth pair: "veth" + the first 11 characters of the container ID.
std::string HostVethName(std::string_view container_id);

// The policy table of a later NIC: <prefix><N> -> 100 + N - 1 (net1 -> 100); nullopt when the
// name does not follow the prefix.
std::optional<int> RuleTableFor(std::string_view if_name, std::string_view prefix);

}  // namespace spiderpool::agent::coordinator
