#pragma once
// admissionregistration.k8s.io/v1 MutatingWebhookConfiguration and
// ValidatingWebhookConfiguration: the objects that tell kube-apiserver which webhooks to call.
// The ONE model of them: the operator writes them (operator/webhook, operator/dra), kube/webhook
// patches their caBundle, and the loopback API server's admission chain (kube/testing) reads
// them to call the webhooks.
// Field names follow k8s.io/api/admissionregistration/v1; what is not modelled (matchConditions,
// future fields) is kept in `unknown` so a read-modify-write (the caBundle patch) loses nothing.
//
// clientConfig.caBundle is []byte in Go, i.e. base64 text on the wire: `ca_bundle` holds that
// text; use SetCABundlePEM / CABundlePEM for the PEM.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "api/codec.h"
#include "api/meta.h"

namespace spiderpool::api {

inline constexpr std::string_view kFailurePolicyFail = "Fail";
inline constexpr std::string_view kFailurePolicyIgnore = "Ignore";
inline constexpr std::string_view kSideEffectsNone = "None";
inline constexpr std::string_view kSideEffectsNoneOnDryRun = "NoneOnDryRun";

struct ServiceReference {
  std::string namespace_;
  std::string name;
  std::optional<std::string> path;
  std::optional<int32_t> port;  // default 443
  template <typename V>
  void Visit(V& v) {
    v.Field("namespace", namespace_, {.required = true});
    v.Field("name", name, {.required = true});
    v.Field("path", path);
    v.Field("port", port, {.minimum = 1, .maximum = 65535});
  }
};

struct WebhookClientConfig {
  std::optional<std::string> url;
  std::optional<ServiceReference> service;
  std::string ca_bundle;  // base64 of the PEM bundle, as on the wire
  template <typename V>
  void Visit(V& v) {
    v.Field("url", url);
    v.Field("service", service);
    v.Field("caBundle", ca_bundle);
  }
  void SetCABundlePEM(std::string_view pem);
  // The decoded bundle; InvalidArgument if ca_bundle is not base64.
  absl::StatusOr<std::string> CABundlePEM() const;
};

struct RuleWithOperations {
  std::vector<std::string> operations;  // CREATE | UPDATE | DELETE | CONNECT | *
  std::vector<std::string> api_groups;
  std::vector<std::string> api_versions;
  std::vector<std::string> resources;
  std::optional<std::string> scope;  // Cluster | Namespaced | * (default)
  template <typename V>
  void Visit(V& v) {
    v.Field("operations", operations);
    v.Field("apiGroups", api_groups);
    v.Field("apiVersions", api_versions);
    v.Field("resources", resources);
    v.Field("scope", scope, {.enum_values = {"Cluster", "Namespaced", "*"}});
  }
  friend bool operator==(const RuleWithOperations&, const RuleWithOperations&) = default;
};

// The fields MutatingWebhook and ValidatingWebhook share.
struct WebhookCommon {
  std::string name;  // "<kind>.spiderpool.spidernet.io"
  WebhookClientConfig client_config;
  std::vector<RuleWithOperations> rules;
  std::optional<std::string> failure_policy;  // Fail (default) | Ignore
  std::optional<std::string> match_policy;    // Equivalent (default) | Exact
  std::optional<LabelSelector> namespace_selector;
  std::optional<LabelSelector> object_selector;
  std::string side_effects;  // required in v1: None | NoneOnDryRun
  std::optional<int32_t> timeout_seconds;
  std::vector<std::string> admission_review_versions;  // required in v1
  // The shared fields, in upstream's order (encoding writes them in this order).
  template <typename V>
  void VisitCommon(V& v) {
    v.Field("name", name, {.required = true});
    v.Field("clientConfig", client_config, {.required = true});
    v.Field("rules", rules);
    v.Field("failurePolicy", failure_policy, {.enum_values = {"Fail", "Ignore"}});
    v.Field("matchPolicy", match_policy, {.enum_values = {"Exact", "Equivalent"}});
    v.Field("namespaceSelector", namespace_selector);
    v.Field("objectSelector", object_selector);
    v.Field("sideEffects", side_effects,
            {.required = true, .enum_values = {"None", "NoneOnDryRun", "Some", "Unknown"}});
    v.Field("timeoutSeconds", timeout_seconds, {.minimum = 1, .maximum = 30});
    v.Field("admissionReviewVersions", admission_review_versions, {.required = true});
  }
};

struct MutatingWebhook : WebhookCommon {
  std::optional<std::string> reinvocation_policy;  // Never (default) | IfNeeded
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    VisitCommon(v);
    v.Field("reinvocationPolicy", reinvocation_policy, {.enum_values = {"Never", "IfNeeded"}});
    v.Unknown(unknown);
  }
};

struct ValidatingWebhook : WebhookCommon {
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    VisitCommon(v);
    v.Unknown(unknown);
  }
};

struct MutatingWebhookConfiguration {
  SP_API_OBJECT_HEAD(MutatingWebhookConfiguration)
  std::vector<MutatingWebhook> webhooks;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("webhooks", webhooks);
    v.Unknown(unknown);
  }
};

struct ValidatingWebhookConfiguration {
  SP_API_OBJECT_HEAD(ValidatingWebhookConfiguration)
  std::vector<ValidatingWebhook> webhooks;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("webhooks", webhooks);
    v.Unknown(unknown);
  }
};

}  // namespace spiderpool::api
