#pragma once
// The `spiderpool` IPAM plugin's side of the protocol: its network configuration (the "ipam"
// section, decoded after cni.h's ParseStdin and version checks) and its result, built from the
// agent's answer per cniVersion. Pure functions (no I/O).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/cni/cni.h"
#include "agent/ipamapi/ipamapi.h"
#include "api/codec.h"
#include "base/json.h"

namespace spiderpool::agent::cni {

// ---- network configuration (stdin) --------------------------------------------------------
inline constexpr std::string_view kDefaultLogFilePath = "/var/log/spidernet/spiderpool.log";
inline constexpr std::string_view kDefaultLogLevel = "debug";  // upstream code's default
// Whole-invocation budget (health check + request). Upstream's client uses 100 s for the POST
// alone; the kubelet's runtime-request-timeout (2 min) covers the whole sandbox setup, so ours
// stays well below it.
inline constexpr double kDefaultTimeoutSeconds = 60;
inline constexpr double kMaxTimeoutSeconds = 600;

struct IPAMConf {
  std::string type;
  std::string log_level;
  std::string log_file_path;
  int64_t log_file_max_size = 100;  // MiB
  int64_t log_file_max_age = 30;    // days (accepted; rotation is by size/count only)
  int64_t log_file_max_count = 7;
  std::vector<std::string> default_ipv4_ippool;
  std::vector<std::string> default_ipv6_ippool;
  bool clean_gateway = false;
  bool match_master_subnet = false;
  std::string ipam_unix_socket_path;
  std::optional<double> ipam_timeout_seconds;  // ours
  template <typename V>
  void Visit(V& v) {
    v.Field("type", type);
    v.Field("log_level", log_level);
    v.Field("log_file_path", log_file_path);
    v.Field("log_file_max_size", log_file_max_size, {.minimum = 0});
    v.Field("log_file_max_age", log_file_max_age, {.minimum = 0});
    v.Field("log_file_max_count", log_file_max_count, {.minimum = 0});
    v.Field("default_ipv4_ippool", default_ipv4_ippool);
    v.Field("default_ipv6_ippool", default_ipv6_ippool);
    v.Field("clean_gateway", clean_gateway);
    v.Field("match_master_subnet", match_master_subnet);
    v.Field("ipam_unix_socket_path", ipam_unix_socket_path);
    v.Field("ipam_timeout_seconds", ipam_timeout_seconds);
  }
};

struct NetConf {
  std::string cni_version;
  std::string name;
  std::string type;
  std::optional<IPAMConf> ipam;
  std::optional<Json> prev_result;
  // CNI conventions' "args" (e.g. {"cni": {...}}). For runtimes that are not a kubelet
  // (podman passes only K8S_POD_NAME), "args.cni" may name K8S_POD_NAMESPACE / K8S_POD_NAME /
  // K8S_POD_UID; CNI_ARGS wins where both are set (see FillK8sArgsFromConf).
  std::optional<Json> args;
  template <typename V>
  void Visit(V& v) {
    v.Field("cniVersion", cni_version);
    v.Field("name", name);
    v.Field("type", type);
    v.Field("ipam", ipam);
    v.Field("prevResult", prev_result);
    v.Field("args", args);
  }
  // Defaults applied by DecodeNetConf.
  double timeout_seconds = kDefaultTimeoutSeconds;
};

// Step 2 (after the version check): the typed decode. Type errors -> 6 listing every field
// with its path; semantic errors (ipam / ipam.type missing, bad log level, socket path, timeout)
// -> 7. Applies defaults (socket path, log path/level, timeout).
std::optional<CniError> DecodeNetConf(const Json& json, NetConf* out);

// The `spiderpool` IPAM section of a network configuration that does not come on stdin: a
// NetworkAttachmentDefinition's spec.config (Multus passes it to the plugins), either one
// plugin's config or a conflist ("plugins": [...]). The first plugin whose ipam.type is
// "spiderpool", decoded as IPAMConf (no defaults applied); nullopt when no plugin uses it.
// Errors name the field: the text is not a JSON object, "plugins" is not an array, or the
// spiderpool ipam section does not decode.
absl::StatusOr<std::optional<IPAMConf>> SpiderpoolIpamOf(std::string_view config);

// Fills the K8S_POD_* values CNI_ARGS left empty from the config's "args.cni" (string values
// only; anything else there is ignored).
void FillK8sArgsFromConf(const NetConf& conf, K8sArgs* out);

// ---- results ------------------------------------------------------------------------------
// The IPAM result for `if_name` in the format of `cni_version`: the IPs whose nic == if_name
// (gateway per IP, omitted when empty), the routes whose ifName == if_name (dst as the network,
// like Go's net.ParseCIDR), and dns (always present, like Go's encoder writes it). 0.3.x/0.4.0
// IPs carry "version": "4"|"6"; 1.0.0 IPs do not. Errors when an IP's version does not match
// its address family or an address does not parse.
absl::StatusOr<Json> BuildResult(const ipamapi::IpamAddResponse& resp, std::string_view if_name,
                                 std::string_view cni_version);

}  // namespace spiderpool::agent::cni
