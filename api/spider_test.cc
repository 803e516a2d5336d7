#include "api/spider.h"

#include <gtest/gtest.h>

namespace spiderpool::api {
namespace {

std::vector<std::string> Messages(const absl::Status& s) {
  // DecodeErrors::ToStatus joins with "; ".
  std::vector<std::string> out;
  std::string m(s.message());
  size_t start = 0;
  while (true) {
    size_t p = m.find("; ", start);
    out.push_back(m.substr(start, p - start));
    if (p == std::string::npos) break;
    start = p + 2;
  }
  return out;
}

TEST(Spider, Resources) {
  struct Want {
    const ResourceInfo& r;
    std::string kind, plural, short_name;
    bool namespaced, has_status;
  };
  std::vector<Want> wants = {
      {SpiderIPPool::Resource(), "SpiderIPPool", "spiderippools", "sp", false, true},
      {SpiderSubnet::Resource(), "SpiderSubnet", "spidersubnets", "ss", false, true},
      {SpiderReservedIP::Resource(), "SpiderReservedIP", "spiderreservedips", "sr", false, false},
      {SpiderEndpoint::Resource(), "SpiderEndpoint", "spiderendpoints", "se", true, false},
      {SpiderMultusConfig::Resource(), "SpiderMultusConfig", "spidermultusconfigs", "smc", true,
       false},
      {SpiderCoordinator::Resource(), "SpiderCoordinator", "spidercoordinators", "scc", false,
       true},
      {SpiderClaimParameter::Resource(), "SpiderClaimParameter", "spiderclaimparameters", "scp",
       true, false},
  };
  for (const Want& w : wants) {
    EXPECT_EQ(w.r.ApiVersion(), "spiderpool.spidernet.io/v2beta1");
    EXPECT_EQ(w.r.kind, w.kind);
    EXPECT_EQ(w.r.plural, w.plural);
    EXPECT_EQ(w.r.singular + "s", w.plural);
    EXPECT_EQ(w.r.short_names, std::vector<std::string>{w.short_name}) << w.kind;
    EXPECT_EQ(w.r.namespaced, w.namespaced) << w.kind;
    EXPECT_EQ(w.r.has_status, w.has_status) << w.kind;
  }
  EXPECT_EQ(SpiderIPPool::Resource().GroupResource(), "spiderippools.spiderpool.spidernet.io");
  EXPECT_EQ(kSpiderApiVersion, SpiderIPPool::Resource().ApiVersion());
  EXPECT_EQ(kSpiderFinalizer, "spiderpool.spidernet.io");
  EXPECT_EQ(kAnnoPodIPPool, "ipam.spidernet.io/ippool");
  EXPECT_EQ(kLabelIPPoolCIDR, "ipam.spidernet.io/ippool-cidr");
  EXPECT_EQ(kAnnoMultusCRName, "multus.spidernet.io/cr-name");
}

TEST(Spider, AllocatedIPsTypedMap) {
  SpiderIPPool pool;
  auto empty = pool.AllocatedIPs();
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  for (const char* text : {"", "null", "{}"}) {
    auto m = ParsePoolIPAllocations(std::string(text));
    ASSERT_TRUE(m.ok()) << text;
    EXPECT_TRUE(m->empty()) << text;
  }

  PoolIPAllocations m;
  m["172.18.30.132"] = {.pod = "default/b", .pod_uid = "uid-b"};
  m["172.18.30.131"] = {.pod = "default/a", .pod_uid = "uid-a"};
  pool.SetAllocatedIPs(m);
  EXPECT_EQ(pool.status.allocated_ips,
            R"({"172.18.30.131":{"pod":"default/a","podUid":"uid-a"},)"
            R"("172.18.30.132":{"pod":"default/b","podUid":"uid-b"}})");
  EXPECT_EQ(pool.status.allocated_ip_count, 2);
  auto back = pool.AllocatedIPs();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, m);
  // The string survives the object's own JSON round trip (it is a string inside JSON).
  pool.spec.subnet = "172.18.0.0/16";
  auto pool2 = Decode<SpiderIPPool>(Encode(pool));
  ASSERT_TRUE(pool2.ok()) << pool2.status();
  EXPECT_EQ(*pool2->AllocatedIPs(), m);

