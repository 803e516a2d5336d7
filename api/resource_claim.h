#pragma once
// resource.k8s.io/v1 ResourceClaim and ResourceClaimTemplate (Dynamic Resource Allocation),
// with the JSON names of k8s.io/api/resource/v1 (types.go). Decoding also accepts the older
// served versions: v1beta2 has the v1 shape; v1beta1 (and 1.31's v1alpha3) keep a request's
// fields flat on the request instead of under `exactly` — DecodeResourceClaim /
// DecodeResourceClaimTemplate convert those to v1 first.
//
// These live in namespace api::resource_v1 because core/v1's container `resources.claims[]`
// entry is already api::ResourceClaim (core.h).
//
//   auto claim = resource_v1::DecodeResourceClaim(json);        // any served version
//   for (const auto* r : claim->ResultsFor("netresources.spidernet.io")) ...
//   resource_v1::UpsertDeviceStatus(&claim->status.devices, entry);   // keyed like upstream
//
// Every struct keeps the fields it does not model (`unknown`), so a read-modify-write of the
// status (GET, change status.devices, PUT /status) loses nothing a newer server sent.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "api/codec.h"
#include "api/meta.h"
#include "api/resource.h"

namespace spiderpool::api::resource_v1 {

inline constexpr std::string_view kGroup = "resource.k8s.io";
inline constexpr std::string_view kApiVersionV1 = "resource.k8s.io/v1";
inline constexpr std::string_view kApiVersionV1beta2 = "resource.k8s.io/v1beta2";
inline constexpr std::string_view kApiVersionV1beta1 = "resource.k8s.io/v1beta1";
inline constexpr std::string_view kApiVersionV1alpha3 = "resource.k8s.io/v1alpha3";

// metadata.finalizers entry of claims allocated by the built-in controller.
inline constexpr std::string_view kClaimFinalizer = "resource.kubernetes.io/delete-protection";
// On claims generated from a template: the pod's claim name.
inline constexpr std::string_view kPodClaimNameAnnotation = "resource.kubernetes.io/pod-claim-name";

inline constexpr std::string_view kAllocationModeExactCount = "ExactCount";
inline constexpr std::string_view kAllocationModeAll = "All";
inline constexpr std::string_view kConfigSourceClass = "FromClass";
inline constexpr std::string_view kConfigSourceClaim = "FromClaim";
// The condition type drivers set on their status.devices entries.
inline constexpr std::string_view kDeviceConditionReady = "Ready";

// Limits of the status.devices[] entries (resource/v1 constants).
inline constexpr size_t kMaxDeviceConditions = 8;
inline constexpr size_t kMaxNetworkIPs = 16;
inline constexpr size_t kMaxInterfaceNameLength = 256;
inline constexpr size_t kMaxHardwareAddressLength = 128;

// ---- spec ---------------------------------------------------------------------------------

struct CELDeviceSelector {
  std::string expression;
  template <typename V>
  void Visit(V& v) {
    v.Field("expression", expression, {.required = true});
  }
};

struct DeviceSelector {
  std::optional<CELDeviceSelector> cel;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("cel", cel);
    v.Unknown(unknown);
  }
};

struct DeviceToleration {
  std::string key;
  std::string op;  // "operator": Exists | Equal
  std::string value;
  std::string effect;
  std::optional<int64_t> toleration_seconds;
  template <typename V>
  void Visit(V& v) {
    v.Field("key", key);
    v.Field("operator", op);
    v.Field("value", value);
    v.Field("effect", effect);
    v.Field("tolerationSeconds", toleration_seconds);
  }
};

struct CapacityRequirements {
  std::map<std::string, std::string> requests;  // QualifiedName -> Quantity (string form)
  template <typename V>
  void Visit(V& v) {
    v.Field("requests", requests);
  }
};

struct ExactDeviceRequest {
  std::string device_class_name;
  std::vector<DeviceSelector> selectors;
  std::string allocation_mode;  // ExactCount (default) | All
  int64_t count = 0;            // 0 = unset (1 for ExactCount)
  std::optional<bool> admin_access;
  std::vector<DeviceToleration> tolerations;
  std::optional<CapacityRequirements> capacity;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("deviceClassName", device_class_name, {.required = true});
    v.Field("selectors", selectors);
    v.Field("allocationMode", allocation_mode);
    v.Field("count", count);
    v.Field("adminAccess", admin_access);
    v.Field("tolerations", tolerations);
    v.Field("capacity", capacity);
    v.Unknown(unknown);
  }
};

struct DeviceSubRequest {
  std::string name;
  std::string device_class_name;
  std::vector<DeviceSelector> selectors;
  std::string allocation_mode;
  int64_t count = 0;
  std::vector<DeviceToleration> tolerations;
  std::optional<CapacityRequirements> capacity;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("name", name, {.required = true});
    v.Field("deviceClassName", device_class_name, {.required = true});
    v.Field("selectors", selectors);
    v.Field("allocationMode", allocation_mode);
    v.Field("count", count);
    v.Field("tolerations", tolerations);
    v.Field("capacity", capacity);
    v.Unknown(unknown);
  }
};

