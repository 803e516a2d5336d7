// Certificate management against the loopback API server (Secret, caBundle patching), and the
// whole loop: kube-apiserver (loopback) calling the AdmissionServer over HTTPS through a Service,
// trusting only the caBundle, across a certificate rotation.

#include "kube/webhook/certs.h"

#include <memory>
#include <string>

#include "api/admissionregistration.h"
#include "api/core.h"
#include "base/certs.h"
#include "base/json.h"
#include "base/strings.h"
#include "gtest/gtest.h"
#include "kube/rest/client.h"
#include "kube/testing/test_cluster.h"
#include "kube/testing/webhook_admission.h"
#include "kube/webhook/server.h"

namespace spiderpool::kube::webhook {
namespace {

using api::MutatingWebhook;
using api::MutatingWebhookConfiguration;
using api::RuleWithOperations;
using api::ServiceReference;
using api::ValidatingWebhook;
using api::ValidatingWebhookConfiguration;
using base::Json;
using base::StrCat;

TEST(ServiceDNSNamesTest, FourNames) {
  EXPECT_EQ(ServiceDNSNames("spiderpool-controller", "kube-system"),
            (std::vector<std::string>{"spiderpool-controller", "spiderpool-controller.kube-system",
                                      "spiderpool-controller.kube-system.svc",
                                      "spiderpool-controller.kube-system.svc.cluster.local"}));
  EXPECT_EQ(ServiceDNSNames("a", "b", "corp").back(), "a.b.svc.corp");
}

TEST(ServingBundleTest, GenerateAndCheck) {
  ServingCertOptions o{.service_name = "hook", .service_namespace = "ns",
                       .extra_dns_names = {"hook.example.com"},
                       .extra_ip_addresses = {"127.0.0.1"}};
  auto b = GenerateServingBundle(o);
  ASSERT_TRUE(b.ok()) << b.status();
  auto info = base::ParseCertificate(b->cert_pem);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->common_name, "spidernet.io");
  EXPECT_EQ(info->dns_sans,
            (std::vector<std::string>{"hook", "hook.ns", "hook.ns.svc", "hook.ns.svc.cluster.local",
                                      "hook.example.com"}));
  EXPECT_EQ(info->ip_sans, std::vector<std::string>{"127.0.0.1"});
  EXPECT_GT(info->not_after, absl::Now() + absl::Hours(24 * 365 * 100));
  const absl::Time now = absl::Now();
  EXPECT_TRUE(CheckServingBundle(*b, o, now).ok());

