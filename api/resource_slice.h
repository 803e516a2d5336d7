#pragma once
// resource.k8s.io ResourceSlice and DeviceClass (Dynamic Resource Allocation), modelled on the
// v1 shape (Kubernetes >= 1.34) with conversions to and from the two older served versions:
//
//   v1       devices[] {name, attributes, capacity, allowMultipleAllocations, ...}
//   v1beta2  the same JSON shape as v1 (1.33 - 1.38)
//   v1beta1  every device field but `name` sits under `devices[].basic` (1.32 - 1.37)
//
// JSON names follow k8s.io/api resource/v1 types.go. Fields this project does not use
// (taints, consumesCounters, sharedCounters, bindingConditions, list-type attribute values,
// capacity requestPolicy, ...) are kept in `unknown` so a read-modify-write loses nothing.
//
// ValidateResourceSlice() applies kube-apiserver's v1 rules for what we model, with its
// messages and field paths (`spec.devices[3].attributes[ifName].string: Too long: may not be
// more than 64 bytes`): a driver refuses to write a slice the API server would reject.
//
// Names are chosen not to collide with api/resource_claim.h (ResourceClaim's selectors,
// opaque config and node selectors are separate types there; DeviceClass keeps its own as
// nested types).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/codec.h"
#include "api/meta.h"
#include "api/resource.h"
#include "api/validation/errors.h"

namespace spiderpool::api {

// Limits of resource.k8s.io/v1 (k8s.io/api resource/v1 constants).
namespace resourceslice {
inline constexpr std::string_view kGroup = "resource.k8s.io";
inline constexpr int kMaxDevices = 128;                        // ResourceSliceMaxDevices
inline constexpr int kMaxAttributesAndCapacitiesPerDevice = 32;
inline constexpr int kDeviceAttributeMaxValueLength = 64;
inline constexpr int kDeviceMaxIDLength = 32;      // the C identifier of a QualifiedName
inline constexpr int kDeviceMaxDomainLength = 63;  // the domain of a QualifiedName
inline constexpr int kDriverNameMaxLength = 63;
inline constexpr int kPoolNameMaxLength = 253;
// Served versions, most preferred first.
inline constexpr std::string_view kVersionV1 = "v1";
inline constexpr std::string_view kVersionV1beta2 = "v1beta2";
inline constexpr std::string_view kVersionV1beta1 = "v1beta1";
// Field selectors (ResourceSliceSelectorNodeName / ...Driver).
inline constexpr std::string_view kSelectorNodeName = "spec.nodeName";
inline constexpr std::string_view kSelectorDriver = "spec.driver";
}  // namespace resourceslice

// DeviceAttribute: exactly one of the four values is set.
struct DeviceAttribute {
  std::optional<int64_t> int_value;           // "int"
  std::optional<bool> bool_value;             // "bool"
  std::optional<std::string> string_value;    // "string", <= 64 bytes
  std::optional<std::string> version_value;   // "version", semver 2.0.0, <= 64 bytes
  Json unknown;  // the alpha list forms (ints, bools, strings, versions)
  template <typename V>
  void Visit(V& v) {
    v.Field("int", int_value);
    v.Field("bool", bool_value);
    v.Field("string", string_value);
    v.Field("version", version_value);
    v.Unknown(unknown);
  }
  static DeviceAttribute Int(int64_t x) { return {.int_value = x}; }
  static DeviceAttribute Bool(bool x) { return {.bool_value = x}; }
  static DeviceAttribute String(std::string x) { return {.string_value = std::move(x)}; }
  static DeviceAttribute Version(std::string x) { return {.version_value = std::move(x)}; }
  friend bool operator==(const DeviceAttribute& a, const DeviceAttribute& b);
};

// DeviceCapacity: {value: Quantity, requestPolicy?}. The Quantity stays in its string form.
struct DeviceCapacity {
  std::string value;
  Json unknown;  // requestPolicy
  template <typename V>
  void Visit(V& v) {
    v.Field("value", value, {.required = true});
    v.Unknown(unknown);
  }
  friend bool operator==(const DeviceCapacity& a, const DeviceCapacity& b);
};

// One device. Keys of attributes/capacity are QualifiedNames: a C identifier (the driver's
// own domain) or "<dns-subdomain>/<c-identifier>".
struct Device {
  std::string name;  // DNS label, unique in the pool
  std::map<std::string, DeviceAttribute> attributes;
  std::map<std::string, DeviceCapacity> capacity;
  std::optional<bool> allow_multiple_allocations;  // alpha DRAConsumableCapacity
  Json unknown;  // consumesCounters, taints, nodeName/nodeSelector/allNodes, binding*, ...
  template <typename V>
  void Visit(V& v) {
    v.Field("name", name, {.required = true});
    v.Field("attributes", attributes);
    v.Field("capacity", capacity);
    v.Field("allowMultipleAllocations", allow_multiple_allocations);
    v.Unknown(unknown);
  }
  friend bool operator==(const Device& a, const Device& b);
};

struct ResourcePool {
  std::string name;  // DNS subdomains separated by "/", <= 253
  int64_t generation = 0;
  int64_t resource_slice_count = 0;
  template <typename V>
  void Visit(V& v) {
    v.Field("name", name, {.required = true});
    v.Field("generation", generation, {.required = true});
    v.Field("resourceSliceCount", resource_slice_count, {.required = true});
  }
  friend bool operator==(const ResourcePool&, const ResourcePool&) = default;
};

struct ResourceSliceSpec {
  std::string driver;
  ResourcePool pool;
  // Exactly one of the node selection fields.
  std::optional<std::string> node_name;
  std::optional<Json> node_selector;  // core/v1 NodeSelector, kept raw; exactly one term
  std::optional<bool> all_nodes;
  std::optional<bool> per_device_node_selection;
  std::vector<Device> devices;
  Json unknown;  // sharedCounters, partitionTypeAttribute, skipNodeOperations, ...
  template <typename V>
  void Visit(V& v) {
    v.Field("driver", driver, {.required = true});
    v.Field("pool", pool, {.required = true});
    v.Field("nodeName", node_name);
    v.Field("nodeSelector", node_selector);
    v.Field("allNodes", all_nodes);
    v.Field("perDeviceNodeSelection", per_device_node_selection);
    v.Field("devices", devices);
    v.Unknown(unknown);
  }
};

struct ResourceSlice {
  SP_API_OBJECT_HEAD(ResourceSlice)  // resource.k8s.io/v1, cluster-scoped
  ResourceSliceSpec spec;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec, {.required = true});
  }
};
using ResourceSliceList = List<ResourceSlice>;

