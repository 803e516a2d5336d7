#include "operator/webhook/webhook_server.h"

#include <openssl/ssl.h>

#include <condition_variable>
#include <fstream>
#include <sstream>
#include <utility>

#include "base/http_client.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "kube/rest/client.h"
#include "kube/rest/errors.h"

namespace spiderpool::op::webhook {

namespace kw = ::spiderpool::kube::webhook;
using base::StrCat;

namespace {

kw::ServerOptions ServerOptionsFor(const WebhookServerOptions& o) {
  kw::ServerOptions s;
  s.host = o.bind_address;
  s.port = o.port;
  if (!o.cert_dir.empty()) {
    s.cert_file = StrCat(o.cert_dir, "/", kw::kTLSCertKey);
    s.key_file = StrCat(o.cert_dir, "/", kw::kTLSPrivateKeyKey);
    s.cert_reload_interval = o.cert_reload_interval;
  } else {
    s.cert_reload_interval = absl::ZeroDuration();  // the CertManager pushes certificates
  }
  s.worker_threads = o.worker_threads;
  s.clock = o.clock;
  return s;
}

// Empty when the file does not exist.
absl::StatusOr<std::string> ReadOptionalFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::string();
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::DataLossError(StrCat("cannot read ", path));
  return ss.str();
}

template <typename C>
absl::Status EnsureConfiguration(const std::shared_ptr<kube::RestClient>& rest, const C& want) {
  kube::Client<C> client(rest);
  return kube::RetryOnConflict(kube::DefaultRetry(), [&]() -> absl::Status {
    absl::StatusOr<C> got = client.Get("", want.metadata.name);
    if (kube::IsNotFound(got.status())) return client.Create(want).status();
    if (!got.ok()) return got.status();
    C updated = *std::move(got);
    updated.webhooks = want.webhooks;
    return client.Update(updated).status();
  });
}

}  // namespace

WebhookServer::WebhookServer(std::shared_ptr<kube::RestClient> rest,
                             WebhookServerOptions options)
    : rest_(std::move(rest)),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : base::RealClock::Get()),
      server_(ServerOptionsFor(options_)) {}

WebhookServer::~WebhookServer() { Stop(); }

absl::StatusOr<std::unique_ptr<WebhookServer>> WebhookServer::Create(
    std::shared_ptr<kube::RestClient> rest, WebhookServerOptions options) {
  if (options.service_namespace.empty()) {
    return absl::InvalidArgumentError("webhook: service_namespace is required");
  }
  const bool needs_rest =
      options.cert_dir.empty() || options.patch_ca_bundle || options.fresh_reads;
  if (rest == nullptr && needs_rest) {
    return absl::InvalidArgumentError(
        "webhook: a REST client is required (Secret mode, caBundle patching or fresh reads)");
  }
  Sources sources = options.sources;
  Sources from_informers = InformerSources(options.ippool_informer, options.subnet_informer);
  if (!sources.ippools) sources.ippools = from_informers.ippools;
  if (!sources.subnets) sources.subnets = from_informers.subnets;
  if (!sources.multus_configs || !sources.namespace_annotations) {
    Sources pod = sources;
    AddPodInjectInformerSources(options.multus_config_informer, options.namespace_informer, &pod);
    if (!sources.multus_configs) sources.multus_configs = pod.multus_configs;
    if (!sources.namespace_annotations) sources.namespace_annotations = pod.namespace_annotations;
  }
  if (options.fresh_reads) AddLiveSources(rest, &sources);

  std::unique_ptr<WebhookServer> w(new WebhookServer(std::move(rest), std::move(options)));
  HandlerOptions h;
  h.config = w->options_.validation;
  h.sources = std::move(sources);
  h.enable_multus_config = w->options_.enable_multus_config;
  h.enable_coordinator = w->options_.enable_coordinator;
  h.enable_claim_parameter = w->options_.enable_claim_parameter;
  h.enable_pod_resource_inject = w->options_.enable_pod_resource_inject;
  RegisterHandlers(&w->server_, h);

  if (w->options_.cert_dir.empty()) {
    kw::CertManagerOptions cm;
    cm.cert.service_name = w->options_.service_name;
    cm.cert.service_namespace = w->options_.service_namespace;
    cm.cert.cluster_domain = w->options_.cluster_domain;
    cm.cert.extra_dns_names = w->options_.extra_dns_names;
    cm.cert.extra_ip_addresses = w->options_.extra_ip_addresses;
    cm.cert.ca_validity = w->options_.cert_validity;
    cm.cert.cert_validity = w->options_.cert_validity;
    cm.cert.secret_name = w->options_.tls_secret_name;
    cm.cert.secret_namespace = w->options_.service_namespace;
    if (w->options_.patch_ca_bundle) {
      cm.mutating_configurations = {w->options_.mutating_configuration_name};
      cm.validating_configurations = {w->options_.validating_configuration_name};
    }
    cm.check_interval = w->options_.cert_check_interval;
    cm.clock = w->options_.clock;
    WebhookServer* self = w.get();
    cm.on_change = [self](const kw::ServingBundle& b) {
      absl::Status s = self->server_.SetCertificate(b.serving());
      if (!s.ok()) {
        SP_LOG(Error).Msg("cannot install the webhook certificate").KV("err", std::string(s.message()));
      }
      std::lock_guard<std::mutex> l(self->mu_);
      self->ca_pem_ = b.ca_pem;
    };
    w->certs_ = std::make_unique<kw::CertManager>(w->rest_, std::move(cm));
  }
  return w;
}

