#pragma once
// Spiderpool's admission webhooks as upstream registers them (reference
// docs/reference/spiderpool.md §5, chart templates/tls.yaml): paths, webhook names, rules, and
// the MutatingWebhookConfiguration / ValidatingWebhookConfiguration objects. The chart, the
// tests and the controller (caBundle patching) all use these definitions.
//
//   path   /mutate-spiderpool-spidernet-io-v2beta1-<kind>, /validate-...-<kind>
//          (controller-runtime's pattern; <kind> = spiderippool, spidersubnet, ...)
//   name   <kind>.spiderpool.spidernet.io, in configurations named spiderpool-controller
//   every  failurePolicy Fail, sideEffects None, admissionReviewVersions [v1], service
//          <spiderpool-controller>.<ns>:5722
//   mutating   CREATE, UPDATE: spidersubnets, spidermultusconfigs (enable_multus_config),
//              spiderippools, spiderreservedips, spidercoordinators (enable_coordinator)
//   validating spidersubnets, spiderippools: CREATE, UPDATE, DELETE (DELETE is answered only
//              with enableValidatingResourcesDeletedWebhook); spiderreservedips,
//              spidercoordinators (enable_coordinator), spidermultusconfigs
//              (enable_multus_config): CREATE, UPDATE
//   spiderclaimparameters (enable_claim_parameter, off by default: upstream removed the kind
//              in Jan 2025; this project's DRA side may turn it on): validating CREATE, UPDATE.
//   pods (enable_pod_resource_inject, podResourceInject.enabled): mutating CREATE at
//              /mutate--v1-pod, named pod.spiderpool.spidernet.io, last in the mutating list,
//              failurePolicy Fail (as every upstream webhook), with a namespaceSelector on
//              kubernetes.io/metadata.name: NotIn namespacesExclude, In namespacesInclude (if any).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/admissionregistration.h"

namespace spiderpool::op::webhook {

inline constexpr std::string_view kConfigurationName = "spiderpool-controller";
inline constexpr std::string_view kServiceName = "spiderpool-controller";
inline constexpr std::string_view kTLSSecretName = "spiderpool-controller-server-certs";
inline constexpr int kWebhookPort = 5722;
inline constexpr std::string_view kGroup = "spiderpool.spidernet.io";
inline constexpr std::string_view kVersion = "v2beta1";

enum class Kind {
  kIPPool,
  kSubnet,
  kReservedIP,
  kCoordinator,
  kMultusConfig,
  kClaimParameter,
};

// "spiderippool", "spidersubnet", ... (strings.ToLower of the Kind, as controller-runtime).
std::string_view KindLower(Kind kind);
std::string_view KindName(Kind kind);  // "SpiderIPPool"
std::string_view Plural(Kind kind);    // "spiderippools"
std::string MutatePath(Kind kind);     // "/mutate-spiderpool-spidernet-io-v2beta1-spiderippool"
std::string ValidatePath(Kind kind);   // "/validate-spiderpool-spidernet-io-v2beta1-spiderippool"
std::string WebhookName(Kind kind);    // "spiderippool.spiderpool.spidernet.io"

struct ConfigurationOptions {
  std::string name = std::string(kConfigurationName);  // both configurations
  std::string service_name = std::string(kServiceName);
  std::string service_namespace = "kube-system";
  int32_t port = kWebhookPort;
  std::string ca_bundle_pem;  // "" = none yet (patched at runtime by kube::webhook::CertManager)
  bool enable_multus_config = true;     // multus.enableMultusConfig
  bool enable_coordinator = true;       // coordinator.enabled
  bool enable_claim_parameter = false;  // SpiderClaimParameter (see above)
  // podResourceInject: the Pod webhook and its namespaces (upstream's chart defaults).
  bool enable_pod_resource_inject = false;
  std::vector<std::string> pod_namespaces_exclude = {"kube-system", "spiderpool",
                                                     "metallb-system", "istio-system"};
  std::vector<std::string> pod_namespaces_include;
};

inline constexpr std::string_view kPodWebhookName = "pod.spiderpool.spidernet.io";
inline constexpr std::string_view kNamespaceNameLabel = "kubernetes.io/metadata.name";

// The kinds with a mutating / validating webhook under `options`, in upstream's order.
std::vector<Kind> MutatingKinds(const ConfigurationOptions& options);
std::vector<Kind> ValidatingKinds(const ConfigurationOptions& options);

api::MutatingWebhookConfiguration MutatingConfiguration(
    const ConfigurationOptions& options);
api::ValidatingWebhookConfiguration ValidatingConfiguration(
    const ConfigurationOptions& options);

}  // namespace spiderpool::op::webhook