// DeviceClass (cluster-scoped). Its selector and config types are nested so they do not
// collide with ResourceClaim's (api/resource_claim.h).
struct DeviceClassSpec {
  struct CELSelector {
    std::string expression;
    template <typename V>
    void Visit(V& v) {
      v.Field("expression", expression, {.required = true});
    }
  };
  struct Selector {
    std::optional<CELSelector> cel;
    Json unknown;
    template <typename V>
    void Visit(V& v) {
      v.Field("cel", cel);
      v.Unknown(unknown);
    }
  };
  struct OpaqueConfig {
    std::string driver;
    Json parameters;  // any JSON object (RawExtension), <= 10 KiB
    template <typename V>
    void Visit(V& v) {
      v.Field("driver", driver, {.required = true});
      v.Field("parameters", parameters, {.required = true});
    }
  };
  struct Config {
    std::optional<OpaqueConfig> opaque;
    Json unknown;
    template <typename V>
    void Visit(V& v) {
      v.Field("opaque", opaque);
      v.Unknown(unknown);
    }
  };

  std::vector<Selector> selectors;
  std::vector<Config> config;
  std::optional<std::string> extended_resource_name;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("selectors", selectors);
    v.Field("config", config);
    v.Field("extendedResourceName", extended_resource_name);
    v.Unknown(unknown);
  }
};

struct DeviceClass {
  SP_API_OBJECT_HEAD(DeviceClass)  // resource.k8s.io/v1, cluster-scoped
  DeviceClassSpec spec;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec, {.required = true});
  }
};
using DeviceClassList = List<DeviceClass>;

// ---- versions -------------------------------------------------------------------------------

// The ResourceInfo of ResourceSlice / DeviceClass in `version` (v1, v1beta2, v1beta1).
ResourceInfo ResourceSliceResourceIn(std::string_view version);
ResourceInfo DeviceClassResourceIn(std::string_view version);

// The JSON of `slice` as served in `version` (apiVersion and kind set). v1beta1 moves every
// device field except `name` under `basic`. Unknown versions: InvalidArgument.
absl::StatusOr<Json> EncodeResourceSliceAs(const ResourceSlice& slice, std::string_view version);
// Decodes a ResourceSlice served in `version` (list items carry no apiVersion, so the caller
// says which) into the v1 type (apiVersion set to resource.k8s.io/v1). Every field error is
// reported with its v1 path (`spec.devices[0].attributes[mtu].int: ...`), as kube-apiserver
// normalizes v1beta1 `basic.` paths; only a non-object `basic` is named as such.
absl::StatusOr<ResourceSlice> DecodeResourceSliceFrom(const Json& object, std::string_view version);
// DeviceClass has one shape in all three versions: only apiVersion differs.
absl::StatusOr<Json> EncodeDeviceClassAs(const DeviceClass& cls, std::string_view version);
absl::StatusOr<DeviceClass> DecodeDeviceClassFrom(const Json& object, std::string_view version);

// ---- validation -----------------------------------------------------------------------------

// kube-apiserver's ValidateResourceSlice (pkg/apis/resource/validation) for the fields modelled
// here, v1 limits: metadata.name (DNS subdomain), spec.driver (DNS subdomain <= 63), spec.pool
// (name, generation >= 0, resourceSliceCount > 0), exactly one node selection field, devices
// (<= 128, unique DNS-label names, attributes + capacity <= 32, QualifiedName keys, exactly
// one value per attribute, string/version <= 64 bytes, semver versions). Errors in check
// order, each with its field path. Empty = valid.
validation::ErrorList ValidateResourceSlice(const ResourceSlice& slice);
// OK, or InvalidArgument with kube-apiserver's message:
// `ResourceSlice.resource.k8s.io "<name>" is invalid: [spec.devices[0]: Invalid value: 33: ...]`.
absl::Status ValidateResourceSliceStatus(const ResourceSlice& slice);

// QualifiedName rules (validateQualifiedName): errors reported at `path`.
validation::ErrorList ValidateQualifiedName(std::string_view name, const std::string& path);

}  // namespace spiderpool::api
