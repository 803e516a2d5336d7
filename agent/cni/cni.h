#pragma once
// The CNI protocol side of the `spiderpool` IPAM plugin: error codes and error JSON, spec
// versions, the stdin network configuration, CNI_ARGS, and the IPAM result per cniVersion.
// Pure functions (no I/O); the plugin flow is in plugin.h. Facts follow the CNI spec
// (containernetworking/cni SPEC.md) and libcni's skel/utils behaviour.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/ipamapi/ipamapi.h"
#include "api/codec.h"
#include "base/json.h"

namespace spiderpool::agent::cni {

using base::Json;

// ---- errors -------------------------------------------------------------------------------
// Well-known codes (0-99 reserved by the spec) and ours (100+).
inline constexpr int kErrIncompatibleVersion = 1;
inline constexpr int kErrUnsupportedField = 2;
inline constexpr int kErrUnknownContainer = 3;
inline constexpr int kErrInvalidEnv = 4;
inline constexpr int kErrIOFailure = 5;
inline constexpr int kErrDecoding = 6;
inline constexpr int kErrInvalidNetworkConfig = 7;
inline constexpr int kErrTryAgainLater = 11;
inline constexpr int kErrPluginNotAvailable = 50;  // CNI 1.1 STATUS
// The agent refused the request (pool exhausted, pod not found, ...): msg carries its message.
inline constexpr int kErrAgent = 100;
// The agent answered 200 with a body that does not decode or does not make sense.
inline constexpr int kErrAgentResponse = 101;
// ADD with enableIPConflictDetection: another host answered for the allocated IP (the IPs were
// released first). msg names the IP and the MAC that answered.
inline constexpr int kErrIPConflict = 102;
// ADD with enableGatewayDetection: the gateway never answered (the IPs were released first).
inline constexpr int kErrGatewayUnreachable = 103;
// ADD with a detection flag: detection could not run (netns, link or socket failure; the IPs were
// released first).
inline constexpr int kErrDetectionFailed = 104;

struct CniError {
  int code = 0;
  std::string msg;
  std::string details;
};

// {"cniVersion": ..., "code": N, "msg": "...", "details": "..."} (details omitted when empty).
std::string FormatError(const CniError& e, std::string_view cni_version);

// ---- versions -----------------------------------------------------------------------------
inline constexpr std::array<std::string_view, 4> kSupportedVersions = {"0.3.0", "0.3.1", "0.4.0",
                                                                       "1.0.0"};
inline constexpr std::string_view kLatestVersion = "1.0.0";

bool IsSupportedVersion(std::string_view v);
// Compares "major.minor.patch" versions: <0, 0, >0; nullopt when either is malformed.
std::optional<int> CompareVersions(std::string_view a, std::string_view b);
// {"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0"]}
std::string VersionInfoJson();

// ---- names from the environment (libcni utils rules) ---------------------------------------
std::optional<CniError> ValidateContainerID(std::string_view id);       // 3 / 4
std::optional<CniError> ValidateInterfaceName(std::string_view name);   // 4
std::optional<CniError> ValidateNetworkName(std::string_view name);     // 7

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

// Step 1, as libcni's skel does before the version check: the text must be a JSON object whose
// "cniVersion" (if present) and "name" are strings (else 6); "name" must be present and valid
// (else 7). An absent cniVersion reads as "0.1.0" (skel's rule). Fills *json / *version / *name.
std::optional<CniError> ParseStdin(std::string_view text, Json* json, std::string* version,
                                   std::string* name);
// Step 2 (after the version check): the typed decode. Type errors -> 6 listing every field
// with its path; semantic errors (ipam / ipam.type missing, bad log level, socket path, timeout)
// -> 7. Applies defaults (socket path, log path/level, timeout).
std::optional<CniError> DecodeNetConf(const Json& json, NetConf* out);

// ---- CNI_ARGS -----------------------------------------------------------------------------
struct K8sArgs {
  std::string pod_namespace;       // K8S_POD_NAMESPACE
  std::string pod_name;            // K8S_POD_NAME
  std::string pod_uid;             // K8S_POD_UID
  std::string infra_container_id;  // K8S_POD_INFRA_CONTAINER_ID
  std::string ip;                  // IP (accepted, unused)
  bool ignore_unknown = false;     // IgnoreUnknown
};
// "K=V;K=V" as libcni's types.LoadArgs reads it into upstream's K8sArgs: every pair must be
// exactly K=V, unknown keys are an error unless IgnoreUnknown is 1/true/True (0/false/False
// otherwise; anything else is an error), IP must parse. Errors -> code 4.
std::optional<CniError> ParseCniArgs(std::string_view text, K8sArgs* out);
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

// Checks that `prev` decodes as a CNI result of `cni_version` (code 6 with the field paths).
std::optional<CniError> ValidatePrevResult(const Json& prev, std::string_view cni_version);

}  // namespace spiderpool::agent::cni
