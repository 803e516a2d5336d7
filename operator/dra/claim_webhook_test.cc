#include "operator/dra/claim_webhook.h"

#include <gtest/gtest.h>

#include "api/codec.h"

namespace spiderpool::op::dra {
namespace {

base::Json SeedClaim() {
  // The claim the resourceclaim controller makes from e2e/samples/dra/resourceclaimtemplate.yaml.
  return *base::ParseJson(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"generateName": "dra-demo-0-nic-", "namespace": "default"},
    "spec": {"devices": {
      "requests": [{"name": "nic", "exactly": {"deviceClassName": "netresources.spidernet.io"}},
                   {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}],
      "config": [{"requests": ["nic"], "opaque": {"driver": "netresources.spidernet.io",
        "parameters": {"apiVersion": "spiderpool.spidernet.io/v2beta1",
                       "kind": "SpiderClaimParameter", "name": "macvlan-claim"}}}]}}})");
}

std::shared_ptr<const api::SpiderIPPool> Pool(std::string name, std::string subnet,
                                              std::vector<std::string> multus, bool def = false) {
  auto p = std::make_shared<api::SpiderIPPool>();
  p->metadata.name = std::move(name);
  p->spec.subnet = std::move(subnet);
  p->spec.multus_name = std::move(multus);
  if (def) p->spec.default_ = true;
  return p;
}

struct Fixture {
  std::map<std::string, api::SpiderClaimParameter> scps;
  std::map<std::string, api::SpiderMultusConfig> smcs;
  std::vector<std::shared_ptr<const api::SpiderIPPool>> pools;
  int reads = 0;
  ClaimWebhookOptions Options() {
    ClaimWebhookOptions o{.spiderpool_namespace = "kube-system"};
    o.sources.claim_parameter = [this](const std::string& ns, const std::string& n)
        -> absl::StatusOr<std::optional<api::SpiderClaimParameter>> {
      ++reads;
      auto it = scps.find(ns + "/" + n);
      if (it == scps.end()) return std::nullopt;
      return it->second;
    };
    o.sources.multus_config = [this](const std::string& ns, const std::string& n)
        -> absl::StatusOr<std::optional<api::SpiderMultusConfig>> {
      auto it = smcs.find(ns + "/" + n);
      if (it == smcs.end()) return std::nullopt;
      return it->second;
    };
    o.sources.pools = [this] { return pools; };
    return o;
  }
  Fixture() {
    api::SpiderClaimParameter p;
    p.metadata = {.name = "macvlan-claim", .namespace_ = "default"};
    p.spec.default_nic = api::ClaimNic{.multus_name = "macvlan-conf", .namespace_ = "kube-system"};
    scps["default/macvlan-claim"] = p;
    api::SpiderMultusConfig smc;
    smc.metadata = {.name = "macvlan-conf", .namespace_ = "kube-system"};
    smc.spec.cni_type = "macvlan";
    smc.spec.macvlan = api::SpiderMacvlanCniConfig{.master = {"eth0"}};
    smcs["kube-system/macvlan-conf"] = smc;
    pools = {Pool("ippool-test", "172.18.0.0/16", {"kube-system/macvlan-conf"}),
             Pool("other", "172.19.0.0/16", {"kube-system/other-conf"}),
             Pool("v6", "fd00::/64", {"macvlan-conf"})};  // bare: spiderpool's namespace
  }
};

std::vector<std::string> Expressions(const base::Json& request) {
  std::vector<std::string> out;
  for (const auto& s : request["exactly"]["selectors"]) out.push_back(s["cel"]["expression"]);
  return out;
}

TEST(ClaimWebhook, SeedClaimGetsItsNetworksSelectors) {
  Fixture f;
  auto r = AddNetworkSelectors(SeedClaim(), f.Options());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->has_value());
  const base::Json& reqs = (**r)["spec"]["devices"]["requests"];
  EXPECT_EQ(Expressions(reqs[0]),
            (std::vector<std::string>{
                R"("ifName" in device.attributes["netresources.spidernet.io"] && )"
                R"(device.attributes["netresources.spidernet.io"].ifName == "eth0")",
                R"("cniMacvlan" in device.attributes["netresources.spidernet.io"] && )"
                R"(device.attributes["netresources.spidernet.io"].cniMacvlan == true)",
                R"("pool_ippool_test" in device.attributes["netresources.spidernet.io"])",
                R"("pool_v6" in device.attributes["netresources.spidernet.io"])"}));
  EXPECT_FALSE(reqs[1]["exactly"].contains("selectors"));  // another driver's request
  // Running it again on the result changes nothing.
  auto again = AddNetworkSelectors(**r, f.Options());
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->has_value());
}

