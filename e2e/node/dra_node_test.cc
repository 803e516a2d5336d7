// The DRA path on one node, all real processes and sockets: the spiderpool-agent binary with
// --dra-enabled discovers the node's NIC (a veth in the node's network namespace), publishes
// its ResourceSlice to the API server (loopback, or SPIDERPOOL_TEST_KUBECONFIG), registers
// with a kubelet stand-in over the plugin-registration socket, prepares a ResourceClaim that
// names a SpiderClaimParameter, and podman consumes the CDI spec it wrote. Then: a crash and
// restart of the agent keeps the prepared claim (checkpoint), Unprepare removes the spec,
// SIGTERM removes the agent's sockets.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/core.h"
#include "api/spider.h"
#include "base/json.h"
#include "base/strings.h"
#include "base/subprocess.h"
#include "base/testing/podman.h"
#include "base/testing/temp_dir.h"
#include "base/testing/wait.h"
#include "dra/kubeletplugin/testing/fake_kubelet.h"
#include "e2e/node/node_env.h"
#include "kube/rest/client.h"
#include "kube/testing/test_cluster.h"

namespace spiderpool::e2e {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Json = base::Json;

constexpr char kCrdDir[] = "charts/spiderpool/crds";
constexpr char kDriver[] = "netresources.spidernet.io";
constexpr char kCdiDir[] = "/var/run/cdi";  // podman 4.3 reads only /etc/cdi and /var/run/cdi

api::ResourceInfo ClaimResource() {
  return {.group = "resource.k8s.io", .version = "v1", .kind = "ResourceClaim",
          .plural = "resourceclaims", .singular = "resourceclaim", .namespaced = true,
          .has_status = true};
}
api::ResourceInfo SliceResource() {
  return {.group = "resource.k8s.io", .version = "v1", .kind = "ResourceSlice",
          .plural = "resourceslices", .singular = "resourceslice"};
}

class DraNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = NodeTestSkipReason(); !why.empty()) GTEST_SKIP() << why;
    if (std::string why = base::testing::PodmanSkipReason(); !why.empty()) GTEST_SKIP() << why;
    auto c = kube::testing::TestCluster::Start();
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
    ASSERT_TRUE(cluster_->ApplyCRDs(kCrdDir).ok());
    ns_ = cluster_->ns();
    tmp_ = dir_.path();
    auto kubeconfig = cluster_->KubeconfigFor(tmp_);
    ASSERT_TRUE(kubeconfig.ok()) << kubeconfig.status();
    kubeconfig_ = *kubeconfig;
    auto net = Network::Create();
    ASSERT_TRUE(net.ok()) << net.status();
    net_ = std::move(*net);
    ASSERT_TRUE(net_->AddNode("a").ok());
    // The node's NIC carries an address of the pool's subnet: that is how the device model
    // ties the NIC to the SpiderIPPool (dra/README.md "Device model").
    ASSERT_TRUE(Ip({"-n", net_->NodeNetns("a"), "addr", "add", "172.18.0.2/16", "dev", "eth0"}).ok());
    node_ = ns_ + "-a";
    api::Node node;
    node.metadata.name = node_;
    ASSERT_TRUE(kube::Client<api::Node>(cluster_->rest()).Create(node).ok());

    pool_ = "dra-" + std::to_string(::getpid());
    api::SpiderIPPool pool;
    pool.metadata.name = pool_;
    pool.spec.subnet = "172.18.0.0/16";
    pool.spec.ips = {"172.18.30.131-172.18.30.140"};
    pool.spec.gateway = "172.18.0.1";
    ASSERT_TRUE(kube::Client<api::SpiderIPPool>(cluster_->rest()).Create(pool).ok());

    api::SpiderMultusConfig smc;
    smc.metadata.name = "macvlan-conf";
    smc.metadata.namespace_ = ns_;
    smc.spec.cni_type = "macvlan";
    smc.spec.macvlan.emplace();
    smc.spec.macvlan->master = {"eth0"};
    auto created_smc = kube::Client<api::SpiderMultusConfig>(cluster_->rest()).Create(smc);
    ASSERT_TRUE(created_smc.ok()) << created_smc.status();

    api::SpiderClaimParameter scp;
    scp.metadata.name = "macvlan-claim";
    scp.metadata.namespace_ = ns_;
    scp.metadata.annotations["dra.spidernet.io/cdi-version"] = "0.5.0";
    scp.spec.default_nic = api::ClaimNic{.multus_name = "macvlan-conf", .namespace_ = ns_,
                                         .default_route = true};
    auto created_scp = kube::Client<api::SpiderClaimParameter>(cluster_->rest()).Create(scp);
    ASSERT_TRUE(created_scp.ok()) << created_scp.status();
  }

  void TearDown() override {
    agent_.reset();
    net_.reset();
    if (cluster_ != nullptr) {
      (void)kube::Client<api::SpiderIPPool>(cluster_->rest()).Delete("", pool_);
      (void)kube::DynamicClient(cluster_->rest(), SliceResource())
          .DeleteCollection("", {.field_selector = "spec.nodeName=" + node_});
      (void)kube::Client<api::Node>(cluster_->rest()).Delete("", node_);
    }
    for (const std::string& uid : claim_uids_) {
      std::error_code ec;
      fs::remove(SpecPath(uid), ec);
    }
  }

  std::string SpecPath(const std::string& uid) const {
    return base::StrCat(kCdiDir, "/k8s.netresources.spidernet.io-claim_", uid, ".yaml");
  }
  std::string Registry() const { return tmp_ + "/plugins_registry"; }

  void StartAgent(const std::string& pod_uid) {
    agent_.reset();
    auto p = base::Process::Start(
        {.argv = {Runfile("agent/spiderpool-agent"), "--node-name=" + node_,
                  "--kubeconfig=" + kubeconfig_, "--socket=" + tmp_ + "/ipam.sock",
                  "--health-port=-1", "--dra-enabled", "--nic-netns=/var/run/netns/" + net_->NodeNetns("a"),
                  "--nic-include=eth0", "--sysfs-root=", "--dra-slots-per-nic=4",
                  "--kubelet-registry-dir=" + Registry(),
                  "--kubelet-plugins-dir=" + tmp_ + "/plugins", "--dra-cdi-dir=" + std::string(kCdiDir),
                  "--dra-health-port=-1"},
         .env = {{"POD_UID", pod_uid}},
         .inherit_env = true,
         .output_file = tmp_ + "/agent.log"});
    ASSERT_TRUE(p.ok()) << p.status();
    agent_ = std::move(*p);
  }

  std::string AgentLog() const {
    std::ifstream in(tmp_ + "/agent.log");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  // Polls (bounded: a failure guard, not a timing assertion).
  bool Eventually(const std::function<bool()>& pred) {
    return base::testing::WaitUntil(pred, absl::Seconds(60), absl::Milliseconds(50));
  }

  // Device names of this node's slices.
  std::vector<std::string> SliceDevices() {
    auto list = kube::DynamicClient(cluster_->rest(), SliceResource())
                    .List("", {.field_selector = "spec.nodeName=" + node_});
    std::vector<std::string> out;
    if (!list.ok()) return out;
    for (const Json& s : (*list)["items"]) {
      for (const Json& d : s["spec"].value("devices", Json::array())) out.push_back(d["name"]);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // A claim as the resourceclaim controller creates it from the seed's template
  // (e2e/samples/dra/resourceclaimtemplate.yaml), allocated as the scheduler would: one device
  // of this node's pool, the opaque config copied from the claim.
  Json CreateAllocatedClaim(const std::string& name, const std::string& device,
                            const std::string& pod = "app-0",
                            const std::string& pod_uid = "0f9e5d2c-1111-4222-8333-944445555666") {
    const Json config = {{"requests", {"nic"}},
                         {"opaque",
                          {{"driver", kDriver},
                           {"parameters",
                            {{"apiVersion", "spiderpool.spidernet.io/v2beta1"},
                             {"kind", "SpiderClaimParameter"},
                             {"name", "macvlan-claim"}}}}}};
    Json claim = {{"apiVersion", "resource.k8s.io/v1"},
                  {"kind", "ResourceClaim"},
                  {"metadata", {{"name", name}, {"namespace", ns_}}},
                  {"spec",
                   {{"devices",
                     {{"requests",
                       {{{"name", "nic"}, {"exactly", {{"deviceClassName", kDriver}}}}}},
                      {"config", {config}}}}}}};
    kube::DynamicClient claims(cluster_->rest(), ClaimResource());
    auto created = claims.Create(claim);
    EXPECT_TRUE(created.ok()) << created.status();
    if (!created.ok()) return Json();
    Json allocated = *created;
    Json status_config = config;
    status_config["source"] = "FromClaim";
    allocated["status"] = {
        {"allocation",
         {{"devices",
           {{"results",
             {{{"request", "nic"}, {"driver", kDriver}, {"pool", node_}, {"device", device}}}},
            {"config", {status_config}}}},
          {"nodeSelector",
           {{"nodeSelectorTerms",
             {{{"matchFields",
                {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {node_}}}}}}}}}}}},
        {"reservedFor", {{{"resource", "pods"}, {"name", pod}, {"uid", pod_uid}}}}};
    auto updated = claims.UpdateStatus(allocated);
    EXPECT_TRUE(updated.ok()) << updated.status();
    claim_uids_.push_back((*created)["metadata"]["uid"]);
    return updated.ok() ? *updated : Json();
  }

  absl::StatusOr<base::ProcessResult> PodmanWithDevice(const std::string& uid) {
    auto podman = base::testing::PodmanSandbox::Create(tmp_);
    if (!podman.ok()) return podman.status();
    return podman->Run(
        {"--network=none", "--device", base::StrCat("k8s.netresources.spidernet.io/claim=", uid)},
        {"/bin/busybox", "env"});
  }

  base::testing::TempDir dir_{"dra"};  // before agent_, whose sockets and log are in it
  std::unique_ptr<kube::testing::TestCluster> cluster_;
  std::unique_ptr<Network> net_;
  std::unique_ptr<base::Process> agent_;
  std::string ns_, tmp_, kubeconfig_, node_, pool_;
  std::vector<std::string> claim_uids_;
};

