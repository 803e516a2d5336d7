#pragma once
// Kubernetes built-in kinds the project reads and writes: core/v1 Pod, Node, Namespace, Event,
// ConfigMap, Secret; coordination.k8s.io/v1 Lease; events.k8s.io/v1 Event. Field names follow
// k8s.io/api exactly. We model only the fields we use; every struct whose upstream type has more
// fields keeps the rest with `v.Unknown(unknown)`, so a read-modify-write (decode, change,
// encode, PUT) loses nothing.
//
// Go pointers (`*int64`, `*Time`, ...) are std::optional here; Go value fields tagged
// `omitempty` are plain members (zero = absent).

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

namespace spiderpool::api {

// ---- kinds known by their resource alone ---------------------------------------------------
// Built-in kinds no code here decodes: their ResourceInfo only (the loopback API server serves
// them, tests create them as JSON).
const ResourceInfo& ServiceResource();                   // v1 services (svc)
const ResourceInfo& ServiceAccountResource();            // v1 serviceaccounts (sa)
const ResourceInfo& EndpointsResource();                 // v1 endpoints (ep)
const ResourceInfo& CustomResourceDefinitionResource();  // apiextensions.k8s.io/v1 (crd, crds)

// ---- Pod ----------------------------------------------------------------------------------

inline constexpr std::string_view kPodPending = "Pending";
inline constexpr std::string_view kPodRunning = "Running";
inline constexpr std::string_view kPodSucceeded = "Succeeded";
inline constexpr std::string_view kPodFailed = "Failed";
inline constexpr std::string_view kPodUnknown = "Unknown";

inline constexpr std::string_view kRestartPolicyAlways = "Always";
inline constexpr std::string_view kRestartPolicyOnFailure = "OnFailure";
inline constexpr std::string_view kRestartPolicyNever = "Never";

struct EnvVar {
  std::string name;
  std::string value;
  Json value_from;  // valueFrom (secretKeyRef, fieldRef, ...), kept raw
  template <typename V>
  void Visit(V& v) {
    v.Field("name", name, {.required = true});
    v.Field("value", value);
    v.Field("valueFrom", value_from);
  }
};

// resources.claims[]: a container's use of a pod-level resource claim (DRA).
struct ResourceClaim {
  std::string name;
  std::string request;
  template <typename V>
  void Visit(V& v) {
    v.Field("name", name, {.required = true});
    v.Field("request", request);
  }
};

struct ResourceRequirements {
  // Quantities in their canonical string form ("100m", "1Gi", "1").
  std::map<std::string, std::string> limits;
  std::map<std::string, std::string> requests;
  std::vector<ResourceClaim> claims;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("limits", limits);
    v.Field("requests", requests);
    v.Field("claims", claims);
    v.Unknown(unknown);
  }
};

struct Container {
  std::string name;
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<EnvVar> env;
  ResourceRequirements resources;
  Json unknown;  // ports, volumeMounts, probes, securityContext, ...
  template <typename V>
  void Visit(V& v) {
    v.Field("name", name, {.required = true});
    v.Field("image", image);
    v.Field("command", command);
    v.Field("args", args);
    v.Field("env", env);
    v.Field("resources", resources);
    v.Unknown(unknown);
  }
};

// spec.resourceClaims[] (k8s >= 1.31 form; the older `source` object is kept in `unknown`).
struct PodResourceClaim {
  std::string name;
  std::optional<std::string> resource_claim_name;
  std::optional<std::string> resource_claim_template_name;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("name", name, {.required = true});
    v.Field("resourceClaimName", resource_claim_name);
    v.Field("resourceClaimTemplateName", resource_claim_template_name);
    v.Unknown(unknown);
  }
};