ConfigurationOptions WebhookServer::ConfigOptions() const {
  ConfigurationOptions c;
  c.service_name = options_.service_name;
  c.service_namespace = options_.service_namespace;
  c.port = options_.service_port;
  c.ca_bundle_pem = ca_bundle_pem();
  c.enable_multus_config = options_.enable_multus_config;
  c.enable_coordinator = options_.enable_coordinator;
  c.enable_claim_parameter = options_.enable_claim_parameter;
  c.enable_pod_resource_inject = options_.enable_pod_resource_inject;
  c.pod_namespaces_exclude = options_.pod_namespaces_exclude;
  c.pod_namespaces_include = options_.pod_namespaces_include;
  return c;
}

api::MutatingWebhookConfiguration WebhookServer::MutatingConfiguration() const {
  ConfigurationOptions c = ConfigOptions();
  c.name = options_.mutating_configuration_name;
  return op::webhook::MutatingConfiguration(c);
}

api::ValidatingWebhookConfiguration WebhookServer::ValidatingConfiguration() const {
  ConfigurationOptions c = ConfigOptions();
  c.name = options_.validating_configuration_name;
  return op::webhook::ValidatingConfiguration(c);
}

absl::Status WebhookServer::EnsureConfigurations() const {
  if (rest_ == nullptr) return absl::FailedPreconditionError("no REST client");
  SP_RETURN_IF_ERROR(EnsureConfiguration(rest_, MutatingConfiguration()));
  return EnsureConfiguration(rest_, ValidatingConfiguration());
}

std::string WebhookServer::ca_bundle_pem() const {
  std::lock_guard<std::mutex> l(mu_);
  return ca_pem_;
}

absl::Status WebhookServer::SyncCertDirCA() {
  SP_ASSIGN_OR_RETURN(std::string ca,
                      ReadOptionalFile(StrCat(options_.cert_dir, "/", kw::kCACertKey)));
  if (ca.empty() || ca == ca_bundle_pem()) return absl::OkStatus();
  if (options_.patch_ca_bundle) {
    SP_RETURN_IF_ERROR(kw::PatchCABundle(rest_, {options_.mutating_configuration_name},
                                         {options_.validating_configuration_name}, ca));
  }
  std::lock_guard<std::mutex> l(mu_);
  ca_pem_ = std::move(ca);
  return absl::OkStatus();
}

void WebhookServer::CertDirLoop(std::stop_token stop) {
  const absl::Duration every = options_.cert_reload_interval > absl::ZeroDuration()
                                   ? options_.cert_reload_interval
                                   : absl::Seconds(10);
  while (clock_.SleepFor(every, stop)) {
    absl::Status s = SyncCertDirCA();
    if (!s.ok()) {
      SP_LOG(Warning).Msg("cannot sync the webhook caBundle from ca.crt")
          .KV("err", std::string(s.message()));
    }
  }
}

absl::Status WebhookServer::Start() {
  bool ca_pending = false;  // cert_dir mode: the configurations are not there yet
  if (certs_ != nullptr) {
    absl::StatusOr<kw::ServingBundle> b = certs_->Sync();  // on_change installs it
    if (!b.ok()) return base::Annotate(b.status(), "webhook certificates");
  } else if (absl::Status s = SyncCertDirCA(); !s.ok()) {
    if (!absl::IsNotFound(s)) return base::Annotate(s, "webhook caBundle");
    // A controller started before its configurations (the chart creates them, possibly
    // later) must not crash-loop: serve, and patch the caBundle once they exist.
    SP_LOG(Warning)
        .Msg("webhook configurations not found yet: their caBundle is patched once they exist")
        .KV("err", std::string(s.message()));
    ca_pending = true;
  }
  SP_RETURN_IF_ERROR(server_.Start());
  if (certs_ != nullptr) {
    loop_ = std::jthread([this](std::stop_token stop) { certs_->Run(stop); });
  } else if (options_.cert_reload_interval > absl::ZeroDuration() || ca_pending) {
    loop_ = std::jthread([this](std::stop_token stop) { CertDirLoop(stop); });
  }
  return absl::OkStatus();
}

void WebhookServer::Stop() {
  if (loop_.joinable()) {
    loop_.request_stop();
    loop_.join();
  }
  server_.Stop();
}

absl::Status WebhookServer::Run(std::stop_token stop) {
  SP_RETURN_IF_ERROR(Start());
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock<std::mutex> l(m);
  cv.wait(l, stop, [] { return false; });
  l.unlock();
  Stop();
  return absl::OkStatus();
}

absl::Status WebhookServer::CheckHealth() const {
  if (!server_.running()) return absl::UnavailableError("the webhook server is not running");
  // Our own listener over TLS: the certificate is the one we serve, so it is not verified.
  std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> ctx(SSL_CTX_new(TLS_client_method()),
                                                  SSL_CTX_free);
  if (ctx == nullptr) {
    return absl::InternalError(StrCat("webhook health check: ", base::OpenSslErrorText()));
  }
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  base::HttpConnection conn({.host = "127.0.0.1",
                             .port = server_.port(),
                             .tls = ctx.get(),
                             .verify_host = false,
                             .connect_timeout = absl::Seconds(2),
                             .read_timeout = absl::Seconds(2),
                             .write_timeout = absl::Seconds(2)});
  base::HttpClientResult res = conn.RoundTrip(
      {.method = "GET", .target = std::string(kw::kHealthCheckPath), .keep_alive = false});
  if (!res.ok()) return absl::UnavailableError(StrCat("webhook health check: ", res.error));
  if (res.status != 200) {
    return absl::UnavailableError(StrCat("webhook health check answered ", res.status));
  }
  return absl::OkStatus();
}

}  // namespace spiderpool::op::webhook
