// The SpiderMultusConfig -> NAD controller, wired with AddToManager, against the loopback API
// server (or a real cluster through SPIDERPOOL_TEST_KUBECONFIG: everything is scoped to the
// test namespace, and every expectation is an end state polled with a bounded deadline, so
// Kubernetes' own garbage collector does not change the outcome).

#include "operator/multus/controller.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "api/core.h"
#include "base/json.h"
#include "base/testing/wait.h"
#include "base/yaml.h"
#include "kube/controller/manager.h"
#include "kube/rest/errors.h"
#include "kube/testing/test_cluster.h"
#include "multus/generate.h"
#include "base/testing/temp_dir.h"

namespace spiderpool::op::multus {
namespace {

using ::spiderpool::base::testing::ReadFile;

using ::spiderpool::base::testing::WaitUntil;

namespace gen = ::spiderpool::multus;
using api::NetworkAttachmentDefinition;
using api::SpiderMultusConfig;
using base::Json;

constexpr char kCrdDir[] = "charts/spiderpool/crds";
constexpr char kSeed[] = "e2e/samples/multusconfig.yaml";
constexpr char kSeedGolden[] = "multus/testdata/macvlan-conf.nad.json";

Json MacvlanSMC(const std::string& name, const std::string& ns, const std::string& master,
                Json annotations = Json::object()) {
  Json meta = {{"name", name}, {"namespace", ns}};
  if (!annotations.empty()) meta["annotations"] = annotations;
  return {{"apiVersion", "spiderpool.spidernet.io/v2beta1"},
          {"kind", "SpiderMultusConfig"},
          {"metadata", meta},
          {"spec", {{"cniType", "macvlan"}, {"macvlan", {{"master", {master}}}}}}};
}

class MultusControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = kube::testing::TestCluster::Start();
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(*cluster);
    absl::Status crds = cluster_->ApplyCRDs(kCrdDir);
    ASSERT_TRUE(crds.ok()) << crds;
    auto rest = cluster_->NewRest();
    ASSERT_TRUE(rest.ok()) << rest.status();
    rest_ = *rest;
    manager_ = std::make_unique<kube::Manager>(kube::ManagerOptions{.name = "multus-test"});
    auto ctrl = AddToManager(manager_.get(), rest_,
                             {.namespace_ = cluster_->ns(), .registry = &registry_});
    ASSERT_TRUE(ctrl.ok()) << ctrl.status();
    run_ = std::jthread([this] { result_ = manager_->Run(stop_.get_token()); });
  }

  void TearDown() override {
    stop_.request_stop();
    if (run_.joinable()) run_.join();
    EXPECT_TRUE(result_.ok()) << result_;
    manager_.reset();
  }

  const std::string& ns() const { return cluster_->ns(); }

  kube::DynamicClient SMCs() const {
    return kube::DynamicClient(cluster_->rest(), SpiderMultusConfig::Resource());
  }
  kube::Client<NetworkAttachmentDefinition> NADs() const {
    return kube::Client<NetworkAttachmentDefinition>(cluster_->rest());
  }

  // Creates the SMC and returns what the server stored.
  SpiderMultusConfig CreateSMC(const Json& smc) {
    auto created = SMCs().Create(smc);
    EXPECT_TRUE(created.ok()) << created.status();
    if (!created.ok()) return {};
    auto typed = api::Decode<SpiderMultusConfig>(*created);
    EXPECT_TRUE(typed.ok()) << typed.status();
    return typed.ok() ? *typed : SpiderMultusConfig{};
  }
  absl::StatusOr<SpiderMultusConfig> GetSMC(const std::string& name) const {
    return kube::Client<SpiderMultusConfig>(cluster_->rest()).Get(ns(), name);
  }

  // The NAD `nad_name` exists and is what SMC `smc_name` (as stored now) generates: config,
  // annotations, controller reference.
  bool NADMatches(const std::string& nad_name, const std::string& smc_name) const {
    auto smc = GetSMC(smc_name);
    auto nad = NADs().Get(ns(), nad_name);
    if (!smc.ok() || !nad.ok()) return false;
    auto desired = gen::BuildDesiredNAD(*smc);
    if (!desired.ok()) return false;
    return desired->metadata.name == nad_name && !gen::NADNeedsUpdate(*desired, *nad) &&
           api::IsControlledBy(nad->metadata, smc->metadata.uid);
  }
  bool NADGone(const std::string& name) const {
    return kube::IsNotFound(NADs().Get(ns(), name).status());
  }
  bool HasEvent(const std::string& smc_name, const std::string& reason) const {
    auto events = kube::Client<api::Event>(cluster_->rest()).List(ns());
    if (!events.ok()) return false;
    for (const api::Event& e : events->items) {
      if (e.involved_object.kind == "SpiderMultusConfig" && e.involved_object.name == smc_name &&
          e.type == "Warning" && e.reason == reason) {
        return true;
      }
    }
    return false;
  }
  double Counter(const std::string& family, const std::string& label,
                 const std::string& value) {
    return registry_.AddCounter(family, "").WithLabels({{label, value}}).Value();
  }

