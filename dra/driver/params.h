#pragma once
// The pure part of NodePrepareResources: which SpiderClaimParameter a claim's opaque config
// names, and the CDI spec a prepared claim gets. No I/O (driver.h does the API calls).
//
// Opaque parameters of driver `netresources.spidernet.io` (in a DeviceClass's or the claim's
// spec.devices.config[].opaque.parameters):
//   {"apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderClaimParameter",
//    "name": "<scp>"}
// The SpiderClaimParameter lives in the claim's namespace. See dra/README.md "Claim parameters".

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "api/resource_claim.h"
#include "api/spider.h"
#include "base/json.h"
#include "dra/cdi/spec.h"

namespace spiderpool::dra::driver {

inline constexpr char kDriverName[] = "netresources.spidernet.io";
inline constexpr std::string_view kParametersApiVersion = "spiderpool.spidernet.io/v2beta1";
inline constexpr std::string_view kParametersKind = "SpiderClaimParameter";

// The environment a prepared claim's containers get through its CDI spec (besides
// DRA_CLAIM_UID=<claim uid>, which dra/cdi always adds first). Lists are comma-separated.
inline constexpr char kEnvClaim[] = "SPIDERPOOL_DRA_CLAIM";  // "<ns>/<name>"
// Our allocated devices, "<pool>/<device>" in allocation order.
inline constexpr char kEnvDevices[] = "SPIDERPOOL_DRA_DEVICES";
// The SpiderClaimParameter, "<ns>/<name>" (absent without one).
inline constexpr char kEnvParameters[] = "SPIDERPOOL_DRA_CLAIM_PARAMETER";
// spec.defaultNic's SpiderMultusConfig "<ns>/<name>" (the pod's default network).
inline constexpr char kEnvDefaultNetwork[] = "SPIDERPOOL_DRA_DEFAULT_NETWORK";
// spec.secondaryNics' SpiderMultusConfigs, "<ns>/<name>" each, in order (the form of the
// k8s.v1.cni.cncf.io/networks annotation).
inline constexpr char kEnvNetworks[] = "SPIDERPOOL_DRA_NETWORKS";
// The master NICs of those SpiderMultusConfigs (macvlan / ipvlan / vlan / ipoib), default NIC
// first, without duplicates.
inline constexpr char kEnvMasterNics[] = "SPIDERPOOL_DRA_MASTER_NICS";
// "true" when spec.enableRdma is set.
inline constexpr char kEnvRdma[] = "SPIDERPOOL_DRA_RDMA";
// rdmaAcc: the RDMA library's file name, preloaded (classic Spiderpool DRA behaviour).
inline constexpr char kEnvLdPreload[] = "LD_PRELOAD";
// Where rdmaAcc bind-mounts the library (read-only), as classic Spiderpool did.
inline constexpr std::string_view kRdmaLibraryDirs[] = {"/usr/lib", "/usr/lib64"};

struct ClaimParameterRef {
  std::string name;
  friend bool operator==(const ClaimParameterRef&, const ClaimParameterRef&) = default;
};

// Parses one opaque parameters object (strict: exactly apiVersion, kind, name). Errors say
// what is wrong ("kind: must be SpiderClaimParameter, got \"Foo\"").
absl::StatusOr<ClaimParameterRef> ParseParameters(const base::Json& parameters);

// The SpiderClaimParameter that applies to `results` (our driver's allocation results):
// for each result the last applicable config of `driver` in status.allocation.devices.config
// (claim config after class config) wins. Every config of our driver that applies must parse;
// all results must name the same one. nullopt = no config of ours (the claim is prepared with
// the device facts only). Errors name the config: "status.allocation.devices.config[1].opaque
// .parameters: ...".
absl::StatusOr<std::optional<ClaimParameterRef>> ResolveParameters(
    const api::resource_v1::ResourceClaim& claim, std::string_view driver,
    const std::vector<const api::resource_v1::DeviceRequestAllocationResult*>& results);

// The SpiderMultusConfigs a SpiderClaimParameter names, "<ns>/<name>" (namespace defaults to
// the parameter's own), default NIC first, then the secondary NICs in order, duplicates once.
std::vector<std::string> MultusConfigKeys(const api::SpiderClaimParameter& scp);

struct SpecInputs {
  std::string claim_uid;
  std::string claim_namespace;
  std::string claim_name;
  std::vector<const api::resource_v1::DeviceRequestAllocationResult*> results;
  const api::SpiderClaimParameter* parameters = nullptr;  // optional
  // The SpiderMultusConfigs of MultusConfigKeys(*parameters), by "<ns>/<name>".
  std::map<std::string, api::SpiderMultusConfig> multus_configs;
  // Host path of the RDMA userspace library for rdmaAcc ("" = not configured).
  std::string rdma_library_path;
};

// The CDI ClaimSpec (env, mounts, version pin from the parameter's dra.spidernet.io/cdi-version
// annotation). rdmaAcc without a configured library path is FailedPrecondition.
absl::StatusOr<cdi::ClaimSpec> BuildClaimSpec(const SpecInputs& in);

}  // namespace spiderpool::dra::driver