TEST_F(DraNodeTest, AgentPublishesPreparesForPodmanSurvivesRestartAndCleansUp) {
  StartAgent("agent-pod-1");
  // 10 free IPs in the NIC's subnet, 4 slots per NIC.
  ASSERT_TRUE(Eventually([&] { return SliceDevices().size() == 4; }))
      << "slices: " << ::testing::PrintToString(SliceDevices()) << "\n" << AgentLog();
  EXPECT_EQ(SliceDevices()[0], "eth0-0");

  dra::kubeletplugin::testing::FakeKubelet kubelet({.registry_dir = Registry()});
  ASSERT_TRUE(Eventually([&] { return kubelet.Discover().ok() && kubelet.current().ok(); }))
      << AgentLog();
  EXPECT_THAT(kubelet.current()->registration_socket, HasSubstr("agent-pod-1"));
  EXPECT_EQ(kubelet.current()->service, "v1.DRAPlugin");

  const Json claim = CreateAllocatedClaim("app-0-nic", "eth0-0");
  ASSERT_FALSE(claim.is_null());
  const std::string uid = claim["metadata"]["uid"];
  const dra::kubeletplugin::ClaimRef ref{.namespace_ = ns_, .uid = uid, .name = "app-0-nic"};

  auto prepared = kubelet.Prepare({ref});
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  ASSERT_EQ((*prepared)[uid].error, "") << AgentLog();
  ASSERT_EQ((*prepared)[uid].devices.size(), 1u);
  EXPECT_EQ((*prepared)[uid].devices[0].device_name, "eth0-0");
  EXPECT_EQ((*prepared)[uid].devices[0].cdi_device_ids,
            std::vector<std::string>{"k8s.netresources.spidernet.io/claim=" + uid});
  ASSERT_TRUE(fs::exists(SpecPath(uid)));

  // The claim's status names our device (written by the agent).
  auto got = kube::DynamicClient(cluster_->rest(), ClaimResource()).Get(ns_, "app-0-nic");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE((*got)["status"].contains("devices")) << base::DumpJson(*got);
  EXPECT_EQ((*got)["status"]["devices"][0]["driver"], kDriver);
  EXPECT_EQ((*got)["status"]["devices"][0]["device"], "eth0-0");

  // A real runtime consumes the spec.
  auto run = PodmanWithDevice(uid);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->exit_code, 0) << run->stderr_data;
  EXPECT_THAT(run->stdout_data, HasSubstr("DRA_CLAIM_UID=" + uid));

  // The agent crashes; its replacement (another pod UID) serves the same claim from the
  // checkpoint, without re-preparing.
  agent_->Signal(SIGKILL);
  agent_->Wait();
  StartAgent("agent-pod-2");
  ASSERT_TRUE(Eventually([&] {
    return kubelet.Discover().ok() && kubelet.current().ok() &&
           kubelet.current()->registration_socket.find("agent-pod-2") != std::string::npos;
  })) << AgentLog();
  auto again = kubelet.Prepare({ref});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)[uid].error, "");
  EXPECT_EQ((*again)[uid].devices[0].cdi_device_ids, (*prepared)[uid].devices[0].cdi_device_ids);

  auto unprepared = kubelet.Unprepare({ref});
  ASSERT_TRUE(unprepared.ok()) << unprepared.status();
  EXPECT_EQ((*unprepared)[uid], "");
  EXPECT_FALSE(fs::exists(SpecPath(uid)));
  auto twice = kubelet.Unprepare({ref});  // idempotent
  ASSERT_TRUE(twice.ok()) << twice.status();
  EXPECT_EQ((*twice)[uid], "");

  // SIGTERM: the agent removes its own sockets (the kubelet then deregisters it).
  const std::string reg = kubelet.current()->registration_socket;
  const std::string endpoint = kubelet.current()->endpoint;
  agent_->Signal(SIGTERM);
  EXPECT_EQ(agent_->Wait(), 0) << AgentLog();
  EXPECT_FALSE(fs::exists(reg));
  EXPECT_FALSE(fs::exists(endpoint));
}