  std::unique_ptr<kube::testing::TestCluster> cluster_;
  std::shared_ptr<kube::RestClient> rest_;
  kube::metrics::Registry registry_;
  std::unique_ptr<kube::Manager> manager_;
  std::stop_source stop_;
  absl::Status result_;
  std::jthread run_;
};

TEST_F(MultusControllerTest, CreatesTheNADOfTheSeedSMC) {
  auto yaml = base::ParseYaml(ReadFile(kSeed));
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  Json smc = *yaml;
  smc["metadata"]["namespace"] = ns();  // the sample lives in kube-system
  const SpiderMultusConfig stored = CreateSMC(smc);
  ASSERT_TRUE(WaitUntil([&] { return NADMatches("macvlan-conf", "macvlan-conf"); }));

  auto nad = NADs().Get(ns(), "macvlan-conf");
  ASSERT_TRUE(nad.ok()) << nad.status();
  // The config upstream generates for the seed (multus/testdata), independent of our generator.
  auto golden = base::ParseJson(ReadFile(kSeedGolden));
  ASSERT_TRUE(golden.ok()) << golden.status();
  EXPECT_TRUE(gen::CNIConfigsEqual(nad->spec.config,
                                   base::DumpJson((*golden)["spec"]["config"])))
      << nad->spec.config;
  const api::OwnerReference* ref = nad->metadata.ControllerRef();
  ASSERT_NE(ref, nullptr);
  EXPECT_EQ(ref->kind, "SpiderMultusConfig");
  EXPECT_EQ(ref->api_version, "spiderpool.spidernet.io/v2beta1");
  EXPECT_EQ(ref->name, "macvlan-conf");
  EXPECT_EQ(ref->uid, stored.metadata.uid);
  EXPECT_EQ(ref->block_owner_deletion, true);
}

TEST_F(MultusControllerTest, FollowsSMCChanges) {
  CreateSMC(MacvlanSMC("net1", ns(), "eth0"));
  ASSERT_TRUE(WaitUntil([&] { return NADMatches("net1", "net1"); }));
  auto patched = SMCs().Patch(ns(), "net1", kube::PatchType::kMerge,
                              {{"spec", {{"macvlan", {{"master", {"ens5"}}, {"mtu", 9000}}}}}});
  ASSERT_TRUE(patched.ok()) << patched.status();
  ASSERT_TRUE(WaitUntil([&] {
    auto nad = NADs().Get(ns(), "net1");
    return nad.ok() && nad->spec.config.find("\"ens5\"") != std::string::npos &&
           nad->spec.config.find("9000") != std::string::npos && NADMatches("net1", "net1");
  }));
  // Annotations follow too.
  patched = SMCs().Patch(ns(), "net1", kube::PatchType::kMerge,
                         {{"metadata", {{"annotations", {{"example.com/team", "blue"}}}}}});
  ASSERT_TRUE(patched.ok()) << patched.status();
  ASSERT_TRUE(WaitUntil([&] {
    auto nad = NADs().Get(ns(), "net1");
    return nad.ok() && nad->metadata.annotations.count("example.com/team") == 1 &&
           nad->metadata.annotations.at("example.com/team") == "blue";
  }));
}

TEST_F(MultusControllerTest, RecreatesADeletedNAD) {
  CreateSMC(MacvlanSMC("net1", ns(), "eth0"));
  ASSERT_TRUE(WaitUntil([&] { return NADMatches("net1", "net1"); }));
  auto before = NADs().Get(ns(), "net1");
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(NADs().Delete(ns(), "net1").ok());
  ASSERT_TRUE(WaitUntil([&] {
    auto nad = NADs().Get(ns(), "net1");
    return nad.ok() && nad->metadata.uid != before->metadata.uid && NADMatches("net1", "net1");
  }));
}

