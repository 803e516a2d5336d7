// Loads every CRD under charts/spiderpool/crds/, parses each version's schema with the same
// validator the loopback API server uses, checks the CRD metadata against upstream facts, and
// validates realistic objects (the e2e seed objects) and broken ones.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/yaml.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/openapi/schema.h"

namespace spiderpool::kube::testing::openapi {
namespace {

using base::Json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::filesystem::path CrdDir() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir == nullptr || workspace == nullptr) return "charts/spiderpool/crds";
  return std::filesystem::path(srcdir) / workspace / "charts/spiderpool/crds";
}

struct Crd {
  std::string file;
  Json doc;
};

std::map<std::string, Crd> LoadCrds() {  // by kind
  std::map<std::string, Crd> out;
  for (const auto& entry : std::filesystem::directory_iterator(CrdDir())) {
    if (entry.path().extension() != ".yaml") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    auto docs = base::ParseYamlDocuments(text.str());
    EXPECT_TRUE(docs.ok()) << entry.path() << ": " << docs.status();
    if (!docs.ok()) continue;
    EXPECT_EQ(docs->size(), 1u) << entry.path();
    for (auto& d : *docs) {
      std::string kind = d["spec"]["names"]["kind"].get<std::string>();
      out[kind] = Crd{entry.path().filename().string(), std::move(d)};
    }
  }
  return out;
}

const std::map<std::string, Crd>& Crds() {
  static const auto* crds = new std::map<std::string, Crd>(LoadCrds());
  return *crds;
}

Schema SchemaOf(const std::string& kind) {
  const Json& version = Crds().at(kind).doc["spec"]["versions"][0];
  auto s = Schema::Parse(version["schema"]["openAPIV3Schema"]);
  EXPECT_TRUE(s.ok()) << kind << ": " << s.status();
  return *std::move(s);
}

Json Yaml(const char* text) {
  auto j = base::ParseYaml(text);
  EXPECT_TRUE(j.ok()) << j.status();
  return j.ok() ? *j : Json();
}

std::vector<std::string> Errors(const std::string& kind, Json* obj) {
  std::vector<FieldError> errs;
  (void)ValidateObject(SchemaOf(kind), obj, &errs);
  std::vector<std::string> out;
  for (const auto& e : errs) out.push_back(e.ToString());
  return out;
}

TEST(CrdsTest, TheExpectedFilesArePresent) {
  std::set<std::string> files;
  for (const auto& [kind, crd] : Crds()) files.insert(crd.file);
  EXPECT_THAT(files, ::testing::UnorderedElementsAre(
                         "spiderpool.spidernet.io_spiderippools.yaml",
                         "spiderpool.spidernet.io_spidersubnets.yaml",
                         "spiderpool.spidernet.io_spiderreservedips.yaml",
                         "spiderpool.spidernet.io_spiderendpoints.yaml",
                         "spiderpool.spidernet.io_spidermultusconfigs.yaml",
                         "spiderpool.spidernet.io_spidercoordinators.yaml",
                         "spiderpool.spidernet.io_spiderclaimparameters.yaml",
                         "k8s.cni.cncf.io_network-attachment-definitions.yaml"));
}

TEST(CrdsTest, EverySchemaIsStructuralAndEveryPrinterColumnResolves) {
  ASSERT_EQ(Crds().size(), 8u);
  for (const auto& [kind, crd] : Crds()) {
    SCOPED_TRACE(crd.file);
    const Json& d = crd.doc;
    EXPECT_EQ(d["apiVersion"], "apiextensions.k8s.io/v1");
    EXPECT_EQ(d["kind"], "CustomResourceDefinition");
    const Json& names = d["spec"]["names"];
    EXPECT_EQ(d["metadata"]["name"],
              names["plural"].get<std::string>() + "." + d["spec"]["group"].get<std::string>());
    ASSERT_EQ(d["spec"]["versions"].size(), 1u);
    for (const Json& v : d["spec"]["versions"]) {
      EXPECT_EQ(v["served"], true);
      EXPECT_EQ(v["storage"], true);
      auto schema = Schema::Parse(v["schema"]["openAPIV3Schema"]);
      ASSERT_TRUE(schema.ok()) << schema.status();
      if (v.contains("subresources") && v["subresources"].contains("status")) {
        EXPECT_NE(schema->Find("status"), nullptr) << "status subresource without a status schema";
      }
      for (const Json& col : v.value("additionalPrinterColumns", Json::array())) {
        std::string path = col["jsonPath"].get<std::string>();
        size_t bracket = path.find("['");
        std::string base_path = path.substr(0, bracket);
        const SchemaNode* n = schema->Find(base_path);
        ASSERT_NE(n, nullptr) << "printer column " << col["name"] << " -> " << path;
        if (bracket != std::string::npos) {
          EXPECT_EQ(n->additional_properties_kind, SchemaNode::Additional::kSchema) << path;
        }
        EXPECT_TRUE(col["type"] == "string" || col["type"] == "integer" || col["type"] == "boolean")
            << path;
      }
    }
  }
}