  pool.SetAllocatedIPs({});
  EXPECT_FALSE(pool.status.allocated_ips.has_value());  // cleared, as upstream does
  EXPECT_EQ(pool.status.allocated_ip_count, 0);
  EXPECT_FALSE(Encode(pool)["status"].contains("allocatedIPs"));
  EXPECT_EQ(Encode(pool)["status"]["allocatedIPCount"], 0);
}

TEST(Spider, AllocatedIPsKeepOldRecordFields) {
  auto m = ParsePoolIPAllocations(
      std::string(R"({"10.0.0.1":{"pod":"ns/p","podUid":"u","interface":"eth0"}})"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->at("10.0.0.1").interface_, "eth0");
  EXPECT_EQ(*SerializePoolIPAllocations(*m),
            R"({"10.0.0.1":{"interface":"eth0","pod":"ns/p","podUid":"u"}})");
  // Our optional fields, and keys nobody models (kept as they are).
  auto m2 = ParsePoolIPAllocations(std::string(
      R"({"10.0.0.2":{"pod":"ns/q","podUid":"v","node":"n1","containerID":"c1",)"
      R"("interface":"net1","future":{"x":1}}})"));
  ASSERT_TRUE(m2.ok()) << m2.status();
  const PoolIPAllocation& r = m2->at("10.0.0.2");
  EXPECT_EQ(r.node, "n1");
  EXPECT_EQ(r.container_id, "c1");
  EXPECT_EQ(r.interface_, "net1");
  EXPECT_EQ(r.unknown["future"]["x"], 1);
  EXPECT_EQ(*SerializePoolIPAllocations(*m2),
            R"({"10.0.0.2":{"containerID":"c1","future":{"x":1},"interface":"net1",)"
            R"("node":"n1","pod":"ns/q","podUid":"v"}})");
  PoolIPAllocations m3;
  m3["10.0.0.3"] = {.pod = "ns/r", .pod_uid = "w", .interface_ = "eth0"};
  EXPECT_EQ(*SerializePoolIPAllocations(m3),
            R"({"10.0.0.3":{"interface":"eth0","pod":"ns/r","podUid":"w"}})");
}

TEST(Spider, AllocatedIPsErrors) {
  auto bad_json = ParsePoolIPAllocations(std::string("{\"10.0.0.1\":"));
  ASSERT_FALSE(bad_json.ok());
  EXPECT_EQ(bad_json.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(bad_json.status().message()).rfind("status.allocatedIPs: not valid JSON: ", 0),
            0u)
      << bad_json.status();
  EXPECT_EQ(ParsePoolIPAllocations(std::string("[1]")).status().message(),
            "status.allocatedIPs: expected a JSON object, got array");
  auto bad = ParsePoolIPAllocations(std::string(R"({
      "10.0.0.1": {"pod": "ns/a", "podUid": "u1"},
      "10.0.0.300": {"pod": "ns/b", "podUid": "u2"},
      "10.0.0.4": {"pod": "ns/c"},
      "10.0.0.5": "ns/d",
      "10.0.0.6": {"pod": 6, "podUid": "u6"}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(Messages(bad.status()),
            (std::vector<std::string>{
                "status.allocatedIPs[10.0.0.300]: \"10.0.0.300\" is not an IP",
                "status.allocatedIPs[10.0.0.4].podUid: Required value",
                "status.allocatedIPs[10.0.0.5]: expected object, got string \"ns/d\"",
                "status.allocatedIPs[10.0.0.6].pod: expected string, got integer 6",
            }));
}

TEST(Spider, ControlledIPPoolsTypedMap) {
  SpiderSubnet subnet;
  PoolIPPreAllocations pools;
  pools["auto4-web-eth0-5f2c1"] = {.ips = {"172.18.30.1-172.18.30.2"},
                                   .application = "apps_v1_Deployment_default_web"};
  pools["ippool-test"] = {.ips = {"172.18.30.131-172.18.30.140"}};
  subnet.SetControlledIPPools(pools);
  EXPECT_EQ(subnet.status.controlled_ip_pools,
            R"({"auto4-web-eth0-5f2c1":{"application":"apps_v1_Deployment_default_web",)"
            R"("ips":["172.18.30.1-172.18.30.2"]},"ippool-test":{"ips":["172.18.30.131-172.18.30.140"]}})");
  auto back = subnet.ControlledIPPools();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, pools);
  subnet.SetControlledIPPools({});
  EXPECT_FALSE(subnet.status.controlled_ip_pools.has_value());

  auto bad = ParsePoolIPPreAllocations(
      std::string(R"({"": {"ips": []}, "p1": {"ips": ["10.0.0.9-10.0.0.1"], "application": 1}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(Messages(bad.status()),
            (std::vector<std::string>{
                "status.controlledIPPools[]: empty pool name",
                "status.controlledIPPools[p1].ips[0]: \"10.0.0.9-10.0.0.1\" is not an IP range: "
                "its first IP is after its last",
                "status.controlledIPPools[p1].application: expected string, got integer 1",
            }));
}

TEST(Spider, PointerFieldsKeepSetVersusUnset) {
  // routes: nil inherits the subnet's routes, [] blocks inheritance.
  auto nil_routes = DecodeJson<SpiderIPPool>(R"({"spec": {"subnet": "10.0.0.0/24"}})");
  ASSERT_TRUE(nil_routes.ok());
  EXPECT_FALSE(nil_routes->spec.routes.has_value());
  EXPECT_FALSE(Encode(*nil_routes)["spec"].contains("routes"));
  auto empty_routes = DecodeJson<SpiderIPPool>(
      R"({"spec": {"subnet": "10.0.0.0/24", "routes": [], "podAffinity": {},
                   "default": false, "disable": false}})");
  ASSERT_TRUE(empty_routes.ok());
  ASSERT_TRUE(empty_routes->spec.routes.has_value());
  Json spec = Encode(*empty_routes)["spec"];
  EXPECT_EQ(spec["routes"], Json::array());
  EXPECT_EQ(spec["podAffinity"], Json::object());  // the webhook rejects it: must not vanish
  EXPECT_EQ(spec["default"], false);
  EXPECT_EQ(spec["disable"], false);

  // SMC: enableCoordinator/disableIPAM set to their zero values stay set.
  auto smc = DecodeJson<SpiderMultusConfig>(
      R"({"spec": {"cniType": "custom", "enableCoordinator": false, "disableIPAM": false,
                   "customCNI": ""}})");
  ASSERT_TRUE(smc.ok()) << smc.status();
  EXPECT_EQ(smc->spec.enable_coordinator, false);
  Json smc_spec = Encode(*smc)["spec"];
  EXPECT_EQ(smc_spec["enableCoordinator"], false);
  EXPECT_EQ(smc_spec["disableIPAM"], false);
  EXPECT_EQ(smc_spec["customCNI"], "");
}