// Exactly one of `exactly` and `first_available` is set (the API server validates that).
struct DeviceRequest {
  std::string name;
  std::optional<ExactDeviceRequest> exactly;
  std::vector<DeviceSubRequest> first_available;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("name", name, {.required = true});
    v.Field("exactly", exactly);
    v.Field("firstAvailable", first_available);
    v.Unknown(unknown);
  }
};

struct DeviceConstraint {
  std::vector<std::string> requests;
  std::optional<std::string> match_attribute;
  std::optional<std::string> distinct_attribute;
  template <typename V>
  void Visit(V& v) {
    v.Field("requests", requests);
    v.Field("matchAttribute", match_attribute);
    v.Field("distinctAttribute", distinct_attribute);
  }
};

struct OpaqueDeviceConfiguration {
  std::string driver;
  Json parameters;  // RawExtension: any JSON value, <= 10 KiB; the driver versions it
  template <typename V>
  void Visit(V& v) {
    v.Field("driver", driver, {.required = true});
    v.Field("parameters", parameters, {.required = true});
  }
};

// spec.devices.config[] (DeviceClaimConfiguration).
struct DeviceClaimConfiguration {
  std::vector<std::string> requests;  // empty = every request; "req" or "req/subreq"
  std::optional<OpaqueDeviceConfiguration> opaque;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("requests", requests);
    v.Field("opaque", opaque);
    v.Unknown(unknown);
  }
};

struct DeviceClaim {
  std::vector<DeviceRequest> requests;
  std::vector<DeviceConstraint> constraints;
  std::vector<DeviceClaimConfiguration> config;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("requests", requests);
    v.Field("constraints", constraints);
    v.Field("config", config);
    v.Unknown(unknown);
  }
};

struct ResourceClaimSpec {
  DeviceClaim devices;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("devices", devices);
    v.Unknown(unknown);
  }
};

// ---- status -------------------------------------------------------------------------------

// status.allocation.devices.results[].
struct DeviceRequestAllocationResult {
  std::string request;  // "req" or "req/subreq"
  std::string driver;
  std::string pool;
  std::string device;
  std::optional<bool> admin_access;
  std::vector<DeviceToleration> tolerations;
  std::vector<std::string> binding_conditions;
  std::vector<std::string> binding_failure_conditions;
  std::optional<std::string> share_id;  // "shareID"
  std::map<std::string, std::string> consumed_capacity;
  Json unknown;  // skipNodeOperations, ...
  template <typename V>
  void Visit(V& v) {
    v.Field("request", request, {.required = true});
    v.Field("driver", driver, {.required = true});
    v.Field("pool", pool, {.required = true});
    v.Field("device", device, {.required = true});
    v.Field("adminAccess", admin_access);
    v.Field("tolerations", tolerations);
    v.Field("bindingConditions", binding_conditions);
    v.Field("bindingFailureConditions", binding_failure_conditions);
    v.Field("shareID", share_id);
    v.Field("consumedCapacity", consumed_capacity);
    v.Unknown(unknown);
  }
  // The main request name: "req" of "req/subreq".
  std::string_view MainRequest() const;
};

// status.allocation.devices.config[]: class and claim config merged, class entries first.
struct DeviceAllocationConfiguration {
  std::string source;  // FromClass | FromClaim
  std::vector<std::string> requests;
  std::optional<OpaqueDeviceConfiguration> opaque;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("source", source, {.required = true});
    v.Field("requests", requests);
    v.Field("opaque", opaque);
    v.Unknown(unknown);
  }
  // Whether this entry applies to the allocation result of `request` ("req" or "req/sub"):
  // an empty list applies to all; "req" covers every subrequest of req.
  bool AppliesTo(std::string_view request) const;
};

struct DeviceAllocationResult {
  std::vector<DeviceRequestAllocationResult> results;
  std::vector<DeviceAllocationConfiguration> config;
  template <typename V>
  void Visit(V& v) {
    v.Field("results", results);
    v.Field("config", config);
  }
};

struct AllocationResult {
  DeviceAllocationResult devices;
  Json node_selector;  // core/v1 NodeSelector, kept raw
  std::optional<Time> allocation_timestamp;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("devices", devices);
    v.Field("nodeSelector", node_selector);
    v.Field("allocationTimestamp", allocation_timestamp);
    v.Unknown(unknown);
  }
};

struct ResourceClaimConsumerReference {
  std::string api_group;
  std::string resource;  // "pods"
  std::string name;
  std::string uid;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiGroup", api_group);
    v.Field("resource", resource, {.required = true});
    v.Field("name", name, {.required = true});
    v.Field("uid", uid, {.required = true});
  }
};

