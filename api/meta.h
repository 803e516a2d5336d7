#pragma once
// meta.k8s.io/v1 types shared by every object: TypeMeta, ObjectMeta, ListMeta, Status,
// Condition, LabelSelector. Field names follow apimachinery exactly.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/codec.h"
#include "api/resource.h"

namespace spiderpool::api {

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  std::optional<bool> controller;
  std::optional<bool> block_owner_deletion;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version, {.required = true});
    v.Field("kind", kind, {.required = true});
    v.Field("name", name, {.required = true});
    v.Field("uid", uid, {.required = true});
    v.Field("controller", controller);
    v.Field("blockOwnerDeletion", block_owner_deletion);
  }
  friend bool operator==(const OwnerReference&, const OwnerReference&) = default;
};

struct ObjectMeta {
  std::string name;
  std::string generate_name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::optional<Time> creation_timestamp;
  std::optional<Time> deletion_timestamp;
  std::optional<int64_t> deletion_grace_period_seconds;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<OwnerReference> owner_references;
  std::vector<std::string> finalizers;
  Json unknown;  // managedFields, selfLink, ...: kept for read-modify-write
  template <typename V>
  void Visit(V& v) {
    v.Field("name", name);
    v.Field("generateName", generate_name);
    v.Field("namespace", namespace_);
    v.Field("uid", uid);
    v.Field("resourceVersion", resource_version);
    v.Field("generation", generation);
    v.Field("creationTimestamp", creation_timestamp);
    v.Field("deletionTimestamp", deletion_timestamp);
    v.Field("deletionGracePeriodSeconds", deletion_grace_period_seconds);
    v.Field("labels", labels);
    v.Field("annotations", annotations);
    v.Field("ownerReferences", owner_references);
    v.Field("finalizers", finalizers);
    v.Unknown(unknown);
  }

  bool HasFinalizer(std::string_view f) const;
  // Returns true if it changed the list.
  bool AddFinalizer(std::string_view f);
  bool RemoveFinalizer(std::string_view f);
  bool IsDeleting() const { return deletion_timestamp.has_value(); }
  const OwnerReference* ControllerRef() const;
  // "ns/name" or "name" for cluster-scoped objects: the informer cache key.
  std::string Key() const { return namespace_.empty() ? name : namespace_ + "/" + name; }
};

struct ListMeta {
  std::string resource_version;
  std::string continue_;
  std::optional<int64_t> remaining_item_count;
  template <typename V>
  void Visit(V& v) {
    v.Field("resourceVersion", resource_version);
    v.Field("continue", continue_);
    v.Field("remainingItemCount", remaining_item_count);
  }
};

struct StatusCause {
  std::string reason;
  std::string message;
  std::string field;
  template <typename V>
  void Visit(V& v) {
    v.Field("reason", reason);
    v.Field("message", message);
    v.Field("field", field);
  }
};

struct StatusDetails {
  std::string name;
  std::string group;
  std::string kind;
  std::string uid;
  std::vector<StatusCause> causes;
  int32_t retry_after_seconds = 0;
  template <typename V>
  void Visit(V& v) {
    v.Field("name", name);
    v.Field("group", group);
    v.Field("kind", kind);
    v.Field("uid", uid);
    v.Field("causes", causes);
    v.Field("retryAfterSeconds", retry_after_seconds);
  }
};

// The body of every API error ("kind": "Status").
struct Status {
  std::string kind = "Status";
  std::string api_version = "v1";
  ListMeta metadata;
  std::string status;  // "Success" | "Failure"
  std::string message;
  std::string reason;  // "NotFound", "AlreadyExists", "Conflict", "Invalid", ...
  std::optional<StatusDetails> details;
  int32_t code = 0;
  template <typename V>
  void Visit(V& v) {
    v.Field("kind", kind);
    v.Field("apiVersion", api_version);
    v.Field("metadata", metadata, {.required = true});
    v.Field("status", status);
    v.Field("message", message);
    v.Field("reason", reason);
    v.Field("details", details);
    v.Field("code", code);
  }
};

struct Condition {
  std::string type;
  std::string status;  // "True" | "False" | "Unknown"
  int64_t observed_generation = 0;
  Time last_transition_time;
  std::string reason;
  std::string message;
  template <typename V>
  void Visit(V& v) {
    v.Field("type", type, {.required = true});
    v.Field("status", status, {.required = true, .enum_values = {"True", "False", "Unknown"}});
    v.Field("observedGeneration", observed_generation);
    v.Field("lastTransitionTime", last_transition_time, {.required = true});
    // metav1.Condition requires both keys, but an empty message is legal.
    v.Field("reason", reason, {.required = true, .allow_empty = true});
    v.Field("message", message, {.required = true, .allow_empty = true});
  }
  friend bool operator==(const Condition&, const Condition&) = default;
};

// Sets or updates a condition by type; lastTransitionTime changes only when status flips.
// Returns true if anything changed.
bool SetCondition(std::vector<Condition>* conditions, Condition c);
const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type);

struct LabelSelectorRequirement {
  std::string key;
  std::string op;  // "operator": In | NotIn | Exists | DoesNotExist
  std::vector<std::string> values;
  template <typename V>
  void Visit(V& v) {
    v.Field("key", key, {.required = true});
    v.Field("operator", op,
            {.required = true, .enum_values = {"In", "NotIn", "Exists", "DoesNotExist"}});
    v.Field("values", values);
  }
};

struct LabelSelector {
  std::map<std::string, std::string> match_labels;
  std::vector<LabelSelectorRequirement> match_expressions;
  template <typename V>
  void Visit(V& v) {
    v.Field("matchLabels", match_labels);
    v.Field("matchExpressions", match_expressions);
  }
  bool Empty() const { return match_labels.empty() && match_expressions.empty(); }
  // metav1.LabelSelectorAsSelector semantics: an empty selector matches everything.
  bool Matches(const std::map<std::string, std::string>& labels) const;
};

// The common head of every top-level object.
#define SP_API_OBJECT_HEAD(KIND)                                             \
  std::string api_version;                                                  \
  std::string kind;                                                         \
  ::spiderpool::api::ObjectMeta metadata;                                   \
  static const ::spiderpool::api::ResourceInfo& Resource();                 \
  void SetTypeMeta() {                                                      \
    api_version = Resource().ApiVersion();                                  \
    kind = Resource().kind;                                                 \
  }

// Generic list of objects ("kind": "<Kind>List").
template <typename T>
struct List {
  std::string api_version;
  std::string kind;
  ListMeta metadata;
  std::vector<T> items;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata, {.required = true});
    v.Field("items", items);
  }
};

// An object of T's resource as a metadata-only read returns it (kind PartialObjectMetadata,
// apiVersion meta.k8s.io/v1): the metadata and nothing else. kube::Informer<MetadataOnly<T>>
// lists and watches only the metadata (client-go's metadata informer), so a change of a big
// object costs its watchers a few hundred bytes instead of the whole object.
template <typename T>
struct MetadataOnly {
  static constexpr bool kMetadataOnly = true;
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  static const ResourceInfo& Resource() { return T::Resource(); }
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
  }
};

}  // namespace spiderpool::api
