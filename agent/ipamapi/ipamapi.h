#pragma once
// The spiderpool-agent's IPAM wire contract on its unix socket (upstream
// api/v1/agent/openapi.yaml, basePath /v1): the request/response bodies, the paths, and OUR
// status-code contract. Shared by the agent's server and by the `spiderpool` CNI plugin, which
// links this — so it depends on base/ and api/codec only. See README.md for the table.
//
// Field names and JSON shapes are upstream's (go-swagger models). Encoding omits zero
// optional fields (Go's omitempty); required fields are always written.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/codec.h"
#include "base/json.h"

namespace spiderpool::agent::ipamapi {

// ---- transport ------------------------------------------------------------------------------

// Where the agent listens (ConfigMap key ipamUnixSocketPath; plugin key ipam_unix_socket_path).
inline constexpr std::string_view kDefaultSocketPath = "/var/run/spidernet/spiderpool.sock";
inline constexpr std::string_view kBasePath = "/v1";
// GET: 200 when the agent is ready to serve IPAM, else 500 (or 503).
inline constexpr std::string_view kHealthyPath = "/v1/ipam/healthy";
// POST body IpamAddArgs -> 200 IpamAddResponse. DELETE body IpamDelArgs -> 200 (empty body).
inline constexpr std::string_view kIPPath = "/v1/ipam/ip";
inline constexpr std::string_view kContentType = "application/json";
// GET with body GetCoordinatorArgs (query parameters podNamespace/podName also accepted) ->
// 200 CoordinatorConfig; 500 when the SpiderCoordinator is missing or its phase is not Synced.
inline constexpr std::string_view kCoordinatorConfigPath = "/v1/coordinator/config";

// ---- status-code contract (ours; upstream uses only 200 and 500) ----------------------------
inline constexpr int kStatusOK = 200;
// The body does not decode / a required field is missing. Plugin: CNI error 7 (ADD) or 4.
inline constexpr int kStatusBadRequest = 400;
// The pod does not exist (in the agent's cache) or is not scheduled on this node. Plugin: 100+.
inline constexpr int kStatusNotFound = 404;
// DELETE: nothing is allocated to this pod/NIC. The plugin treats it as success.
inline constexpr int kStatusConflict = 409;
// The agent sheds load (too many requests in flight). Plugin: CNI error 11 "try again later".
inline constexpr int kStatusTooManyRequests = 429;
// Any other failure (pool exhausted, no candidate pool, apiserver errors ...). Plugin: CNI 100
// with the agent's message.
inline constexpr int kStatusInternalError = 500;
// The agent is not ready (informers not synced, shutting down). Plugin: CNI error 11.
inline constexpr int kStatusServiceUnavailable = 503;

// Maps an absl status (from the agent's IPAM code) to the HTTP status above:
// OK->200, InvalidArgument->400, NotFound->404, Unavailable->503, anything else->500.
// ResourceExhausted (e.g. a pool with no free IP) is deliberately 500, not 429: retrying does
// not help, so the kubelet must see the message. 409 and 429 are chosen by the server itself.
int HttpStatusFor(const absl::Status& status);

// ---- bodies ---------------------------------------------------------------------------------

// One IP handed to a pod NIC. `address` is CIDR form ("10.6.0.10/16", "fd00::a/64").
struct IpConfig {
  int64_t version = 4;  // 4 | 6 (required)
  std::string address;  // required
  std::string ip_pool;  // "ipPool": the SpiderIPPool it came from
  std::string gateway;  // empty when the pool has none or cleanGateway
  std::string nic;      // required: the pod interface, e.g. eth0, net1
  int64_t vlan = 0;
  std::string mac;                          // set by an IaaS network provider
  bool enable_gateway_detection = false;    // "enableGatewayDetection"
  bool enable_ip_conflict_detection = false;  // "enableIPConflictDetection"
  template <typename V>
  void Visit(V& v) {
    v.Field("version", version, {.required = true, .enum_values = {"4", "6"}});
    v.Field("address", address, {.required = true, .format = api::Format::kCIDR});
    v.Field("ipPool", ip_pool);
    v.Field("gateway", gateway);
    v.Field("nic", nic, {.required = true});
    v.Field("vlan", vlan, {.minimum = 0, .maximum = 4094});
    v.Field("mac", mac);
    v.Field("enableGatewayDetection", enable_gateway_detection);
    v.Field("enableIPConflictDetection", enable_ip_conflict_detection);
  }
  friend bool operator==(const IpConfig&, const IpConfig&) = default;
};

struct Route {
  std::string if_name;  // "ifName" (required)
  std::string dst;      // required, CIDR
  std::string gw;       // required, IP
  template <typename V>
  void Visit(V& v) {
    v.Field("ifName", if_name, {.required = true});
    v.Field("dst", dst, {.required = true, .format = api::Format::kCIDR});
    v.Field("gw", gw, {.required = true, .format = api::Format::kIP});
  }
  friend bool operator==(const Route&, const Route&) = default;
};

// CNI's types.DNS (upstream models.DNS mirrors it): also the shape agent/cni decodes a
// CNI result's "dns" with (prevResult checks).
struct DNS {
  std::vector<std::string> nameservers;
  std::string domain;
  std::vector<std::string> search;
  std::vector<std::string> options;
  template <typename V>
  void Visit(V& v) {
    v.Field("nameservers", nameservers);
    v.Field("domain", domain);
    v.Field("search", search);
    v.Field("options", options);
  }
  friend bool operator==(const DNS&, const DNS&) = default;
};

// POST /v1/ipam/ip
struct IpamAddArgs {
  std::string container_id;   // "containerID"  (required)
  std::string if_name;        // "ifName"       (required)
  std::string net_namespace;  // "netNamespace" (required)
  std::string pod_namespace;  // "podNamespace" (required)
  std::string pod_name;       // "podName"      (required)
  // "podUID" (required key, may be ""): empty when the runtime passes no K8S_POD_UID (podman,
  // old containerd); the agent then uses the UID of the pod it finds by namespace/name.
  std::string pod_uid;
  std::vector<std::string> default_ipv4_ippool;  // "defaultIPv4IPPool"
  std::vector<std::string> default_ipv6_ippool;  // "defaultIPv6IPPool"
  bool clean_gateway = false;                    // "cleanGateway"
  bool match_master_subnet = false;              // "matchMasterSubnet"
  template <typename V>
  void Visit(V& v) {
    v.Field("containerID", container_id, {.required = true});
    v.Field("ifName", if_name, {.required = true});
    v.Field("netNamespace", net_namespace, {.required = true});
    v.Field("podNamespace", pod_namespace, {.required = true});
    v.Field("podName", pod_name, {.required = true});
    v.Field("podUID", pod_uid, {.required = true, .allow_empty = true});
    v.Field("defaultIPv4IPPool", default_ipv4_ippool);
    v.Field("defaultIPv6IPPool", default_ipv6_ippool);
    v.Field("cleanGateway", clean_gateway);
    v.Field("matchMasterSubnet", match_master_subnet);
  }
  friend bool operator==(const IpamAddArgs&, const IpamAddArgs&) = default;
};

// 200 answer to POST /v1/ipam/ip: the IPs and routes of ALL the pod's NICs (the plugin keeps
// those whose nic / ifName is its CNI_IFNAME).
struct IpamAddResponse {
  std::vector<IpConfig> ips;  // required (written as [] when empty)
  std::vector<Route> routes;
  std::optional<DNS> dns;
  template <typename V>
  void Visit(V& v) {
    v.Field("ips", ips, {.required = true});
    v.Field("routes", routes);
    v.Field("dns", dns);
  }
  friend bool operator==(const IpamAddResponse&, const IpamAddResponse&) = default;
};

// DELETE /v1/ipam/ip. netNamespace is optional (upstream; CNI_NETNS may be empty on DEL).
struct IpamDelArgs {
  std::string container_id;   // "containerID"  (required)
  std::string if_name;        // "ifName"       (required)
  std::string net_namespace;  // "netNamespace"
  std::string pod_namespace;  // "podNamespace" (required)
  std::string pod_name;       // "podName"      (required)
  std::string pod_uid;        // "podUID" (required key, may be "", as in IpamAddArgs)
  template <typename V>
  void Visit(V& v) {
    v.Field("containerID", container_id, {.required = true});
    v.Field("ifName", if_name, {.required = true});
    v.Field("netNamespace", net_namespace);
    v.Field("podNamespace", pod_namespace, {.required = true});
    v.Field("podName", pod_name, {.required = true});
    v.Field("podUID", pod_uid, {.required = true, .allow_empty = true});
  }
  friend bool operator==(const IpamDelArgs&, const IpamDelArgs&) = default;
};

// GET /v1/coordinator/config: whose settings (the pod annotation
// ipam.spidernet.io/default-route-nic overrides podDefaultRouteNIC). Both optional (upstream);
// without them the answer is the SpiderCoordinator's alone.
struct GetCoordinatorArgs {
  std::string pod_name;       // "podName"
  std::string pod_namespace;  // "podNamespace"
  template <typename V>
  void Visit(V& v) {
    v.Field("podName", pod_name);
    v.Field("podNamespace", pod_namespace);
  }
  friend bool operator==(const GetCoordinatorArgs&, const GetCoordinatorArgs&) = default;
};

// One policy route of the coordinator ("CoordinatorRoute").
struct CoordinatorRoute {
  std::string dst;  // CIDR
  std::string gw;   // IP, same family as dst
  template <typename V>
  void Visit(V& v) {
    v.Field("dst", dst, {.required = true, .format = api::Format::kCIDR});
    v.Field("gw", gw, {.required = true, .format = api::Format::kIP});
  }
  friend bool operator==(const CoordinatorRoute&, const CoordinatorRoute&) = default;
};

// 200 answer to GET /v1/coordinator/config: the SpiderCoordinator "default"'s spec with its
// defaults applied, plus the CIDRs its status discovered (upstream models.CoordinatorConfig).
// The coordinator plugin uses each value only where its own netconf leaves the key unset.
// `mode` is the PLUGIN's word: the CRD's "disabled" is sent as "disable" (upstream quirk).
// hijackCIDR entries and policyRoutes[].dst are CIDRs (a bare IP in the CRD becomes /32, /128).
//
// overlayPodCIDR and serviceCIDR are required upstream, but an upstream agent writes a Go nil
// slice (no CIDR discovered yet) as `null`: they decode as optional ([] for null or absent)
// and, like every optional field, are omitted when empty.
struct CoordinatorConfig {
  std::string mode;                             // auto | underlay | overlay | disable (required)
  std::vector<std::string> overlay_pod_cidr;    // "overlayPodCIDR"
  std::vector<std::string> service_cidr;        // "serviceCIDR"
  std::vector<std::string> hijack_cidr;         // "hijackCIDR"
  std::vector<CoordinatorRoute> policy_routes;  // "policyRoutes"
  std::string pod_mac_prefix;                   // "podMACPrefix"
  bool tune_pod_routes = true;                  // "tunePodRoutes" (required)
  std::string pod_default_route_nic;            // "podDefaultRouteNIC"
  int64_t host_rule_table = 500;                // "hostRuleTable"
  int64_t pod_rp_filter = 0;                    // "podRPFilter" (negative: leave as is)
  int64_t tx_queue_len = 0;                     // "txQueueLen" (0: unchanged)
  std::string veth_link_address;                // "vethLinkAddress"
  int64_t veth_mtu = 1500;                      // "vethMTU"
  template <typename V>
  void Visit(V& v) {
    v.Field("mode", mode, {.required = true});
    v.Field("overlayPodCIDR", overlay_pod_cidr, {.format = api::Format::kCIDR});
    v.Field("serviceCIDR", service_cidr, {.format = api::Format::kCIDR});
    v.Field("hijackCIDR", hijack_cidr, {.format = api::Format::kCIDR});
    v.Field("policyRoutes", policy_routes);
    v.Field("podMACPrefix", pod_mac_prefix);
    v.Field("tunePodRoutes", tune_pod_routes, {.required = true});
    v.Field("podDefaultRouteNIC", pod_default_route_nic);
    v.Field("hostRuleTable", host_rule_table);
    v.Field("podRPFilter", pod_rp_filter);
    v.Field("txQueueLen", tx_queue_len);
    v.Field("vethLinkAddress", veth_link_address);
    v.Field("vethMTU", veth_mtu);
  }
  friend bool operator==(const CoordinatorConfig&, const CoordinatorConfig&) = default;
};

// Body of every non-200 answer we send: {"message": "..."}. (Upstream's go-swagger `Error` is
// `type: string`, so upstream agents answer with a bare JSON string; ErrorMessageFromBody
// accepts both.)
struct ErrorBody {
  std::string message;
  template <typename V>
  void Visit(V& v) {
    v.Field("message", message, {.required = true, .allow_empty = true});
  }
};

// ---- codecs ---------------------------------------------------------------------------------

// Compact JSON text of any body above.
template <typename T>
std::string ToJson(const T& body) {
  return base::DumpJson(api::Encode(body));
}

// Parses and decodes a body; InvalidArgument listing EVERY field error with its path
// (e.g. `ips[0].address: "10.0.0.300/24" is not a CIDR; podUID: Required value`).
template <typename T>
absl::StatusOr<T> FromJson(std::string_view text) {
  return api::DecodeJson<T>(text);
}

// {"message":"<message>"}
std::string ErrorJson(std::string_view message);

// The human message of an error answer: {"message":"x"} -> x, "x" (a JSON string, upstream)
// -> x, anything else -> the raw body (trimmed, capped at 1 KiB); empty body -> "".
std::string ErrorMessageFromBody(std::string_view body);

}  // namespace spiderpool::agent::ipamapi
