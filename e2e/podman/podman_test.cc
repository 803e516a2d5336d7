// A real container runtime: podman (CNI network backend, libcni) runs a container on a CNI
// conflist whose bridge plugin uses our `spiderpool` IPAM plugin; the container gets an IP from
// a SpiderIPPool through a real spiderpool-agent, and the IP is released when the container
// exits (podman's cleanup calls CNI DEL). Root + podman + runc only; skipped elsewhere.
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <fstream>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "api/core.h"
#include "api/spider.h"
#include "base/strings.h"
#include "base/testing/podman.h"
#include "base/testing/temp_dir.h"
#include "base/testing/wait.h"
#include "e2e/node/node_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/rest/client.h"
#include "kube/testing/test_cluster.h"

namespace spiderpool::e2e {
namespace {

using ::testing::HasSubstr;

constexpr char kCrdDir[] = "charts/spiderpool/crds";

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class PodmanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = NodeTestSkipReason(); !why.empty()) GTEST_SKIP() << why;
    if (std::string why = base::testing::PodmanSkipReason(); !why.empty()) GTEST_SKIP() << why;
    auto c = kube::testing::TestCluster::Start();
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
    ASSERT_TRUE(cluster_->ApplyCRDs(kCrdDir).ok());
    ns_ = cluster_->ns();
    node_ = ns_ + "-podman";
    pool_ = ns_ + "-podman";
    tmp_ = dir_.path();
    bridge_ = "spbr" + tmp_.substr(tmp_.size() - 6);  // the directory's unique suffix
    std::string kubeconfig;
    if (cluster_->loopback() != nullptr) {
      kubeconfig = tmp_ + "/kubeconfig";
      ASSERT_TRUE(cluster_->loopback()->WriteKubeconfig(kubeconfig).ok());
    } else {
      kubeconfig = std::getenv(kube::testing::kTestKubeconfigEnv);
    }
    api::Node node;
    node.metadata.name = node_;
    ASSERT_TRUE(kube::Client<api::Node>(cluster_->rest()).Create(node).ok());
    api::SpiderIPPool pool;
    pool.metadata.name = pool_;
    pool.spec.subnet = "10.233.70.0/24";
    pool.spec.ips = {"10.233.70.10-10.233.70.19"};
    pool.spec.gateway = "10.233.70.1";
    ASSERT_TRUE(kube::Client<api::SpiderIPPool>(cluster_->rest()).Create(pool).ok());

    // podman's CNI backend passes only K8S_POD_NAME (= the container name) in CNI_ARGS; the
    // namespace comes from the plugin config's "args" (see agent/cni/README.md).
    const std::string socket = tmp_ + "/agent.sock";
    std::filesystem::create_directories(tmp_ + "/net");
    WriteFile(tmp_ + "/net/spnet.conflist",
              base::DumpJson(base::Json{
                  {"cniVersion", "1.0.0"},
                  {"name", "spnet"},
                  {"plugins",
                   base::Json::array({{{"type", "bridge"},
                                       {"bridge", bridge_},
                                       {"args", {{"cni", {{"K8S_POD_NAMESPACE", ns_}}}}},
                                       {"ipam",
                                        {{"type", "spiderpool"},
                                         {"default_ipv4_ippool", base::Json::array({pool_})},
                                         {"ipam_unix_socket_path", socket}}}}})}}));
    auto podman = base::testing::PodmanSandbox::Create(
        tmp_, base::testing::PodmanCniNetwork{.config_dir = tmp_ + "/net",
                                              .plugin_dirs = {Runfile("agent/cni"), "/usr/lib/cni"}});
    ASSERT_TRUE(podman.ok()) << podman.status();
    podman_.emplace(*std::move(podman));

    auto agent = base::Process::Start(
        {.argv = {Runfile("agent/spiderpool-agent"), "--node-name=" + node_,
                  "--kubeconfig=" + kubeconfig, "--socket=" + socket, "--health-port=-1"},
         .inherit_env = true,
         .output_file = tmp_ + "/agent.log"});
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = std::move(*agent);
    for (int i = 0;; ++i) {
      httplib::Client client(socket);
      client.set_address_family(AF_UNIX);
      auto res = client.Get("/v1/ipam/healthy");
      if (res && res->status == 200) break;
      ASSERT_TRUE(agent_->Running()) << ReadFile(tmp_ + "/agent.log");
      ASSERT_LT(i, 600) << "agent not ready";
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  void TearDown() override {
    agent_.reset();
    if (!bridge_.empty()) (void)Ip({"link", "del", bridge_});
    if (cluster_ != nullptr) {
      (void)kube::Client<api::SpiderIPPool>(cluster_->rest()).Delete("", pool_);
      (void)kube::Client<api::Node>(cluster_->rest()).Delete("", node_);
    }
  }

  // The pool's pod records (the agent's node reservations left out).
  api::PoolIPAllocations Records() {
    auto p = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", pool_);
    EXPECT_TRUE(p.ok()) << p.status();
    api::PoolIPAllocations recs =
        p.ok() ? p->AllocatedIPs().value_or(api::PoolIPAllocations{}) : api::PoolIPAllocations{};
    std::erase_if(recs, [](const auto& kv) { return api::IsNodeReservation(kv.second); });
    return recs;
  }

  // Before the agent and podman_, whose sockets, logs and files are in it.
  base::testing::TempDir dir_{"podman"};
  std::unique_ptr<kube::testing::TestCluster> cluster_;
  std::unique_ptr<base::Process> agent_;
  std::string ns_, node_, pool_, tmp_, bridge_;
  std::optional<base::testing::PodmanSandbox> podman_;
};

TEST_F(PodmanTest, ContainerGetsAnIPFromTheSpiderIPPoolAndReleasesItOnExit) {
  const std::string name = "web1";
  api::Pod pod;  // what the kubelet would have: the pod the container belongs to
  pod.metadata.name = name;
  pod.metadata.namespace_ = ns_;
  pod.spec.node_name = node_;
  pod.spec.containers.push_back({.name = "c", .image = "busybox"});
  ASSERT_TRUE(kube::Client<api::Pod>(cluster_->rest()).Create(pod).ok());

  auto run = podman_->Run({"--name", name, "--network", "spnet"},
                          {"/bin/busybox", "ip", "-o", "-4", "addr", "show", "eth0"});
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->exit_code, 0) << run->stdout_data << run->stderr_data << "\nagent log:\n"
                               << ReadFile(tmp_ + "/agent.log");
  EXPECT_THAT(run->stdout_data, HasSubstr("inet 10.233.70.10/24"));
  // `podman run --rm` returns after the container's network was torn down (CNI DEL). The DEL
  // returns once the SpiderEndpoint is gone; the pool record is freed by the agent's next
  // background write (agent/ipam/blocks.h point 5), so it is waited for (bounded: a failure
  // guard, not a timing assertion).
  EXPECT_TRUE(kube::IsNotFound(kube::Client<api::SpiderEndpoint>(cluster_->rest()).Get(ns_, name).status()));
  EXPECT_TRUE(base::testing::WaitUntil([&] { return Records().empty(); }))
      << "the IP was not released when the container exited";
}

TEST_F(PodmanTest, AContainerWithoutAPodObjectFailsCleanly) {
  auto run = podman_->Run({"--name", "nopod", "--network", "spnet"}, {"/bin/busybox", "true"});
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_NE(run->exit_code, 0);
  EXPECT_THAT(run->stderr_data, HasSubstr("nopod"));
  EXPECT_TRUE(Records().empty());
}

}  // namespace
}  // namespace spiderpool::e2e
