#pragma once
// spiderpool-controller's webhook server in one object: the HTTPS admission server on :5722 with
// every Spider handler (handlers.h), its serving certificate, and the caBundle of the webhook
// configurations (configurations.h). A kube::Runnable that needs no leader election (every
// replica serves, as upstream).
//
//   op::webhook::WebhookServerOptions o;
//   o.service_namespace = pod_namespace;                       // required
//   o.validation = {.enable_ipv4 = cfg.enable_ipv4, ...};
//   o.ippool_informer = &pool_informer;                        // or o.sources.ippools = ...
//   o.subnet_informer = &subnet_informer;
//   SP_ASSIGN_OR_RETURN(auto webhook, op::webhook::WebhookServer::Create(rest, std::move(o)));
//   manager.AddReadyzCheck("webhook", webhook->HealthCheck());
//   manager.Add(std::move(webhook));   // Run(stop): Start, serve until stop, Stop
//
// Certificates, two modes:
//   * cert_dir set: tls.crt / tls.key from that directory (the mounted Secret), reloaded when the
//     files change (every cert_reload_interval); if ca.crt is there too and patch_ca_bundle is
//     on, the caBundle is patched from it at Start and whenever it changes.
//   * otherwise: the Secret `tls_secret_name` in service_namespace is ensured (created, reused
//     when valid, rotated before expiry: kube::webhook::CertManager), the caBundle patched, and
//     the Secret re-checked every cert_check_interval.
// The webhook configurations themselves are the chart's job (or EnsureConfigurations below).
// In cert_dir mode a configuration that does not exist yet is waited for: Start serves anyway
// (logging why) and the reload loop patches the caBundle once it appears (every
// cert_reload_interval, 10 s if that is 0); any other patch error fails Start.

#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/spider.h"
#include "api/validation/validation.h"
#include "kube/controller/manager.h"
#include "kube/health/health.h"
#include "kube/informer/informer.h"
#include "kube/rest/rest_client.h"
#include "kube/webhook/certs.h"
#include "kube/webhook/server.h"
#include "operator/webhook/configurations.h"
#include "operator/webhook/handlers.h"

namespace spiderpool::op::webhook {

struct WebhookServerOptions {
  std::string bind_address = "0.0.0.0";
  int port = kWebhookPort;  // listening port; 0 = any free port (tests)
  // The Service port the webhook configurations name (Service port -> targetPort `port`).
  int32_t service_port = kWebhookPort;
  // Certificates (see above).
  std::string cert_dir;
  std::string tls_secret_name = std::string(kTLSSecretName);
  std::string service_name = std::string(kServiceName);
  std::string service_namespace;  // required
  std::string cluster_domain = "cluster.local";
  std::vector<std::string> extra_dns_names;
  std::vector<std::string> extra_ip_addresses;
  absl::Duration cert_validity = absl::Hours(24 * 73000);
  absl::Duration cert_reload_interval = absl::Seconds(10);  // cert_dir mode
  absl::Duration cert_check_interval = absl::Minutes(5);    // Secret mode
  // Webhook configurations whose caBundle is kept in sync.
  std::string mutating_configuration_name = std::string(kConfigurationName);
  std::string validating_configuration_name = std::string(kConfigurationName);
  bool patch_ca_bundle = true;
  // Rules and feature switches.
  api::validation::Config validation;
  bool enable_multus_config = true;
  bool enable_coordinator = true;
  bool enable_claim_parameter = false;
  // podResourceInject: serve /mutate--v1-pod (pod_inject.h) and register it (namespaces as
  // ConfigurationOptions). SMCs and namespaces come from these caches (or sources.*).
  bool enable_pod_resource_inject = false;
  std::vector<std::string> pod_namespaces_exclude = {"kube-system", "spiderpool",
                                                     "metallb-system", "istio-system"};
  std::vector<std::string> pod_namespaces_include;
  const kube::Informer<api::SpiderMultusConfig>* multus_config_informer = nullptr;
  const kube::Informer<api::Namespace>* namespace_informer = nullptr;
  // Existing objects: informer caches (the caller runs them), and/or explicit sources; unset
  // source fields are filled from the informers, and (fresh_reads) the live lists / lookups
  // from `rest` (handlers.h explains why).
  const kube::Informer<api::SpiderIPPool>* ippool_informer = nullptr;
  const kube::Informer<api::SpiderSubnet>* subnet_informer = nullptr;
  Sources sources;
  bool fresh_reads = true;
  int worker_threads = 8;
  base::Clock* clock = nullptr;  // reload/check loops; null = RealClock
};

class WebhookServer : public kube::Runnable {
 public:
  // Checks the options and registers the handlers; no I/O yet.
  static absl::StatusOr<std::unique_ptr<WebhookServer>> Create(
      std::shared_ptr<kube::RestClient> rest, WebhookServerOptions options);
  ~WebhookServer() override;

  // Gets the certificate (Secret or files), patches the caBundle, binds and serves; starts the
  // certificate loops. Errors leave nothing running.
  absl::Status Start();
  void Stop();

  // kube::Runnable: Start, serve until `stop`, Stop.
  std::string Name() const override { return "webhook-server"; }
  absl::Status Run(std::stop_token stop) override;
  bool NeedsLeaderElection() const override { return false; }

  int port() const { return server_.port(); }
  kube::webhook::AdmissionServer& server() { return server_; }
  const WebhookServerOptions& options() const { return options_; }
  // The CA bundle kube-apiserver must trust ("" before Start, or in cert_dir mode without
  // ca.crt).
  std::string ca_bundle_pem() const;

  // GET https://127.0.0.1:<port>/webhook-health-check (what upstream's probes check): OK when
  // it answers 200.
  absl::Status CheckHealth() const;
  kube::health::Check HealthCheck() const {
    return [this] { return CheckHealth(); };
  }

  // The webhook configurations for these options (service, port, flags, current CA bundle).
  api::MutatingWebhookConfiguration MutatingConfiguration() const;
  api::ValidatingWebhookConfiguration ValidatingConfiguration() const;
  // Creates the two configurations, or replaces their webhooks with ours (for setups without the
  // chart: tests, the demo). Keeps other metadata.
  absl::Status EnsureConfigurations() const;

 private:
  WebhookServer(std::shared_ptr<kube::RestClient> rest, WebhookServerOptions options);
  ConfigurationOptions ConfigOptions() const;
  absl::Status SyncCertDirCA();
  void CertDirLoop(std::stop_token stop);

  std::shared_ptr<kube::RestClient> rest_;
  WebhookServerOptions options_;
  base::Clock& clock_;
  kube::webhook::AdmissionServer server_;
  std::unique_ptr<kube::webhook::CertManager> certs_;  // Secret mode
  mutable std::mutex mu_;
  std::string ca_pem_;  // guarded by mu_: the bundle last patched / read
  std::jthread loop_;
};

}  // namespace spiderpool::op::webhook
