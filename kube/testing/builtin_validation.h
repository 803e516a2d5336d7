#pragma once
// Validation of built-in kinds, as kube-apiserver's registry strategies do it (pkg/apis/*/validation):
// the rules a user or a test of ours would hit when writing Pods, Nodes, Namespaces,
// ConfigMaps, Secrets, Services, Leases, Events, workload kinds, resource.k8s.io kinds and
// webhook configurations (the list is in README.md). NetworkAttachmentDefinitions are custom
// resources (their CRD's schema validates them). Internal to kube/testing.

#include <string_view>
#include <vector>

#include "base/json.h"
#include "kube/testing/errors.h"

namespace spiderpool::kube::testing::internal {

// Field errors of `obj` (a create when `old` is null, else an update of `old`) for the built-in
// resource group/plural; empty when valid or when the resource has no rules here. The caller
// answers 422 Invalid with them (InvalidStatus), after metadata validation. `obj.apiVersion`
// selects the shape where versions differ (resource.k8s.io/v1beta1).
std::vector<FieldError> ValidateBuiltin(std::string_view group, std::string_view plural,
                                        const base::Json& obj, const base::Json* old);

}  // namespace spiderpool::kube::testing::internal