struct PodSpec {
  std::string node_name;
  std::vector<Container> containers;
  std::vector<Container> init_containers;
  std::string restart_policy;
  std::optional<int64_t> termination_grace_period_seconds;
  bool host_network = false;
  std::string service_account_name;
  std::vector<PodResourceClaim> resource_claims;
  Json unknown;  // volumes, affinity, tolerations, ...
  template <typename V>
  void Visit(V& v) {
    v.Field("nodeName", node_name);
    v.Field("containers", containers);
    v.Field("initContainers", init_containers);
    v.Field("restartPolicy", restart_policy);
    v.Field("terminationGracePeriodSeconds", termination_grace_period_seconds);
    v.Field("hostNetwork", host_network);
    v.Field("serviceAccountName", service_account_name);
    v.Field("resourceClaims", resource_claims);
    v.Unknown(unknown);
  }
};

struct PodIP {
  std::string ip;
  template <typename V>
  void Visit(V& v) {
    v.Field("ip", ip, {.required = true});
  }
};

struct PodCondition {
  std::string type;
  std::string status;
  int64_t observed_generation = 0;
  std::optional<Time> last_probe_time;
  std::optional<Time> last_transition_time;
  std::string reason;
  std::string message;
  template <typename V>
  void Visit(V& v) {
    v.Field("type", type, {.required = true});
    v.Field("status", status, {.required = true});
    v.Field("observedGeneration", observed_generation);
    v.Field("lastProbeTime", last_probe_time);
    v.Field("lastTransitionTime", last_transition_time);
    v.Field("reason", reason);
    v.Field("message", message);
  }
};

struct ContainerStatus {
  std::string name;
  bool ready = false;        // Go writes it always
  int32_t restart_count = 0;  // Go writes it always
  std::string image;
  std::string image_id;
  std::string container_id;
  std::optional<bool> started;
  Json unknown;  // state, lastState, resources, ...
  template <typename V>
  void Visit(V& v) {
    v.Field("name", name, {.required = true});
    v.Field("ready", ready, {.required = true});
    v.Field("restartCount", restart_count, {.required = true});
    v.Field("image", image);
    v.Field("imageID", image_id);
    v.Field("containerID", container_id);
    v.Field("started", started);
    v.Unknown(unknown);
  }
};

struct PodStatus {
  std::string phase;
  std::vector<PodCondition> conditions;
  std::string message;
  std::string reason;
  std::string host_ip;
  std::string pod_ip;
  std::vector<PodIP> pod_ips;
  std::optional<Time> start_time;
  std::vector<ContainerStatus> init_container_statuses;
  std::vector<ContainerStatus> container_statuses;
  Json unknown;  // hostIPs, qosClass, resourceClaimStatuses, ...
  template <typename V>
  void Visit(V& v) {
    v.Field("phase", phase);
    v.Field("conditions", conditions);
    v.Field("message", message);
    v.Field("reason", reason);
    v.Field("hostIP", host_ip);
    v.Field("podIP", pod_ip);
    v.Field("podIPs", pod_ips);
    v.Field("startTime", start_time);
    v.Field("initContainerStatuses", init_container_statuses);
    v.Field("containerStatuses", container_statuses);
    v.Unknown(unknown);
  }
};

struct Pod {
  SP_API_OBJECT_HEAD(Pod)
  PodSpec spec;
  PodStatus status;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec);
    v.Field("status", status);
    v.Unknown(unknown);
  }
};

// Spiderpool's "is this pod still using its IPs" rule (reference §2.1). Not alive when: it has a
// deletionTimestamp; it Succeeded with restartPolicy != Always; it Failed with restartPolicy
// Never; or it Failed with reason Evicted.
bool PodIsAlive(const Pod& pod);
// status.podIPs[].ip, falling back to status.podIP.
std::vector<std::string> PodIPs(const Pod& pod);

// ---- Node ---------------------------------------------------------------------------------