TEST_F(MultusControllerTest, RepairsDrift) {
  CreateSMC(MacvlanSMC("net1", ns(), "eth0", {{"example.com/team", "blue"}}));
  ASSERT_TRUE(WaitUntil([&] { return NADMatches("net1", "net1"); }));

  // Someone edits the config, drops our annotation, adds their own, removes the owner.
  absl::Status s = kube::RetryOnConflict(kube::DefaultRetry(), [&]() -> absl::Status {
    auto nad = NADs().Get(ns(), "net1");
    if (!nad.ok()) return nad.status();
    nad->spec.config = R"({"cniVersion":"0.3.1","name":"net1","plugins":[{"type":"bridge"}]})";
    nad->metadata.annotations.erase("example.com/team");
    nad->metadata.annotations["example.com/someone-else"] = "kept";
    nad->metadata.owner_references.clear();
    return NADs().Update(*nad).status();
  });
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(WaitUntil([&] { return NADMatches("net1", "net1"); }));
  auto nad = NADs().Get(ns(), "net1");
  ASSERT_TRUE(nad.ok());
  EXPECT_EQ(nad->metadata.annotations.at("example.com/team"), "blue");
  EXPECT_EQ(nad->metadata.annotations.at("example.com/someone-else"), "kept");

  // A config that is the same JSON written differently is not drift: left as is.
  const std::string rv = nad->metadata.resource_version;
  auto reformatted = base::ParseJson(nad->spec.config);
  ASSERT_TRUE(reformatted.ok());
  nad->spec.config = base::DumpJsonPretty(*reformatted);
  auto updated = NADs().Update(*nad);
  ASSERT_TRUE(updated.ok()) << updated.status();
  // Make the controller observe it, then prove it did not rewrite the NAD: a later SMC change
  // is applied on top of the reformatted object's resourceVersion.
  ASSERT_TRUE(SMCs()
                  .Patch(ns(), "net1", kube::PatchType::kMerge,
                         {{"metadata", {{"annotations", {{"example.com/team", "red"}}}}}})
                  .ok());
  ASSERT_TRUE(WaitUntil([&] {
    auto n = NADs().Get(ns(), "net1");
    return n.ok() && n->metadata.annotations.at("example.com/team") == "red";
  }));
  auto after = NADs().Get(ns(), "net1");
  ASSERT_TRUE(after.ok());
  EXPECT_NE(after->metadata.resource_version, rv);
  EXPECT_EQ(after->spec.config, base::DumpJsonPretty(*reformatted));  // the text was not rewritten
}

TEST_F(MultusControllerTest, TakesOverAnUnownedNAD) {
  NetworkAttachmentDefinition pre;
  pre.metadata.name = "net1";
  pre.metadata.namespace_ = ns();
  pre.metadata.annotations["example.com/someone-else"] = "kept";
  pre.spec.config = R"({"cniVersion":"0.3.1","name":"net1","type":"bridge"})";
  ASSERT_TRUE(NADs().Create(pre).ok());
  const SpiderMultusConfig smc = CreateSMC(MacvlanSMC("net1", ns(), "eth0"));
  ASSERT_TRUE(WaitUntil([&] { return NADMatches("net1", "net1"); }));
  auto nad = NADs().Get(ns(), "net1");
  ASSERT_TRUE(nad.ok());
  EXPECT_TRUE(api::IsControlledBy(nad->metadata, smc.metadata.uid));
  EXPECT_EQ(nad->metadata.annotations.at("example.com/someone-else"), "kept");
}

TEST_F(MultusControllerTest, TakesOverTheNADOfAVanishedSMC) {
  // A NAD controlled by a SpiderMultusConfig incarnation that no longer exists (same name,
  // other uid): the new SMC of that name takes it over instead of warning.
  NetworkAttachmentDefinition pre;
  pre.metadata.name = "net1";
  pre.metadata.namespace_ = ns();
  pre.metadata.owner_references.push_back(
      {.api_version = "spiderpool.spidernet.io/v2beta1",
       .kind = "SpiderMultusConfig",
       .name = "net1",
       .uid = "00000000-0000-0000-0000-00000000dead",
       .controller = true,
       .block_owner_deletion = true});
  pre.spec.config = R"({"cniVersion":"0.3.1","name":"net1","type":"bridge"})";
  ASSERT_TRUE(NADs().Create(pre).ok());
  CreateSMC(MacvlanSMC("net1", ns(), "eth0"));
  ASSERT_TRUE(WaitUntil([&] { return NADMatches("net1", "net1"); }));
  EXPECT_FALSE(HasEvent("net1", kReasonNADOwnedByOther));

  // And a NAD whose SMC controller is gone altogether is deleted (what the GC would do).
  pre.metadata.name = "orphan";
  pre.metadata.owner_references[0].name = "gone";
  ASSERT_TRUE(NADs().Create(pre).ok());
  EXPECT_TRUE(WaitUntil([&] { return NADGone("orphan"); }));
}

