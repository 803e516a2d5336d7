// The Spider webhooks end to end: the loopback API server (kube-apiserver's admission chain:
// mutating webhooks -> CRD schema -> validating webhooks) calls WebhookServer over HTTPS through
// the spiderpool-controller Service, trusting only the caBundle that the server's CertManager
// patched in. Clients see what kubectl would print.

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "api/core.h"
#include "api/spider.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/strings.h"
#include "base/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "kube/informer/informer.h"
#include "kube/rest/client.h"
#include "kube/rest/errors.h"
#include "kube/testing/test_cluster.h"
#include "kube/testing/webhook_admission.h"
#include "kube/webhook/certs.h"
#include "operator/webhook/configurations.h"
#include "operator/webhook/webhook_server.h"

namespace spiderpool::op::webhook {
namespace {

using base::Json;
using base::StrCat;
namespace kw = ::spiderpool::kube::webhook;

constexpr char kCrdDir[] = "charts/spiderpool/crds";

class WebhookIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = kube::testing::TestCluster::Start();
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = *std::move(c);
    if (cluster_->loopback() == nullptr) {
      GTEST_SKIP() << "the webhook server runs in this process: needs the loopback server's "
                      "Service dial-address annotation";
    }
    ASSERT_TRUE(cluster_->ApplyCRDs(kCrdDir).ok());
    rest_ = cluster_->rest();
    pools_ = std::make_unique<kube::Informer<api::SpiderIPPool>>(rest_);
    subnets_ = std::make_unique<kube::Informer<api::SpiderSubnet>>(rest_);
    threads_.emplace_back([this](std::stop_token s) { pools_->Run(s); });
    threads_.emplace_back([this](std::stop_token s) { subnets_->Run(s); });
    ASSERT_TRUE(pools_->WaitForCacheSync(absl::Seconds(30)));
    ASSERT_TRUE(subnets_->WaitForCacheSync(absl::Seconds(30)));

    WebhookServerOptions o;
    o.bind_address = "127.0.0.1";
    o.port = 0;
    o.service_namespace = cluster_->ns();
    o.mutating_configuration_name = Name("spiderpool-controller");
    o.validating_configuration_name = Name("spiderpool-controller");
    o.validation.enable_validating_resources_deleted_webhook = true;
    o.ippool_informer = pools_.get();
    o.subnet_informer = subnets_.get();
    o.clock = &clock_;
    auto w = WebhookServer::Create(rest_, std::move(o));
    ASSERT_TRUE(w.ok()) << w.status();
    webhook_ = *std::move(w);
    // As the chart would: the configurations (without caBundle) exist before the server starts.
    ASSERT_TRUE(webhook_->EnsureConfigurations().ok());
    absl::Status started = webhook_->Start();
    ASSERT_TRUE(started.ok()) << started;
    // The Service: port 5722, routed to where the test server listens.
    const api::ResourceInfo& services = api::ServiceResource();
    Json svc = {{"apiVersion", "v1"},
                {"kind", "Service"},
                {"metadata",
                 {{"name", "spiderpool-controller"},
                  {"namespace", cluster_->ns()},
                  {"annotations",
                   {{std::string(kube::testing::kServiceDialAddressAnnotation),
                     StrCat("127.0.0.1:", webhook_->port())}}}}},
                {"spec", {{"ports", {{{"name", "webhook"}, {"port", kWebhookPort}}}}}}};
    ASSERT_TRUE(kube::DynamicClient(rest_, services).Create(svc).ok());
  }

  void TearDown() override {
    if (webhook_ != nullptr) webhook_->Stop();
    for (auto& t : threads_) t.request_stop();
    threads_.clear();
  }

  std::string Name(const std::string& s) const { return cluster_->ns() + "-" + s; }

  // A cert_dir-mode server on 127.0.0.1 for Service `service`, configurations Name(config).
  WebhookServerOptions CertDirOptions(const std::string& dir, const std::string& service,
                                      const std::string& config) {
    WebhookServerOptions o;
    o.bind_address = "127.0.0.1";
    o.port = 0;
    o.cert_dir = dir;
    o.service_name = service;
    o.service_namespace = cluster_->ns();
    o.mutating_configuration_name = Name(config);
    o.validating_configuration_name = Name(config);
    o.ippool_informer = pools_.get();
    o.subnet_informer = subnets_.get();
    return o;
  }

