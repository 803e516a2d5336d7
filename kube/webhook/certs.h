#pragma once
// Serving certificates of an admission webhook, managed in-cluster: a CA and a serving
// certificate for the webhook Service's DNS names, kept in a Secret (kubernetes.io/tls keys
// tls.crt / tls.key plus ca.crt, like upstream Spiderpool's `spiderpool-controller-server-certs`)
// and trusted by kube-apiserver through clientConfig.caBundle of the webhook configurations.
//
//   webhook::CertManager certs(rest, {.cert = {.service_name = "spiderpool-controller",
//                                              .service_namespace = "kube-system",
//                                              .secret_name = "spiderpool-controller-server-certs",
//                                              .secret_namespace = "kube-system"},
//                                     .mutating_configurations = {"spiderpool-controller"},
//                                     .validating_configurations = {"spiderpool-controller"}});
//   SP_RETURN_IF_ERROR(certs.Sync().status());      // Secret ensured, caBundle patched
//   AdmissionServer server({.cert_provider = certs.Provider()});
//   std::jthread t([&](std::stop_token s) { certs.Run(s); });  // re-checks periodically
//
// Rotation: when the stored certificate is unusable or expires within renew_before, a new CA
// and certificate are generated (the CA key is never stored, as with Helm's genCA). ca.crt then
// holds the new CA FIRST followed by the previous CAs that are still valid, and the caBundle is
// patched with that bundle BEFORE the new certificate is served, so kube-apiserver trusts both
// while replicas switch over. Several replicas converge through the Secret's resourceVersion
// (a lost create/update race re-reads the winner's bundle).

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/certs.h"
#include "base/clock.h"
#include "kube/rest/rest_client.h"
#include "kube/webhook/server.h"

namespace spiderpool::kube::webhook {

inline constexpr std::string_view kTLSCertKey = "tls.crt";
inline constexpr std::string_view kTLSPrivateKeyKey = "tls.key";
inline constexpr std::string_view kCACertKey = "ca.crt";
inline constexpr std::string_view kSecretTypeTLS = "kubernetes.io/tls";

// The names a Service answers to: <svc>, <svc>.<ns>, <svc>.<ns>.svc,
// <svc>.<ns>.svc.<cluster_domain>. kube-apiserver verifies "<svc>.<ns>.svc".
std::vector<std::string> ServiceDNSNames(std::string_view service, std::string_view ns,
                                         std::string_view cluster_domain = "cluster.local");

struct ServingCertOptions {
  std::string service_name;
  std::string service_namespace;
  std::string cluster_domain = "cluster.local";
  std::vector<std::string> extra_dns_names;
  std::vector<std::string> extra_ip_addresses;
  std::string common_name = "spidernet.io";  // upstream chart's CN
  // Upstream's chart default (spiderpoolController.tls.auto.certExpiration): 73000 days.
  absl::Duration ca_validity = absl::Hours(24 * 73000);
  absl::Duration cert_validity = absl::Hours(24 * 73000);
  // A stored certificate is replaced when it expires within this.
  absl::Duration renew_before = absl::Hours(24 * 30);
  // Where the bundle is kept (EnsureServingSecret / CertManager).
  std::string secret_name = "spiderpool-controller-server-certs";
  std::string secret_namespace;  // "" = service_namespace
};

struct ServingBundle {
  std::string ca_pem;  // the CA bundle to trust: the signing CA first, older valid CAs after
  std::string cert_pem;
  std::string key_pem;
  base::CertAndKey serving() const { return {cert_pem, key_pem}; }
  friend bool operator==(const ServingBundle&, const ServingBundle&) = default;
};

// A fresh CA and a serving certificate signed by it for ServiceDNSNames + extras.
absl::StatusOr<ServingBundle> GenerateServingBundle(const ServingCertOptions& options);

// OK when `bundle` can serve the webhook: the certificate parses, the key matches, it chains to
// the first CA of ca_pem at `now`, its SANs include "<svc>.<ns>.svc" and every extra name/IP,
// and it does not expire within renew_before. Otherwise the reason (FailedPrecondition /
// InvalidArgument).
absl::Status CheckServingBundle(const ServingBundle& bundle, const ServingCertOptions& options,
                                absl::Time now);

// The PEM certificates of a bundle text, in order ("" entries dropped).
std::vector<std::string> SplitPemCertificates(std::string_view pem);

struct EnsureResult {
  ServingBundle bundle;
  bool generated = false;  // a new bundle was written to the Secret by this call
};

// Makes Secret <secret_namespace>/<secret_name> hold a usable bundle: an existing one that
// passes CheckServingBundle is reused unchanged; otherwise a new bundle (keeping the previous,
// still valid CAs after the new one in ca.crt) is written with create or a conditional update
// (an existing Secret keeps its type; a new one is kubernetes.io/tls). A conflict or
// AlreadyExists re-reads the Secret, so concurrent callers converge.
absl::StatusOr<EnsureResult> EnsureServingSecret(const std::shared_ptr<RestClient>& rest,
                                                 const ServingCertOptions& options,
                                                 absl::Time now);

// Sets clientConfig.caBundle (base64 of `ca_pem`) on every webhook of the named
// MutatingWebhookConfigurations and ValidatingWebhookConfigurations: GET, modify, UPDATE
// (retried on conflict; every other field kept as stored). Configurations already carrying the
// bundle are not written. NotFound if a named configuration does not exist.
absl::Status PatchCABundle(const std::shared_ptr<RestClient>& rest,
                           const std::vector<std::string>& mutating_configurations,
                           const std::vector<std::string>& validating_configurations,
                           std::string_view ca_pem);

struct CertManagerOptions {
  ServingCertOptions cert;
  std::vector<std::string> mutating_configurations;
  std::vector<std::string> validating_configurations;
  // How often the Secret is looked at again (rotation by another replica, expiry).
  absl::Duration check_interval = absl::Minutes(5);
  base::Clock* clock = nullptr;  // null = RealClock
  // Called (on the syncing thread) after a different bundle became current; e.g.
  // [&](const ServingBundle& b) { server.SetCertificate(b.serving()); }.
  std::function<void(const ServingBundle&)> on_change;
};

class CertManager {
 public:
  CertManager(std::shared_ptr<RestClient> rest, CertManagerOptions options);

  // One pass: EnsureServingSecret, then PatchCABundle when the CA bundle differs from the one
  // patched last (always on the first pass), then the bundle becomes current.
  absl::StatusOr<ServingBundle> Sync();
  // Sync every check_interval until `stop` (errors are logged and retried next time).
  void Run(std::stop_token stop);

  // The current bundle (empty before the first successful Sync).
  ServingBundle current() const;
  // For ServerOptions::cert_provider: the current serving certificate, Unavailable before the
  // first Sync.
  CertProvider Provider() const;

 private:
  std::shared_ptr<RestClient> rest_;
  CertManagerOptions options_;
  base::Clock& clock_;
  std::mutex sync_mu_;          // one Sync at a time
  std::string patched_ca_;      // guarded by sync_mu_
  mutable std::mutex mu_;
  ServingBundle current_;       // guarded by mu_
};

}  // namespace spiderpool::kube::webhook
