// Golden tests (every multus/testdata/<case>.yaml against <case>.nad.json, and the seed object
// e2e/samples/multusconfig.yaml against macvlan-conf.nad.json), compared as JSON objects; then
// the individual generation rules, exact Go-style text against upstream's documented NADs, and
// the update helpers (NADNeedsUpdate / ApplyDesiredNAD).

#include "multus/generate.h"

#include <filesystem>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "agent/cni/ipam_conf.h"
#include "api/codec.h"
#include "api/core.h"
#include "api/spider.h"
#include "base/json.h"
#include "base/yaml.h"
#include "multus/defaults.h"
#include "base/testing/temp_dir.h"

namespace spiderpool::multus {
namespace {

using ::spiderpool::base::testing::ReadFile;

namespace fs = std::filesystem;
using api::NetworkAttachmentDefinition;
using api::SpiderMultusConfig;
using base::Json;

constexpr const char* kTestdata = "multus/testdata";
constexpr const char* kSeed = "e2e/samples/multusconfig.yaml";

SpiderMultusConfig LoadSmc(const fs::path& path) {
  auto j = base::ParseYaml(ReadFile(path));
  EXPECT_TRUE(j.ok()) << path << ": " << j.status();
  if (!j.ok()) return {};
  auto smc = api::Decode<SpiderMultusConfig>(*j);
  EXPECT_TRUE(smc.ok()) << path << ": " << smc.status();
  return smc.ok() ? *smc : SpiderMultusConfig{};
}

SpiderMultusConfig SmcFromYaml(const std::string& yaml) {
  auto j = base::ParseYaml(yaml);
  EXPECT_TRUE(j.ok()) << j.status();
  auto smc = api::Decode<SpiderMultusConfig>(j.ok() ? *j : Json::object());
  EXPECT_TRUE(smc.ok()) << smc.status();
  return smc.ok() ? *smc : SpiderMultusConfig{};
}

Json Parse(const std::string& text) {
  auto j = base::ParseJson(text);
  EXPECT_TRUE(j.ok()) << j.status() << " in " << text;
  return j.ok() ? *j : Json();
}

// The NAD as JSON with spec.config turned into the JSON object it holds.
Json Comparable(const NetworkAttachmentDefinition& nad) {
  Json j = api::Encode(nad);
  if (!nad.spec.config.empty()) j["spec"]["config"] = Parse(nad.spec.config);
  return j;
}

void ExpectGolden(const fs::path& smc_path, const fs::path& golden_path) {
  SCOPED_TRACE(smc_path.string());
  SpiderMultusConfig smc = LoadSmc(smc_path);
  auto nad = GenerateNAD(smc);
  ASSERT_TRUE(nad.ok()) << nad.status();
  Json want = Parse(ReadFile(golden_path));
  Json got = Comparable(*nad);
  EXPECT_EQ(got, want) << "JSON patch from the golden to ours:\n"
                       << base::DumpJsonPretty(Json::diff(want, got)) << "\nours:\n"
                       << base::DumpJsonPretty(got);
  // Generating again from the already defaulted object changes nothing (idempotent).
  SpiderMultusConfig defaulted = smc;
  DefaultSpiderMultusConfig(&defaulted);
  auto again = GenerateNAD(defaulted, Options{.apply_defaults = false});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->spec.config, nad->spec.config);
}

TEST(Golden, SeedObjectGivesKubeSystemMacvlanConf) {
  SpiderMultusConfig smc = LoadSmc(kSeed);
  auto nad = GenerateNAD(smc);
  ASSERT_TRUE(nad.ok()) << nad.status();
  EXPECT_EQ(nad->metadata.namespace_, "kube-system");
  EXPECT_EQ(nad->metadata.name, "macvlan-conf");
  ExpectGolden(kSeed, fs::path(kTestdata) / "macvlan-conf.nad.json");
}

TEST(Golden, EveryTestdataCase) {
  std::set<std::string> types;
  int cases = 0;
  for (const auto& e : fs::directory_iterator(kTestdata)) {
    if (e.path().extension() != ".yaml") continue;
    fs::path golden = e.path();
    golden.replace_extension(".nad.json");
    ASSERT_TRUE(fs::exists(golden)) << "no golden for " << e.path();
    ExpectGolden(e.path(), golden);
    types.insert(LoadSmc(e.path()).spec.cni_type.value_or("custom"));
    ++cases;
  }
  EXPECT_GE(cases, 13);
  EXPECT_EQ(types, (std::set<std::string>{"macvlan", "ipvlan", "vlan", "sriov", "ib-sriov",
                                          "ipoib", "ovs", "custom"}));
}

// ---- Text: Go's encoding/json output, byte for byte ----------------------------------------

// The NADs upstream's docs show (docs/usage/spider-multus-config.md), from SMCs whose
// defaults were not applied: our text is byte-identical.
TEST(Text, MatchesUpstreamDocumentedNADs) {
  Options raw{.apply_defaults = false};
  auto mac = GenerateCNIConfig(SmcFromYaml(R"(
metadata: {name: macvlan-ens192, namespace: kube-system}
spec: {cniType: macvlan, enableCoordinator: true, macvlan: {master: [ens192]}})"),
                               raw);
  ASSERT_TRUE(mac.ok()) << mac.status();
  EXPECT_EQ(*mac,
            R"({"cniVersion":"0.3.1","name":"macvlan-ens192","plugins":[{"type":"macvlan",)"
            R"("master":"ens192","mode":"bridge","ipam":{"type":"spiderpool"}},)"
            R"({"type":"coordinator"}]})");
  auto ipv = GenerateCNIConfig(SmcFromYaml(R"(
metadata: {name: ipvlan-ens192, namespace: kube-system}
spec: {cniType: ipvlan, enableCoordinator: true, ipvlan: {master: [ens192]}})"),
                               raw);
  ASSERT_TRUE(ipv.ok()) << ipv.status();
  EXPECT_EQ(*ipv,
            R"({"cniVersion":"0.3.1","name":"ipvlan-ens192","plugins":[{"type":"ipvlan",)"
            R"("master":"ens192","ipam":{"type":"spiderpool"}},{"type":"coordinator"}]})");
  auto sriov = GenerateCNIConfig(SmcFromYaml(R"(
metadata: {name: sriov-demo, namespace: kube-system}
spec: {cniType: sriov, enableCoordinator: true,
       sriov: {resourceName: spidernet.io/sriov_netdeivce, vlanID: 100}})"),
                                 raw);
  ASSERT_TRUE(sriov.ok()) << sriov.status();
  EXPECT_EQ(*sriov, R"({"cniVersion":"0.3.1","name":"sriov-demo","plugins":[{"vlan":100,)"
                    R"("type":"sriov","ipam":{"type":"spiderpool"}},{"type":"coordinator"}]})");
}

TEST(Text, SeedInGoFieldOrder) {
  auto config = GenerateCNIConfig(LoadSmc(kSeed));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(*config,
            R"({"cniVersion":"0.3.1","name":"macvlan-conf","plugins":[{"type":"macvlan",)"
            R"("master":"eth0","mode":"bridge","mtu":0,"ipam":{"type":"spiderpool"}},)"
            R"({"txQueueLen":0,"tunePodRoutes":true,"mode":"auto","type":"coordinator",)"
            R"("vethMTU":1500}]})");
}

TEST(Text, HtmlCharactersEscapedLikeGo) {
  SpiderMultusConfig smc = SmcFromYaml(R"(
metadata: {name: esc, namespace: default}
spec:
  cniType: macvlan
  enableCoordinator: false
  chainCNIJsonData: ['{"type":"x","note":"a<b>&c \u2028"}']
  macvlan: {master: [eth0]})");
  auto config = GenerateCNIConfig(smc);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_NE(config->find(R"("note":"a\u003cb\u003e\u0026c \u2028")"), std::string::npos)
      << *config;
  EXPECT_EQ(Parse(*config)["plugins"][1]["note"], "a<b>&c \u2028");
}

// ---- Rules ---------------------------------------------------------------------------------

TEST(Rules, NADNameFromCrNameAnnotation) {
  SpiderMultusConfig smc;
  smc.metadata.name = "a";
  EXPECT_EQ(NADName(smc), "a");
  smc.metadata.annotations[std::string(api::kAnnoMultusCRName)] = "b";
  EXPECT_EQ(NADName(smc), "b");
}

TEST(Rules, CniVersionAndConfigName) {
  SpiderMultusConfig smc = SmcFromYaml(R"(
metadata:
  name: net1
  namespace: ns
  annotations: {multus.spidernet.io/cni-version: "", cni.spidernet.io/cniconfig-name: ""}
spec: {cniType: macvlan, macvlan: {master: [eth0]}})");
  auto config = GenerateCNIConfig(smc);
  ASSERT_TRUE(config.ok()) << config.status();
  Json j = Parse(*config);
  // A present-but-empty version annotation is used as is (the webhook rejects it upstream);
  // an empty config-name annotation falls back to the NAD name.
  EXPECT_EQ(j["cniVersion"], "");
  EXPECT_EQ(j["name"], "net1");
}

TEST(Rules, DisableIPAMDropsTheIpamBlockForEveryType) {
  for (const auto& e : fs::directory_iterator(kTestdata)) {
    if (e.path().extension() != ".yaml") continue;
    SCOPED_TRACE(e.path().string());
    SpiderMultusConfig smc = LoadSmc(e.path());
    if (smc.spec.cni_type.value_or("custom") == "custom") continue;
    smc.spec.disable_ipam = true;
    auto config = GenerateCNIConfig(smc);
    ASSERT_TRUE(config.ok()) << config.status();
    Json conf = Parse(*config);
    for (const Json& p : conf["plugins"]) EXPECT_FALSE(p.contains("ipam")) << p;
  }
}

// The agent's prewarm reads a NAD's pools with cni::SpiderpoolIpamOf: it finds them in what
// we generate for every type, and none with disableIPAM.
TEST(Rules, TheAgentReadsThePoolsOfEveryGeneratedNAD) {
  int with_pools = 0;
  for (const auto& e : fs::directory_iterator(kTestdata)) {
    if (e.path().extension() != ".yaml") continue;
    SCOPED_TRACE(e.path().string());
    SpiderMultusConfig smc = LoadSmc(e.path());
    if (smc.spec.cni_type.value_or("custom") == "custom") continue;
    auto config = GenerateCNIConfig(smc);
    ASSERT_TRUE(config.ok()) << config.status();
    const Json conf = Parse(*config);
    Json ipam;
    for (const Json& p : conf["plugins"]) {
      if (p.contains("ipam")) ipam = p["ipam"];
    }
    auto read = agent::cni::SpiderpoolIpamOf(*config);
    ASSERT_TRUE(read.ok()) << read.status();
    if (!ipam.is_object()) {  // a case with disableIPAM
      EXPECT_FALSE(read->has_value());
      continue;
    }
    ASSERT_TRUE(read->has_value());
    EXPECT_EQ(Json((*read)->default_ipv4_ippool), ipam.value("default_ipv4_ippool", Json::array()));
    EXPECT_EQ(Json((*read)->default_ipv6_ippool), ipam.value("default_ipv6_ippool", Json::array()));
    with_pools += !(*read)->default_ipv4_ippool.empty() || !(*read)->default_ipv6_ippool.empty();
    smc.spec.disable_ipam = true;
    auto without = agent::cni::SpiderpoolIpamOf(*GenerateCNIConfig(smc));
    ASSERT_TRUE(without.ok()) << without.status();
    EXPECT_FALSE(without->has_value());
  }
  EXPECT_GT(with_pools, 0) << "no testdata case names a pool";
}

TEST(Rules, CoordinatorOnlyWhenEnabledAndNeverForCustom) {
  SpiderMultusConfig smc = LoadSmc(kSeed);
  smc.spec.enable_coordinator = false;
  auto config = GenerateCNIConfig(smc);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(Parse(*config)["plugins"].size(), 1u);

  SpiderMultusConfig custom = SmcFromYaml(R"(
metadata: {name: c, namespace: default}
spec: {cniType: custom, enableCoordinator: true, customCNI: '{"type":"bridge"}'})");
  for (bool defaults : {true, false}) {
    auto c = GenerateCNIConfig(custom, Options{.apply_defaults = defaults});
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(*c, R"({"type":"bridge"})");
  }
}

TEST(Rules, PodRPFilterOnlyWithPodCIDRType) {
  SpiderMultusConfig smc = LoadSmc(kSeed);
  smc.spec.coordinator = api::CoordinatorSpec{};
  smc.spec.coordinator->pod_rp_filter = 2;
  auto config = GenerateCNIConfig(smc);
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(Parse(*config)["plugins"][1].contains("podRPFilter")) << *config;
  smc.spec.coordinator->pod_cidr_type = "calico";
  config = GenerateCNIConfig(smc);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(Parse(*config)["plugins"][1]["podRPFilter"], 2) << *config;
  // podCIDRType itself is not part of the plugin config.
  EXPECT_FALSE(Parse(*config)["plugins"][1].contains("podCIDRType"));
}

TEST(Rules, MatchMasterSubnetOnlyForSriov) {
  for (const char* type : {"macvlan", "ipvlan", "vlan"}) {
    SpiderMultusConfig smc = SmcFromYaml(std::string(R"(
metadata: {name: m, namespace: default}
spec:
  cniType: )") + type + "\n  " + type + R"(: {master: [eth0], vlanID: 5,
    ippools: {ipv4: [p], matchMasterSubnet: true}})");
    auto config = GenerateCNIConfig(smc);
    ASSERT_TRUE(config.ok()) << type << ": " << config.status();
    Json main = Parse(*config)["plugins"][type == std::string("vlan") ? 0 : 1];
    EXPECT_EQ(main["type"], type);
    EXPECT_FALSE(main["ipam"].contains("match_master_subnet")) << main;
  }
}

TEST(Rules, MacvlanMasterNames) {
  // Single master: no ifacer unless there is a VLAN.
  SpiderMultusConfig smc = SmcFromYaml(R"(
metadata: {name: m, namespace: default}
spec: {cniType: macvlan, enableCoordinator: false, macvlan: {master: [eth0], vlanID: 0}})");
  Json j = Parse(*GenerateCNIConfig(smc));
  ASSERT_EQ(j["plugins"].size(), 1u);
  EXPECT_EQ(j["plugins"][0]["master"], "eth0");
  // Two masters, no VLAN: the bond, ifacer without vlanID.
  smc.spec.macvlan->master = {"eth0", "eth1"};
  smc.spec.macvlan->bond = api::BondConfig{.name = "bond7", .mode = 0, .options = {}};
  j = Parse(*GenerateCNIConfig(smc, Options{.apply_defaults = false}));
  ASSERT_EQ(j["plugins"].size(), 2u);
  EXPECT_EQ(j["plugins"][0], Parse(R"({"type":"ifacer","interfaces":["eth0","eth1"],
                                       "bond":{"name":"bond7","mode":0}})"));
  EXPECT_EQ(j["plugins"][1]["master"], "bond7");
}

TEST(Rules, Errors) {
  auto expect_invalid = [](const std::string& yaml, const std::string& fragment) {
    SCOPED_TRACE(yaml);
    auto nad = GenerateNAD(SmcFromYaml(yaml));
    ASSERT_FALSE(nad.ok());
    EXPECT_EQ(nad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(nad.status().message()).find(fragment), std::string::npos)
        << nad.status();
  };
  expect_invalid("metadata: {name: a}\nspec: {cniType: macvlan}", "needs spec.macvlan");
  expect_invalid("metadata: {name: a}\nspec: {cniType: ovs}", "needs spec.ovs");
  expect_invalid("metadata: {name: a}\nspec: {cniType: macvlan, macvlan: {master: [a, b]}}",
                 "the bond property is nil with multiple Interfaces");
  expect_invalid("metadata: {name: a}\nspec: {cniType: vlan, vlan: {master: []}}",
                 "spec.vlan.master is empty");
  expect_invalid(
      "metadata: {name: a}\nspec: {cniType: macvlan, macvlan: {master: [a]}, "
      "chainCNIJsonData: ['{not json']}",
      "failed to unmarshal chain cni config {not json");
  expect_invalid("metadata: {name: a}\nspec: {cniType: custom, customCNI: '{'}",
                 "customCniConfig isn't a valid JSON encoding");
  expect_invalid("metadata: {namespace: x}\nspec: {cniType: custom}", "name is empty");
  // cniType outside the CRD enum (only possible when the schema is bypassed).
  SpiderMultusConfig odd = SmcFromYaml("metadata: {name: a}\nspec: {}");
  odd.spec.cni_type = "calico";
  auto nad = GenerateNAD(odd);
  ASSERT_FALSE(nad.ok());
  EXPECT_EQ(nad.status().message(), "unrecognized CNI type calico");
}

TEST(Rules, ChainItemsMayBeAnyJson) {
  // Upstream unmarshals each item into interface{}: any JSON value is kept as is.
  SpiderMultusConfig smc = LoadSmc(kSeed);
  smc.spec.chain_cni_json_data = {R"({"b":1,"a":[true,null]})", "7"};
  smc.spec.enable_coordinator = false;
  auto config = GenerateCNIConfig(smc);
  ASSERT_TRUE(config.ok());
  EXPECT_NE(config->find(R"(,{"a":[true,null],"b":1},7])"), std::string::npos) << *config;
}

// ---- Desired object and updates ------------------------------------------------------------

NetworkAttachmentDefinition Desired() {
  SpiderMultusConfig smc = LoadSmc(fs::path(kTestdata) / "sriov-rdma.yaml");
  smc.metadata.uid = "uid-smc";
  auto nad = BuildDesiredNAD(smc);
  EXPECT_TRUE(nad.ok()) << nad.status();
  return nad.ok() ? *nad : NetworkAttachmentDefinition{};
}

TEST(Desired, ControllerOwnerReference) {
  NetworkAttachmentDefinition d = Desired();
  ASSERT_EQ(d.metadata.owner_references.size(), 1u);
  const api::OwnerReference& r = d.metadata.owner_references[0];
  EXPECT_EQ(r.api_version, "spiderpool.spidernet.io/v2beta1");
  EXPECT_EQ(r.kind, "SpiderMultusConfig");
  EXPECT_EQ(r.name, "sriov-rdma");
  EXPECT_EQ(r.uid, "uid-smc");
  EXPECT_EQ(r.controller, true);
  EXPECT_EQ(r.block_owner_deletion, true);
  EXPECT_EQ(d.api_version, "k8s.cni.cncf.io/v1");
  EXPECT_EQ(d.kind, "NetworkAttachmentDefinition");
}

TEST(Update, NothingToDoForTheSameObject) {
  NetworkAttachmentDefinition d = Desired();
  NetworkAttachmentDefinition actual = d;
  actual.metadata.resource_version = "42";
  EXPECT_FALSE(NADNeedsUpdate(d, actual));
  EXPECT_FALSE(ApplyDesiredNAD(d, &actual));
  EXPECT_EQ(actual.metadata.resource_version, "42");
}

TEST(Update, ConfigComparedAsJson) {
  NetworkAttachmentDefinition d = Desired();
  NetworkAttachmentDefinition actual = d;
  // Re-serialized with sorted keys and indentation: the same JSON, no update.
  actual.spec.config = base::DumpJsonPretty(Parse(d.spec.config));
  ASSERT_NE(actual.spec.config, d.spec.config);
  EXPECT_FALSE(NADNeedsUpdate(d, actual));
  EXPECT_FALSE(ApplyDesiredNAD(d, &actual));
  // A changed value: update, and the config becomes ours verbatim.
  Json changed = Parse(d.spec.config);
  changed["plugins"][0]["vlan"] = 201;
  actual.spec.config = base::DumpJson(changed);
  EXPECT_TRUE(NADNeedsUpdate(d, actual));
  EXPECT_TRUE(ApplyDesiredNAD(d, &actual));
  EXPECT_EQ(actual.spec.config, d.spec.config);
  EXPECT_FALSE(NADNeedsUpdate(d, actual));
  // Not JSON at all, or empty.
  for (const char* bad : {"{", "", "null"}) {
    actual.spec.config = bad;
    EXPECT_TRUE(NADNeedsUpdate(d, actual)) << bad;
  }
  EXPECT_TRUE(CNIConfigsEqual("", ""));
  EXPECT_TRUE(CNIConfigsEqual("{oops", "{oops"));
  EXPECT_FALSE(CNIConfigsEqual("{oops", "{oops "));
  EXPECT_TRUE(CNIConfigsEqual(R"({"a":1,"b":[1]})", R"({ "b" : [ 1 ], "a" : 1.0 })"));
}

TEST(Update, OwnedAnnotationsOnly) {
  NetworkAttachmentDefinition d = Desired();
  NetworkAttachmentDefinition actual = d;
  actual.metadata.annotations["example.com/foreign"] = "kept";
  EXPECT_FALSE(NADNeedsUpdate(d, actual));

  actual.metadata.annotations.erase(std::string(api::kAnnoRdmaResourceInject));
  actual.metadata.annotations[std::string(api::kMultusResourceName)] = "other/res";
  EXPECT_TRUE(NADNeedsUpdate(d, actual));
  EXPECT_TRUE(ApplyDesiredNAD(d, &actual));
  EXPECT_EQ(actual.metadata.annotations.at(std::string(api::kMultusResourceName)),
            "spidernet.io/mellanoxrdma");
  EXPECT_EQ(actual.metadata.annotations.at(std::string(api::kAnnoRdmaResourceInject)),
            "gpu-rdma");
  EXPECT_EQ(actual.metadata.annotations.at("example.com/foreign"), "kept");
  EXPECT_FALSE(NADNeedsUpdate(d, actual));

  // A stale device request (the SMC is no longer SR-IOV) is removed.
  SpiderMultusConfig mac = LoadSmc(kSeed);
  mac.metadata.uid = "uid-smc";
  auto d2 = BuildDesiredNAD(mac);
  ASSERT_TRUE(d2.ok());
  EXPECT_TRUE(NADNeedsUpdate(*d2, actual));
  EXPECT_TRUE(ApplyDesiredNAD(*d2, &actual));
  EXPECT_FALSE(actual.metadata.annotations.count(std::string(api::kMultusResourceName)));
  EXPECT_EQ(actual.metadata.annotations.at("example.com/foreign"), "kept");
  EXPECT_FALSE(NADNeedsUpdate(*d2, actual));
}

TEST(Update, OwnerReferenceRepairAndTakeover) {
  NetworkAttachmentDefinition d = Desired();
  NetworkAttachmentDefinition actual = d;
  actual.metadata.owner_references.clear();
  EXPECT_TRUE(NADNeedsUpdate(d, actual));
  EXPECT_TRUE(ApplyDesiredNAD(d, &actual));
  EXPECT_EQ(actual.metadata.owner_references, d.metadata.owner_references);

  // Owned by something else (a hand-made NAD taken over): other controllers go, plain
  // owners stay, ours is the controller.
  api::OwnerReference other{.api_version = "v1", .kind = "ConfigMap", .name = "x",
                            .uid = "uid-x", .controller = true, .block_owner_deletion = {}};
  api::OwnerReference plain{.api_version = "v1", .kind = "Namespace", .name = "y",
                            .uid = "uid-y", .controller = {}, .block_owner_deletion = {}};
  actual.metadata.owner_references = {other, plain};
  EXPECT_TRUE(NADNeedsUpdate(d, actual));
  EXPECT_TRUE(ApplyDesiredNAD(d, &actual));
  ASSERT_EQ(actual.metadata.owner_references.size(), 2u);
  EXPECT_EQ(actual.metadata.owner_references[0].uid, "uid-y");
  EXPECT_TRUE(api::IsControlledBy(actual.metadata, "uid-smc"));
  EXPECT_FALSE(NADNeedsUpdate(d, actual));

  // GenerateNAD's output has no owner: the owner is then not checked.
  auto plain_nad = GenerateNAD(LoadSmc(fs::path(kTestdata) / "sriov-rdma.yaml"));
  ASSERT_TRUE(plain_nad.ok());
  actual.metadata.owner_references.clear();
  EXPECT_FALSE(NADNeedsUpdate(*plain_nad, actual));
}

}  // namespace
}  // namespace spiderpool::multus
