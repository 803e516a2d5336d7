#include "kube/webhook/admissionregistration.h"

#include "api/core.h"

namespace spiderpool::kube::webhook {

const api::ResourceInfo& MutatingWebhookConfiguration::Resource() {
  static const api::ResourceInfo info{.group = "admissionregistration.k8s.io",
                                      .version = "v1",
                                      .kind = "MutatingWebhookConfiguration",
                                      .plural = "mutatingwebhookconfigurations",
                                      .singular = "mutatingwebhookconfiguration",
                                      .namespaced = false,
                                      .has_status = false,
                                      .short_names = {}};
  return info;
}

const api::ResourceInfo& ValidatingWebhookConfiguration::Resource() {
  static const api::ResourceInfo info{.group = "admissionregistration.k8s.io",
                                      .version = "v1",
                                      .kind = "ValidatingWebhookConfiguration",
                                      .plural = "validatingwebhookconfigurations",
                                      .singular = "validatingwebhookconfiguration",
                                      .namespaced = false,
                                      .has_status = false,
                                      .short_names = {}};
  return info;
}

void WebhookClientConfig::SetCABundlePEM(std::string_view pem) {
  ca_bundle = api::Base64Encode(pem);
}

absl::StatusOr<std::string> WebhookClientConfig::CABundlePEM() const {
  return api::Base64Decode(ca_bundle);
}

}  // namespace spiderpool::kube::webhook