  // Another service name, a missing extra, an expiring certificate, a foreign CA, a wrong key.
  ServingCertOptions other = o;
  other.service_name = "other";
  EXPECT_FALSE(CheckServingBundle(*b, other, now).ok());
  other = o;
  other.extra_ip_addresses = {"10.0.0.1"};
  EXPECT_FALSE(CheckServingBundle(*b, other, now).ok());
  EXPECT_FALSE(CheckServingBundle(*b, o, info->not_after - absl::Hours(24)).ok());
  auto b2 = *GenerateServingBundle(o);
  ServingBundle mixed = *b;
  mixed.ca_pem = b2.ca_pem;
  EXPECT_FALSE(CheckServingBundle(mixed, o, now).ok());
  mixed = *b;
  mixed.key_pem = b2.key_pem;
  EXPECT_FALSE(CheckServingBundle(mixed, o, now).ok());
  // A bundle with older CAs after the signing one still checks.
  mixed = *b;
  mixed.ca_pem += b2.ca_pem;
  EXPECT_TRUE(CheckServingBundle(mixed, o, now).ok());
  EXPECT_EQ(SplitPemCertificates(mixed.ca_pem).size(), 2u);
  EXPECT_EQ(SplitPemCertificates(mixed.ca_pem)[1], b2.ca_pem);
}

class CertsClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = testing::TestCluster::Start();
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = *std::move(c);
    opts_.service_name = "hook";
    opts_.service_namespace = cluster_->ns();
    opts_.secret_name = "hook-certs";
  }
  void TearDown() override {
    for (const auto& name : created_configs_) {
      (void)DynamicClient(cluster_->rest(), MutatingWebhookConfiguration::Resource())
          .Delete("", name);
      (void)DynamicClient(cluster_->rest(), ValidatingWebhookConfiguration::Resource())
          .Delete("", name);
    }
  }

  std::string Name(const std::string& s) const { return cluster_->ns() + "-" + s; }

  api::Secret GetSecret() {
    auto s = Client<api::Secret>(cluster_->rest()).Get(cluster_->ns(), opts_.secret_name);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : api::Secret{};
  }

  // A configuration with two webhooks on ConfigMaps of the test namespace, served by Service
  // <ns>/hook at `path`.
  template <typename C, typename W>
  C Configuration(const std::string& name, const std::string& path, int port) {
    C c;
    c.SetTypeMeta();
    c.metadata.name = name;
    for (const char* hook : {"a", "b"}) {
      W w;
      w.name = StrCat(hook, ".hook.example.com");
      w.client_config.service = ServiceReference{.namespace_ = cluster_->ns(), .name = "hook",
                                                 .path = path, .port = port};
      w.rules = {RuleWithOperations{.operations = {"CREATE"}, .api_groups = {""},
                                    .api_versions = {"v1"}, .resources = {"configmaps"}}};
      w.failure_policy = "Fail";
      w.side_effects = "None";
      w.admission_review_versions = {"v1"};
      w.namespace_selector = api::LabelSelector{};
      w.namespace_selector->match_labels = {{"kubernetes.io/metadata.name", cluster_->ns()}};
      w.unknown = Json{{"matchConditions", Json::array()}};
      c.webhooks.push_back(w);
    }
    created_configs_.push_back(name);
    return c;
  }

  std::unique_ptr<testing::TestCluster> cluster_;
  ServingCertOptions opts_;
  std::vector<std::string> created_configs_;
};

TEST_F(CertsClusterTest, EnsureServingSecretCreatesThenReuses) {
  const absl::Time now = absl::Now();
  auto first = EnsureServingSecret(cluster_->rest(), opts_, now);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->generated);
  api::Secret s = GetSecret();
  EXPECT_EQ(s.type, "kubernetes.io/tls");
  EXPECT_EQ(*s.Get("ca.crt"), first->bundle.ca_pem);
  EXPECT_EQ(*s.Get("tls.crt"), first->bundle.cert_pem);
  EXPECT_EQ(*s.Get("tls.key"), first->bundle.key_pem);
  const std::string rv = s.metadata.resource_version;

  auto second = EnsureServingSecret(cluster_->rest(), opts_, now);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->generated);
  EXPECT_EQ(second->bundle, first->bundle);
  EXPECT_EQ(GetSecret().metadata.resource_version, rv);  // not written again
}

TEST_F(CertsClusterTest, ExpiringOrBrokenSecretIsReplacedKeepingTheOldCA) {
  // A bundle that is inside the renewal window.
  ServingCertOptions short_lived = opts_;
  short_lived.cert_validity = absl::Hours(24);
  auto first = EnsureServingSecret(cluster_->rest(), short_lived, absl::Now());
  ASSERT_TRUE(first.ok()) << first.status();
  auto rotated = EnsureServingSecret(cluster_->rest(), opts_, absl::Now());
  ASSERT_TRUE(rotated.ok()) << rotated.status();
  EXPECT_TRUE(rotated->generated);
  EXPECT_NE(rotated->bundle.cert_pem, first->bundle.cert_pem);
  std::vector<std::string> cas = SplitPemCertificates(rotated->bundle.ca_pem);
  ASSERT_EQ(cas.size(), 2u);
  EXPECT_NE(cas[0], first->bundle.ca_pem);  // the new signing CA first
  EXPECT_EQ(cas[1], first->bundle.ca_pem);  // the old one still trusted
  EXPECT_EQ(*GetSecret().Get("ca.crt"), rotated->bundle.ca_pem);

  // Garbage in tls.crt: replaced (the Secret keeps its type).
  api::Secret s = GetSecret();
  s.Set("tls.crt", "garbage");
  ASSERT_TRUE(Client<api::Secret>(cluster_->rest()).Update(s).ok());
  auto repaired = EnsureServingSecret(cluster_->rest(), opts_, absl::Now());
  ASSERT_TRUE(repaired.ok()) << repaired.status();
  EXPECT_TRUE(repaired->generated);
  EXPECT_TRUE(CheckServingBundle(repaired->bundle, opts_, absl::Now()).ok());
}

