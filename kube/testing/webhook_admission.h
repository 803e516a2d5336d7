#pragma once
// WebhookAdmission: the loopback API server's default admission plugin. It calls the admission
// webhooks registered in admissionregistration.k8s.io/v1 MutatingWebhookConfiguration and
// ValidatingWebhookConfiguration objects, over HTTPS with an AdmissionReview, the way
// kube-apiserver's MutatingAdmissionWebhook / ValidatingAdmissionWebhook plugins do
// (k8s.io/apiserver/pkg/admission/plugin/webhook):
//
//   * configurations are read from the server itself on every request (no informer lag),
//     sorted by name; webhooks keep their order inside a configuration. Requests on the
//     webhook configuration (and admission policy) objects themselves never call webhooks.
//   * matching: rules[] (operations, apiGroups, apiVersions, resources with "*", "*/*",
//     "pods/status", "*/status" forms, scope), namespaceSelector (the namespace's labels; a
//     Namespace object's own labels on CREATE/UPDATE; never applies to other cluster-scoped
//     objects; 404 when the namespace does not exist), objectSelector (new or old object's
//     labels). matchPolicy Equivalent is treated as Exact (the server has no equivalent
//     resources), matchConditions (CEL) are not evaluated (the webhook is called).
//   * clientConfig.url, or clientConfig.service {namespace, name, path, port (443)}: a service
//     is dialled at the address the ServiceResolver returns, while TLS sends SNI and verifies
//     the certificate for "<name>.<namespace>.svc". Only clientConfig.caBundle is trusted when
//     set (else the system roots); TLS 1.2+, ALPN http/1.1. The request is
//     POST <path>?timeout=<N>s with timeoutSeconds (default 10, clamped to 1..30).
//   * admissionReviewVersions: the first of "v1", "v1beta1" is sent; none -> a call error.
//   * the response must carry response.uid == request.uid (v1 also apiVersion/kind);
//     allowed=false -> the webhook's status with code (< 400 -> 400), reason, details kept and
//     the message `admission webhook "<name>" denied the request: <message>` (errors.ToStatusErr).
//     Mutating webhooks run one after another, JSONPatch patches applied to the object;
//     validating webhooks run in parallel, the first failure in webhook order wins.
//   * a failure to call a webhook (resolution, connection, TLS, timeout, non-2xx, bad response)
//     rejects with 500 InternalError `failed calling webhook "<name>": ...` unless
//     failurePolicy is Ignore. On dryRun requests a webhook whose sideEffects is not
//     None/NoneOnDryRun rejects with 400 `admission webhook "<name>" does not support dry run`
//     (no sideEffects at all is a call error), as kube-apiserver does.
//   * reinvocationPolicy IfNeeded is ignored (no second round).
// Error texts imitate Go's (`Post "https://...": dial tcp 127.0.0.1:1: connect: connection
// refused`, `tls: failed to verify certificate: x509: certificate signed by unknown authority`,
// `x509: certificate is valid for a, not b`, `context deadline exceeded`); rarer ones (TLS
// alerts, malformed HTTP, non-2xx answers without a Status body) are approximations.
// As in kube-apiserver, a CREATE object has no uid/creationTimestamp for mutating webhooks
// and has them for validating ones. request.userInfo carries no `extra`.
//
// The configurations are read as api/admissionregistration.h's types (the ones the controller
// writes); the server validated them when they were written (builtin_validation_admission.cc).
//
// Thread-safety: Mutate/Validate may run concurrently; the plugin holds no locks while calling.

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/admissionregistration.h"
#include "base/json.h"
#include "kube/testing/apiserver.h"
#include "kube/testing/https_client.h"

namespace spiderpool::kube::testing {

// Reads the server's current objects: LoopbackApiServer::ListObjects's signature.
using ObjectLister = std::function<std::vector<base::Json>(
    std::string_view group, std::string_view version, std::string_view plural,
    std::string_view ns)>;

// The annotation on a Service that tells ClusterServiceResolver where to dial ("host:port"),
// for every port: the test-only equivalent of the cluster network routing a ClusterIP.
inline constexpr std::string_view kServiceDialAddressAnnotation =
    "loopback.kube-testing.spiderpool.io/dial-address";

// kube-apiserver's ClusterIP service resolver over the server's own Service objects:
// service not found -> `service "<name>" not found`; the annotation above wins; otherwise
// type ClusterIP (also "" / NodePort / LoadBalancer) dials spec.clusterIP:<port> if the
// service declares that port (`no service port <port> found for service "<name>"`),
// ClusterIP "None" is refused, ExternalName dials spec.externalName:<port>.
ServiceResolver ClusterServiceResolver(ObjectLister lister);

struct WebhookAdmissionOptions {
  ObjectLister lister;                // required
  ServiceResolver service_resolver;   // null = ClusterServiceResolver(lister)
};

class WebhookAdmission : public Admission {
 public:
  explicit WebhookAdmission(WebhookAdmissionOptions options);

  std::optional<ApiStatus> Mutate(const AdmissionAttributes& attrs, base::Json* object) override;
  std::optional<ApiStatus> Validate(const AdmissionAttributes& attrs,
                                    const base::Json& object) override;

  // Webhook HTTP calls attempted so far (mutating + validating).
  uint64_t calls() const { return calls_.load(); }

 private:
  std::optional<ApiStatus> Run(bool mutating, const AdmissionAttributes& attrs,
                               base::Json* object);

  WebhookAdmissionOptions options_;
  std::atomic<uint64_t> calls_{0};
};

// ---- Pieces exposed for unit tests --------------------------------------------------------

// The namespace kube-apiserver puts into admission attributes: the object's namespace, and
// for a Namespace object its own name (except on CREATE).
std::string AdmissionNamespace(const AdmissionAttributes& attrs);

// One entry of webhooks[].rules against the request (rules.Matcher).
bool WebhookRuleMatches(const api::RuleWithOperations& rule, const AdmissionAttributes& attrs);

// True for the admissionregistration.k8s.io kinds that never go through webhooks.
bool IsExemptAdmissionConfigurationResource(const ResourceInfo& resource);

// The AdmissionReview body sent to a webhook. `version` is "v1" or "v1beta1".
base::Json BuildAdmissionReview(const AdmissionAttributes& attrs, const base::Json& object,
                                std::string_view uid, std::string_view version);

// The status a denial (`response.status`, possibly null) turns into (errors.ToStatusErr).
ApiStatus WebhookDeniedStatus(std::string_view webhook_name, const base::Json& status);

}  // namespace spiderpool::kube::testing
