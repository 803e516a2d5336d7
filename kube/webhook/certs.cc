#include "kube/webhook/certs.h"

#include <algorithm>
#include <utility>

#include "api/admissionregistration.h"
#include "api/core.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "kube/rest/client.h"
#include "kube/rest/errors.h"

namespace spiderpool::kube::webhook {

using api::MutatingWebhookConfiguration;
using api::ValidatingWebhookConfiguration;
using base::Json;
using base::StrCat;

namespace {

constexpr std::string_view kPemEnd = "-----END CERTIFICATE-----";
constexpr int kEnsureAttempts = 5;
// Previous CAs kept in ca.crt after a rotation.
constexpr size_t kMaxPreviousCAs = 2;

std::string SecretNamespace(const ServingCertOptions& o) {
  return o.secret_namespace.empty() ? o.service_namespace : o.secret_namespace;
}

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The still-valid CA certificates of `bundle_pem` other than `except_pem`, at most `max`.
std::vector<std::string> ValidCAs(std::string_view bundle_pem, std::string_view except_pem,
                                  absl::Time now, size_t max) {
  std::vector<std::string> out;
  for (std::string& pem : SplitPemCertificates(bundle_pem)) {
    if (out.size() >= max) break;
    if (pem == except_pem) continue;
    absl::StatusOr<base::CertInfo> info = base::ParseCertificate(pem);
    if (!info.ok() || !info->is_ca || info->not_after <= now) continue;
    out.push_back(std::move(pem));
  }
  return out;
}

absl::StatusOr<ServingBundle> BundleFromSecret(const api::Secret& secret) {
  ServingBundle b;
  SP_ASSIGN_OR_RETURN(b.ca_pem, secret.Get(kCACertKey));
  SP_ASSIGN_OR_RETURN(b.cert_pem, secret.Get(kTLSCertKey));
  SP_ASSIGN_OR_RETURN(b.key_pem, secret.Get(kTLSPrivateKeyKey));
  return b;
}

void StoreBundle(const ServingBundle& b, api::Secret* secret) {
  secret->string_data.clear();
  secret->Set(kCACertKey, b.ca_pem);
  secret->Set(kTLSCertKey, b.cert_pem);
  secret->Set(kTLSPrivateKeyKey, b.key_pem);
}

// Sets caBundle on every webhook of one configuration object (JSON, as stored); true if
// anything changed.
bool SetBundleOnWebhooks(Json* config, const std::string& ca_b64) {
  auto it = config->find("webhooks");
  if (it == config->end() || !it->is_array()) return false;
  bool changed = false;
  for (Json& hook : *it) {
    if (!hook.is_object()) continue;
    Json& cc = hook["clientConfig"];
    if (!cc.is_object()) cc = Json::object();
    auto cur = cc.find("caBundle");
    if (cur != cc.end() && cur->is_string() && cur->get<std::string>() == ca_b64) continue;
    cc["caBundle"] = ca_b64;
    changed = true;
  }
  return changed;
}

absl::Status PatchOne(const DynamicClient& client, const std::string& name,
                      const std::string& ca_b64) {
  return RetryOnConflict(DefaultRetry(), [&]() -> absl::Status {
    SP_ASSIGN_OR_RETURN(Json obj, client.Get("", name));
    if (!SetBundleOnWebhooks(&obj, ca_b64)) return absl::OkStatus();
    absl::StatusOr<Json> updated = client.Update(obj);
    if (!updated.ok()) return updated.status();
    SP_LOG(Info).Msg("patched the caBundle of the webhook configuration")
        .KV("kind", client.resource().kind)
        .KV("name", name);
    return absl::OkStatus();
  });
}

}  // namespace

std::vector<std::string> ServiceDNSNames(std::string_view service, std::string_view ns,
                                         std::string_view cluster_domain) {
  std::vector<std::string> out = {std::string(service), StrCat(service, ".", ns),
                                  StrCat(service, ".", ns, ".svc")};
  if (!cluster_domain.empty()) out.push_back(StrCat(service, ".", ns, ".svc.", cluster_domain));
  return out;
}

std::vector<std::string> SplitPemCertificates(std::string_view pem) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < pem.size()) {
    size_t begin = pem.find("-----BEGIN CERTIFICATE-----", pos);
    if (begin == std::string_view::npos) break;
    size_t end = pem.find(kPemEnd, begin);
    if (end == std::string_view::npos) break;
    end += kPemEnd.size();
    out.push_back(StrCat(pem.substr(begin, end - begin), "\n"));
    pos = end;
  }
  return out;
}