TEST_F(CertsClusterTest, EnsureKeepsAnExistingOpaqueSecretType) {
  api::Secret s;
  s.SetTypeMeta();
  s.metadata.name = opts_.secret_name;
  s.metadata.namespace_ = cluster_->ns();
  s.type = "Opaque";
  s.Set("unrelated", "x");
  ASSERT_TRUE(Client<api::Secret>(cluster_->rest()).Create(s).ok());
  auto r = EnsureServingSecret(cluster_->rest(), opts_, absl::Now());
  ASSERT_TRUE(r.ok()) << r.status();
  api::Secret got = GetSecret();
  EXPECT_EQ(got.type, "Opaque");
  EXPECT_EQ(*got.Get("unrelated"), "x");
  EXPECT_EQ(*got.Get("tls.crt"), r->bundle.cert_pem);
}

TEST_F(CertsClusterTest, PatchCABundleSetsEveryWebhookAndKeepsTheRest) {
  const std::string name = Name("cfg");
  auto m = Configuration<MutatingWebhookConfiguration, MutatingWebhook>(name, "/m", 443);
  auto v = Configuration<ValidatingWebhookConfiguration, ValidatingWebhook>(name, "/v", 443);
  ASSERT_TRUE(Client<MutatingWebhookConfiguration>(cluster_->rest()).Create(m).ok());
  ASSERT_TRUE(Client<ValidatingWebhookConfiguration>(cluster_->rest()).Create(v).ok());

  ASSERT_TRUE(PatchCABundle(cluster_->rest(), {name}, {name}, "CA-PEM").ok());
  auto gm = Client<MutatingWebhookConfiguration>(cluster_->rest()).Get("", name);
  auto gv = Client<ValidatingWebhookConfiguration>(cluster_->rest()).Get("", name);
  ASSERT_TRUE(gm.ok() && gv.ok());
  for (const auto& w : gm->webhooks) {
    EXPECT_EQ(*w.client_config.CABundlePEM(), "CA-PEM");
    EXPECT_EQ(w.client_config.service->path, "/m");
    EXPECT_EQ(w.failure_policy, "Fail");
  }
  for (const auto& w : gv->webhooks) EXPECT_EQ(*w.client_config.CABundlePEM(), "CA-PEM");

  // Unchanged: no write.
  const std::string rv = gm->metadata.resource_version;
  ASSERT_TRUE(PatchCABundle(cluster_->rest(), {name}, {}, "CA-PEM").ok());
  EXPECT_EQ(Client<MutatingWebhookConfiguration>(cluster_->rest()).Get("", name)
                ->metadata.resource_version, rv);
  absl::Status missing = PatchCABundle(cluster_->rest(), {}, {Name("missing")}, "x");
  EXPECT_TRUE(kube::IsNotFound(missing)) << missing;
}