  absl::StatusOr<api::SpiderIPPool> CreatePool(const std::string& name, const std::string& subnet,
                                               std::vector<std::string> ips,
                                               std::optional<std::string> gateway = {}) {
    api::SpiderIPPool p;
    p.SetTypeMeta();
    p.metadata.name = name;
    p.spec.subnet = subnet;
    p.spec.ips = std::move(ips);
    p.spec.gateway = std::move(gateway);
    return kube::Client<api::SpiderIPPool>(rest_).Create(p);
  }

  static std::string Denied(const std::string& webhook, const std::string& message) {
    return StrCat("admission webhook \"", webhook, "\" denied the request: ", message);
  }

  base::SimulatedClock clock_{absl::Now()};
  std::unique_ptr<kube::testing::TestCluster> cluster_;
  std::shared_ptr<kube::RestClient> rest_;
  std::unique_ptr<kube::Informer<api::SpiderIPPool>> pools_;
  std::unique_ptr<kube::Informer<api::SpiderSubnet>> subnets_;
  std::vector<std::jthread> threads_;
  std::unique_ptr<WebhookServer> webhook_;
};

TEST_F(WebhookIntegrationTest, ValidPoolComesBackDefaulted) {
  auto p = CreatePool(Name("p1"), "10.10.0.0/24",
                      {"10.10.0.7", "10.10.0.1-10.10.0.5", "10.10.0.6"}, "10.10.0.254");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->spec.ip_version, 4);
  EXPECT_EQ(p->spec.ips, std::vector<std::string>{"10.10.0.1-10.10.0.7"});
  EXPECT_EQ(p->metadata.finalizers, std::vector<std::string>{"spiderpool.spidernet.io"});
  EXPECT_EQ(p->metadata.labels.at("ipam.spidernet.io/ippool-cidr"), "10-10-0-0-24");
  EXPECT_TRUE(webhook_->CheckHealth().ok());
  EXPECT_GE(webhook_->server().stats().requests, 2u);  // mutating + validating
}

TEST_F(WebhookIntegrationTest, OverlappingPoolCreatedRightAfterIsRejected) {
  ASSERT_TRUE(CreatePool(Name("a"), "10.20.0.0/24", {"10.20.0.1-10.20.0.9"}).ok());
  // Immediately: the informer may not have seen "a" yet; the live read has.
  auto b = CreatePool(Name("b"), "10.20.0.0/16", {"10.20.1.1"});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(kube::HttpCode(b.status()), 422);
  EXPECT_EQ(b.status().message(),
            Denied("spiderippool.spiderpool.spidernet.io",
                   StrCat("SpiderIPPool.spiderpool.spidernet.io \"", Name("b"),
                          "\" is invalid: spec.subnet: Invalid value: \"10.20.0.0/16\": overlap "
                          "with IPPool ", Name("a"), " which 'spec.subnet' is 10.20.0.0/24")));
  // Same subnet, overlapping IPs: Forbidden on spec.ips; disjoint IPs: fine (§13).
  auto c = CreatePool(Name("c"), "10.20.0.0/24", {"10.20.0.5-10.20.0.20"});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(StrCat("spec.ips: Forbidden: overlap with IPPool ",
                                             Name("a"), " in IP ranges [10.20.0.5-10.20.0.9]")),
            absl::string_view::npos) << c.status();
  EXPECT_TRUE(CreatePool(Name("d"), "10.20.0.0/24", {"10.20.0.10-10.20.0.20"}).ok());
}

