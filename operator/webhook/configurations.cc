#include "operator/webhook/configurations.h"

#include "base/strings.h"

namespace spiderpool::op::webhook {

using base::StrCat;

std::string_view KindLower(Kind kind) {
  switch (kind) {
    case Kind::kIPPool: return "spiderippool";
    case Kind::kSubnet: return "spidersubnet";
    case Kind::kReservedIP: return "spiderreservedip";
    case Kind::kCoordinator: return "spidercoordinator";
    case Kind::kMultusConfig: return "spidermultusconfig";
    case Kind::kClaimParameter: return "spiderclaimparameter";
  }
  return "";
}

std::string_view KindName(Kind kind) {
  switch (kind) {
    case Kind::kIPPool: return "SpiderIPPool";
    case Kind::kSubnet: return "SpiderSubnet";
    case Kind::kReservedIP: return "SpiderReservedIP";
    case Kind::kCoordinator: return "SpiderCoordinator";
    case Kind::kMultusConfig: return "SpiderMultusConfig";
    case Kind::kClaimParameter: return "SpiderClaimParameter";
  }
  return "";
}

std::string_view Plural(Kind kind) {
  switch (kind) {
    case Kind::kIPPool: return "spiderippools";
    case Kind::kSubnet: return "spidersubnets";
    case Kind::kReservedIP: return "spiderreservedips";
    case Kind::kCoordinator: return "spidercoordinators";
    case Kind::kMultusConfig: return "spidermultusconfigs";
    case Kind::kClaimParameter: return "spiderclaimparameters";
  }
  return "";
}

std::string MutatePath(Kind kind) {
  return StrCat("/mutate-spiderpool-spidernet-io-", kVersion, "-", KindLower(kind));
}

std::string ValidatePath(Kind kind) {
  return StrCat("/validate-spiderpool-spidernet-io-", kVersion, "-", KindLower(kind));
}

std::string WebhookName(Kind kind) { return StrCat(KindLower(kind), ".", kGroup); }

std::vector<Kind> MutatingKinds(const ConfigurationOptions& o) {
  std::vector<Kind> out = {Kind::kSubnet};
  if (o.enable_multus_config) out.push_back(Kind::kMultusConfig);
  out.push_back(Kind::kIPPool);
  out.push_back(Kind::kReservedIP);
  if (o.enable_coordinator) out.push_back(Kind::kCoordinator);
  return out;
}

std::vector<Kind> ValidatingKinds(const ConfigurationOptions& o) {
  std::vector<Kind> out = {Kind::kSubnet, Kind::kIPPool, Kind::kReservedIP};
  if (o.enable_coordinator) out.push_back(Kind::kCoordinator);
  if (o.enable_multus_config) out.push_back(Kind::kMultusConfig);
  if (o.enable_claim_parameter) out.push_back(Kind::kClaimParameter);
  return out;
}

namespace {

template <typename W>
W MakeWebhook(const ConfigurationOptions& o, Kind kind, std::string path,
              std::vector<std::string> operations) {
  W w;
  w.name = WebhookName(kind);
  w.admission_review_versions = {"v1"};
  w.client_config.service = api::ServiceReference{.namespace_ = o.service_namespace,
                                                 .name = o.service_name,
                                                 .path = std::move(path),
                                                 .port = o.port};
  if (!o.ca_bundle_pem.empty()) w.client_config.SetCABundlePEM(o.ca_bundle_pem);
  w.failure_policy = std::string(api::kFailurePolicyFail);
  w.rules = {api::RuleWithOperations{.operations = std::move(operations),
                                    .api_groups = {std::string(kGroup)},
                                    .api_versions = {std::string(kVersion)},
                                    .resources = {std::string(Plural(kind))}}};
  w.side_effects = std::string(api::kSideEffectsNone);
  return w;
}

}  // namespace

api::MutatingWebhookConfiguration MutatingConfiguration(const ConfigurationOptions& o) {
  api::MutatingWebhookConfiguration c;
  c.SetTypeMeta();
  c.metadata.name = o.name;
  for (Kind k : MutatingKinds(o)) {
    c.webhooks.push_back(
        MakeWebhook<api::MutatingWebhook>(o, k, MutatePath(k), {"CREATE", "UPDATE"}));
  }
  if (o.enable_pod_resource_inject) {
    api::MutatingWebhook w = MakeWebhook<api::MutatingWebhook>(o, Kind::kIPPool, "/mutate--v1-pod",
                                                             {"CREATE"});
    w.name = std::string(kPodWebhookName);
    w.rules = {api::RuleWithOperations{.operations = {"CREATE"},
                                      .api_groups = {""},
                                      .api_versions = {"v1"},
                                      .resources = {"pods"}}};
    api::LabelSelector sel;
    if (!o.pod_namespaces_exclude.empty()) {
      sel.match_expressions.push_back({.key = std::string(kNamespaceNameLabel),
                                       .op = "NotIn",
                                       .values = o.pod_namespaces_exclude});
    }
    if (!o.pod_namespaces_include.empty()) {
      sel.match_expressions.push_back({.key = std::string(kNamespaceNameLabel),
                                       .op = "In",
                                       .values = o.pod_namespaces_include});
    }
    if (!sel.Empty()) w.namespace_selector = std::move(sel);
    c.webhooks.push_back(std::move(w));
  }
  return c;
}

api::ValidatingWebhookConfiguration ValidatingConfiguration(const ConfigurationOptions& o) {
  api::ValidatingWebhookConfiguration c;
  c.SetTypeMeta();
  c.metadata.name = o.name;
  for (Kind k : ValidatingKinds(o)) {
    std::vector<std::string> ops = {"CREATE", "UPDATE"};
    if (k == Kind::kIPPool || k == Kind::kSubnet) ops.push_back("DELETE");
    c.webhooks.push_back(MakeWebhook<api::ValidatingWebhook>(o, k, ValidatePath(k), ops));
  }
  return c;
}

}  // namespace spiderpool::op::webhook
