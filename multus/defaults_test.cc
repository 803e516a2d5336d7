// The defaults: ApplyCrdDefaults against every `default:` in the SpiderMultusConfig CRD file,
// the webhook's per-cniType values (reference §4), and the full pipeline's idempotence.

#include "multus/defaults.h"

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/codec.h"
#include "base/json.h"
#include "base/yaml.h"
#include "base/testing/temp_dir.h"

namespace spiderpool::multus {
namespace {

using ::spiderpool::base::testing::ReadFile;

using api::SpiderMultusConfig;
using base::Json;

constexpr const char* kCrd =
    "charts/spiderpool/crds/spiderpool.spidernet.io_spidermultusconfigs.yaml";

SpiderMultusConfig FromYaml(const std::string& yaml) {
  auto j = base::ParseYaml(yaml);
  EXPECT_TRUE(j.ok()) << j.status();
  auto smc = api::Decode<SpiderMultusConfig>(j.ok() ? *j : Json::object());
  EXPECT_TRUE(smc.ok()) << smc.status();
  return smc.ok() ? *smc : SpiderMultusConfig{};
}

Json SpecJson(const SpiderMultusConfig& smc) { return api::Encode(smc)["spec"]; }

struct CrdDefault {
  Json::json_pointer path;  // under spec
  Json value;
};

// Walks the schema: every `default:` with its path, and an object that has every object-typed
// property present (empty), so each default has its parent.
void Walk(const Json& schema, const Json::json_pointer& path, std::vector<CrdDefault>* defaults,
          Json* skeleton) {
  if (schema.contains("default")) defaults->push_back({path, schema["default"]});
  if (schema.value("type", "") != "object" || !schema.contains("properties")) return;
  (*skeleton)[path] = Json::object();
  for (const auto& [name, sub] : schema["properties"].items()) {
    Walk(sub, path / name, defaults, skeleton);
  }
}

TEST(CrdDefaults, EveryCrdDefaultIsApplied) {
  auto crd = base::ParseYaml(ReadFile(kCrd));
  ASSERT_TRUE(crd.ok()) << crd.status();
  const Json& spec_schema =
      (*crd)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
  std::vector<CrdDefault> defaults;
  Json skeleton = Json::object();
  Walk(spec_schema, Json::json_pointer(), &defaults, &skeleton);
  ASSERT_GE(defaults.size(), 20u);

  // The skeleton lacks required fields (master, bond.name, ...): decode anyway.
  api::DecodeErrors errs;
  SpiderMultusConfig smc = api::DecodeInto<SpiderMultusConfig>(Json{{"spec", skeleton}}, &errs);
  ApplyCrdDefaults(&smc);
  Json got = SpecJson(smc);
  for (const CrdDefault& d : defaults) {
    ASSERT_TRUE(got.contains(d.path)) << d.path.to_string() << " not defaulted";
    EXPECT_EQ(got[d.path], d.value) << d.path.to_string();
  }
  // And nothing is defaulted where the parent object is absent.
  SpiderMultusConfig bare;
  ApplyCrdDefaults(&bare);
  EXPECT_EQ(SpecJson(bare), Json::parse(R"({"cniType":"custom","enableCoordinator":true,
                                            "disableIPAM":false})"));
}

TEST(WebhookDefaults, MacvlanAndIpvlan) {
  for (const char* type : {"macvlan", "ipvlan"}) {
    SpiderMultusConfig smc = FromYaml(std::string("spec: {cniType: ") + type + ", " + type +
                                      ": {master: [a, b], bond: {name: b0, mode: 1}}}");
    ApplyWebhookDefaults(&smc);
    Json want = Json::parse(R"({"master":["a","b"],"mtu":0,"vlanID":0,
        "bond":{"name":"b0","mode":1,"options":""},"rdmaResourceName":"","ippools":{}})");
    EXPECT_EQ(SpecJson(smc)[type], want) << type;
  }
}

TEST(WebhookDefaults, VlanModes) {
  SpiderMultusConfig manual = FromYaml("spec: {cniType: vlan, vlan: {master: [eth0]}}");
  ApplyWebhookDefaults(&manual);
  EXPECT_EQ(manual.spec.vlan->vlan_mode, "manual");
  EXPECT_EQ(manual.spec.vlan->vlan_id, 0);
  EXPECT_EQ(manual.spec.vlan->mtu, 0);
  SpiderMultusConfig automatic =
      FromYaml("spec: {cniType: vlan, vlan: {master: [eth0], vlanMode: auto}}");
  ApplyWebhookDefaults(&automatic);
  EXPECT_FALSE(automatic.spec.vlan->vlan_id.has_value());
}

TEST(WebhookDefaults, SriovIBSriovIpoibOvs) {
  SpiderMultusConfig sriov = FromYaml("spec: {cniType: sriov, sriov: {resourceName: r}}");
  ApplyWebhookDefaults(&sriov);
  EXPECT_EQ(SpecJson(sriov)["sriov"],
            Json::parse(R"({"resourceName":"r","vlanID":0,"mtu":0,"minTxRateMbps":0,
                            "maxTxRateMbps":0,"rdmaIsolation":false,"ippools":{}})"));

  SpiderMultusConfig ib = FromYaml("spec: {cniType: ib-sriov, ibsriov: {resourceName: r}}");
  ApplyWebhookDefaults(&ib);
  EXPECT_EQ(SpecJson(ib)["ibsriov"],
            Json::parse(R"({"resourceName":"r","pkey":"","linkState":"enable",
                            "rdmaIsolation":true,"enableIbKubernetes":false,"ippools":{}})"));

  SpiderMultusConfig ipoib = FromYaml("spec: {cniType: ipoib, ipoib: {master: ib0}}");
  ApplyWebhookDefaults(&ipoib);
  EXPECT_TRUE(ipoib.spec.ipoib->ippools.has_value());

  SpiderMultusConfig ovs = FromYaml("spec: {cniType: ovs, ovs: {bridge: br0}}");
  ApplyWebhookDefaults(&ovs);
  EXPECT_EQ(ovs.spec.ovs->vlan, 0);
  EXPECT_TRUE(ovs.spec.ovs->ippools.has_value());
}

TEST(WebhookDefaults, OnlyTheSelectedTypeIsDefaulted) {
  SpiderMultusConfig smc =
      FromYaml("spec: {cniType: macvlan, macvlan: {master: [a]}, sriov: {resourceName: r}}");
  ApplyWebhookDefaults(&smc);
  EXPECT_FALSE(smc.spec.sriov->vlan_id.has_value());
  EXPECT_EQ(smc.spec.macvlan->vlan_id, 0);
}

TEST(WebhookDefaults, Coordinator) {
  SpiderMultusConfig none = FromYaml("spec: {cniType: macvlan, macvlan: {master: [a]}}");
  ApplyWebhookDefaults(&none);
  EXPECT_EQ(SpecJson(none)["coordinator"],
            Json::parse(R"({"mode":"auto","tunePodRoutes":true,"podRPFilter":0,
                            "vethLinkAddress":"","podMACPrefix":"","podDefaultRouteNIC":""})"));

  SpiderMultusConfig partial =
      FromYaml("spec: {cniType: macvlan, macvlan: {master: [a]}, coordinator: {mode: overlay}}");
  ApplyWebhookDefaults(&partial);
  EXPECT_EQ(SpecJson(partial)["coordinator"],
            Json::parse(R"({"mode":"overlay","tunePodRoutes":false,"podRPFilter":0,
                            "txQueueLen":0,"podMACPrefix":"","podDefaultRouteNIC":""})"));
  // Through the whole pipeline the CRD default (true) comes first, as on a real server.
  SpiderMultusConfig real =
      FromYaml("spec: {cniType: macvlan, macvlan: {master: [a]}, coordinator: {mode: overlay}}");
  DefaultSpiderMultusConfig(&real);
  EXPECT_EQ(real.spec.coordinator->tune_pod_routes, true);
  EXPECT_EQ(real.spec.coordinator->veth_mtu, 1500);
  EXPECT_EQ(real.spec.coordinator->host_rule_table, 500);
}

TEST(WebhookDefaults, CustomHasNoCoordinator) {
  SpiderMultusConfig smc = FromYaml("spec: {enableCoordinator: true, coordinator: {mode: auto}}");
  ApplyWebhookDefaults(&smc);
  EXPECT_EQ(smc.spec.cni_type, "custom");
  EXPECT_EQ(smc.spec.custom_cni, "");
  EXPECT_EQ(smc.spec.enable_coordinator, false);
  EXPECT_FALSE(smc.spec.coordinator.has_value());
}

TEST(WebhookDefaults, ResourceInjectAnnotationsBecomeLabels) {
  SpiderMultusConfig smc = FromYaml(R"(
metadata:
  annotations: {cni.spidernet.io/rdma-resource-inject: gpu-rdma, other.io/x: val}
  labels: {keep: me}
spec: {cniType: sriov, sriov: {resourceName: r}})");
  ApplyWebhookDefaults(&smc);
  EXPECT_EQ(smc.metadata.labels,
            (std::map<std::string, std::string>{{"cni.spidernet.io/rdma-resource-inject",
                                                 "gpu-rdma"},
                                                {"keep", "me"}}));
  smc.metadata.annotations["cni.spidernet.io/network-resource-inject"] = "net-a";
  ApplyWebhookDefaults(&smc);
  EXPECT_EQ(smc.metadata.labels.at("cni.spidernet.io/network-resource-inject"), "net-a");
}

TEST(Pipeline, Idempotent) {
  for (const char* yaml :
       {"spec: {cniType: macvlan, macvlan: {master: [a]}}",
        "spec: {cniType: vlan, vlan: {master: [a, b], bond: {name: x, mode: 0}}}",
        "spec: {cniType: sriov, sriov: {resourceName: r}, coordinator: {podCIDRType: none}}",
        "spec: {cniType: ib-sriov, ibsriov: {}}", "spec: {cniType: ipoib, ipoib: {}}",
        "spec: {cniType: ovs, ovs: {bridge: b}}", "spec: {}"}) {
    SpiderMultusConfig smc = FromYaml(yaml);
    DefaultSpiderMultusConfig(&smc);
    Json once = api::Encode(smc);
    DefaultSpiderMultusConfig(&smc);
    EXPECT_EQ(api::Encode(smc), once) << yaml;
    // A defaulted object still decodes (round-trips through the API types).
    auto back = api::Decode<SpiderMultusConfig>(once);
    EXPECT_TRUE(back.ok()) << back.status();
  }
}

}  // namespace
}  // namespace spiderpool::multus