absl::StatusOr<ServingBundle> GenerateServingBundle(const ServingCertOptions& options) {
  if (options.service_name.empty() || options.service_namespace.empty()) {
    return absl::InvalidArgumentError("service_name and service_namespace are required");
  }
  SP_ASSIGN_OR_RETURN(base::CertAndKey ca,
                      base::GenerateCA(StrCat(options.common_name, "-ca"), options.ca_validity));
  std::vector<std::string> dns = ServiceDNSNames(options.service_name, options.service_namespace,
                                                 options.cluster_domain);
  for (const std::string& d : options.extra_dns_names) {
    if (!Contains(dns, d)) dns.push_back(d);
  }
  SP_ASSIGN_OR_RETURN(base::CertAndKey serving,
                      base::GenerateServingCert(ca, options.common_name, dns,
                                                options.extra_ip_addresses,
                                                options.cert_validity));
  return ServingBundle{.ca_pem = ca.cert_pem,
                       .cert_pem = serving.cert_pem,
                       .key_pem = serving.key_pem};
}

absl::Status CheckServingBundle(const ServingBundle& bundle, const ServingCertOptions& options,
                                absl::Time now) {
  absl::StatusOr<base::CertInfo> info = base::ParseCertificate(bundle.cert_pem);
  if (!info.ok()) return base::Annotate(info.status(), "tls.crt");
  SP_RETURN_IF_ERROR(base::Annotate(base::CheckKeyMatchesCert(bundle.cert_pem, bundle.key_pem),
                                    "tls.key"));
  std::vector<std::string> cas = SplitPemCertificates(bundle.ca_pem);
  if (cas.empty()) return absl::InvalidArgumentError("ca.crt holds no certificate");
  SP_RETURN_IF_ERROR(base::Annotate(base::VerifyCertificate(bundle.cert_pem, cas.front(), now),
                                    "tls.crt against ca.crt"));
  std::vector<std::string> want = {
      StrCat(options.service_name, ".", options.service_namespace, ".svc")};
  want.insert(want.end(), options.extra_dns_names.begin(), options.extra_dns_names.end());
  for (const std::string& name : want) {
    if (!Contains(info->dns_sans, name)) {
      return absl::FailedPreconditionError(StrCat("tls.crt is not valid for ", name));
    }
  }
  for (const std::string& ip : options.extra_ip_addresses) {
    if (!Contains(info->ip_sans, ip)) {
      return absl::FailedPreconditionError(StrCat("tls.crt is not valid for ", ip));
    }
  }
  if (info->not_after - options.renew_before <= now) {
    return absl::FailedPreconditionError(
        StrCat("tls.crt expires at ", absl::FormatTime(info->not_after, absl::UTCTimeZone()),
               ", within the renewal window"));
  }
  return absl::OkStatus();
}