struct Expect {
  std::string kind;
  std::string scope;
  std::string short_name;
  bool status_subresource;
  std::vector<std::string> columns;  // name[:priority]
};

TEST(CrdsTest, NamesScopesSubresourcesAndColumnsMatchUpstream) {
  const std::vector<Expect> expected = {
      {"SpiderIPPool",
       "Cluster",
       "sp",
       true,
       {"VERSION", "SUBNET", "ALLOCATED-IP-COUNT", "TOTAL-IP-COUNT", "FREE-IP-COUNT",
        "RESERVED-IP-COUNT", "DEFAULT", "DISABLE:10", "NodeName:10", "MultusName:10",
        "APP-NAMESPACE:10"}},
      {"SpiderSubnet",
       "Cluster",
       "ss",
       true,
       {"VERSION", "SUBNET", "ALLOCATED-IP-COUNT", "TOTAL-IP-COUNT", "FREE-IP-COUNT"}},
      {"SpiderReservedIP", "Cluster", "sr", false, {"VERSION"}},
      {"SpiderEndpoint",
       "Namespaced",
       "se",
       false,
       {"INTERFACE", "IPV4POOL", "IPV4", "IPV6POOL", "IPV6", "NODE"}},
      {"SpiderMultusConfig", "Namespaced", "smc", false, {}},
      {"SpiderCoordinator", "Cluster", "scc", true, {}},
      {"SpiderClaimParameter", "Namespaced", "scp", false, {}},
      {"NetworkAttachmentDefinition", "Namespaced", "net-attach-def", false, {}},
  };
  for (const auto& e : expected) {
    SCOPED_TRACE(e.kind);
    ASSERT_EQ(Crds().count(e.kind), 1u);
    const Json& d = Crds().at(e.kind).doc;
    EXPECT_EQ(d["spec"]["scope"], e.scope);
    EXPECT_EQ(d["spec"]["names"]["shortNames"], Json::array({e.short_name}));
    const Json& v = d["spec"]["versions"][0];
    EXPECT_EQ(v.contains("subresources") && v["subresources"].contains("status"),
              e.status_subresource);
    std::vector<std::string> cols;
    for (const Json& c : v.value("additionalPrinterColumns", Json::array())) {
      std::string s = c["name"].get<std::string>();
      if (c.value("priority", 0) != 0) s += ":" + std::to_string(c["priority"].get<int>());
      cols.push_back(s);
    }
    EXPECT_EQ(cols, e.columns);
    if (e.kind != "NetworkAttachmentDefinition") {
      EXPECT_EQ(d["spec"]["group"], "spiderpool.spidernet.io");
      EXPECT_EQ(v["name"], "v2beta1");
      EXPECT_EQ(d["spec"]["names"]["categories"], Json::array({"spiderpool"}));
      EXPECT_EQ(d["spec"]["names"]["listKind"], e.kind + "List");
    } else {
      EXPECT_EQ(d["spec"]["group"], "k8s.cni.cncf.io");
      EXPECT_EQ(v["name"], "v1");
      EXPECT_EQ(d["spec"]["names"]["plural"], "network-attachment-definitions");
    }
  }
  const Json& free_col =
      Crds().at("SpiderIPPool").doc["spec"]["versions"][0]["additionalPrinterColumns"][4];
  EXPECT_EQ(free_col["jsonPath"], ".status.freeIPCount");
  EXPECT_EQ(free_col["type"], "integer");
  // ALLOCATED + RESERVED + FREE = TOTAL (api/pool_counts.h): node reservations are shown.
  const Json& pool_crd = Crds().at("SpiderIPPool").doc["spec"]["versions"][0];
  const Json& reserved_col = pool_crd["additionalPrinterColumns"][5];
  EXPECT_EQ(reserved_col["jsonPath"], ".status.reservedIPCount");
  EXPECT_EQ(reserved_col["type"], "integer");
  const Json& reserved_field =
      pool_crd["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["reservedIPCount"];
  EXPECT_EQ(reserved_field["type"], "integer");
  EXPECT_EQ(reserved_field["format"], "int64");
  EXPECT_EQ(reserved_field["minimum"], 0);
}

TEST(CrdsTest, SeedIPPoolValidatesAndGetsItsDefaults) {
  Json pool = Yaml(R"(
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata:
  name: default-v4-ippool
spec:
  subnet: 172.18.0.0/16
  ips:
  - 172.18.30.131-172.18.30.140
  gateway: 172.18.0.1
  multusName:
  - kube-system/macvlan-conf
status:
  allocatedIPs: '{}'
  totalIPCount: 10
  allocatedIPCount: 0
  reservedIPCount: 0
  freeIPCount: 10
)");
  EXPECT_THAT(Errors("SpiderIPPool", &pool), IsEmpty());
  EXPECT_EQ(pool["spec"]["default"], false);
  EXPECT_EQ(pool["spec"]["disable"], false);
  EXPECT_EQ(pool["spec"]["multusName"], Json::array({"kube-system/macvlan-conf"}));
  EXPECT_EQ(pool["status"]["freeIPCount"], 10);
}

TEST(CrdsTest, SeedMultusConfigValidatesAndGetsItsDefaults) {
  Json smc = Yaml(R"(
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderMultusConfig
metadata:
  name: macvlan-conf
  namespace: kube-system
spec:
  cniType: macvlan
  macvlan:
    master:
    - eth0
)");
  EXPECT_THAT(Errors("SpiderMultusConfig", &smc), IsEmpty());
  EXPECT_EQ(smc["spec"], Yaml(R"(
cniType: macvlan
enableCoordinator: true
disableIPAM: false
macvlan:
  master: [eth0]
  mtu: 0
)"));
}

TEST(CrdsTest, BadIPPoolReportsEveryFieldError) {
  Json pool = Yaml(R"(
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata:
  name: bad
spec:
  ipVersion: 5
  ips: 172.18.30.131
  gateway: 1
  routes:
  - dst: 10.0.0.0/8
  default: "yes"
  podAffinity:
    matchLabels:
      app: 1
status:
  allocatedIPCount: -1
)");
  EXPECT_THAT(
      Errors("SpiderIPPool", &pool),
      ElementsAre(
          "spec.default: Invalid value: \"string\": spec.default in body must be of type boolean: "
          "\"string\"",
          "spec.gateway: Invalid value: \"integer\": spec.gateway in body must be of type string: "
          "\"integer\"",
          "spec.ipVersion: Unsupported value: 5: supported values: \"4\", \"6\"",
          "spec.ips: Invalid value: \"string\": spec.ips in body must be of type array: \"string\"",
          "spec.podAffinity.matchLabels.app: Invalid value: \"integer\": "
          "spec.podAffinity.matchLabels.app in body must be of type string: \"integer\"",
          "spec.routes[0].gw: Required value", "spec.subnet: Required value",
          "status.allocatedIPCount: Invalid value: -1: status.allocatedIPCount in body should be "
          "greater than or equal to 0"));
}

TEST(CrdsTest, BadMultusConfig) {
  Json smc = Yaml(R"(
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderMultusConfig
metadata: {name: x, namespace: default}
spec:
  cniType: bridge
  macvlan:
    vlanID: 5000
    mtu: "1500"
    bond: {name: bond0, mode: 7}
  vlan:
    master: [eth0]
    vlanMode: dynamic
  coordinator:
    mode: fast
    vethMTU: 0
)");
  EXPECT_THAT(
      Errors("SpiderMultusConfig", &smc),
      ElementsAre("spec.cniType: Unsupported value: \"bridge\": supported values: \"macvlan\", "
                  "\"ipvlan\", \"vlan\", \"sriov\", \"ovs\", \"ib-sriov\", \"ipoib\", \"custom\"",
                  "spec.coordinator.mode: Unsupported value: \"fast\": supported values: \"auto\", "
                  "\"underlay\", \"overlay\", \"disabled\"",
                  "spec.coordinator.vethMTU: Invalid value: 0: spec.coordinator.vethMTU in body "
                  "should be greater than or equal to 1",
                  "spec.macvlan.bond.mode: Invalid value: 7: spec.macvlan.bond.mode in body should "
                  "be less than or equal to 6",
                  "spec.macvlan.mtu: Invalid value: \"string\": spec.macvlan.mtu in body must be "
                  "of type integer: \"string\"",
                  "spec.macvlan.vlanID: Invalid value: 5000: spec.macvlan.vlanID in body should be "
                  "less than or equal to 4094",
                  "spec.macvlan.master: Required value",
                  "spec.vlan.vlanMode: Unsupported value: \"dynamic\": supported values: "
                  "\"manual\", \"auto\""));
}

TEST(CrdsTest, UnknownFieldsArePruned) {
  Json pool = Yaml(R"(
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata: {name: p, labels: {a: b}}
spec:
  subnet: 10.0.0.0/24
  vlan: 100
status:
  freeIPs: 3
)");
  std::vector<std::string> pruned;
  EXPECT_TRUE(ValidateObject(SchemaOf("SpiderIPPool"), &pool, nullptr, &pruned).ok());
  EXPECT_THAT(pruned, ElementsAre("spec.vlan", "status.freeIPs"));
  EXPECT_EQ(pool["metadata"], Yaml("{name: p, labels: {a: b}}"));
}

TEST(CrdsTest, OtherKindsAcceptRealisticObjects) {
  Json subnet = Yaml(R"(
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderSubnet
metadata: {name: subnet-v6}
spec:
  ipVersion: 6
  subnet: fc00:f853:ccd:e793::/64
  ips: ["fc00:f853:ccd:e793::100-fc00:f853:ccd:e793::200"]
  excludeIPs: ["fc00:f853:ccd:e793::150"]
  gateway: fc00:f853:ccd:e793::1
  routes: [{dst: "fd00::/64", gw: "fc00:f853:ccd:e793::2"}]
status: {controlledIPPools: '{}', totalIPCount: 256, allocatedIPCount: 0, freeIPCount: 256}
)");
  EXPECT_THAT(Errors("SpiderSubnet", &subnet), IsEmpty());

  Json reserved = Yaml(R"(
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderReservedIP
metadata: {name: r}
spec: {ipVersion: 4, ips: [172.18.30.140]}
)");
  EXPECT_THAT(Errors("SpiderReservedIP", &reserved), IsEmpty());

  Json endpoint = Yaml(R"(
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderEndpoint
metadata: {name: pod-1, namespace: default}
status:
  current:
    uid: 1b2c
    node: worker-1
    ips:
    - interface: eth0
      ipv4: 172.18.30.131/16
      ipv4Pool: default-v4-ippool
      ipv4Gateway: 172.18.0.1
      routes: [{dst: 10.0.0.0/8, gw: 172.18.0.1}]
  ownerControllerType: Pod
  ownerControllerName: pod-1
)");
  EXPECT_THAT(Errors("SpiderEndpoint", &endpoint), IsEmpty());
  EXPECT_EQ(endpoint["status"]["current"]["ips"][0]["vlan"], 0);  // defaulted
  Json bad_endpoint = Yaml(R"(
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderEndpoint
metadata: {name: pod-1, namespace: default}
status:
  current: {uid: u, node: worker-1, ips: [{ipv4: 1.2.3.4/24, vlan: 4095}]}
)");
  EXPECT_THAT(Errors("SpiderEndpoint", &bad_endpoint),
              ElementsAre("status.current.ips[0].vlan: Invalid value: 4095: "
                          "status.current.ips[0].vlan in body should be less than or equal to 4094",
                          "status.current.ips[0].interface: Required value",
                          "status.ownerControllerType: Required value",
                          "status.ownerControllerName: Required value"));

  Json coordinator = Yaml(R"(
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderCoordinator
metadata: {name: default}
spec:
  podCIDRType: auto
  hijackCIDR: [169.254.0.0/16]
status: {phase: Synced, overlayPodCIDR: [10.244.0.0/16], serviceCIDR: [10.96.0.0/12]}
)");
  EXPECT_THAT(Errors("SpiderCoordinator", &coordinator), IsEmpty());
  EXPECT_EQ(coordinator["spec"], Yaml(R"(
podCIDRType: auto
hijackCIDR: [169.254.0.0/16]
mode: auto
tunePodRoutes: true
hostRuleTable: 500
podRPFilter: 0
txQueueLen: 0
vethMTU: 1500
)"));

  Json claim = Yaml(R"(
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderClaimParameter
metadata: {name: c, namespace: default}
spec:
  rdmaAcc: true
  defaultNic: {multusName: macvlan-conf, namespace: kube-system, defaultRoute: true}
  secondaryNics: [{multusName: sriov-conf, namespace: kube-system}]
)");
  EXPECT_THAT(Errors("SpiderClaimParameter", &claim), IsEmpty());
  EXPECT_EQ(claim["spec"]["enableRdma"], false);  // required, but defaulted first
  Json bad_claim = Yaml(R"(
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderClaimParameter
metadata: {name: c, namespace: default}
spec: {defaultNic: {namespace: kube-system}}
)");
  EXPECT_THAT(Errors("SpiderClaimParameter", &bad_claim),
              ElementsAre("spec.defaultNic.multusName: Required value"));

  Json nad = Yaml(R"(
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: macvlan-conf, namespace: kube-system}
spec:
  config: '{"cniVersion":"0.3.1","type":"macvlan","master":"eth0","ipam":{"type":"spiderpool"}}'
  extra: dropped
)");
  std::vector<std::string> pruned;
  EXPECT_TRUE(ValidateObject(SchemaOf("NetworkAttachmentDefinition"), &nad, nullptr, &pruned).ok());
  EXPECT_THAT(pruned, ElementsAre("spec.extra"));
}

TEST(CrdsTest, EveryMultusConfigVariantValidates) {
  Json smc = Yaml(R"(
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderMultusConfig
metadata: {name: all, namespace: default}
spec:
  cniType: sriov
  ipvlan: {master: [eth1, eth2], bond: {name: bond0, mode: 1, options: "miimon=100"}, rdmaResourceName: spidernet.io/rdma, ippools: {ipv4: [p4], ipv6: [p6]}}
  vlan: {master: [eth0], vlanMode: manual, vlanID: 100}
  sriov: {resourceName: spidernet.io/sriov, vlanID: 10, mtu: 9000, minTxRateMbps: 100, maxTxRateMbps: 1000, rdmaIsolation: true, ippools: {ipv4: [p4], matchMasterSubnet: true}}
  ibsriov: {resourceName: spidernet.io/ib, pkey: "0x8001", linkState: auto}
  ipoib: {master: ib0}
  ovs: {bridge: br1, vlan: 100, trunk: [{minID: 10, maxID: 20}, {id: 30}], deviceID: "0000:00:01.1"}
  coordinator: {podCIDRType: cluster, policyRoutes: [{dst: 10.0.0.0/8, gw: 172.18.0.1}], podMACPrefix: "0a:1b"}
  chainCNIJsonData: ['{"type":"tuning"}']
  customCNI: '{}'
)");
  EXPECT_THAT(Errors("SpiderMultusConfig", &smc), IsEmpty());
  EXPECT_EQ(smc["spec"]["ibsriov"]["rdmaIsolation"], true);
  EXPECT_EQ(smc["spec"]["ibsriov"]["enableIbKubernetes"], false);
  EXPECT_EQ(smc["spec"]["sriov"]["ippools"]["matchMasterSubnet"], true);
  EXPECT_EQ(smc["spec"]["ipvlan"]["ippools"]["matchMasterSubnet"], false);
}

}  // namespace
}  // namespace spiderpool::kube::testing::openapi