TEST_F(MultusControllerTest, LeavesANADOfAnotherSMCAlone) {
  const Json shared = {{std::string(api::kAnnoMultusCRName), "shared"}};
  const SpiderMultusConfig a = CreateSMC(MacvlanSMC("a", ns(), "eth0", shared));
  ASSERT_TRUE(WaitUntil([&] { return NADMatches("shared", "a"); }));
  auto before = NADs().Get(ns(), "shared");
  ASSERT_TRUE(before.ok());

  // b wants the same NAD (our webhook would refuse it; the API server alone does not).
  CreateSMC(MacvlanSMC("b", ns(), "ens9", shared));
  ASSERT_TRUE(WaitUntil([&] { return HasEvent("b", kReasonNADOwnedByOther); }));
  auto during = NADs().Get(ns(), "shared");
  ASSERT_TRUE(during.ok());
  EXPECT_EQ(during->metadata.resource_version, before->metadata.resource_version);
  EXPECT_TRUE(api::IsControlledBy(during->metadata, a.metadata.uid));
  EXPECT_TRUE(NADMatches("shared", "a"));

  // Once a is deleted its NAD goes, and b (found through its cr-name) creates its own.
  ASSERT_TRUE(SMCs().Delete(ns(), "a").ok());
  ASSERT_TRUE(WaitUntil([&] { return NADMatches("shared", "b"); }));
}

TEST_F(MultusControllerTest, DeletesTheNADWithItsSMC) {
  CreateSMC(MacvlanSMC("net1", ns(), "eth0"));
  CreateSMC(MacvlanSMC("net2", ns(), "eth1", {{std::string(api::kAnnoMultusCRName), "other"}}));
  ASSERT_TRUE(WaitUntil([&] { return NADMatches("net1", "net1") && NADMatches("other", "net2"); }));
  ASSERT_TRUE(SMCs().Delete(ns(), "net1").ok());
  ASSERT_TRUE(SMCs().Delete(ns(), "net2").ok());
  EXPECT_TRUE(WaitUntil([&] { return NADGone("net1") && NADGone("other"); }));
}

TEST_F(MultusControllerTest, FollowsACrNameRename) {
  CreateSMC(MacvlanSMC("net1", ns(), "eth0"));
  ASSERT_TRUE(WaitUntil([&] { return NADMatches("net1", "net1"); }));
  // Our webhook forbids this change; the controller still handles it.
  ASSERT_TRUE(SMCs()
                  .Patch(ns(), "net1", kube::PatchType::kMerge,
                         {{"metadata",
                           {{"annotations", {{std::string(api::kAnnoMultusCRName), "net1-v2"}}}}}})
                  .ok());
  ASSERT_TRUE(WaitUntil([&] { return NADMatches("net1-v2", "net1") && NADGone("net1"); }));
}

TEST_F(MultusControllerTest, InvalidSMCGetsAWarningEventAndNoRetries) {
  Json smc = MacvlanSMC("broken", ns(), "eth0");
  smc["spec"]["chainCNIJsonData"] = {"this is not JSON"};
  CreateSMC(smc);
  ASSERT_TRUE(WaitUntil([&] { return HasEvent("broken", kReasonGenerateFailed); }));
  EXPECT_TRUE(NADGone("broken"));
  // The reconcile succeeded (nothing to retry): no error, no rate-limited requeue.
  EXPECT_EQ(Counter("controller_runtime_reconcile_errors_total", "controller", kControllerName),
            0);
  EXPECT_EQ(Counter("workqueue_retries_total", "name", kControllerName), 0);

  // Fixing the SMC produces the NAD.
  ASSERT_TRUE(SMCs()
                  .Patch(ns(), "broken", kube::PatchType::kMerge,
                         {{"spec", {{"chainCNIJsonData", Json::array()}}}})
                  .ok());
  EXPECT_TRUE(WaitUntil([&] { return NADMatches("broken", "broken"); }));
}

TEST_F(MultusControllerTest, NADTheServerRejectsGetsAWarningEventAndNoRetries) {
  // A cr-name that is no DNS subdomain (our webhook refuses it): the create is Invalid.
  CreateSMC(MacvlanSMC("badname", ns(), "eth0",
                       {{std::string(api::kAnnoMultusCRName), "Not_A_DNS_Name"}}));
  ASSERT_TRUE(WaitUntil([&] { return HasEvent("badname", kReasonNADRejected); }));
  EXPECT_EQ(Counter("controller_runtime_reconcile_errors_total", "controller", kControllerName),
            0);
  EXPECT_EQ(Counter("workqueue_retries_total", "name", kControllerName), 0);
}

}  // namespace
}  // namespace spiderpool::op::multus