struct Taint {
  std::string key;
  std::string value;
  std::string effect;
  std::optional<Time> time_added;
  template <typename V>
  void Visit(V& v) {
    v.Field("key", key, {.required = true});
    v.Field("value", value);
    v.Field("effect", effect,
            {.required = true, .enum_values = {"NoSchedule", "PreferNoSchedule", "NoExecute"}});
    v.Field("timeAdded", time_added);
  }
};

struct NodeSpec {
  std::string pod_cidr;
  std::vector<std::string> pod_cidrs;
  std::string provider_id;
  bool unschedulable = false;
  std::vector<Taint> taints;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("podCIDR", pod_cidr);
    v.Field("podCIDRs", pod_cidrs);
    v.Field("providerID", provider_id);
    v.Field("unschedulable", unschedulable);
    v.Field("taints", taints);
    v.Unknown(unknown);
  }
};

struct NodeAddress {
  std::string type;  // InternalIP | ExternalIP | Hostname | InternalDNS | ExternalDNS
  std::string address;
  template <typename V>
  void Visit(V& v) {
    v.Field("type", type, {.required = true});
    v.Field("address", address, {.required = true});
  }
};

struct NodeCondition {
  std::string type;
  std::string status;
  std::optional<Time> last_heartbeat_time;
  std::optional<Time> last_transition_time;
  std::string reason;
  std::string message;
  template <typename V>
  void Visit(V& v) {
    v.Field("type", type, {.required = true});
    v.Field("status", status, {.required = true});
    v.Field("lastHeartbeatTime", last_heartbeat_time);
    v.Field("lastTransitionTime", last_transition_time);
    v.Field("reason", reason);
    v.Field("message", message);
  }
};

struct NodeSystemInfo {
  std::string machine_id;
  std::string system_uuid;
  std::string boot_id;
  std::string kernel_version;
  std::string os_image;
  std::string container_runtime_version;
  std::string kubelet_version;
  std::string kube_proxy_version;
  std::string operating_system;
  std::string architecture;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("machineID", machine_id);
    v.Field("systemUUID", system_uuid);
    v.Field("bootID", boot_id);
    v.Field("kernelVersion", kernel_version);
    v.Field("osImage", os_image);
    v.Field("containerRuntimeVersion", container_runtime_version);
    v.Field("kubeletVersion", kubelet_version);
    v.Field("kubeProxyVersion", kube_proxy_version);
    v.Field("operatingSystem", operating_system);
    v.Field("architecture", architecture);
    v.Unknown(unknown);
  }
};

struct NodeStatus {
  std::map<std::string, std::string> capacity;
  std::map<std::string, std::string> allocatable;
  std::vector<NodeCondition> conditions;
  std::vector<NodeAddress> addresses;
  NodeSystemInfo node_info;
  Json unknown;  // daemonEndpoints, images, volumesAttached, ...
  template <typename V>
  void Visit(V& v) {
    v.Field("capacity", capacity);
    v.Field("allocatable", allocatable);
    v.Field("conditions", conditions);
    v.Field("addresses", addresses);
    v.Field("nodeInfo", node_info);
    v.Unknown(unknown);
  }
};

struct Node {
  SP_API_OBJECT_HEAD(Node)
  NodeSpec spec;
  NodeStatus status;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec);
    v.Field("status", status);
    v.Unknown(unknown);
  }
};

// True iff the node has condition Ready=True.
bool NodeIsReady(const Node& node);
// The first address of `type` ("InternalIP"), or "".
std::string NodeAddressOf(const Node& node, std::string_view type);

// ---- Namespace ----------------------------------------------------------------------------

struct NamespaceSpec {
  std::vector<std::string> finalizers;
  template <typename V>
  void Visit(V& v) {
    v.Field("finalizers", finalizers);
  }
};

struct NamespaceStatus {
  std::string phase;  // Active | Terminating
  Json unknown;       // conditions
  template <typename V>
  void Visit(V& v) {
    v.Field("phase", phase);
    v.Unknown(unknown);
  }
};