// kube-apiserver -> Service -> AdmissionServer, certificates from CertManager; then a
// rotation: the swapped certificate is only trusted once the caBundle carries its CA.
TEST_F(CertsClusterTest, ApiServerCallsTheServerAcrossARotation) {
  if (cluster_->loopback() == nullptr) GTEST_SKIP() << "needs the loopback Service resolver";
  const std::string cfg = Name("deny");
  AdmissionServer server({.host = "127.0.0.1", .port = 0,
                          .cert_reload_interval = absl::ZeroDuration()});
  CertManager certs(cluster_->rest(),
                    {.cert = opts_,
                     .validating_configurations = {cfg},
                     .on_change = [&](const ServingBundle& b) {
                       ASSERT_TRUE(server.SetCertificate(b.serving()).ok());
                     }});
  server.Validating("/deny", [](const api::AdmissionRequest& req) {
    if (req.name.rfind("deny-", 0) == 0) {
      return Decision::Deny(403, StrCat("configmap ", req.name, " is not welcome"));
    }
    return Decision::Allow();
  });

  // The configuration first (CertManager patches it), then the first Sync, then serve.
  auto v = Configuration<ValidatingWebhookConfiguration, ValidatingWebhook>(cfg, "/deny", 443);
  v.webhooks.pop_back();
  ASSERT_TRUE(Client<ValidatingWebhookConfiguration>(cluster_->rest()).Create(v).ok());
  auto synced = certs.Sync();
  ASSERT_TRUE(synced.ok()) << synced.status();
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(server.CertificatePem(), synced->cert_pem);
  // The Service the configuration names; the loopback server dials the annotated address and
  // verifies the certificate for hook.<ns>.svc against the caBundle only.
  api::ResourceInfo services{.group = "", .version = "v1", .kind = "Service",
                             .plural = "services", .singular = "service", .namespaced = true};
  Json svc = {{"apiVersion", "v1"},
              {"kind", "Service"},
              {"metadata",
               {{"name", "hook"},
                {"namespace", cluster_->ns()},
                {"annotations",
                 {{std::string(testing::kServiceDialAddressAnnotation),
                   StrCat("127.0.0.1:", server.port())}}}}},
              {"spec", {{"ports", {{{"port", 443}}}}}}};
  ASSERT_TRUE(DynamicClient(cluster_->rest(), services).Create(svc).ok());

  Client<api::ConfigMap> cms(cluster_->rest());
  auto cm = [&](const std::string& name) {
    api::ConfigMap c;
    c.SetTypeMeta();
    c.metadata.name = name;
    c.metadata.namespace_ = cluster_->ns();
    c.data = {{"k", "v"}};
    return cms.Create(c).status();
  };
  ASSERT_TRUE(cm("ok-1").ok());
  absl::Status denied = cm("deny-1");
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied) << denied;
  EXPECT_EQ(denied.message(),
            "admission webhook \"a.hook.example.com\" denied the request: configmap deny-1 is "
            "not welcome");

  // Another replica rotated the Secret (here: a fresh bundle written directly). Serving it
  // before the caBundle knows its CA fails the call (failurePolicy Fail) ...
  auto fresh = GenerateServingBundle(opts_);
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE(server.SetCertificate(fresh->serving()).ok());
  absl::Status untrusted = cm("ok-2");
  EXPECT_EQ(kube::HttpCode(untrusted), 500) << untrusted;
  EXPECT_NE(untrusted.message().find("failed calling webhook \"a.hook.example.com\""),
            absl::string_view::npos) << untrusted;
  EXPECT_NE(untrusted.message().find("x509: certificate signed by unknown authority"),
            absl::string_view::npos) << untrusted;
  ASSERT_TRUE(server.SetCertificate(synced->serving()).ok());
  ASSERT_TRUE(cm("ok-3").ok());

  // ... while the CertManager path patches first, then serves: every call verifies.
  api::Secret secret = GetSecret();
  secret.Set("ca.crt", fresh->ca_pem + synced->ca_pem);
  secret.Set("tls.crt", fresh->cert_pem);
  secret.Set("tls.key", fresh->key_pem);
  ASSERT_TRUE(Client<api::Secret>(cluster_->rest()).Update(secret).ok());
  auto resynced = certs.Sync();
  ASSERT_TRUE(resynced.ok()) << resynced.status();
  EXPECT_EQ(resynced->cert_pem, fresh->cert_pem);
  EXPECT_EQ(server.CertificatePem(), fresh->cert_pem);  // on_change installed it
  EXPECT_EQ(server.stats().cert_reloads, 3u);
  auto got = Client<ValidatingWebhookConfiguration>(cluster_->rest()).Get("", cfg);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got->webhooks[0].client_config.CABundlePEM(), fresh->ca_pem + synced->ca_pem);
  ASSERT_TRUE(cm("ok-4").ok());
  EXPECT_EQ(cm("deny-2").code(), absl::StatusCode::kPermissionDenied);
  server.Stop();
}

}  // namespace
}  // namespace spiderpool::kube::webhook
