// NetDriver against the loopback API server (or a real cluster through
// SPIDERPOOL_TEST_KUBECONFIG; the fault-injection tests skip there): the prepare / unprepare
// contract of the kubelet DRA API with real claims, SpiderClaimParameters and
// SpiderMultusConfigs, the CDI spec files, the claim status.devices entries and the checkpoint.
#include "dra/driver/driver.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/resource_claim.h"
#include "api/spider.h"
#include "base/json.h"
#include "base/strings.h"
#include "base/testing/temp_dir.h"
#include "base/yaml.h"
#include "dra/checkpoint/checkpoint.h"
#include "dra/checkpoint/faulty_fs.h"
#include "kube/events/recorder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/client.h"
#include "kube/testing/spider_cluster.h"
#include "kube/testing/test_cluster.h"

namespace spiderpool::dra::driver {
namespace {

namespace fs = std::filesystem;
using api::resource_v1::AllocatedDeviceStatus;
using api::resource_v1::ResourceClaim;
using base::Json;
using base::StrCat;
using kubeletplugin::ClaimRef;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kNode[] = "node-1";
constexpr char kOtherDriver[] = "gpu.example.com";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Result {
  std::string request, driver, pool, device;
};

class DriverTest : public kube::testing::SpiderClusterTest {
 protected:
  void SetUp() override {
    SpiderClusterTest::SetUp();
    if (HasFatalFailure()) return;
    ns_ = cluster_->ns();
    CreateSmc("macvlan-eth1", "eth1");
    CreateSmc("macvlan-eth2", "eth2");
  }

  void TearDown() override {
    driver_.reset();
    if (cluster_ != nullptr && cluster_->loopback() != nullptr) cluster_->loopback()->ClearFaults();
    SpiderClusterTest::TearDown();
  }

  Options Opts(std::string boot = "boot-1") {
    return {.node_name = kNode,
            .plugin_dir = dir_ + "/plugin",
            .cdi_dir = dir_ + "/cdi",
            .rdma_library_path = "/usr/lib/librdma-acc.so",
            .boot_id = std::move(boot),
            .fs = &fs_,
            .registry = &registry_};
  }
  NetDriver& Driver(std::string boot = "boot-1") {
    driver_ = std::make_unique<NetDriver>(cluster_->rest(), Opts(std::move(boot)));
    return *driver_;
  }

  void CreateSmc(const std::string& name, const std::string& master) {
    api::SpiderMultusConfig smc;
    smc.metadata.name = name;
    smc.metadata.namespace_ = ns_;
    smc.spec.cni_type = "macvlan";
    smc.spec.macvlan = api::SpiderMacvlanCniConfig{.master = {master}};
    auto created = kube::Client<api::SpiderMultusConfig>(cluster_->rest()).Create(smc);
    ASSERT_TRUE(created.ok()) << created.status();
  }

  void CreateScp(const std::string& name, std::vector<std::string> secondary,
                 std::map<std::string, std::string> annotations = {}) {
    api::SpiderClaimParameter scp;
    scp.metadata.name = name;
    scp.metadata.namespace_ = ns_;
    scp.metadata.annotations = std::move(annotations);
    scp.spec.rdma_acc = false;
    scp.spec.default_nic = api::ClaimNic{.multus_name = "macvlan-eth1", .namespace_ = ns_};
    for (const std::string& s : secondary) {
      scp.spec.secondary_nics.push_back({.multus_name = s, .namespace_ = ns_});
    }
    auto created = kube::Client<api::SpiderClaimParameter>(cluster_->rest()).Create(scp);
    ASSERT_TRUE(created.ok()) << created.status();
  }

  static Json ParamsFor(const std::string& scp) {
    return {{"apiVersion", "spiderpool.spidernet.io/v2beta1"},
            {"kind", "SpiderClaimParameter"},
            {"name", scp}};
  }