struct Namespace {
  SP_API_OBJECT_HEAD(Namespace)
  NamespaceSpec spec;
  NamespaceStatus status;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec);
    v.Field("status", status);
    v.Unknown(unknown);
  }
};

// ---- Lease (coordination.k8s.io/v1) -------------------------------------------------------

struct LeaseSpec {
  std::optional<std::string> holder_identity;
  std::optional<int32_t> lease_duration_seconds;
  std::optional<MicroTime> acquire_time;
  std::optional<MicroTime> renew_time;
  std::optional<int32_t> lease_transitions;
  std::optional<std::string> strategy;
  std::optional<std::string> preferred_holder;
  template <typename V>
  void Visit(V& v) {
    v.Field("holderIdentity", holder_identity);
    v.Field("leaseDurationSeconds", lease_duration_seconds);
    v.Field("acquireTime", acquire_time);
    v.Field("renewTime", renew_time);
    v.Field("leaseTransitions", lease_transitions);
    v.Field("strategy", strategy);
    v.Field("preferredHolder", preferred_holder);
  }
};

struct Lease {
  SP_API_OBJECT_HEAD(Lease)
  LeaseSpec spec;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec);
  }
};

// ---- Event (core/v1) ----------------------------------------------------------------------

struct ObjectReference {
  std::string kind;
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string api_version;
  std::string resource_version;
  std::string field_path;
  template <typename V>
  void Visit(V& v) {
    v.Field("kind", kind);
    v.Field("namespace", namespace_);
    v.Field("name", name);
    v.Field("uid", uid);
    v.Field("apiVersion", api_version);
    v.Field("resourceVersion", resource_version);
    v.Field("fieldPath", field_path);
  }
};

// A reference to `obj` (kind/apiVersion from its Resource(), not from its TypeMeta).
template <ApiObject T>
ObjectReference MakeObjectReference(const T& obj) {
  return ObjectReference{.kind = T::Resource().kind,
                         .namespace_ = obj.metadata.namespace_,
                         .name = obj.metadata.name,
                         .uid = obj.metadata.uid,
                         .api_version = T::Resource().ApiVersion(),
                         .resource_version = obj.metadata.resource_version};
}

struct EventSource {
  std::string component;
  std::string host;
  template <typename V>
  void Visit(V& v) {
    v.Field("component", component);
    v.Field("host", host);
  }
};

struct EventSeries {
  int32_t count = 0;
  MicroTime last_observed_time;
  template <typename V>
  void Visit(V& v) {
    v.Field("count", count);
    v.Field("lastObservedTime", last_observed_time, {.required = true});
  }
};

inline constexpr std::string_view kEventTypeNormal = "Normal";
inline constexpr std::string_view kEventTypeWarning = "Warning";

struct Event {
  SP_API_OBJECT_HEAD(Event)
  ObjectReference involved_object;
  std::string reason;
  std::string message;
  EventSource source;
  std::optional<Time> first_timestamp;
  std::optional<Time> last_timestamp;
  int32_t count = 0;
  std::string type;  // Normal | Warning
  std::optional<MicroTime> event_time;
  std::optional<EventSeries> series;
  std::string action;
  std::optional<ObjectReference> related;
  std::string reporting_component;
  std::string reporting_instance;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("involvedObject", involved_object, {.required = true});
    v.Field("reason", reason);
    v.Field("message", message);
    v.Field("source", source);
    v.Field("firstTimestamp", first_timestamp);
    v.Field("lastTimestamp", last_timestamp);
    v.Field("count", count);
    v.Field("type", type);
    v.Field("eventTime", event_time);
    v.Field("series", series);
    v.Field("action", action);
    v.Field("related", related);
    v.Field("reportingComponent", reporting_component);
    v.Field("reportingInstance", reporting_instance);
  }
};

// ---- Event (events.k8s.io/v1) -------------------------------------------------------------