TEST_F(WebhookIntegrationTest, GatewayAndIPsOutsideTheSubnet) {
  auto g = CreatePool(Name("g"), "10.30.0.0/24", {"10.30.0.1"}, "10.31.0.1");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(),
            Denied("spiderippool.spiderpool.spidernet.io",
                   StrCat("SpiderIPPool.spiderpool.spidernet.io \"", Name("g"),
                          "\" is invalid: spec.gateway: Invalid value: \"10.31.0.1\": not "
                          "pertains to the 'spec.subnet' 10.30.0.0/24 of IPPool")));
  auto i = CreatePool(Name("i"), "10.30.0.0/24", {"10.30.0.1", "10.30.1.5"});
  ASSERT_FALSE(i.ok());
  EXPECT_EQ(kube::HttpCode(i.status()), 422);
  EXPECT_EQ(i.status().message(),
            Denied("spiderippool.spiderpool.spidernet.io",
                   StrCat("SpiderIPPool.spiderpool.spidernet.io \"", Name("i"),
                          "\" is invalid: spec.ips[1]: Invalid value: \"10.30.1.5\": not match "
                          "base subnet: 10.30.1.5 (outside 'spec.subnet' 10.30.0.0/24)")));
  // The mutating webhook merged the ranges before the validating one looked at them.
}

TEST_F(WebhookIntegrationTest, ImmutableSubnetAndDeletingAPoolWithAllocatedIPs) {
  auto p = CreatePool(Name("u"), "10.40.0.0/24", {"10.40.0.1-10.40.0.9"});
  ASSERT_TRUE(p.ok()) << p.status();
  kube::Client<api::SpiderIPPool> pools(rest_);
  api::SpiderIPPool changed = *p;
  changed.spec.subnet = "10.41.0.0/24";
  changed.spec.ips = {"10.41.0.1"};
  auto u = pools.Update(changed);
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(kube::HttpCode(u.status()), 422);
  EXPECT_EQ(u.status().message(),
            Denied("spiderippool.spiderpool.spidernet.io",
                   StrCat("SpiderIPPool.spiderpool.spidernet.io \"", Name("u"),
                          "\" is invalid: spec.subnet: Forbidden: is not changeable")));

  // Two IPs in use (status written through /status, which no webhook sees).
  api::SpiderIPPool st = *p;
  st.SetAllocatedIPs({{"10.40.0.1", {.pod = "ns/a", .pod_uid = "u1"}},
                      {"10.40.0.2", {.pod = "ns/b", .pod_uid = "u2"}}});
  ASSERT_TRUE(pools.UpdateStatus(st).ok());
  absl::Status del = pools.Delete("", Name("u"));
  ASSERT_FALSE(del.ok());
  EXPECT_EQ(kube::HttpCode(del), 403);
  EXPECT_EQ(del.message(),
            Denied("spiderippool.spiderpool.spidernet.io",
                   StrCat("spiderippools.spiderpool.spidernet.io \"", Name("u"),
                          "\" is forbidden: cannot delete an IPPool with allocated IPs(2)")));
  // Removing an IP in use is refused too.
  auto now = pools.Get("", Name("u"));
  ASSERT_TRUE(now.ok());
  now->spec.ips = {"10.40.0.2-10.40.0.9"};
  auto shrink = pools.Update(*now);
  ASSERT_FALSE(shrink.ok());
  EXPECT_NE(shrink.status().message().find(
                "remove an IP address 10.40.0.1 that is being used by Pod ns/a"),
            absl::string_view::npos) << shrink.status();
  // Released: the delete passes (the finalizer keeps the object until the controller acts).
  st = *pools.Get("", Name("u"));
  st.SetAllocatedIPs({});
  ASSERT_TRUE(pools.UpdateStatus(st).ok());
  EXPECT_TRUE(pools.Delete("", Name("u")).ok());
}