TEST(Spider, ObjectsWithoutStatusEncodeWithoutStatus) {
  SpiderEndpoint ep;
  ep.SetTypeMeta();
  ep.metadata.name = "web-1";
  ep.metadata.namespace_ = "default";
  Json j = Encode(ep);
  EXPECT_FALSE(j.contains("status"));
  EXPECT_TRUE(Decode<SpiderEndpoint>(j).ok());
  SpiderCoordinator c;
  c.metadata.name = "default";
  EXPECT_FALSE(Encode(c).contains("status"));
  EXPECT_TRUE(Decode<SpiderCoordinator>(Encode(c)).ok());
  // With a status, its required fields are always written.
  ep.status.emplace();
  ep.status->current = {.uid = "u", .node = "n1"};
  ep.status->owner_controller_type = "Pod";
  ep.status->owner_controller_name = "web-1";
  EXPECT_EQ(Encode(ep)["status"]["current"]["ips"], Json::array());
  EXPECT_TRUE(Decode<SpiderEndpoint>(Encode(ep)).ok());
}

TEST(Spider, MultusConfigDecodesEveryCniType) {
  auto smc = DecodeJson<SpiderMultusConfig>(R"({"spec": {
      "cniType": "macvlan",
      "macvlan": {"master": ["eth1", "eth2"], "mtu": 1500, "vlanID": 100,
                  "bond": {"name": "bond0", "mode": 1, "options": "miimon=100"},
                  "rdmaResourceName": "spidernet.io/rdma",
                  "ippools": {"ipv4": ["p4"], "ipv6": ["p6"]}},
      "coordinator": {"mode": "underlay", "hijackCIDR": ["169.254.0.0/16", "10.96.0.10"],
                      "policyRoutes": [{"dst": "10.0.0.1", "gw": "172.18.0.1"}],
                      "vethMTU": 9000, "podRPFilter": -1},
      "chainCNIJsonData": ["{\"type\":\"tuning\"}"]}})");
  ASSERT_TRUE(smc.ok()) << smc.status();
  const SpiderMacvlanCniConfig& m = *smc->spec.macvlan;
  EXPECT_EQ(m.master, (std::vector<std::string>{"eth1", "eth2"}));
  EXPECT_EQ(m.vlan_id, 100);
  EXPECT_EQ(m.bond->mode, 1);
  EXPECT_EQ(m.bond->options, "miimon=100");
  EXPECT_EQ(m.ippools->ipv6, std::vector<std::string>{"p6"});
  EXPECT_EQ(smc->spec.coordinator->pod_rp_filter, -1);
  EXPECT_EQ(smc->spec.coordinator->policy_routes[0].dst, "10.0.0.1");
  EXPECT_EQ(smc->spec.chain_cni_json_data.size(), 1u);
}

TEST(Spider, FieldListIncludesExtensions) {
  FieldTree pool = ListFields<SpiderIPPool>();
  const FieldTree& status = pool.children.at("status");
  for (const char* f :
       {"allocatedIPs", "totalIPCount", "allocatedIPCount", "reservedIPCount", "freeIPCount"}) {
    EXPECT_TRUE(status.children.count(f)) << f;
  }
  EXPECT_TRUE(pool.children.at("spec").children.at("routes").children.count("gw"));
  FieldTree scp = ListFields<SpiderClaimParameter>();
  EXPECT_TRUE(scp.children.at("spec").children.count("rdmaAcc"));
  EXPECT_TRUE(
      scp.children.at("spec").children.at("secondaryNics").children.count("defaultRoute"));
}

}  // namespace
}  // namespace spiderpool::api
