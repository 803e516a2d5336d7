#pragma once
// The built-in resources the loopback server serves from the start, Kubernetes version
// ordering, the field selectors each resource supports, and a small strategic-merge-patch
// approximation for built-in types.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/json.h"
#include "kube/testing/apiserver.h"

namespace spiderpool::kube::testing {

// v1 namespaces, pods, nodes, ..., apps/v1 deployments, ... (see resources.cc).
const std::vector<ResourceInfo>& BuiltinResources();

// Fills defaults: singular = lower(kind), list_kind = kind + "List".
ResourceInfo Normalized(ResourceInfo info);

// Kubernetes version priority (v1 > v1beta2 > v1beta1 > v1alpha1 > "foo"): true if a sorts
// before b.
bool VersionPriorityLess(std::string_view a, std::string_view b);

// Field selector support: true if `field` may be used in a fieldSelector for the resource
// (a custom resource: metadata.name, metadata.namespace and its version's selectableFields).
bool FieldSelectable(const ResourceInfo& info, bool custom,
                     const std::vector<std::string>& selectable, std::string_view field);
// The value of a dotted field path ("spec.nodeName") as a string; nullopt if absent.
std::optional<std::string> FieldValue(const base::Json& object, std::string_view path);

// Strategic merge patch, approximated: like a JSON merge patch, but lists of objects that all
// carry a "name" merge by name (containers, env, volumes, ...), and directives
// ($patch: replace|delete, $setElementOrder/..., $retainKeys, $deleteFromPrimitiveList/...) are
// honoured or dropped. Good enough for kubectl apply/patch on the built-in types we serve.
absl::StatusOr<base::Json> ApplyStrategicMergePatch(const base::Json& target,
                                                    const base::Json& patch);

}  // namespace spiderpool::kube::testing