TEST(ClaimWebhook, PoolsOfAnSmc) {
  Fixture f;
  api::SpiderMultusConfig smc = f.smcs["kube-system/macvlan-conf"];
  SmcPools p = PoolsOf(smc, f.pools, "kube-system");
  EXPECT_EQ(p.ipv4, std::vector<std::string>{"ippool-test"});
  EXPECT_EQ(p.ipv6, std::vector<std::string>{"v6"});
  // The SMC's own ippools win.
  smc.spec.macvlan->ippools = api::SpiderpoolPools{.ipv4 = {"named"}};
  EXPECT_EQ(PoolsOf(smc, f.pools, "kube-system").ipv4, std::vector<std::string>{"named"});
  // No pool names it: the cluster default pools; terminating / disabled pools never.
  api::SpiderMultusConfig lone;
  lone.metadata = {.name = "lone", .namespace_ = "x"};
  auto def = Pool("def", "10.0.0.0/8", {}, true);
  auto off = std::make_shared<api::SpiderIPPool>(*Pool("off", "10.1.0.0/16", {}, true));
  off->spec.disable = true;
  EXPECT_EQ(PoolsOf(lone, {def, off}, "kube-system").ipv4, std::vector<std::string>{"def"});
  EXPECT_TRUE(PoolsOf(lone, {off}, "kube-system").ipv4.empty());
}

TEST(ClaimWebhook, RdmaAndUnchangedClaims) {
  Fixture f;
  f.scps["default/macvlan-claim"].spec.enable_rdma = true;
  auto r = AddNetworkSelectors(SeedClaim(), f.Options());
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ(Expressions((**r)["spec"]["devices"]["requests"][0]).back(),
            R"("rdma" in device.attributes["netresources.spidernet.io"] && )"
            R"(device.attributes["netresources.spidernet.io"].rdma == true)");
  // No config of ours: untouched, and nothing read.
  base::Json other = SeedClaim();
  other["spec"]["devices"]["config"][0]["opaque"]["driver"] = "gpu.example.com";
  f.reads = 0;
  auto u = AddNetworkSelectors(other, f.Options());
  ASSERT_TRUE(u.ok());
  EXPECT_FALSE(u->has_value());
  EXPECT_EQ(f.reads, 0);
}

TEST(ClaimWebhook, DeniesWhatCannotWork) {
  Fixture f;
  base::Json bad = SeedClaim();
  bad["spec"]["devices"]["config"][0]["opaque"]["parameters"]["kind"] = "Foo";
  auto r = AddNetworkSelectors(bad, f.Options());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "spec.devices.config[0].opaque.parameters: kind: must be SpiderClaimParameter, got \"Foo\"");
  f.scps.clear();
  r = AddNetworkSelectors(SeedClaim(), f.Options());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(),
            "spec.devices.config[0].opaque.parameters: SpiderClaimParameter default/macvlan-claim not found");
  Fixture g;
  g.smcs.clear();
  r = AddNetworkSelectors(SeedClaim(), g.Options());
  EXPECT_EQ(r.status().message(),
            "SpiderClaimParameter default/macvlan-claim: spec.defaultNic: SpiderMultusConfig "
            "kube-system/macvlan-conf not found");
  // Through the handler: a 404 denial; UPDATE is never looked at.
  ClaimWebhookOptions o = g.Options();
  auto handler = ClaimHandler(o);
  api::AdmissionRequest req;
  req.operation = "CREATE";
  req.object = SeedClaim();
  kube::webhook::Mutation m = handler(req);
  EXPECT_FALSE(m.decision.allowed);
  ASSERT_TRUE(m.decision.status.has_value());
  EXPECT_EQ(m.decision.status->code, 404);
  req.operation = "UPDATE";
  EXPECT_TRUE(handler(req).decision.allowed);
  // An object without its namespace: the request's is used.
  Fixture h;
  auto ok_handler = ClaimHandler(h.Options());
  req.operation = "CREATE";
  req.object = SeedClaim();
  req.object["metadata"].erase("namespace");
  req.namespace_ = "default";
  kube::webhook::Mutation patched = ok_handler(req);
  EXPECT_TRUE(patched.decision.allowed);
  ASSERT_TRUE(patched.object.is_object());
  EXPECT_EQ(patched.object["spec"]["devices"]["requests"][0]["exactly"]["selectors"].size(), 4u);
}

TEST(ClaimWebhook, Configuration) {
  auto c = ClaimWebhookConfiguration("kube-system", "spiderpool-controller", 5722, "");
  base::Json j = api::Encode(c);
  EXPECT_EQ(j["metadata"]["name"], "spiderpool-controller-dra");
  EXPECT_EQ(j["webhooks"][0]["name"], "resourceclaim.spiderpool.spidernet.io");
  EXPECT_EQ(j["webhooks"][0]["clientConfig"]["service"]["path"], "/mutate-resource-k8s-io-v1-resourceclaim");
  EXPECT_EQ(j["webhooks"][0]["rules"][0]["resources"][0], "resourceclaims");
  EXPECT_EQ(j["webhooks"][0]["rules"][0]["operations"][0], "CREATE");
  EXPECT_EQ(j["webhooks"][0]["failurePolicy"], "Fail");
}

}  // namespace
}  // namespace spiderpool::op::dra