TEST_F(DraNodeTest, AClaimWithAMissingClaimParameterFailsAndWritesNoSpec) {
  StartAgent("agent-pod-3");
  dra::kubeletplugin::testing::FakeKubelet kubelet({.registry_dir = Registry()});
  ASSERT_TRUE(Eventually([&] { return kubelet.Discover().ok() && kubelet.current().ok(); }))
      << AgentLog();
  ASSERT_TRUE(kube::Client<api::SpiderClaimParameter>(cluster_->rest())
                  .Delete(ns_, "macvlan-claim").ok());
  const Json claim = CreateAllocatedClaim("app-1-nic", "eth0-1");
  ASSERT_FALSE(claim.is_null());
  const std::string uid = claim["metadata"]["uid"];
  auto prepared = kubelet.Prepare({{.namespace_ = ns_, .uid = uid, .name = "app-1-nic"}});
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_THAT((*prepared)[uid].error, HasSubstr("macvlan-claim"));
  EXPECT_FALSE(fs::exists(SpecPath(uid)));
}

// Issue 15 point 4: the claim's status.devices[].networkData carries what our IPAM gave the
// pod's interface — a real CNI ADD through /usr/lib/cni/macvlan, which execs our `spiderpool`
// IPAM plugin against the agent — and loses it after the DEL.
TEST_F(DraNodeTest, NetworkDataFollowsARealCniAddAndDel) {
  StartAgent("agent-pod-nd");
  ASSERT_TRUE(Eventually([&] { return SliceDevices().size() == 4; })) << AgentLog();
  dra::kubeletplugin::testing::FakeKubelet kubelet({.registry_dir = Registry()});
  ASSERT_TRUE(Eventually([&] { return kubelet.Discover().ok() && kubelet.current().ok(); }))
      << AgentLog();

  api::Pod pod;
  pod.metadata.name = "app-nd";
  pod.metadata.namespace_ = ns_;
  pod.spec.node_name = node_;
  pod.spec.containers.push_back({.name = "c", .image = "busybox"});
  auto created = kube::Client<api::Pod>(cluster_->rest()).Create(pod);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(net_->AddPodNetns("app-nd").ok());
  const Json claim = CreateAllocatedClaim("app-nd-nic", "eth0-1", "app-nd", created->metadata.uid);
  ASSERT_FALSE(claim.is_null());
  const std::string uid = claim["metadata"]["uid"];
  auto prepared = kubelet.Prepare({{.namespace_ = ns_, .uid = uid, .name = "app-nd-nic"}});
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  ASSERT_EQ((*prepared)[uid].error, "") << AgentLog();

  auto network_data = [&]() -> Json {
    auto c = kube::DynamicClient(cluster_->rest(), ClaimResource()).Get(ns_, "app-nd-nic");
    if (!c.ok()) return Json();
    for (const Json& d : c->value("status", Json::object()).value("devices", Json::array())) {
      if (d.value("device", "") == "eth0-1") return d.value("networkData", Json());
    }
    return Json();
  };
  const Json config = {
      {"cniVersion", "1.0.0"}, {"name", "macvlan-conf"}, {"type", "macvlan"},
      {"master", "eth0"}, {"mode", "bridge"},
      {"ipam", {{"type", "spiderpool"}, {"default_ipv4_ippool", {pool_}},
                {"ipam_unix_socket_path", tmp_ + "/ipam.sock"}}}};
  auto cni = [&](const std::string& command) {
    return RunCni({.command = command,
                   .container_id = "0123456789abcdef-app-nd",
                   .netns_path = net_->PodNetnsPath("app-nd"),
                   .cni_args = base::StrCat("IgnoreUnknown=1;K8S_POD_NAMESPACE=", ns_,
                                            ";K8S_POD_NAME=app-nd;K8S_POD_UID=", created->metadata.uid),
                   .config = base::DumpJson(config),
                   .run_in_netns = net_->NodeNetns("a"),
                   .cni_path = Runfile("agent/cni") + ":/usr/lib/cni"});
  };
  auto add = cni("ADD");
  ASSERT_TRUE(add.ok()) << add.status();
  ASSERT_EQ(add->exit_code, 0) << add->Describe() << AgentLog();
  const std::string address = add->json["ips"][0]["address"];
  EXPECT_EQ(address.rfind("172.18.30.", 0), 0u) << address;
  ASSERT_TRUE(Eventually([&] { return !network_data().is_null(); }))
      << "no networkData on the claim\n" << AgentLog();
  const Json nd = network_data();
  EXPECT_EQ(nd.value("interfaceName", ""), "eth0");
  EXPECT_EQ(nd.value("ips", Json::array()), Json::array({address}));  // with its prefix length

  auto del = cni("DEL");
  ASSERT_TRUE(del.ok()) << del.status();
  ASSERT_EQ(del->exit_code, 0) << del->Describe();
  EXPECT_TRUE(Eventually([&] { return network_data().is_null(); }))
      << "networkData still there after DEL: " << network_data().dump() << "\n" << AgentLog();
  (void)kube::Client<api::Pod>(cluster_->rest()).Delete(ns_, "app-nd");
}

}  // namespace
}  // namespace spiderpool::e2e