absl::StatusOr<EnsureResult> EnsureServingSecret(const std::shared_ptr<RestClient>& rest,
                                                 const ServingCertOptions& options,
                                                 absl::Time now) {
  const std::string ns = SecretNamespace(options);
  if (options.secret_name.empty() || ns.empty()) {
    return absl::InvalidArgumentError("secret_name and a namespace are required");
  }
  Client<api::Secret> secrets(rest);
  absl::Status last = absl::OkStatus();
  for (int attempt = 0; attempt < kEnsureAttempts; ++attempt) {
    absl::StatusOr<api::Secret> got = secrets.Get(ns, options.secret_name);
    if (!got.ok() && !kube::IsNotFound(got.status())) {
      return base::Annotate(got.status(), StrCat("reading Secret ", ns, "/", options.secret_name));
    }
    std::string previous_ca;
    if (got.ok()) {
      absl::StatusOr<ServingBundle> stored = BundleFromSecret(*got);
      if (stored.ok()) {
        absl::Status usable = CheckServingBundle(*stored, options, now);
        if (usable.ok()) return EnsureResult{.bundle = *std::move(stored), .generated = false};
        SP_LOG(Info).Msg("replacing the webhook serving certificate")
            .KV("secret", StrCat(ns, "/", options.secret_name))
            .KV("reason", std::string(usable.message()));
        previous_ca = stored->ca_pem;
      } else {
        absl::StatusOr<std::string> ca = got->Get(kCACertKey);
        if (ca.ok()) previous_ca = *ca;
      }
    }
    SP_ASSIGN_OR_RETURN(ServingBundle fresh, GenerateServingBundle(options));
    for (const std::string& old : ValidCAs(previous_ca, fresh.ca_pem, now, kMaxPreviousCAs)) {
      fresh.ca_pem += old;
    }
    absl::Status written;
    if (got.ok()) {
      api::Secret secret = *std::move(got);
      StoreBundle(fresh, &secret);
      written = secrets.Update(secret).status();  // carries resourceVersion: conditional
    } else {
      api::Secret secret;
      secret.SetTypeMeta();
      secret.metadata.name = options.secret_name;
      secret.metadata.namespace_ = ns;
      secret.type = std::string(kSecretTypeTLS);
      StoreBundle(fresh, &secret);
      written = secrets.Create(secret).status();
    }
    if (written.ok()) {
      SP_LOG(Info).Msg("stored a new webhook serving certificate")
          .KV("secret", StrCat(ns, "/", options.secret_name));
      return EnsureResult{.bundle = std::move(fresh), .generated = true};
    }
    if (!kube::IsConflict(written) && !kube::IsAlreadyExists(written)) {
      return base::Annotate(written, StrCat("writing Secret ", ns, "/", options.secret_name));
    }
    last = written;  // another writer won: read its bundle
  }
  return base::Annotate(last, StrCat("writing Secret ", ns, "/", options.secret_name));
}

absl::Status PatchCABundle(const std::shared_ptr<RestClient>& rest,
                           const std::vector<std::string>& mutating_configurations,
                           const std::vector<std::string>& validating_configurations,
                           std::string_view ca_pem) {
  const std::string ca_b64 = api::Base64Encode(ca_pem);
  DynamicClient mutating(rest, MutatingWebhookConfiguration::Resource());
  DynamicClient validating(rest, ValidatingWebhookConfiguration::Resource());
  for (const std::string& name : mutating_configurations) {
    SP_RETURN_IF_ERROR(base::Annotate(PatchOne(mutating, name, ca_b64),
                                      StrCat("MutatingWebhookConfiguration ", name)));
  }
  for (const std::string& name : validating_configurations) {
    SP_RETURN_IF_ERROR(base::Annotate(PatchOne(validating, name, ca_b64),
                                      StrCat("ValidatingWebhookConfiguration ", name)));
  }
  return absl::OkStatus();
}

// ---- CertManager ----------------------------------------------------------------------------

CertManager::CertManager(std::shared_ptr<RestClient> rest, CertManagerOptions options)
    : rest_(std::move(rest)),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : base::RealClock::Get()) {}

absl::StatusOr<ServingBundle> CertManager::Sync() {
  std::lock_guard<std::mutex> sync(sync_mu_);
  SP_ASSIGN_OR_RETURN(EnsureResult r, EnsureServingSecret(rest_, options_.cert, clock_.Now()));
  if (r.bundle.ca_pem != patched_ca_) {
    SP_RETURN_IF_ERROR(PatchCABundle(rest_, options_.mutating_configurations,
                                     options_.validating_configurations, r.bundle.ca_pem));
    patched_ca_ = r.bundle.ca_pem;
  }
  bool changed = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    changed = !(current_ == r.bundle);
    current_ = r.bundle;
  }
  if (changed && options_.on_change) options_.on_change(r.bundle);
  return r.bundle;
}

void CertManager::Run(std::stop_token stop) {
  std::string last_error;
  while (clock_.SleepFor(options_.check_interval, stop)) {
    absl::StatusOr<ServingBundle> s = Sync();
    std::string err = s.ok() ? "" : std::string(s.status().message());
    if (!s.ok() && err != last_error) {
      SP_LOG(Warning).Msg("webhook certificate sync failed; retrying").KV("err", err);
    }
    last_error = err;
  }
}

ServingBundle CertManager::current() const {
  std::lock_guard<std::mutex> l(mu_);
  return current_;
}

CertProvider CertManager::Provider() const {
  return [this]() -> absl::StatusOr<base::CertAndKey> {
    ServingBundle b = current();
    if (b.cert_pem.empty()) return absl::UnavailableError("no webhook certificate synced yet");
    return b.serving();
  };
}

}  // namespace spiderpool::kube::webhook