namespace events_v1 {

struct Event {
  SP_API_OBJECT_HEAD(Event)
  MicroTime event_time;
  std::optional<EventSeries> series;
  std::string reporting_controller;
  std::string reporting_instance;
  std::string action;
  std::string reason;
  ObjectReference regarding;
  std::optional<ObjectReference> related;
  std::string note;
  std::string type;
  EventSource deprecated_source;
  std::optional<Time> deprecated_first_timestamp;
  std::optional<Time> deprecated_last_timestamp;
  int32_t deprecated_count = 0;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("eventTime", event_time, {.required = true});
    v.Field("series", series);
    v.Field("reportingController", reporting_controller);
    v.Field("reportingInstance", reporting_instance);
    v.Field("action", action);
    v.Field("reason", reason);
    v.Field("regarding", regarding);
    v.Field("related", related);
    v.Field("note", note);
    v.Field("type", type);
    v.Field("deprecatedSource", deprecated_source);
    v.Field("deprecatedFirstTimestamp", deprecated_first_timestamp);
    v.Field("deprecatedLastTimestamp", deprecated_last_timestamp);
    v.Field("deprecatedCount", deprecated_count);
  }
};

}  // namespace events_v1

// ---- ConfigMap, Secret --------------------------------------------------------------------

struct ConfigMap {
  SP_API_OBJECT_HEAD(ConfigMap)
  std::optional<bool> immutable;
  std::map<std::string, std::string> data;
  std::map<std::string, std::string> binary_data;  // base64
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("immutable", immutable);
    v.Field("data", data);
    v.Field("binaryData", binary_data);
  }
};

struct Secret {
  SP_API_OBJECT_HEAD(Secret)
  std::optional<bool> immutable;
  std::map<std::string, std::string> data;         // values base64-encoded, as on the wire
  std::map<std::string, std::string> string_data;  // write-only convenience field
  std::string type;                                // Opaque | kubernetes.io/tls | ...
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("immutable", immutable);
    v.Field("data", data);
    v.Field("stringData", string_data);
    v.Field("type", type);
  }

  // The decoded bytes of data[key] (stringData[key] wins, as the API server merges it).
  // NotFound if absent, InvalidArgument if data[key] is not valid base64.
  absl::StatusOr<std::string> Get(std::string_view key) const;
  // Stores base64(bytes) under data[key].
  void Set(std::string_view key, std::string_view bytes);
};

// Standard base64 (with padding), as Kubernetes encodes []byte.
std::string Base64Encode(std::string_view bytes);
absl::StatusOr<std::string> Base64Decode(std::string_view text);

// ---- OwnerReference helpers ---------------------------------------------------------------

// An ownerReference to `owner` (kind/apiVersion from its Resource()).
template <ApiObject T>
OwnerReference MakeOwnerReference(const T& owner, bool controller = true,
                                  bool block_owner_deletion = true) {
  return OwnerReference{.api_version = T::Resource().ApiVersion(),
                        .kind = T::Resource().kind,
                        .name = owner.metadata.name,
                        .uid = owner.metadata.uid,
                        .controller = controller,
                        .block_owner_deletion = block_owner_deletion};
}

// True if `meta` has an ownerReference with that uid.
bool IsOwnedBy(const ObjectMeta& meta, std::string_view owner_uid);
// True if `meta`'s controller ownerReference has that uid.
bool IsControlledBy(const ObjectMeta& meta, std::string_view owner_uid);
// Adds `ref` (or replaces the reference with the same uid). Fails with AlreadyExists if `ref` is
// a controller reference and another controller already owns the object (controller-runtime's
// SetControllerReference rule).
absl::Status SetOwnerReference(ObjectMeta* meta, OwnerReference ref);
// Removes references with that uid; returns true if anything was removed.
bool RemoveOwnerReference(ObjectMeta* meta, std::string_view owner_uid);

}  // namespace spiderpool::api