TEST_F(WebhookIntegrationTest, SubnetReservedIPAndCoordinatorDefaults) {
  api::SpiderSubnet s;
  s.SetTypeMeta();
  s.metadata.name = Name("s");
  s.spec.subnet = "fd00:50::/120";
  s.spec.ips = {"fd00:50::10", "fd00:50::1-fd00:50::f"};
  auto got = kube::Client<api::SpiderSubnet>(rest_).Create(s);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->spec.ip_version, 6);
  EXPECT_EQ(got->spec.ips, std::vector<std::string>{"fd00:50::1-fd00:50::10"});
  EXPECT_EQ(got->metadata.labels.at("ipam.spidernet.io/subnet-cidr"), "fd00-50---120");
  EXPECT_TRUE(got->metadata.HasFinalizer("spiderpool.spidernet.io"));

  api::SpiderReservedIP r;
  r.SetTypeMeta();
  r.metadata.name = Name("r");
  r.spec.ips = {"10.60.0.3", "10.60.0.2"};
  auto rr = kube::Client<api::SpiderReservedIP>(rest_).Create(r);
  ASSERT_TRUE(rr.ok()) << rr.status();
  EXPECT_EQ(rr->spec.ip_version, 4);
  EXPECT_EQ(rr->spec.ips, std::vector<std::string>{"10.60.0.2-10.60.0.3"});

  Json coord = {{"apiVersion", "spiderpool.spidernet.io/v2beta1"},
                {"kind", "SpiderCoordinator"},
                {"metadata", {{"name", Name("coord")}}},
                {"spec", {{"podCIDRType", "cluster"}, {"hijackCIDR", {"10.96.0.1"}}}}};
  auto cc = kube::DynamicClient(rest_, api::SpiderCoordinator::Resource()).Create(coord);
  ASSERT_TRUE(cc.ok()) << cc.status();
  EXPECT_EQ((*cc)["spec"]["hijackCIDR"], Json::array({"10.96.0.1/32"}));
  EXPECT_EQ((*cc)["spec"]["hostRuleTable"], 500);
  EXPECT_EQ((*cc)["metadata"]["finalizers"][0], "spiderpool.spidernet.io");
  coord["metadata"]["name"] = Name("coord2");
  coord["spec"]["podCIDRType"] = "bogus";
  auto bad = kube::DynamicClient(rest_, api::SpiderCoordinator::Resource()).Create(coord);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("spec.podCIDRType"), absl::string_view::npos)
      << bad.status();
}

Json Smc(const std::string& ns, const std::string& name, Json macvlan) {
  return {{"apiVersion", "spiderpool.spidernet.io/v2beta1"},
          {"kind", "SpiderMultusConfig"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"cniType", "macvlan"}, {"macvlan", macvlan}}}};
}

TEST_F(WebhookIntegrationTest, MultusConfigRules) {
  kube::DynamicClient smcs(rest_, api::SpiderMultusConfig::Resource());
  const std::string ns = cluster_->ns();
  auto ok = smcs.Create(Smc(ns, "m1", {{"master", {"eth0"}}, {"ippools", {{"ipv4", {"p"}}}}}));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ((*ok)["spec"]["macvlan"]["vlanID"], 0);  // the webhook's defaults
  EXPECT_EQ((*ok)["spec"]["macvlan"]["mtu"], 0);

  // vlanID out of range: the CRD schema (between the two webhook phases) answers first, as in
  // kube-apiserver; the webhook's own "invalid vlanId" rule is in handlers_test.
  auto vlan = smcs.Create(Smc(ns, "m2", {{"master", {"eth0"}}, {"vlanID", 5000}}));
  ASSERT_FALSE(vlan.ok());
  EXPECT_EQ(kube::HttpCode(vlan.status()), 422);
  EXPECT_NE(vlan.status().message().find("spec.macvlan.vlanID"), absl::string_view::npos)
      << vlan.status();
  EXPECT_NE(vlan.status().message().find("4094"), absl::string_view::npos) << vlan.status();

  auto bond = smcs.Create(Smc(ns, "m3", {{"master", {"eth0", "eth1"}}}));
  ASSERT_FALSE(bond.ok());
  EXPECT_EQ(kube::HttpCode(bond.status()), 422);
  EXPECT_EQ(bond.status().message(),
            Denied("spidermultusconfig.spiderpool.spidernet.io",
                   "SpiderMultusConfig.spiderpool.spidernet.io \"m3\" is invalid: "
                   "spec.macvlan.bond: Required value: the bond property is nil with multiple "
                   "Interfaces: set bond.name and bond.mode, or use one master"));
}

