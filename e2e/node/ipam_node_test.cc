// IPAM end to end on a "node": the real macvlan plugin from /usr/lib/cni execs our `spiderpool`
// IPAM plugin, which asks a real spiderpool-agent process over its unix socket; the agent
// allocates from a SpiderIPPool on the loopback API server (or a real cluster through
// SPIDERPOOL_TEST_KUBECONFIG). Pods are network namespaces; we look inside them with `ip`.
// Root only (CI runs as root); skipped with a reason elsewhere.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <fstream>
#include <sstream>
#include <set>
#include <thread>

#include <httplib.h>

#include "base/strings.h"
#include "api/core.h"
#include "api/spider.h"
#include "api/apps.h"
#include "base/testing/temp_dir.h"
#include "base/testing/wait.h"
#include "base/yaml.h"
#include "multus/generate.h"
#include "e2e/node/node_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/rest/client.h"
#include "kube/testing/test_cluster.h"

namespace spiderpool::e2e {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

constexpr char kCrdDir[] = "charts/spiderpool/crds";
constexpr char kNad[] = "kube-system/macvlan-conf";

class IpamNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = NodeTestSkipReason(); !why.empty()) GTEST_SKIP() << why;
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
    for (const char* n : {"a", "b"}) {
      ASSERT_TRUE(net_->AddNode(n).ok());
      api::Node node;
      node.metadata.name = NodeName(n);
      ASSERT_TRUE(kube::Client<api::Node>(cluster_->rest()).Create(node).ok());
    }
    // The seed's pool (e2e/samples/ippool.yaml), under a name of this test.
    CreatePool(pool_, {"172.18.30.131-172.18.30.140"});
    // Node a's own address on the pods' subnet: the coordinator's veth pair must reach it.
    ASSERT_TRUE(Ip({"-n", net_->NodeNetns("a"), "addr", "add", "172.18.0.2/16", "dev", "eth0"}).ok());
    EnsureCoordinator();
  }

  // The coordinator plugin needs the SpiderCoordinator "default" Synced (the chart's install
  // hook creates it and spiderpool-controller syncs it). A real cluster has it already; on the
  // loopback server the test creates it and writes the status the controller would (podCIDRType
  // none: nothing to discover). It is cluster-wide and left in place.
  void EnsureCoordinator() {
    kube::Client<api::SpiderCoordinator> client(cluster_->rest());
    if (client.Get("", "default").ok()) return;
    api::SpiderCoordinator c;
    c.metadata.name = "default";
    c.spec.pod_cidr_type = "none";
    auto created = client.Create(c);
    ASSERT_TRUE(created.ok()) << created.status();
    created->status = api::CoordinatorStatus{.phase = std::string(api::kCoordinatorPhaseSynced),
                                             .reason = "",
                                             .overlay_pod_cidr = {},
                                             .service_cidr = {}};
    auto synced = client.UpdateStatus(*created);
    ASSERT_TRUE(synced.ok()) << synced.status();
  }

  void TearDown() override {
    agents_.clear();
    controller_.reset();
    net_.reset();
    if (cluster_ != nullptr) {
      kube::Client<api::SpiderIPPool> pools(cluster_->rest());
      for (const auto& p : created_pools_) (void)pools.Delete("", p);
      for (const char* n : {"a", "b"}) (void)kube::Client<api::Node>(cluster_->rest()).Delete("", NodeName(n));
    }
  }

  std::string NodeName(std::string_view n) const { return base::StrCat(ns_, "-", n); }
  std::string Socket(std::string_view n) const { return base::StrCat(tmp_, "/", n, ".sock"); }

  void CreatePool(const std::string& name, std::vector<std::string> ips) {
    api::SpiderIPPool pool;
    pool.metadata.name = name;
    pool.spec.subnet = "172.18.0.0/16";
    pool.spec.ips = std::move(ips);
    pool.spec.gateway = "172.18.0.1";
    pool.spec.multus_name = {kNad};
    auto created = kube::Client<api::SpiderIPPool>(cluster_->rest()).Create(pool);
    ASSERT_TRUE(created.ok()) << created.status();
    created_pools_.push_back(name);
  }

  void StartAgent(const std::string& n, std::vector<std::string> extra_args = {}) {
    agents_.erase(n);
    std::vector<std::string> argv = {Runfile("agent/spiderpool-agent"), "--node-name=" + NodeName(n),
                                     "--kubeconfig=" + kubeconfig_, "--socket=" + Socket(n),
                                     "--health-port=-1"};
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    auto p = base::Process::Start(
        {.argv = argv,
         .inherit_env = true,
         .output_file = base::StrCat(tmp_, "/agent-", n, ".log")});
    ASSERT_TRUE(p.ok()) << p.status();
    agents_[n] = std::move(*p);
    // Ready when the socket answers /v1/ipam/healthy (bounded).
    for (int i = 0; i < 600; ++i) {
      httplib::Client client(Socket(n));
      client.set_address_family(AF_UNIX);
      auto res = client.Get("/v1/ipam/healthy");
      auto coord = client.Get("/v1/coordinator/config?podNamespace=x&podName=y");
      if (res && res->status == 200 && coord && coord->status == 200) return;
      ASSERT_TRUE(agents_[n]->Running()) << "agent exited: " << AgentLog(n);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "agent " << n << " did not become ready";
  }

  // spiderpool-controller (IP GC, pool counts) as a process; its Lease lives in the test
  // namespace so that it never competes with a real installation's controller.
  void StartController() {
    auto p = base::Process::Start(
        {.argv = {Runfile("operator/spiderpool-controller"), "--kubeconfig=" + kubeconfig_,
                  "--namespace=" + ns_, "--health-port=-1", "--webhook-port=-1"},
         .inherit_env = true,
         .output_file = tmp_ + "/controller.log"});
    ASSERT_TRUE(p.ok()) << p.status();
    controller_ = std::move(*p);
  }

  // Polls API state (bounded); true once `pred` holds.
  bool Eventually(const std::function<bool()>& pred, absl::Duration timeout = absl::Seconds(30)) {
    return base::testing::WaitUntil(pred, timeout, absl::Milliseconds(50));
  }


  std::string ReadLog(const std::string& file) const {
    std::ifstream in(base::StrCat(tmp_, "/", file));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string AgentLog(const std::string& n) const { return ReadLog(base::StrCat("agent-", n, ".log")); }

  void StopAgent(const std::string& n, int sig = SIGKILL) {
    agents_[n]->Signal(sig);
    agents_[n]->Wait();
    agents_.erase(n);
  }

  api::Pod CreatePod(const std::string& name, std::string_view node,
                     std::map<std::string, std::string> annotations = {}) {
    api::Pod pod;
    pod.metadata.name = name;
    pod.metadata.namespace_ = ns_;
    pod.metadata.annotations = std::move(annotations);
    pod.metadata.annotations["v1.multus-cni.io/default-network"] = kNad;
    pod.spec.node_name = NodeName(node);
    pod.spec.containers.push_back({.name = "c", .image = "busybox"});
    auto created = kube::Client<api::Pod>(cluster_->rest()).Create(pod);
    EXPECT_TRUE(created.ok()) << created.status();
    EXPECT_TRUE(net_->AddPodNetns(name).ok());
    return created.ok() ? *created : pod;
  }

  // The NAD's conflist that multus/ generates for the seed's SpiderMultusConfig
  // (e2e/samples/multusconfig.yaml): macvlan (+ `spiderpool` IPAM) then `coordinator`, each
  // entry as libcni hands it to its plugin (the list's name and cniVersion injected). Two
  // per-test settings: the node's agent socket (the test's agents do not listen on
  // /var/run/spidernet/spiderpool.sock) and the pool as the default pool (as an SMC with
  // `ippools` generates it).
  std::vector<base::Json> Conflist(std::string_view node, std::string cni_version = "1.0.0") const {
    std::ifstream in("e2e/samples/multusconfig.yaml");
    std::stringstream text;
    text << in.rdbuf();
    auto j = base::ParseYaml(text.str());
    EXPECT_TRUE(j.ok()) << j.status();
    auto smc = api::Decode<api::SpiderMultusConfig>(*j);
    EXPECT_TRUE(smc.ok()) << smc.status();
    auto conflist = multus::GenerateCNIConfig(*smc);
    EXPECT_TRUE(conflist.ok()) << conflist.status();
    base::Json list = *base::ParseJson(*conflist);
    std::vector<base::Json> plugins;
    for (base::Json plugin : list["plugins"]) {
      plugin["name"] = list["name"];
      plugin["cniVersion"] = cni_version;
      if (plugin.contains("ipam")) {
        plugin["ipam"]["default_ipv4_ippool"] = base::Json::array({pool_});
        plugin["ipam"]["ipam_unix_socket_path"] = Socket(node);
      }
      if (plugin["type"] == "coordinator") plugin["ipam_unix_socket_path"] = Socket(node);
      plugins.push_back(std::move(plugin));
    }
    EXPECT_EQ(plugins.size(), 2u);
    EXPECT_EQ(plugins.front()["type"], "macvlan");
    EXPECT_EQ(plugins.front()["master"], "eth0");  // each node namespace's eth0 is the veth master
    EXPECT_EQ(plugins.back()["type"], "coordinator");
    return plugins;
  }

  // A sandbox ID as a runtime makes one: hex, unique in its first characters (the coordinator
  // names the node end of its veth pair after the first 11).
  static std::string ContainerID(const std::string& pod) {
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016zx", std::hash<std::string>{}(pod));
    return base::StrCat(hex, "-", pod);
  }

  // Runs the conflist the way libcni does: ADD each plugin in order with the previous result
  // as prevResult (returns the last outcome, or the first failure); DEL in reverse, each with
  // the cached ADD result (returns the first failure, else the last outcome).
  CniOutcome Cni(std::string command, const api::Pod& pod, std::string_view node,
                 std::string container = "", std::string cni_version = "1.0.0") {
    if (container.empty()) container = ContainerID(pod.metadata.name);
    std::vector<base::Json> plugins = Conflist(node, cni_version);
    const bool del = command == "DEL";
    if (del) std::reverse(plugins.begin(), plugins.end());
    std::optional<base::Json> prev;
    if (del && add_results_.count(container)) prev = add_results_[container];
    CniOutcome last;
    for (base::Json& plugin : plugins) {
      if (prev.has_value()) plugin["prevResult"] = *prev;
      const std::string type = plugin["type"].get<std::string>();
      auto out = RunCni({.command = command,
                         .container_id = container,
                         .netns_path = net_->PodNetnsPath(pod.metadata.name),
                         .cni_args = base::StrCat("IgnoreUnknown=1;K8S_POD_NAMESPACE=", ns_,
                                                  ";K8S_POD_NAME=", pod.metadata.name,
                                                  ";K8S_POD_UID=", pod.metadata.uid),
                         .config = base::DumpJson(plugin),
                         .plugin = type == "coordinator" ? Runfile("agent/coordinator/coordinator")
                                                         : "/usr/lib/cni/" + type,
                         .run_in_netns = net_->NodeNetns(std::string(node)),
                         .cni_path = Runfile("agent/cni") + ":/usr/lib/cni"});
      EXPECT_TRUE(out.ok()) << out.status();
      if (!out.ok()) return CniOutcome{};
      if (out->exit_code != 0) {
        if (!del) return *out;
        if (last.exit_code <= 0) last = *out;
        continue;
      }
      if (!del) prev = out->json;
      if (last.exit_code <= 0) last = *out;
    }
    if (!del && last.exit_code == 0) add_results_[container] = last.json;
    if (del) add_results_.erase(container);
    return last;
  }

  // The pool's pod records (the agents' node reservations left out). With `expect`, waits
  // (bounded) until there are that many: an agent writes the records of IPs it handed out from
  // its reservations in the background, within about a second (agent/ipam/blocks.h).
  api::PoolIPAllocations Records(const std::string& pool, std::optional<size_t> expect = {}) {
    api::PoolIPAllocations recs;
    for (int attempt = 0; attempt < 200; ++attempt) {
      auto p = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", pool);
      EXPECT_TRUE(p.ok()) << p.status();
      if (!p.ok()) return {};
      recs = p->AllocatedIPs().value_or(api::PoolIPAllocations{});
      std::erase_if(recs, [](const auto& kv) { return api::IsNodeReservation(kv.second); });
      if (!expect.has_value() || recs.size() == *expect) {
        EXPECT_EQ(p->status.allocated_ip_count.value_or(0), static_cast<int64_t>(recs.size()));
        break;
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    return recs;
  }

  // Before the agents and the controller, whose sockets and logs are in it.
  base::testing::TempDir dir_{"node"};
  std::unique_ptr<kube::testing::TestCluster> cluster_;
  std::unique_ptr<Network> net_;
  std::map<std::string, std::unique_ptr<base::Process>> agents_;
  std::unique_ptr<base::Process> controller_;
  std::map<std::string, base::Json> add_results_;  // libcni's cache: container -> ADD result
  std::vector<std::string> created_pools_;
  std::string ns_, tmp_, kubeconfig_;
  std::string pool_ = "seed-" + std::to_string(::getpid()) + "-" + std::to_string(::rand() % 100000);
};

TEST_F(IpamNodeTest, MacvlanPodGetsIPGatewayAndRoutesAndDelFreesIt) {
  StartAgent("a");
  api::Pod pod = CreatePod("p1", "a");
  CniOutcome add = Cni("ADD", pod, "a");
  ASSERT_EQ(add.exit_code, 0) << add.Describe();
  ASSERT_TRUE(add.json.contains("ips")) << add.Describe();
  EXPECT_EQ(add.json["ips"][0]["address"], "172.18.30.131/16");
  EXPECT_EQ(add.json["ips"][0]["gateway"], "172.18.0.1");
  EXPECT_EQ(add.json["cniVersion"], "1.0.0");

  // Inside the pod: the macvlan NIC with the pool's IP, and the default route via the gateway.
  auto addrs = net_->PodAddresses("p1", "eth0");
  ASSERT_TRUE(addrs.ok()) << addrs.status();
  EXPECT_THAT(*addrs, Contains("172.18.30.131/16"));
  auto routes = net_->PodRoutes("p1");
  ASSERT_TRUE(routes.ok()) << routes.status();
  bool default_route = false;
  for (const auto& r : *routes) {
    if (r.value("dst", "") == "default" && r.value("gateway", "") == "172.18.0.1" && r.value("dev", "") == "eth0") {
      default_route = true;
    }
  }
  EXPECT_TRUE(default_route) << base::DumpJson(*routes);
  // The coordinator's veth pair: the macvlan pod reaches its own node (macvlan alone cannot).
  EXPECT_TRUE(net_->PodLinkExists("p1", "veth0"));
  EXPECT_TRUE(net_->Ping("p1", "172.18.0.2"));

  api::PoolIPAllocations recs = Records(pool_, 1);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs.begin()->second.pod_uid, pod.metadata.uid);
  EXPECT_EQ(recs.begin()->second.node.value_or(""), NodeName("a"));
  EXPECT_EQ(recs.begin()->second.container_id.value_or(""), ContainerID("p1"));
  EXPECT_EQ(recs.begin()->second.interface_.value_or(""), "eth0");

  CniOutcome del = Cni("DEL", pod, "a");
  ASSERT_EQ(del.exit_code, 0) << del.Describe();
  EXPECT_TRUE(Records(pool_, 0).empty());
  EXPECT_FALSE(net_->PodLinkExists("p1", "eth0"));
  // DEL again: still success (idempotent).
  EXPECT_EQ(Cni("DEL", pod, "a").exit_code, 0);
}

TEST_F(IpamNodeTest, OlderCniVersionsGetTheirResultShape) {
  StartAgent("a");
  api::Pod pod = CreatePod("p1", "a");
  CniOutcome add = Cni("ADD", pod, "a", "", "0.3.1");
  ASSERT_EQ(add.exit_code, 0) << add.Describe();
  EXPECT_EQ(add.json["cniVersion"], "0.3.1");
  EXPECT_EQ(add.json["ips"][0]["version"], "4");
  EXPECT_EQ(Cni("DEL", pod, "a", "", "0.3.1").exit_code, 0);
  EXPECT_TRUE(Records(pool_, 0).empty());
}

TEST_F(IpamNodeTest, TwoAgentsOnTwoNodesShareOnePoolWithoutDuplicatesAndPodsTalk) {
  StartAgent("a");
  StartAgent("b");
  std::vector<api::Pod> pods;
  // 8 of the pool's 10 IPs: filling a pool to the last IP from two nodes at once can still
  // report it full while the other node holds idle reservations (issue 17, "false
  // exhaustion"); that case belongs to the IPAM-tails work, not to this test.
  for (int i = 0; i < 4; ++i) {
    pods.push_back(CreatePod(base::StrCat("a", i), "a"));
    pods.push_back(CreatePod(base::StrCat("b", i), "b"));
  }
  std::vector<CniOutcome> outs(pods.size());
  {
    std::vector<std::jthread> threads;
    for (size_t i = 0; i < pods.size(); ++i) {
      threads.emplace_back([&, i] { outs[i] = Cni("ADD", pods[i], i % 2 == 0 ? "a" : "b"); });
    }
  }
  std::set<std::string> ips;
  for (size_t i = 0; i < pods.size(); ++i) {
    ASSERT_EQ(outs[i].exit_code, 0) << outs[i].Describe();
    ips.insert(outs[i].json["ips"][0]["address"].get<std::string>());
  }
  EXPECT_EQ(ips.size(), pods.size()) << "duplicate IP";
  EXPECT_EQ(Records(pool_, pods.size()).size(), pods.size());
  // A pod on node a reaches a pod on node b through the two macvlan masters.
  const std::string b0 = outs[1].json["ips"][0]["address"].get<std::string>();
  EXPECT_TRUE(net_->Ping("a0", b0.substr(0, b0.find('/'))));

  // A full pool (one IP, taken): the next pod fails with a CNI error naming the pool. After
  // the runtime's cleanup DEL (macvlan 1.1.1 leaves its link behind on an IPAM error; runtimes
  // always DEL a failed ADD) neither an IP nor a link is left.
  const std::string tiny = pool_ + "-tiny";
  CreatePool(tiny, {"172.18.30.150"});
  const std::string only_tiny = base::StrCat(R"({"ipv4":[")", tiny, R"("]})");
  api::Pod first = CreatePod("first", "a", {{"ipam.spidernet.io/ippool", only_tiny}});
  ASSERT_EQ(Cni("ADD", first, "a").exit_code, 0);
  api::Pod extra = CreatePod("extra", "a", {{"ipam.spidernet.io/ippool", only_tiny}});
  CniOutcome full = Cni("ADD", extra, "a");
  EXPECT_NE(full.exit_code, 0);
  EXPECT_GE(full.json.value("code", 0), 100) << full.Describe();
  EXPECT_THAT(full.json.value("msg", "") + full.json.value("details", ""), HasSubstr(tiny)) << full.Describe();
  EXPECT_EQ(Cni("DEL", extra, "a").exit_code, 0);
  EXPECT_FALSE(net_->PodLinkExists("extra", "eth0"));
  EXPECT_EQ(Records(tiny, 1).size(), 1u);
  EXPECT_EQ(Cni("DEL", first, "a").exit_code, 0);
  EXPECT_TRUE(Records(tiny, 0).empty());
  EXPECT_EQ(Records(pool_, pods.size()).size(), pods.size());

  for (size_t i = 0; i < pods.size(); ++i) {
    EXPECT_EQ(Cni("DEL", pods[i], i % 2 == 0 ? "a" : "b").exit_code, 0);
  }
  EXPECT_TRUE(Records(pool_, 0).empty());
}

TEST_F(IpamNodeTest, AgentRestartedBetweenAddAndDelStillFrees) {
  StartAgent("a");
  api::Pod pod = CreatePod("p1", "a");
  ASSERT_EQ(Cni("ADD", pod, "a").exit_code, 0);
  StopAgent("a");
  StartAgent("a");
  ASSERT_EQ(Records(pool_, 1).size(), 1u);
  ASSERT_EQ(Cni("DEL", pod, "a").exit_code, 0);
  EXPECT_TRUE(Records(pool_, 0).empty());
}

TEST_F(IpamNodeTest, GarbageCollectorFreesTheIPOfAPodDeletedWhileTheAgentWasDown) {
  StartController();
  StartAgent("a");
  api::Pod pod = CreatePod("p1", "a");
  ASSERT_EQ(Cni("ADD", pod, "a").exit_code, 0);
  api::Pod keep = CreatePod("p2", "a");
  ASSERT_EQ(Cni("ADD", keep, "a").exit_code, 0);
  ASSERT_EQ(Records(pool_, 2).size(), 2u);
  // The agent dies; the pod is deleted meanwhile, so no CNI DEL reaches an agent.
  // On a real cluster the pod then stays Terminating (no kubelet confirms it): the GC frees
  // its IP once deletionTimestamp + grace period have passed.
  StopAgent("a");
  ASSERT_TRUE(kube::Client<api::Pod>(cluster_->rest())
                  .Delete(ns_, "p1", {.grace_period_seconds = 1})
                  .ok());
  EXPECT_TRUE(Eventually([&] { return Records(pool_).size() == 1; }))
      << "the controller's GC did not free the deleted pod's IP";
  api::PoolIPAllocations recs = Records(pool_);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs.begin()->second.pod_uid, keep.metadata.uid) << "the GC freed a live pod's IP";
  EXPECT_TRUE(Eventually([&] {
    return kube::IsNotFound(kube::Client<api::SpiderEndpoint>(cluster_->rest()).Get(ns_, "p1").status());
  })) << "the deleted pod's SpiderEndpoint was not removed";
  // The agent comes back; the runtime's late DEL is still a success.
  StartAgent("a");
  EXPECT_EQ(Cni("DEL", pod, "a").exit_code, 0);
  EXPECT_EQ(Records(pool_, 1).size(), 1u);
}

TEST_F(IpamNodeTest, DeploymentPodGetsAnIPFromItsSubnetAutoPool) {
  StartController();
  StartAgent("a");
  const std::string subnet = "sub-" + ns_;
  api::SpiderSubnet sn;
  sn.metadata.name = subnet;
  sn.spec.subnet = "172.18.0.0/16";
  sn.spec.ips = {"172.18.40.10-172.18.40.19"};
  sn.spec.gateway = "172.18.0.1";
  ASSERT_TRUE(kube::Client<api::SpiderSubnet>(cluster_->rest()).Create(sn).ok());
  // A Deployment whose pods ask for an auto pool of 2 + 1 IPs from the subnet; the
  // controller makes the pool, the agent waits for it and allocates from it.
  api::Deployment d;
  d.metadata.name = "web";
  d.metadata.namespace_ = ns_;
  d.spec.replicas = 2;
  d.spec.selector = api::LabelSelector{.match_labels = {{"app", "web"}}};
  d.spec.template_.metadata.labels["app"] = "web";
  d.spec.template_.metadata.annotations["ipam.spidernet.io/subnet"] =
      base::StrCat(R"({"ipv4":[")", subnet, R"("]})");
  d.spec.template_.spec.containers.push_back({.name = "c", .image = "busybox"});
  auto deploy = kube::Client<api::Deployment>(cluster_->rest()).Create(d);
  ASSERT_TRUE(deploy.ok()) << deploy.status();
  api::ReplicaSet rs;  // what the deployment controller would make (none runs here)
  rs.metadata.name = "web-5d4f";
  rs.metadata.namespace_ = ns_;
  rs.metadata.owner_references.push_back(api::MakeOwnerReference(*deploy));
  rs.spec.replicas = 2;
  rs.spec.selector = d.spec.selector;
  rs.spec.template_ = d.spec.template_;
  auto made_rs = kube::Client<api::ReplicaSet>(cluster_->rest()).Create(rs);
  ASSERT_TRUE(made_rs.ok()) << made_rs.status();
  api::Pod pod;
  pod.metadata.name = "web-5d4f-x1";
  pod.metadata.namespace_ = ns_;
  pod.metadata.annotations = d.spec.template_.metadata.annotations;
  pod.metadata.annotations["v1.multus-cni.io/default-network"] = kNad;
  pod.metadata.owner_references.push_back(api::MakeOwnerReference(*made_rs));
  pod.spec.node_name = NodeName("a");
  pod.spec.containers.push_back({.name = "c", .image = "busybox"});
  auto created = kube::Client<api::Pod>(cluster_->rest()).Create(pod);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(net_->AddPodNetns(pod.metadata.name).ok());
  CniOutcome add = Cni("ADD", *created, "a");
  ASSERT_EQ(add.exit_code, 0) << add.Describe() << "\ncontroller log:\n" << ReadLog("controller.log");
  EXPECT_EQ(add.json["ips"][0]["address"], "172.18.40.10/16");
  auto pools = kube::Client<api::SpiderIPPool>(cluster_->rest()).List(
      "", {.label_selector = base::StrCat("ipam.spidernet.io/owner-spider-subnet=", subnet)});
  ASSERT_TRUE(pools.ok());
  ASSERT_EQ(pools->items.size(), 1u);
  const api::SpiderIPPool& auto_pool = pools->items[0];
  EXPECT_EQ(auto_pool.spec.ips, std::vector<std::string>{"172.18.40.10-172.18.40.12"});
  EXPECT_EQ(add.json["ips"][0].value("gateway", ""), "172.18.0.1");
  // A second pod of the same ReplicaSet: the agent now knows the ReplicaSet's Deployment
  // without reading it again, and the pod lands in the same auto pool.
  pod.metadata.name = "web-5d4f-x2";
  auto second = kube::Client<api::Pod>(cluster_->rest()).Create(pod);
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE(net_->AddPodNetns(pod.metadata.name).ok());
  CniOutcome add2 = Cni("ADD", *second, "a");
  ASSERT_EQ(add2.exit_code, 0) << add2.Describe();
  EXPECT_EQ(add2.json["ips"][0]["address"], "172.18.40.11/16");
  EXPECT_EQ(Cni("DEL", *second, "a").exit_code, 0);
  EXPECT_EQ(Cni("DEL", *created, "a").exit_code, 0);
  EXPECT_TRUE(Records(auto_pool.metadata.name, 0).empty());
  (void)kube::Client<api::Deployment>(cluster_->rest()).Delete(ns_, "web");
  (void)kube::Client<api::ReplicaSet>(cluster_->rest()).Delete(ns_, "web-5d4f");
  (void)kube::Client<api::SpiderSubnet>(cluster_->rest()).Delete("", subnet);
}

// enableIPConflictDetection (ConfigMap spiderpool-conf): another host on the segment answers
// ARP for the IP the pool hands out. ADD fails naming the IP and that host's MAC, and the IP's
// pool record is gone (the plugin released it before failing); once the squatter is gone, the
// same pod starts.
TEST_F(IpamNodeTest, ConflictingIPFailsAddAndItsPoolRecordIsReleased) {
  const std::string conf = tmp_ + "/conf.yml";
  {
    std::ofstream out(conf);
    out << "enableIPConflictDetection: true\nenableGatewayDetection: false\n";
  }
  StartAgent("a", {"--config=" + conf});
  // Node b's eth0 answers for every IP of the pool.
  const std::string squatter = net_->NodeNetns("b");
  for (int i = 131; i <= 140; ++i) {
    ASSERT_TRUE(Ip({"-n", squatter, "addr", "add", base::StrCat("172.18.30.", i, "/16"), "dev", "eth0"}).ok());
  }
  auto link = Ip({"-n", squatter, "-j", "link", "show", "eth0"});
  ASSERT_TRUE(link.ok());
  const std::string squatter_mac = (*base::ParseJson(*link))[0].value("address", "");

  api::Pod pod = CreatePod("p1", "a");
  CniOutcome add = Cni("ADD", pod, "a");
  EXPECT_EQ(add.exit_code, 1) << add.Describe();
  EXPECT_EQ(add.json.value("code", 0), 102) << add.Describe();
  EXPECT_THAT(add.json.value("msg", ""), HasSubstr("IP conflict: 172.18.30.13")) << add.Describe();
  EXPECT_THAT(add.json.value("msg", ""), HasSubstr(squatter_mac)) << add.Describe();
  EXPECT_TRUE(Records(pool_, 0).empty()) << "the conflicting IP must not stay allocated";
  EXPECT_EQ(Cni("DEL", pod, "a").exit_code, 0);  // the runtime's cleanup of the failed ADD

  ASSERT_TRUE(Ip({"-n", squatter, "addr", "flush", "dev", "eth0"}).ok());
  add = Cni("ADD", pod, "a");
  ASSERT_EQ(add.exit_code, 0) << add.Describe();
  EXPECT_EQ(Records(pool_, 1).size(), 1u);
  EXPECT_EQ(Cni("DEL", pod, "a").exit_code, 0);
  EXPECT_TRUE(Records(pool_, 0).empty());
}

TEST_F(IpamNodeTest, BadInputGivesCniErrorsAndAllocatesNothing) {
  StartAgent("a");
  // Unknown pool in the pod annotation.
  api::Pod bad = CreatePod("bad", "a", {{"ipam.spidernet.io/ippool", R"({"ipv4":["no-such-pool"]})"}});
  CniOutcome out = Cni("ADD", bad, "a");
  EXPECT_NE(out.exit_code, 0);
  EXPECT_THAT(out.stdout_data, HasSubstr("no-such-pool")) << out.Describe();
  EXPECT_EQ(Cni("DEL", bad, "a").exit_code, 0);
  EXPECT_FALSE(net_->PodLinkExists("bad", "eth0"));
  // A pod the API server does not know.
  api::Pod ghost = bad;
  ghost.metadata.name = "ghost";
  ASSERT_TRUE(net_->AddPodNetns("ghost").ok());
  out = Cni("ADD", ghost, "a");
  EXPECT_NE(out.exit_code, 0);
  EXPECT_THAT(out.stdout_data, HasSubstr("ghost")) << out.Describe();
  // The agent is down: "try again later" (11), and DEL still succeeds.
  StopAgent("a");
  api::Pod p = CreatePod("p1", "a");
  out = Cni("ADD", p, "a");
  EXPECT_EQ(out.json.value("code", 0), 11) << out.Describe();
  EXPECT_EQ(Cni("DEL", p, "a").exit_code, 0);
  EXPECT_TRUE(Records(pool_, 0).empty());
}

}  // namespace
}  // namespace spiderpool::e2e
