// The two agent binaries (agent/BUILD.bazel): the IPAM-only `spiderpool-agent` must not map
// the DRA stack (gRPC, protobuf, libnl) nor shared Abseil / yaml-cpp (linked statically), and
// becomes `spiderpool-agent-dra` (same pid) with --dra-enabled or --device-plugin-enabled.
// Real processes against the loopback API server (or SPIDERPOOL_TEST_KUBECONFIG).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "base/strings.h"
#include "base/subprocess.h"
#include "base/testing/temp_dir.h"
#include "base/testing/wait.h"
#include "gtest/gtest.h"
#include "kube/testing/test_cluster.h"

namespace spiderpool::agent {
namespace {

using ::spiderpool::base::testing::ReadFile;

namespace fs = std::filesystem;

std::string Runfile(const std::string& path) { return (fs::current_path() / path).string(); }

class AgentBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = kube::testing::TestCluster::Start();
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
    auto kubeconfig = cluster_->KubeconfigFor(tmp_);
    ASSERT_TRUE(kubeconfig.ok()) << kubeconfig.status();
    kubeconfig_ = *kubeconfig;
  }

  void TearDown() override {
    if (agent_ != nullptr) {
      agent_->Signal(SIGTERM);
      agent_->Wait();
    }
  }

  // Starts `binary` with the common flags plus `extra`; returns once its log has `line`.
  void Start(const std::string& binary, const std::vector<std::string>& extra,
             const std::string& line) {
    std::vector<std::string> argv = {binary, "--node-name=" + cluster_->ns() + "-node",
                                     "--kubeconfig=" + kubeconfig_, "--socket=" + tmp_ + "/ipam.sock",
                                     "--health-port=-1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto p = base::Process::Start({.argv = argv, .inherit_env = true, .output_file = Log()});
    ASSERT_TRUE(p.ok()) << p.status();
    agent_ = std::move(*p);
    // Bounded poll: a failure guard, not a timing assertion.
    for (int i = 0; i < 1200; ++i) {
      if (ReadFile(Log()).find(line) != std::string::npos) return;
      ASSERT_TRUE(agent_->Running()) << "agent exited: " << ReadFile(Log());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "no " << line << " in: " << ReadFile(Log());
  }

  // spiderpool-agent --dra-enabled (it execs spiderpool-agent-dra), until main's line once every
  // part started (not the IPAM server's log "... socket=PATH", which comes before the DRA
  // parts start).
  void StartDraAgent() {
    Start(Runfile("agent/spiderpool-agent"),
          {"--dra-enabled", "--sysfs-root=", "--kubelet-registry-dir=" + tmp_ + "/registry",
           "--kubelet-plugins-dir=" + tmp_ + "/plugins", "--dra-cdi-dir=" + tmp_ + "/cdi",
           "--dra-health-port=-1"},
          "\nsocket=" + tmp_ + "/ipam.sock\n");
  }

  std::string Log() const { return tmp_ + "/agent.log"; }
  std::string Maps() const { return ReadFile(base::StrCat("/proc/", agent_->pid(), "/maps")); }
  std::string Exe() const {
    return fs::read_symlink(base::StrCat("/proc/", agent_->pid(), "/exe")).filename().string();
  }

  // First, so it goes after the agent that writes its socket and log into it.
  base::testing::TempDir dir_{"agent"};
  const std::string tmp_ = dir_.path();
  std::unique_ptr<kube::testing::TestCluster> cluster_;
  std::string kubeconfig_;
  std::unique_ptr<base::Process> agent_;
};

TEST_F(AgentBinaryTest, IpamOnlyAgentMapsNoDraStackNorSharedLibraries) {
  Start(Runfile("agent/spiderpool-agent"), {}, "socket=");
  EXPECT_EQ(Exe(), "spiderpool-agent");
  const std::string maps = Maps();
  for (const char* lib : {"libgrpc", "libprotobuf", "libnl-", "libabsl_", "libyaml-cpp",
                          "libcpp-httplib"}) {
    EXPECT_EQ(maps.find(lib), std::string::npos) << lib << " is mapped:\n" << maps;
  }
#ifdef SPIDERPOOL_SHARED_AGENT
  EXPECT_NE(maps.find("libssl"), std::string::npos) << maps;  // the API client's TLS
#else
  // The product build is static: not even libc or the dynamic loader.
  EXPECT_EQ(maps.find(".so"), std::string::npos) << maps;
#endif
}

TEST_F(AgentBinaryTest, DraEnabledBecomesTheDraBinary) {
  if (cluster_->loopback() == nullptr) {
    GTEST_SKIP() << "publishes ResourceSlices for a made-up node: loopback server only";
  }
  StartDraAgent();
  // Same process (the pid we started), now the DRA build, serving the kubelet plugin.
  EXPECT_EQ(Exe(), "spiderpool-agent-dra");
  EXPECT_NE(Maps().find("libgrpc"), std::string::npos);
  EXPECT_NE(ReadFile(Log()).find("dra_socket="), std::string::npos) << ReadFile(Log());
}

// SIGTERM stops the parts in the reverse order of their start: the kubelet plugin first (its
// sockets go, the kubelet moves to a newer instance), the IPAM socket after it, the caches
// last; exit status 0 and no socket left behind.
TEST_F(AgentBinaryTest, SigtermStopsTheDraPluginFirstThenTheIpamSocket) {
  if (cluster_->loopback() == nullptr) {
    GTEST_SKIP() << "publishes ResourceSlices for a made-up node: loopback server only";
  }
  StartDraAgent();
  agent_->Signal(SIGTERM);
  EXPECT_EQ(agent_->Wait(), 0) << ReadFile(Log());
  agent_.reset();
  const std::string log = ReadFile(Log());
  auto stopping = [&log](const std::string& runnable) {
    return log.find("msg=\"stopping runnable\" manager=spiderpool-agent runnable=" + runnable);
  };
  const size_t plugin = stopping("\"DRA kubelet plugin\"");
  const size_t socket = stopping("\"IPAM socket\"");
  const size_t pools = stopping("informer/spiderippools");
  ASSERT_NE(plugin, std::string::npos) << log;
  ASSERT_NE(socket, std::string::npos) << log;
  ASSERT_NE(pools, std::string::npos) << log;
  EXPECT_LT(plugin, socket) << log;
  EXPECT_LT(socket, pools) << log;
  EXPECT_FALSE(fs::exists(tmp_ + "/ipam.sock"));
  EXPECT_FALSE(fs::exists(tmp_ + "/registry/netresources.spidernet.io-reg.sock"));
}

// A start-up failure after the IPAM service and the DRA stack are running (here: the health
// port is taken) exits with the error and status 1, stopping what it started on the way out;
// it used to die in std::terminate ("std::system_error: Invalid argument", issue 18).
TEST_F(AgentBinaryTest, TakenHealthPortExitsWithTheErrorNotACrash) {
  if (cluster_->loopback() == nullptr) {
    GTEST_SKIP() << "publishes ResourceSlices for a made-up node: loopback server only";
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int taken = ntohs(addr.sin_port);

  auto r = base::RunProcess(
      {.argv = {Runfile("agent/spiderpool-agent"), "--node-name=" + cluster_->ns() + "-node",
                "--kubeconfig=" + kubeconfig_, "--socket=" + tmp_ + "/ipam.sock",
                "--health-port=" + std::to_string(taken), "--dra-enabled", "--sysfs-root=",
                "--kubelet-registry-dir=" + tmp_ + "/registry",
                "--kubelet-plugins-dir=" + tmp_ + "/plugins", "--dra-cdi-dir=" + tmp_ + "/cdi",
                "--dra-health-port=-1"},
       .inherit_env = true});
  ::close(fd);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string out = r->stdout_data + r->stderr_data;
  EXPECT_EQ(r->exit_code, 1) << out;
  EXPECT_NE(out.find("health server: cannot bind"), std::string::npos) << out;
  EXPECT_EQ(out.find("terminate called"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(tmp_ + "/registry/netresources.spidernet.io-reg.sock"))
      << "the kubelet plugin's registration socket was left behind";
}

// The chart's `debug.logLevel` is $SPIDERPOOL_LOG_LEVEL: debug lines appear with "debug", and a
// value that is no level stops the agent naming the variable.
TEST_F(AgentBinaryTest, LogLevelComesFromTheChartsEnvironmentVariable) {
  const std::vector<std::string> argv = {
      Runfile("agent/spiderpool-agent"), "--node-name=" + cluster_->ns() + "-node",
      "--kubeconfig=" + kubeconfig_, "--socket=" + tmp_ + "/ipam.sock", "--health-port=-1"};
  auto bad = base::RunProcess(
      {.argv = argv, .env = {{"SPIDERPOOL_LOG_LEVEL", "loud"}}, .inherit_env = true});
  ASSERT_TRUE(bad.ok()) << bad.status();
  EXPECT_EQ(bad->exit_code, 1) << bad->stderr_data;
  EXPECT_NE(bad->stderr_data.find("$SPIDERPOOL_LOG_LEVEL=\"loud\""), std::string::npos)
      << bad->stderr_data;

  setenv("SPIDERPOOL_LOG_LEVEL", "debug", 1);
  Start(Runfile("agent/spiderpool-agent"), {}, "socket=");
  unsetenv("SPIDERPOOL_LOG_LEVEL");
  // The informers' "listed" lines come once their lists are in, after the agent started.
  EXPECT_TRUE(base::testing::WaitUntil(
      [&] { return ReadFile(Log()).find("\nD") != std::string::npos; }))
      << ReadFile(Log());
}

TEST_F(AgentBinaryTest, DevicePluginWithoutTheDraBinaryFailsClearly) {
  // The IPAM-only binary alone in a directory: nothing to exec.
  const std::string lonely = tmp_ + "/bin/spiderpool-agent";
  fs::create_directories(tmp_ + "/bin");
  fs::copy_file(Runfile("agent/spiderpool-agent"), lonely);
  auto r = base::RunProcess({.argv = {lonely, "--node-name=n", "--device-plugin-enabled"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 1);
  EXPECT_NE(r->stderr_data.find(tmp_ + "/bin/spiderpool-agent-dra"), std::string::npos)
      << r->stderr_data;
}

}  // namespace
}  // namespace spiderpool::agent