  // Creates a claim and, unless `results` is null, allocates it (status.allocation with our
  // results plus one of another driver, the opaque config `params` for our request and a
  // status.devices entry of the other driver).
  ClaimRef CreateClaim(const std::string& name, std::optional<std::vector<Result>> results,
                       Json params = nullptr) {
    Json claim = {{"apiVersion", "resource.k8s.io/v1"},
                  {"kind", "ResourceClaim"},
                  {"metadata", {{"name", name}, {"namespace", ns_}}},
                  {"spec",
                   {{"devices",
                     {{"requests",
                       {{{"name", "nic"}, {"exactly", {{"deviceClassName", "netresources.spidernet.io"}}}},
                        {{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu"}}}}}}}}}}};
    kube::DynamicClient claims(cluster_->rest(), ResourceClaim::Resource());
    auto created = claims.Create(claim);
    EXPECT_TRUE(created.ok()) << created.status();
    if (!created.ok()) return {};
    ClaimRef ref{ns_, (*created)["metadata"]["uid"].get<std::string>(), name};
    if (!results.has_value()) return ref;
    Json res = Json::array();
    for (const Result& r : *results) {
      res.push_back({{"request", r.request}, {"driver", r.driver}, {"pool", r.pool}, {"device", r.device}});
    }
    res.push_back({{"request", "gpu"}, {"driver", kOtherDriver}, {"pool", kNode}, {"device", "gpu-0"}});
    Json config = Json::array();
    config.push_back({{"source", "FromClaim"},
                      {"requests", {"gpu"}},
                      {"opaque", {{"driver", kOtherDriver}, {"parameters", {{"x", 1}}}}}});
    if (!params.is_null()) {
      config.push_back({{"source", "FromClaim"},
                        {"requests", {"nic"}},
                        {"opaque", {{"driver", kDriverName}, {"parameters", params}}}});
    }
    Json obj = *created;
    obj["status"] = {{"allocation", {{"devices", {{"results", res}, {"config", config}}}}},
                     {"devices",
                      {{{"driver", kOtherDriver},
                        {"pool", kNode},
                        {"device", "gpu-0"},
                        {"conditions",
                         {{{"type", "Ready"}, {"status", "True"},
                           {"lastTransitionTime", "2026-01-01T00:00:00Z"}, {"reason", "Gpu"},
                           {"message", ""}, {"observedGeneration", 0}}}},  // not omitted as we would
                        {"data", {{"vendor", {{"k", {1, 2}}}}}},
                        {"networkData", {{"interfaceName", "gpu0"}}}}}}};
    auto updated = claims.UpdateStatus(obj);
    EXPECT_TRUE(updated.ok()) << updated.status();
    return ref;
  }

  ClaimRef AllocatedClaim(const std::string& name, const std::string& scp = "scp") {
    return CreateClaim(name, std::vector<Result>{{"nic", kDriverName, kNode, "eth1"}}, ParamsFor(scp));
  }

  ResourceClaim GetClaim(const ClaimRef& ref) {
    auto j = kube::DynamicClient(cluster_->rest(), ResourceClaim::Resource()).Get(ref.namespace_, ref.name);
    EXPECT_TRUE(j.ok()) << j.status();
    auto c = api::resource_v1::DecodeResourceClaim(j.ok() ? *j : Json::object());
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : ResourceClaim{};
  }

  std::vector<std::string> StatusDrivers(const ClaimRef& ref) {
    std::vector<std::string> out;
    for (const AllocatedDeviceStatus& d : GetClaim(ref).status.devices) {
      out.push_back(StrCat(d.driver, "/", d.pool, "/", d.device));
    }
    return out;
  }

  checkpoint::Data Checkpoint(std::string boot = "boot-1") {
    checkpoint::Checkpoint cp({.dir = dir_ + "/plugin", .boot_id = std::move(boot)});
    auto d = cp.Load();
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *d : checkpoint::Data{};
  }

  std::vector<std::string> CdiFiles() {
    std::vector<std::string> out;
    if (!fs::exists(dir_ + "/cdi")) return out;
    for (const auto& e : fs::directory_iterator(dir_ + "/cdi")) out.push_back(e.path().filename());
    return out;
  }

  double Gauge() {
    return registry_.AddGauge(kPreparedClaimsMetric, "").WithLabels().Value();
  }

  base::testing::TempDir tmp_{"drv"};  // before driver_, which writes into it
  const std::string dir_ = tmp_.path();
  std::string ns_;
  checkpoint::testing::FaultyFs fs_;
  kube::metrics::Registry registry_;
  std::unique_ptr<NetDriver> driver_;
};

TEST_F(DriverTest, PreparesAnAllocatedClaim) {
  CreateScp("scp", {"macvlan-eth2"}, {{"dra.spidernet.io/cdi-version", "0.5.0"}});
  ClaimRef ref = AllocatedClaim("claim-a");
  kube::DynamicClient raw_claims(cluster_->rest(), ResourceClaim::Resource());
  auto raw_before = raw_claims.Get(ns_, "claim-a");
  ASSERT_TRUE(raw_before.ok());
  NetDriver& d = Driver();
  auto out = d.Prepare({ref});
  ASSERT_EQ(out.size(), 1u);
  const auto& r = out[ref.uid];
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_THAT(r.devices[0].request_names, ElementsAre("nic"));
  EXPECT_EQ(r.devices[0].pool_name, kNode);
  EXPECT_EQ(r.devices[0].device_name, "eth1");
  EXPECT_THAT(r.devices[0].cdi_device_ids,
              ElementsAre("k8s.netresources.spidernet.io/claim=" + ref.uid));
  EXPECT_FALSE(r.devices[0].share_id.has_value());

  // The spec file: pinned version, one device named by the UID, the network facts.
  const std::string path = d.SpecPath(ref.uid);
  EXPECT_EQ(path, StrCat(dir_, "/cdi/k8s.netresources.spidernet.io-claim_", ref.uid, ".yaml"));
  auto spec = base::ParseYaml(ReadAll(path));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ((*spec)["cdiVersion"], "0.5.0");
  EXPECT_EQ((*spec)["kind"], "k8s.netresources.spidernet.io/claim");
  ASSERT_EQ((*spec)["devices"].size(), 1u);
  EXPECT_EQ((*spec)["devices"][0]["name"], ref.uid);
  std::vector<std::string> env = (*spec)["devices"][0]["containerEdits"]["env"];
  EXPECT_THAT(env, ElementsAre("DRA_CLAIM_UID=" + ref.uid, StrCat("SPIDERPOOL_DRA_CLAIM=", ns_, "/claim-a"),
                               StrCat("SPIDERPOOL_DRA_DEVICES=", kNode, "/eth1"),
                               StrCat("SPIDERPOOL_DRA_CLAIM_PARAMETER=", ns_, "/scp"),
                               StrCat("SPIDERPOOL_DRA_DEFAULT_NETWORK=", ns_, "/macvlan-eth1"),
                               StrCat("SPIDERPOOL_DRA_NETWORKS=", ns_, "/macvlan-eth2"),
                               "SPIDERPOOL_DRA_MASTER_NICS=eth1,eth2"));
  EXPECT_FALSE((*spec)["devices"][0]["containerEdits"].contains("mounts"));

  // status.devices: ours added (Ready=True), the other driver's kept.
  ResourceClaim claim = GetClaim(ref);
  ASSERT_EQ(claim.status.devices.size(), 2u);
  EXPECT_EQ(claim.status.devices[0].driver, kOtherDriver);
  const AllocatedDeviceStatus& ours = claim.status.devices[1];
  EXPECT_EQ(ours.driver, kDriverName);
  EXPECT_EQ(ours.pool, kNode);
  EXPECT_EQ(ours.device, "eth1");
  ASSERT_EQ(ours.conditions.size(), 1u);
  EXPECT_EQ(ours.conditions[0].type, "Ready");
  EXPECT_EQ(ours.conditions[0].status, "True");
  EXPECT_EQ(ours.conditions[0].reason, "Prepared");
  EXPECT_THAT(ours.conditions[0].message, HasSubstr("prepared on node node-1"));
  EXPECT_FALSE(ours.network_data.has_value());  // ReportNetworkData fills it
  // Everything else of the claim is untouched; the other driver's entry byte for byte.
  auto raw_after = raw_claims.Get(ns_, "claim-a");
  ASSERT_TRUE(raw_after.ok());
  EXPECT_EQ((*raw_after)["status"]["devices"][0], (*raw_before)["status"]["devices"][0]);
  EXPECT_EQ((*raw_after)["status"]["allocation"], (*raw_before)["status"]["allocation"]);
  EXPECT_EQ((*raw_after)["spec"], (*raw_before)["spec"]);

  checkpoint::Data cp = Checkpoint();
  ASSERT_EQ(cp.claims.count(ref.uid), 1u);
  const checkpoint::PreparedClaim& e = cp.claims[ref.uid];
  EXPECT_EQ(e.state, checkpoint::ClaimState::kPrepareCompleted);
  EXPECT_EQ(e.namespace_, ns_);
  EXPECT_EQ(e.name, "claim-a");
  EXPECT_EQ(e.cdi_spec_path, path);
  ASSERT_EQ(e.status_devices.size(), 1u);
  EXPECT_EQ(e.status_devices[0].device, "eth1");
  EXPECT_EQ(Gauge(), 1);
  EXPECT_THAT(registry_.Expose(), HasSubstr("spiderpool_dra_prepared_claims 1\n"));
}

TEST_F(DriverTest, ClaimWithoutParametersGetsTheDeviceFactsOnly) {
  ClaimRef ref = CreateClaim("bare", std::vector<Result>{{"nic", kDriverName, kNode, "eth1"},
                                                          {"nic", kDriverName, kNode, "eth2"}});
  auto out = Driver().Prepare({ref});
  ASSERT_EQ(out[ref.uid].error, "");
  ASSERT_EQ(out[ref.uid].devices.size(), 2u);
  auto spec = base::ParseYaml(ReadAll(driver_->SpecPath(ref.uid)));
  ASSERT_TRUE(spec.ok());
  std::vector<std::string> env = (*spec)["devices"][0]["containerEdits"]["env"];
  EXPECT_THAT(env, Contains(StrCat("SPIDERPOOL_DRA_DEVICES=", kNode, "/eth1,", kNode, "/eth2")));
  EXPECT_EQ(env.size(), 3u);
  EXPECT_EQ(StatusDrivers(ref).size(), 3u);
}

TEST_F(DriverTest, RepeatedPrepareIsIdempotentWithoutAnyWrite) {
  CreateScp("scp", {});
  ClaimRef ref = AllocatedClaim("claim-a");
  NetDriver& d = Driver();
  auto first = d.Prepare({ref});
  ASSERT_EQ(first[ref.uid].error, "");
  struct stat before {};
  ASSERT_EQ(::stat(d.SpecPath(ref.uid).c_str(), &before), 0);
  const std::string cp_before = ReadAll(dir_ + "/plugin/checkpoint.json");
  auto* lb = cluster_->loopback();
  kube::testing::RequestCounts counts{};
  if (lb != nullptr) counts = lb->request_counts();

  fs_.calls.clear();
  auto second = d.Prepare({ref, ref});
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[ref.uid].error, "");
  ASSERT_EQ(second[ref.uid].devices.size(), 1u);
  EXPECT_EQ(second[ref.uid].devices[0].cdi_device_ids, first[ref.uid].devices[0].cdi_device_ids);
  // No API call, no file written.
  if (lb != nullptr) {
    EXPECT_EQ(lb->request_counts().get, counts.get);
    EXPECT_EQ(lb->request_counts().writes(), counts.writes());
  }
  EXPECT_TRUE(fs_.calls.empty()) << fs_.calls.begin()->first;
  struct stat after {};
  ASSERT_EQ(::stat(d.SpecPath(ref.uid).c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  EXPECT_EQ(ReadAll(dir_ + "/plugin/checkpoint.json"), cp_before);

  // A second plugin instance (same directories) gives the same answer too.
  NetDriver other(cluster_->rest(), Opts());
  auto third = other.Prepare({ref});
  EXPECT_EQ(third[ref.uid].error, "");
  EXPECT_EQ(third[ref.uid].devices[0].device_name, "eth1");
}

TEST_F(DriverTest, PerClaimErrorsNameTheObjectAndLeaveNothing) {
  CreateScp("scp", {});
  CreateScp("scp-bad", {"no-such-smc"});
  ClaimRef good = AllocatedClaim("good");
  ClaimRef not_allocated = CreateClaim("not-allocated", std::nullopt);
  ClaimRef other_node = CreateClaim("other-node", std::vector<Result>{{"nic", kDriverName, "node-2", "eth1"}},
                                    ParamsFor("scp"));
  ClaimRef not_ours = CreateClaim("not-ours", std::vector<Result>{});
  ClaimRef wrong_uid = AllocatedClaim("wrong-uid");
  wrong_uid.uid = "00000000-0000-0000-0000-000000000000";
  ClaimRef missing_scp = AllocatedClaim("missing-scp", "no-such-scp");
  ClaimRef invalid_scp = AllocatedClaim("invalid-scp", "scp-bad");
  ClaimRef bad_params = CreateClaim("bad-params", std::vector<Result>{{"nic", kDriverName, kNode, "eth1"}},
                                    Json{{"kind", "SpiderMultusConfig"}, {"name", "scp"}});
  ClaimRef gone{ns_, "11111111-0000-0000-0000-000000000000", "gone"};

  auto out = Driver().Prepare({good, not_allocated, other_node, not_ours, wrong_uid, missing_scp,
                               invalid_scp, bad_params, gone});
  ASSERT_EQ(out.size(), 9u);
  EXPECT_EQ(out[good.uid].error, "");
  const std::string c = StrCat("ResourceClaim ", ns_, "/");
  EXPECT_EQ(out[not_allocated.uid].error, c + "not-allocated is not allocated (no status.allocation)");
  EXPECT_THAT(out[other_node.uid].error,
              HasSubstr(c + "other-node: device node-2/eth1 (request nic) is allocated from pool "
                            "node-2, not from this node's pool node-1"));
  EXPECT_EQ(out[not_ours.uid].error, c + "not-ours has no device allocated by driver netresources.spidernet.io");
  EXPECT_THAT(out[wrong_uid.uid].error,
              HasSubstr(c + "wrong-uid has UID "));
  EXPECT_THAT(out[wrong_uid.uid].error, HasSubstr("the kubelet asked for UID " + wrong_uid.uid));
  EXPECT_EQ(out[missing_scp.uid].error,
            StrCat("SpiderClaimParameter ", ns_, "/no-such-scp not found (named by ", c, "missing-scp)"));
  EXPECT_THAT(out[invalid_scp.uid].error,
              HasSubstr(StrCat("SpiderClaimParameter ", ns_, "/scp-bad (named by ", c, "invalid-scp) is invalid: ")));
  EXPECT_THAT(out[invalid_scp.uid].error, HasSubstr(StrCat("SpiderMultusConfig ", ns_, "/no-such-smc does not exist")));
  EXPECT_THAT(out[bad_params.uid].error,
              HasSubstr(c + "bad-params: status.allocation.devices.config[1].opaque.parameters: "));
  EXPECT_THAT(out[bad_params.uid].error, HasSubstr("kind: must be SpiderClaimParameter"));
  EXPECT_EQ(out[gone.uid].error, c + "gone not found");
  for (const auto& [uid, r] : out) {
    if (uid != good.uid) {
      EXPECT_THAT(r.devices, IsEmpty()) << uid;
    }
  }
  // Only the good claim has a spec file, a checkpoint entry and a status entry of ours.
  EXPECT_THAT(CdiFiles(), ElementsAre(StrCat("k8s.netresources.spidernet.io-claim_", good.uid, ".yaml")));
  checkpoint::Data cp = Checkpoint();
  ASSERT_EQ(cp.claims.size(), 1u);
  EXPECT_EQ(cp.claims.begin()->first, good.uid);
  for (const ClaimRef& r : {missing_scp, invalid_scp, bad_params, other_node}) {
    EXPECT_EQ(StatusDrivers(r), std::vector<std::string>{StrCat(kOtherDriver, "/", kNode, "/gpu-0")}) << r.name;
  }
  EXPECT_EQ(Gauge(), 1);
}

TEST_F(DriverTest, FailedPrepareRecordsAWarningEventOnTheClaimsPods) {
  CreateScp("scp-bad", {"no-such-smc"});
  ClaimRef invalid_scp = AllocatedClaim("invalid-scp", "scp-bad");
  ClaimRef not_allocated = CreateClaim("not-allocated", std::nullopt);
  // The scheduler reserved the invalid claim for two pods.
  kube::DynamicClient claims(cluster_->rest(), ResourceClaim::Resource());
  auto obj = claims.Get(ns_, invalid_scp.name);
  ASSERT_TRUE(obj.ok()) << obj.status();
  (*obj)["status"]["reservedFor"] = Json::array(
      {Json{{"resource", "pods"}, {"name", "web-0"}, {"uid", "pod-uid-0"}},
       Json{{"resource", "pods"}, {"name", "web-1"}, {"uid", "pod-uid-1"}}});
  ASSERT_TRUE(claims.UpdateStatus(*obj).ok());

  kube::metrics::Registry registry;
  kube::EventRecorder recorder(cluster_->rest(), {.component = "spiderpool-agent",
                                                  .host = kNode,
                                                  .min_interval = absl::Seconds(30),
                                                  .registry = &registry});
  Options o = Opts();
  o.recorder = &recorder;
  driver_ = std::make_unique<NetDriver>(cluster_->rest(), o);
  for (int i = 0; i < 3; ++i) {  // the kubelet retries: no flood of events
    auto out = driver_->Prepare({invalid_scp, not_allocated});
    ASSERT_NE(out[invalid_scp.uid].error, "");
    ASSERT_NE(out[not_allocated.uid].error, "");
  }
  recorder.Flush();

  auto list = kube::Client<api::Event>(cluster_->rest()).List(ns_);
  ASSERT_TRUE(list.ok()) << list.status();
  std::map<std::string, std::vector<api::Event>> by_uid;  // only the objects of this test
  for (const api::Event& e : list->items) {
    for (const std::string& uid : std::vector<std::string>{"pod-uid-0", "pod-uid-1", invalid_scp.uid,
                                                          not_allocated.uid}) {
      if (e.involved_object.uid == uid) by_uid[uid].push_back(e);
    }
  }
  for (const char* pod : {"pod-uid-0", "pod-uid-1"}) {
    ASSERT_EQ(by_uid[pod].size(), 1u) << pod;
    const api::Event& e = by_uid[pod][0];
    EXPECT_EQ(e.involved_object.kind, "Pod");
    EXPECT_EQ(e.involved_object.namespace_, ns_);
    EXPECT_EQ(e.type, "Warning");
    EXPECT_EQ(e.reason, kEventReasonPrepareFailed);
    EXPECT_EQ(e.count, 1);
    EXPECT_THAT(e.message, HasSubstr(StrCat("NodePrepareResources of ResourceClaim ", ns_,
                                            "/invalid-scp (SpiderMultusConfigs: ", ns_,
                                            "/macvlan-eth1, ", ns_, "/no-such-smc) failed")));
    EXPECT_THAT(e.message, HasSubstr("is invalid"));
  }
  // The claim gets the same event (its pods known or not).
  ASSERT_EQ(by_uid[invalid_scp.uid].size(), 1u);
  EXPECT_EQ(by_uid[invalid_scp.uid][0].involved_object.kind, "ResourceClaim");
  EXPECT_THAT(by_uid[invalid_scp.uid][0].message, HasSubstr("/no-such-smc) failed"));
  // No pod reserved: the event goes to the claim only.
  ASSERT_EQ(by_uid[not_allocated.uid].size(), 1u);
  const api::Event& e = by_uid[not_allocated.uid][0];
  EXPECT_EQ(e.involved_object.kind, "ResourceClaim");
  EXPECT_EQ(e.involved_object.name, "not-allocated");
  EXPECT_EQ(e.reason, kEventReasonPrepareFailed);
  EXPECT_THAT(e.message, HasSubstr("(SpiderMultusConfigs: not resolved)"));
  EXPECT_THAT(e.message, HasSubstr("is not allocated"));
}

TEST_F(DriverTest, UnprepareTwiceAndForUnknownOrDeletedClaims) {
  CreateScp("scp", {});
  ClaimRef a = AllocatedClaim("claim-a");
  ClaimRef b = AllocatedClaim("claim-b");
  NetDriver& d = Driver();
  auto prepared = d.Prepare({a, b});
  ASSERT_EQ(prepared[a.uid].error, "");
  ASSERT_EQ(prepared[b.uid].error, "");
  EXPECT_EQ(Gauge(), 2);

  auto out = d.Unprepare({a});
  EXPECT_EQ(out[a.uid], "");
  EXPECT_FALSE(fs::exists(d.SpecPath(a.uid)));
  EXPECT_TRUE(fs::exists(d.SpecPath(b.uid)));
  EXPECT_EQ(StatusDrivers(a), std::vector<std::string>{StrCat(kOtherDriver, "/", kNode, "/gpu-0")});
  EXPECT_EQ(Checkpoint().claims.count(a.uid), 0u);
  EXPECT_EQ(Gauge(), 1);
  // Again: nothing left to do, still success.
  EXPECT_EQ(d.Unprepare({a})[a.uid], "");
  // Never prepared here.
  EXPECT_EQ(d.Unprepare({{ns_, "22222222-0000-0000-0000-000000000000", "never"}})
                ["22222222-0000-0000-0000-000000000000"],
            "");
  // The claim is deleted before unprepare: 404 is success, the spec file still goes.
  ASSERT_TRUE(kube::DynamicClient(cluster_->rest(), ResourceClaim::Resource()).Delete(ns_, "claim-b").ok());
  EXPECT_EQ(d.Unprepare({b})[b.uid], "");
  EXPECT_FALSE(fs::exists(d.SpecPath(b.uid)));
  EXPECT_TRUE(Checkpoint().claims.empty());
  EXPECT_TRUE(CdiFiles().empty());
  EXPECT_EQ(Gauge(), 0);
}

TEST_F(DriverTest, UnprepareRemovesTheSpecEvenWithoutACheckpointEntry) {
  CreateScp("scp", {});
  ClaimRef a = AllocatedClaim("claim-a");
  NetDriver& d = Driver();
  ASSERT_EQ(d.Prepare({a})[a.uid].error, "");
  fs::remove(dir_ + "/plugin/checkpoint.json");  // lost state
  EXPECT_EQ(d.Unprepare({a})[a.uid], "");
  EXPECT_FALSE(fs::exists(d.SpecPath(a.uid)));
  // Our status entries in this node's pool go too; the other driver's stay.
  EXPECT_EQ(StatusDrivers(a), std::vector<std::string>{StrCat(kOtherDriver, "/", kNode, "/gpu-0")});
}

TEST_F(DriverTest, CrashBetweenThePhasesIsRecovered) {
  CreateScp("scp", {});
  ClaimRef a = AllocatedClaim("claim-a");  // in the next request
  ClaimRef b = AllocatedClaim("claim-b");  // not in it: rolled back
  // What a crash leaves: PrepareStarted entries, spec files (a stale one for A), and for B a
  // status entry already written.
  fs::create_directories(dir_ + "/cdi");
  const std::string spec_a = StrCat(dir_, "/cdi/k8s.netresources.spidernet.io-claim_", a.uid, ".yaml");
  const std::string spec_b = StrCat(dir_, "/cdi/k8s.netresources.spidernet.io-claim_", b.uid, ".yaml");
  { std::ofstream(spec_a) << "stale: true\n"; }
  { std::ofstream(spec_b) << "stale: true\n"; }
  checkpoint::Data crashed;
  for (const ClaimRef& r : {a, b}) {
    checkpoint::PreparedClaim e;
    e.state = checkpoint::ClaimState::kPrepareStarted;
    e.namespace_ = ns_;
    e.name = r.name;
    e.cdi_spec_path = r.uid == a.uid ? spec_a : spec_b;
    e.status_devices = {{.driver = kDriverName, .pool = kNode, .device = "eth1"}};
    crashed.claims[r.uid] = e;
  }
  ASSERT_TRUE(checkpoint::Checkpoint({.dir = dir_ + "/plugin", .boot_id = "boot-1"}).Save(crashed).ok());
  {
    kube::DynamicClient claims(cluster_->rest(), ResourceClaim::Resource());
    auto j = claims.Get(ns_, "claim-b");
    ASSERT_TRUE(j.ok());
    (*j)["status"]["devices"].push_back({{"driver", kDriverName}, {"pool", kNode}, {"device", "eth1"}});
    ASSERT_TRUE(claims.UpdateStatus(*j).ok());
  }
  ASSERT_EQ(StatusDrivers(b).size(), 2u);

  NetDriver& d = Driver();
  auto out = d.Prepare({a});
  ASSERT_EQ(out[a.uid].error, "");
  // A completed: a fresh spec replaced the stale file.
  auto spec = base::ParseYaml(ReadAll(spec_a));
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ((*spec)["devices"][0]["name"], a.uid);
  // B rolled back: no spec file, no status entry of ours, no checkpoint entry.
  EXPECT_FALSE(fs::exists(spec_b));
  EXPECT_EQ(StatusDrivers(b), std::vector<std::string>{StrCat(kOtherDriver, "/", kNode, "/gpu-0")});
  checkpoint::Data cp = Checkpoint();
  ASSERT_EQ(cp.claims.size(), 1u);
  EXPECT_EQ(cp.claims[a.uid].state, checkpoint::ClaimState::kPrepareCompleted);
  EXPECT_EQ(Gauge(), 1);
}

TEST_F(DriverTest, RecoverAtStartupRollsBackLeftovers) {
  ClaimRef gone{ns_, "33333333-0000-0000-0000-000000000000", "gone"};
  fs::create_directories(dir_ + "/cdi");
  const std::string spec = StrCat(dir_, "/cdi/k8s.netresources.spidernet.io-claim_", gone.uid, ".yaml");
  { std::ofstream(spec) << "x: 1\n"; }
  checkpoint::Data crashed;
  crashed.claims[gone.uid] = {.namespace_ = ns_, .name = "gone", .cdi_spec_path = spec,
                              .status_devices = {{.driver = kDriverName, .pool = kNode, .device = "eth1"}}};
  ASSERT_TRUE(checkpoint::Checkpoint({.dir = dir_ + "/plugin", .boot_id = "boot-1"}).Save(crashed).ok());
  EXPECT_TRUE(Driver().Recover().ok());
  EXPECT_FALSE(fs::exists(spec));
  EXPECT_TRUE(Checkpoint().claims.empty());
}

TEST_F(DriverTest, ANewBootDiscardsTheCheckpoint) {
  CreateScp("scp", {});
  ClaimRef a = AllocatedClaim("claim-a");
  ASSERT_EQ(Driver("boot-1").Prepare({a})[a.uid].error, "");
  auto* lb = cluster_->loopback();
  int64_t gets = lb != nullptr ? lb->request_counts().get : 0;
  // After a reboot the same claim is prepared again from the API server.
  NetDriver& rebooted = Driver("boot-2");
  ASSERT_TRUE(rebooted.Recover().ok());
  EXPECT_EQ(Gauge(), 0);
  auto out = rebooted.Prepare({a});
  ASSERT_EQ(out[a.uid].error, "");
  if (lb != nullptr) {
    EXPECT_GT(lb->request_counts().get, gets);
  }
  checkpoint::Data cp = Checkpoint("boot-2");
  EXPECT_EQ(cp.boot_id, "boot-2");
  EXPECT_EQ(cp.claims.size(), 1u);
  EXPECT_EQ(Gauge(), 1);
}

TEST_F(DriverTest, CorruptedCheckpointIsReportedMovedAsideAndNotTrusted) {
  CreateScp("scp", {});
  ClaimRef a = AllocatedClaim("claim-a");
  fs::create_directories(dir_ + "/plugin");
  { std::ofstream(dir_ + "/plugin/checkpoint.json") << "{\"version\":1,\"checksum\":\"crc32:0\",\"data\":{}}"; }
  NetDriver& d = Driver();
  absl::Status s = d.Recover();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("checksum mismatch"));
  EXPECT_THAT(s.message(), HasSubstr("moved it to " + dir_ + "/plugin/checkpoint.json.corrupt-"));
  // Corrupted again while running: prepare still works from a fresh file.
  { std::ofstream(dir_ + "/plugin/checkpoint.json") << "garbage"; }
  auto out = d.Prepare({a});
  EXPECT_EQ(out[a.uid].error, "");
  EXPECT_EQ(Checkpoint().claims.size(), 1u);
  int corrupt = 0;
  for (const auto& e : fs::directory_iterator(dir_ + "/plugin")) {
    corrupt += e.path().filename().string().starts_with("checkpoint.json.corrupt-") ? 1 : 0;
  }
  EXPECT_EQ(corrupt, 2);
}

TEST_F(DriverTest, StatusConflictIsRetried) {
  if (cluster_->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
  CreateScp("scp", {});
  ClaimRef a = AllocatedClaim("claim-a");
  cluster_->loopback()->FailNext(2, 409, {.verb = "update", .resource = "resourceclaims/status"});
  auto out = Driver().Prepare({a});
  ASSERT_EQ(out[a.uid].error, "");
  EXPECT_EQ(StatusDrivers(a).size(), 2u);
  EXPECT_EQ(Checkpoint().claims[a.uid].state, checkpoint::ClaimState::kPrepareCompleted);
}

TEST_F(DriverTest, FailuresRollEverythingBack) {
  if (cluster_->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
  CreateScp("scp", {});
  ClaimRef a = AllocatedClaim("claim-a");
  NetDriver& d = Driver();
  auto nothing_left = [&](const std::string& step) {
    SCOPED_TRACE(step);
    EXPECT_THAT(CdiFiles(), IsEmpty());
    EXPECT_TRUE(Checkpoint().claims.empty());
    EXPECT_EQ(StatusDrivers(a), std::vector<std::string>{StrCat(kOtherDriver, "/", kNode, "/gpu-0")});
    EXPECT_EQ(Gauge(), 0);
  };
  // The status write keeps failing.
  cluster_->loopback()->FailNext(1, 500, {.verb = "update", .resource = "resourceclaims/status"});
  auto out = d.Prepare({a});
  EXPECT_THAT(out[a.uid].error, HasSubstr(StrCat("ResourceClaim ", ns_, "/claim-a: writing status.devices")));
  nothing_left("status");
  // The spec file cannot be renamed into place.
  fs_.Arm("rename", 2);  // 1 = the checkpoint's PrepareStarted, 2 = the spec
  out = d.Prepare({a});
  EXPECT_THAT(out[a.uid].error, HasSubstr("writing CDI spec"));
  nothing_left("spec");
  // The final checkpoint save fails (after the status write): the status entry goes again.
  fs_.Arm("rename", 3);
  out = d.Prepare({a});
  EXPECT_THAT(out[a.uid].error, HasSubstr("writing the DRA checkpoint"));
  nothing_left("completed");
  // The first checkpoint save fails: nothing was done at all.
  fs_.Arm("create", 1);
  out = d.Prepare({a});
  EXPECT_THAT(out[a.uid].error, HasSubstr("writing the DRA checkpoint"));
  nothing_left("started");
  fs_.Disarm();
  EXPECT_EQ(d.Prepare({a})[a.uid].error, "");
  EXPECT_EQ(Gauge(), 1);
}

TEST_F(DriverTest, ReportNetworkDataKeepsTheReadyCondition) {
  CreateScp("scp", {});
  ClaimRef a = AllocatedClaim("claim-a");
  NetDriver& d = Driver();
  ASSERT_EQ(d.Prepare({a})[a.uid].error, "");
  ASSERT_TRUE(d.ReportNetworkData(a, {.interface_name = "net1",
                                      .ips = {"10.6.0.10/24", "fd00:6::10/64"},
                                      .hardware_address = "aa:bb:cc:dd:ee:ff"})
                  .ok());
  ResourceClaim claim = GetClaim(a);
  ASSERT_EQ(claim.status.devices.size(), 2u);
  const AllocatedDeviceStatus& ours = claim.status.devices[1];
  ASSERT_TRUE(ours.network_data.has_value());
  EXPECT_EQ(ours.network_data->interface_name, "net1");
  EXPECT_THAT(ours.network_data->ips, ElementsAre("10.6.0.10/24", "fd00:6::10/64"));
  EXPECT_EQ(ours.network_data->hardware_address, "aa:bb:cc:dd:ee:ff");
  ASSERT_EQ(ours.conditions.size(), 1u);
  EXPECT_EQ(ours.conditions[0].type, "Ready");

  // Invalid data is refused before any API call.
  absl::Status bad = d.ReportNetworkData(a, {.interface_name = "net1", .ips = {"10.6.0.10"}});
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("networkData.ips[0]: Invalid value: \"10.6.0.10\""));
  // An unknown device, a wrong UID.
  EXPECT_THAT(d.ReportNetworkData(a, {.interface_name = "x"}, "eth9").message(),
              HasSubstr("has no device eth9 allocated by driver"));
  ClaimRef wrong = a;
  wrong.uid = "44444444-0000-0000-0000-000000000000";
  EXPECT_EQ(d.ReportNetworkData(wrong, {.interface_name = "x"}).code(), absl::StatusCode::kNotFound);
  // Re-prepare (e.g. after a lost checkpoint) keeps the reported data.
  fs::remove(dir_ + "/plugin/checkpoint.json");
  ASSERT_EQ(d.Prepare({a})[a.uid].error, "");
  EXPECT_EQ(GetClaim(a).status.devices[1].network_data->interface_name, "net1");
}

// A Kubernetes 1.32 server serves resource.k8s.io/v1beta1 only: the driver reads the claim and
// writes status.devices in that version (the agent passes the discovered version).
TEST(NetDriverVersions, PreparesAClaimServedOnlyAsV1beta1) {
  auto c = kube::testing::TestCluster::Start({.omit_builtin_versions = {"resource.k8s.io/v1"}});
  ASSERT_TRUE(c.ok()) << c.status();
  if ((*c)->loopback() == nullptr) GTEST_SKIP() << "needs an API server without resource.k8s.io/v1";
  ASSERT_TRUE((*c)->loopback()
                  ->RegisterResource({"resource.k8s.io", "v1beta1", "ResourceClaim",
                                      "resourceclaims", "resourceclaim", true, true, {}, ""})
                  .ok());
  api::ResourceInfo v1beta1 = ResourceClaim::Resource();
  v1beta1.version = "v1beta1";
  kube::DynamicClient claims((*c)->rest(), v1beta1);
  const std::string ns = (*c)->ns();
  // v1beta1 shape: the request is flat (no `exactly`).
  Json claim = {{"apiVersion", "resource.k8s.io/v1beta1"},
                {"kind", "ResourceClaim"},
                {"metadata", {{"name", "old"}, {"namespace", ns}}},
                {"spec",
                 {{"devices",
                   {{"requests", {{{"name", "nic"}, {"deviceClassName", "netresources.spidernet.io"}}}}}}}}};
  auto created = claims.Create(claim);
  ASSERT_TRUE(created.ok()) << created.status();
  Json obj = *created;
  obj["status"] = {{"allocation",
                    {{"devices",
                      {{"results",
                        {{{"request", "nic"}, {"driver", kDriverName}, {"pool", kNode}, {"device", "eth1-0"}}}}}}}}};
  ASSERT_TRUE(claims.UpdateStatus(obj).ok());
  base::testing::TempDir tmp("drv");  // before the driver, which writes into it
  kube::metrics::Registry registry;
  NetDriver driver((*c)->rest(), {.node_name = kNode, .api_version = "v1beta1",
                                  .plugin_dir = tmp.Join("plugin"), .cdi_dir = tmp.Join("cdi"),
                                  .boot_id = "boot-1", .registry = &registry});
  const std::string uid = (*created)["metadata"]["uid"];
  auto prepared = driver.Prepare({{ns, uid, "old"}});
  EXPECT_EQ(prepared[uid].error, "");
  ASSERT_EQ(prepared[uid].devices.size(), 1u);
  EXPECT_TRUE(fs::exists(driver.SpecPath(uid)));
  auto got = claims.Get(ns, "old");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)["status"]["devices"][0]["device"], "eth1-0");
  EXPECT_EQ(driver.Unprepare({{ns, uid, "old"}})[uid], "");
  EXPECT_FALSE(fs::exists(driver.SpecPath(uid)));
}

}  // namespace
}  // namespace spiderpool::dra::driver
