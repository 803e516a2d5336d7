#include "api/admissionregistration.h"

#include "api/core.h"

namespace spiderpool::api {

const ResourceInfo& MutatingWebhookConfiguration::Resource() {
  static const ResourceInfo info{.group = "admissionregistration.k8s.io",
                                      .version = "v1",
                                      .kind = "MutatingWebhookConfiguration",
                                      .plural = "mutatingwebhookconfigurations",
                                      .singular = "mutatingwebhookconfiguration",
                                      .namespaced = false,
                                      .has_status = false,
                                      .short_names = {}};
  return info;
}

const ResourceInfo& ValidatingWebhookConfiguration::Resource() {
  static const ResourceInfo info{.group = "admissionregistration.k8s.io",
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
  ca_bundle = Base64Encode(pem);
}

absl::StatusOr<std::string> WebhookClientConfig::CABundlePEM() const {
  return Base64Decode(ca_bundle);
}

}  // namespace spiderpool::api