TEST_F(WebhookIntegrationTest, CertificateRotation) {
  const std::string cfg = Name("spiderpool-controller");
  kw::ServingCertOptions co;
  co.service_name = "spiderpool-controller";
  co.service_namespace = cluster_->ns();
  const std::string first_ca = webhook_->ca_bundle_pem();
  ASSERT_FALSE(first_ca.empty());
  auto fresh = kw::GenerateServingBundle(co);
  ASSERT_TRUE(fresh.ok());

  // Another replica rotated the Secret. This replica's next check (a simulated 5 minutes later)
  // patches the caBundle, then serves the new certificate.
  kube::Client<api::Secret> secrets(rest_);
  auto secret = secrets.Get(cluster_->ns(), std::string(kTLSSecretName));
  ASSERT_TRUE(secret.ok()) << secret.status();
  secret->Set("ca.crt", fresh->ca_pem);
  secret->Set("tls.crt", fresh->cert_pem);
  secret->Set("tls.key", fresh->key_pem);
  ASSERT_TRUE(secrets.Update(*secret).ok());
  ASSERT_TRUE(clock_.WaitForSleepers(1));
  clock_.Advance(absl::Minutes(5));
  ASSERT_TRUE(clock_.WaitForSleepers(1));  // the check ran and parked again

  EXPECT_EQ(webhook_->server().CertificatePem(), fresh->cert_pem);
  EXPECT_EQ(webhook_->ca_bundle_pem(), fresh->ca_pem);
  auto m = kube::Client<api::MutatingWebhookConfiguration>(rest_).Get("", cfg);
  auto v = kube::Client<api::ValidatingWebhookConfiguration>(rest_).Get("", cfg);
  ASSERT_TRUE(m.ok() && v.ok());
  for (const auto& w : m->webhooks) EXPECT_EQ(*w.client_config.CABundlePEM(), fresh->ca_pem);
  for (const auto& w : v->webhooks) EXPECT_EQ(*w.client_config.CABundlePEM(), fresh->ca_pem);
  // The next call verifies the new certificate against the new bundle (the old CA is gone).
  auto p = CreatePool(Name("after"), "10.70.0.0/24", {"10.70.0.1"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->spec.ip_version, 4);
}

// cert_dir mode: tls.crt, tls.key and ca.crt written into `dir` (as a mounted Secret) for the
// Service `service`, and the options of a server using it, whose configurations are
// Name(config).
void WriteCertDir(const std::string& service, const std::string& ns, const std::string& dir,
                  kw::ServingBundle* bundle) {
  kw::ServingCertOptions co;
  co.service_name = service;
  co.service_namespace = ns;
  auto b = kw::GenerateServingBundle(co);
  ASSERT_TRUE(b.ok()) << b.status();
  *bundle = *b;
  std::ofstream(dir + "/tls.crt") << bundle->cert_pem;
  std::ofstream(dir + "/tls.key") << bundle->key_pem;
  std::ofstream(dir + "/ca.crt") << bundle->ca_pem;
}

// The other certificate mode (files of a mounted Secret, ca.crt patched into the caBundle) and
// the kube::Runnable entry point.
TEST_F(WebhookIntegrationTest, CertDirModeAsARunnable) {
  base::testing::TempDir tmp("webhook");  // before the server, which reads the files in it
  const std::string& dir = tmp.path();
  kw::ServingBundle bundle;
  ASSERT_NO_FATAL_FAILURE(WriteCertDir("spiderpool-controller-2", cluster_->ns(), dir, &bundle));
  auto w = WebhookServer::Create(rest_, CertDirOptions(dir, "spiderpool-controller-2", "dir"));
  ASSERT_TRUE(w.ok()) << w.status();
  WebhookServer& second = **w;
  ASSERT_TRUE(second.EnsureConfigurations().ok());
  std::jthread run([&](std::stop_token stop) { EXPECT_TRUE(second.Run(stop).ok()); });
  // Wait (bounded) for Run to be serving.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!second.CheckHealth().ok() && absl::Now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(second.CheckHealth().ok());
  EXPECT_EQ(second.ca_bundle_pem(), bundle.ca_pem);
  auto v = kube::Client<api::ValidatingWebhookConfiguration>(rest_).Get("", Name("dir"));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v->webhooks[0].client_config.CABundlePEM(), bundle.ca_pem);
  EXPECT_EQ(v->webhooks[0].client_config.service->name, "spiderpool-controller-2");

  const api::ResourceInfo& services = api::ServiceResource();
  Json svc = {{"apiVersion", "v1"},
              {"kind", "Service"},
              {"metadata",
               {{"name", "spiderpool-controller-2"},
                {"namespace", cluster_->ns()},
                {"annotations",
                 {{std::string(kube::testing::kServiceDialAddressAnnotation),
                   StrCat("127.0.0.1:", second.port())}}}}},
              {"spec", {{"ports", {{{"port", kWebhookPort}}}}}}};
  ASSERT_TRUE(kube::DynamicClient(rest_, services).Create(svc).ok());
  const uint64_t before = second.server().stats().requests;
  auto p = CreatePool(Name("viadir"), "10.80.0.0/24", {"10.80.0.2", "10.80.0.1"});
  ASSERT_TRUE(p.ok()) << p.status();  // both servers' webhooks ran
  EXPECT_EQ(p->spec.ips, std::vector<std::string>{"10.80.0.1-10.80.0.2"});
  EXPECT_EQ(second.server().stats().requests, before + 2);
  run.request_stop();
  run.join();
  EXPECT_FALSE(second.CheckHealth().ok());
  // Both configurations point at a stopped server now: remove them.
  ASSERT_TRUE(kube::Client<api::ValidatingWebhookConfiguration>(rest_).Delete("", Name("dir")).ok());
  ASSERT_TRUE(kube::Client<api::MutatingWebhookConfiguration>(rest_).Delete("", Name("dir")).ok());
}

