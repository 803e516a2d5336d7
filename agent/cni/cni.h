#pragma once
// The CNI protocol helpers of our plugins (`//agent/cni:protocol`, used by spiderpool, ifacer
// and coordinator): error codes and error JSON, spec versions, names, stdin parsing, CNI_ARGS,
// prevResult checks. Pure functions (no I/O); skel.h runs libcni skel's steps on them. The IPAM
// plugin's own netconf and result are in ipam_conf.h. Facts follow the CNI spec
// (containernetworking/cni SPEC.md) and libcni's skel/utils behaviour.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
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
// Step 1, as libcni's skel does before the version check: the text must be a JSON object whose
// "cniVersion" (if present) and "name" are strings (else 6); "name" must be present and valid
// (else 7). An absent cniVersion reads as "0.1.0" (skel's rule). Fills *json / *version / *name.
std::optional<CniError> ParseStdin(std::string_view text, Json* json, std::string* version,
                                   std::string* name);

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

// ---- results ------------------------------------------------------------------------------
// Checks that `prev` decodes as a CNI result of `cni_version` (code 6 with the field paths).
std::optional<CniError> ValidatePrevResult(const Json& prev, std::string_view cni_version);

}  // namespace spiderpool::agent::cni