// status.devices[].networkData.
struct NetworkDeviceData {
  std::string interface_name;
  std::vector<std::string> ips;  // CIDR form: "192.0.2.5/24", "2001:db8::5/64"
  std::string hardware_address;
  template <typename V>
  void Visit(V& v) {
    v.Field("interfaceName", interface_name);
    v.Field("ips", ips, {.format = Format::kCIDR});
    v.Field("hardwareAddress", hardware_address);
  }
  friend bool operator==(const NetworkDeviceData&, const NetworkDeviceData&) = default;
};

// status.devices[] (KEP-4817): owned by its driver, keyed by driver/pool/device/shareID.
struct AllocatedDeviceStatus {
  std::string driver;
  std::string pool;
  std::string device;
  std::optional<std::string> share_id;
  std::vector<Condition> conditions;
  Json data;  // RawExtension, driver-specific
  std::optional<NetworkDeviceData> network_data;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("driver", driver, {.required = true});
    v.Field("pool", pool, {.required = true});
    v.Field("device", device, {.required = true});
    v.Field("shareID", share_id);
    v.Field("conditions", conditions);
    v.Field("data", data);
    v.Field("networkData", network_data);
    v.Unknown(unknown);
  }
  // Same list-map key (an unset shareID equals an empty one).
  bool SameDevice(const AllocatedDeviceStatus& o) const;
};

struct ResourceClaimStatus {
  std::optional<AllocationResult> allocation;
  std::vector<ResourceClaimConsumerReference> reserved_for;
  std::vector<AllocatedDeviceStatus> devices;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("allocation", allocation);
    v.Field("reservedFor", reserved_for);
    v.Field("devices", devices);
    v.Unknown(unknown);
  }
};

struct ResourceClaim {
  SP_API_OBJECT_HEAD(ResourceClaim)
  ResourceClaimSpec spec;
  ResourceClaimStatus status;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec);
    v.Field("status", status);
  }

  // The allocation results of one driver (empty when not allocated).
  std::vector<const DeviceRequestAllocationResult*> ResultsFor(std::string_view driver) const;
  // The opaque configs of `driver` that apply to allocation result `request`, in the order
  // of status.allocation.devices.config (class first, then claim: later entries take
  // precedence).
  std::vector<const DeviceAllocationConfiguration*> ConfigsFor(std::string_view driver,
                                                               std::string_view request) const;
};
using ResourceClaimList = List<ResourceClaim>;

struct ResourceClaimTemplateSpec {
  ObjectMeta metadata;
  ResourceClaimSpec spec;
  template <typename V>
  void Visit(V& v) {
    v.Field("metadata", metadata);
    v.Field("spec", spec);
  }
};

struct ResourceClaimTemplate {
  SP_API_OBJECT_HEAD(ResourceClaimTemplate)
  ResourceClaimTemplateSpec spec;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec);
  }
};
using ResourceClaimTemplateList = List<ResourceClaimTemplate>;

// ---- versions -----------------------------------------------------------------------------

// Rewrites a ResourceClaim / ResourceClaimTemplate (or a list of them) of any served
// resource.k8s.io version into the v1 shape, in place: v1beta1 / v1alpha3 flat requests get
// their class fields moved under `exactly` (unless they use firstAvailable), and apiVersion
// becomes resource.k8s.io/v1. v1 and v1beta2 objects only get their apiVersion changed. An
// unknown resource.k8s.io version or a non-object is an InvalidArgument error; an object
// without apiVersion is taken as v1.
absl::Status ConvertToV1(Json* object);

// ConvertToV1 + decode (every field error, with its path).
absl::StatusOr<ResourceClaim> DecodeResourceClaim(const Json& object);
absl::StatusOr<ResourceClaimTemplate> DecodeResourceClaimTemplate(const Json& object);

// ---- status.devices helpers ---------------------------------------------------------------

// Replaces the entry with the same key (driver/pool/device/shareID) or appends `entry`.
// Returns true if the list changed.
bool UpsertDeviceStatus(std::vector<AllocatedDeviceStatus>* devices, AllocatedDeviceStatus entry);
// Removes the entries of `driver` for which `pred` is true (all of them when pred is null).
// Returns how many were removed.
size_t RemoveDeviceStatuses(std::vector<AllocatedDeviceStatus>* devices, std::string_view driver,
                            const std::function<bool(const AllocatedDeviceStatus&)>& pred = {});
// Checks the API server's limits on one entry (networkData.ips CIDRs, at most 16 of them;
// interfaceName <= 256 and hardwareAddress <= 128 bytes; at most 8 conditions). Errors name
// the field under `path` ("status.devices[0].networkData.ips[1]: ...").
absl::Status ValidateDeviceStatus(const AllocatedDeviceStatus& entry, std::string_view path);

}  // namespace spiderpool::api::resource_v1