// A controller started before its webhook configurations exist (cert_dir mode) serves anyway
// and patches their caBundle once they appear, instead of exiting (and crash-looping) with
// "MutatingWebhookConfiguration ... not found" (issue 18).
TEST_F(WebhookIntegrationTest, CertDirModeWaitsForItsConfigurations) {
  base::testing::TempDir tmp("webhook");  // before the server, which reads the files in it
  const std::string& dir = tmp.path();
  kw::ServingBundle bundle;
  ASSERT_NO_FATAL_FAILURE(WriteCertDir("spiderpool-controller-3", cluster_->ns(), dir, &bundle));
  WebhookServerOptions o = CertDirOptions(dir, "spiderpool-controller-3", "late");
  o.cert_reload_interval = absl::Milliseconds(50);
  auto w = WebhookServer::Create(rest_, std::move(o));
  ASSERT_TRUE(w.ok()) << w.status();
  WebhookServer& late = **w;
  ASSERT_TRUE(late.Start().ok()) << "a missing configuration must not fail Start";
  EXPECT_TRUE(late.CheckHealth().ok());
  EXPECT_EQ(late.ca_bundle_pem(), "") << "nothing patched yet";

  // The configurations appear (as the chart would create them), without a caBundle.
  api::MutatingWebhookConfiguration m = late.MutatingConfiguration();
  api::ValidatingWebhookConfiguration v = late.ValidatingConfiguration();
  for (auto& h : m.webhooks) h.client_config.ca_bundle.clear();
  for (auto& h : v.webhooks) h.client_config.ca_bundle.clear();
  ASSERT_TRUE(kube::Client<api::MutatingWebhookConfiguration>(rest_).Create(m).ok());
  ASSERT_TRUE(kube::Client<api::ValidatingWebhookConfiguration>(rest_).Create(v).ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(30);  // a failure guard only
  while (late.ca_bundle_pem() != bundle.ca_pem && absl::Now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(late.ca_bundle_pem(), bundle.ca_pem);
  auto got = kube::Client<api::ValidatingWebhookConfiguration>(rest_).Get("", Name("late"));
  EXPECT_TRUE(got.ok()) << got.status();
  if (got.ok()) {
    EXPECT_EQ(*got->webhooks[0].client_config.CABundlePEM(), bundle.ca_pem);
  }
  late.Stop();
  // Always removed (no ASSERT above): they point at a stopped server.
  ASSERT_TRUE(kube::Client<api::ValidatingWebhookConfiguration>(rest_).Delete("", Name("late")).ok());
  ASSERT_TRUE(kube::Client<api::MutatingWebhookConfiguration>(rest_).Delete("", Name("late")).ok());
}

// The Pod resource-injection webhook (podResourceInject, issue 19 point 3) through the API
// server's admission chain: a pod naming a group of SpiderMultusConfigs by annotation is stored
// with their networks and resource limits; no match is refused with upstream's message.
TEST_F(WebhookIntegrationTest, PodResourceInjectionThroughTheApiServer) {
  kube::Informer<api::SpiderMultusConfig> smcs(rest_);
  kube::Informer<api::Namespace> namespaces(rest_);
  threads_.emplace_back([&smcs](std::stop_token s) { smcs.Run(s); });
  threads_.emplace_back([&namespaces](std::stop_token s) { namespaces.Run(s); });
  ASSERT_TRUE(smcs.WaitForCacheSync(absl::Seconds(30)));
  ASSERT_TRUE(namespaces.WaitForCacheSync(absl::Seconds(30)));

  WebhookServerOptions o;
  o.bind_address = "127.0.0.1";
  o.port = 0;
  o.service_name = "spiderpool-podinject";
  o.service_namespace = cluster_->ns();
  o.mutating_configuration_name = Name("podinject");
  o.validating_configuration_name = Name("podinject");
  o.enable_pod_resource_inject = true;
  o.multus_config_informer = &smcs;
  o.namespace_informer = &namespaces;
  o.ippool_informer = pools_.get();
  o.subnet_informer = subnets_.get();
  o.clock = &clock_;
  auto w = WebhookServer::Create(rest_, std::move(o));
  ASSERT_TRUE(w.ok()) << w.status();
  std::unique_ptr<WebhookServer> inject = *std::move(w);
  ASSERT_TRUE(inject->EnsureConfigurations().ok());
  ASSERT_TRUE(inject->Start().ok());
  const api::ResourceInfo& services = api::ServiceResource();
  ASSERT_TRUE(kube::DynamicClient(rest_, services)
                  .Create({{"apiVersion", "v1"},
                           {"kind", "Service"},
                           {"metadata",
                            {{"name", "spiderpool-podinject"},
                             {"namespace", cluster_->ns()},
                             {"annotations",
                              {{std::string(kube::testing::kServiceDialAddressAnnotation),
                                StrCat("127.0.0.1:", inject->port())}}}}},
                           {"spec", {{"ports", {{{"port", kWebhookPort}}}}}}})
                  .ok());

  // The SMC of the group "gpu" (through the Spider webhooks, as a user creates it).
  kube::DynamicClient smc_client(rest_, api::SpiderMultusConfig::Resource());
  auto smc = smc_client.Create(
      {{"apiVersion", "spiderpool.spidernet.io/v2beta1"},
       {"kind", "SpiderMultusConfig"},
       {"metadata", {{"name", "gpu1"}, {"namespace", cluster_->ns()},
                     {"labels", {{"cni.spidernet.io/rdma-resource-inject", "gpu"}}}}},
       {"spec", {{"cniType", "sriov"},
                 {"sriov", {{"resourceName", "spidernet.io/gpu1"},
                            {"ippools", {{"ipv4", {"gpu-v4"}}}}}}}}});
  ASSERT_TRUE(smc.ok()) << smc.status();
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (smcs.store().Get(cluster_->ns() + "/gpu1") == nullptr && absl::Now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  const api::ResourceInfo& pods = api::Pod::Resource();
  auto pod = [&](const std::string& name, const std::string& group) {
    return kube::DynamicClient(rest_, pods).Create(
        {{"apiVersion", "v1"},
         {"kind", "Pod"},
         {"metadata", {{"name", name}, {"namespace", cluster_->ns()},
                       {"annotations", {{"cni.spidernet.io/rdma-resource-inject", group}}}}},
         {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}});
  };
  auto stored = pod("p1", "gpu");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ((*stored)["metadata"]["annotations"].value("k8s.v1.cni.cncf.io/networks", ""),
            cluster_->ns() + "/gpu1");
  EXPECT_EQ((*stored)["spec"]["containers"][0]["resources"]["limits"].value("spidernet.io/gpu1", ""),
            "1");
  auto refused = pod("p2", "none");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            Denied("pod.spiderpool.spidernet.io",
                   "no spidermultusconfigs with annotation: cni.spidernet.io/rdma-resource-inject:"
                   "none found"));

  (void)kube::DynamicClient(rest_, pods).Delete(cluster_->ns(), "p1");
  inject->Stop();
  ASSERT_TRUE(kube::Client<api::ValidatingWebhookConfiguration>(rest_).Delete("", Name("podinject")).ok());
  ASSERT_TRUE(kube::Client<api::MutatingWebhookConfiguration>(rest_).Delete("", Name("podinject")).ok());
}

}  // namespace
}  // namespace spiderpool::op::webhook
