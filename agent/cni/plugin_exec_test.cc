// Execs the built `spiderpool` plugin binary the way a runtime does (environment + stdin,
// reading stdout and the exit code) against a fake spiderpool-agent served here over a unix
// socket with cpp-httplib.

#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "agent/ipamapi/ipamapi.h"
#include "base/json.h"
#include "base/sigpipe.h"
#include "base/testing/temp_dir.h"
#include "agent/cni/fake_agent.h"

extern char** environ;

namespace spiderpool::agent::cni {
namespace {

using base::Json;

std::string PluginPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  std::string base = srcdir ? srcdir : ".";
  return base + "/spiderpool/agent/cni/spiderpool";
}

struct Exec {
  int exit_code = -1;
  std::string out;
  std::string err;
  Json json;  // stdout parsed (null if empty / not JSON)
};

class PluginExecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    socket_ = dir_ + "/agent.sock";
    log_ = dir_ + "/log/spiderpool.log";
    env_ = {{"CNI_COMMAND", "ADD"},
            {"CNI_CONTAINERID", "a51debf7e1eb"},
            {"CNI_NETNS", "/var/run/netns/pod1"},
            {"CNI_IFNAME", "eth0"},
            {"CNI_ARGS",
             "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;"
             "K8S_POD_INFRA_CONTAINER_ID=a51debf7e1eb;K8S_POD_UID=uid-1"},
            {"CNI_PATH", "/opt/cni/bin"}};
  }
  void TearDown() override {
    agent_.reset();
  }

  void StartAgent() {
    agent_ = std::make_unique<FakeAgent>(socket_);
    agent_->post_body = AddResponse();
  }

  static std::string AddResponse() {
    ipamapi::IpamAddResponse r;
    r.ips = {{.version = 4, .address = "10.6.0.10/16", .ip_pool = "p4", .gateway = "10.6.0.1",
              .nic = "eth0"},
             {.version = 6, .address = "fd00::a/64", .ip_pool = "p6", .gateway = "fd00::1",
              .nic = "eth0"},
             {.version = 4, .address = "172.16.1.5/24", .ip_pool = "n1", .nic = "net1"}};
    r.routes = {{.if_name = "eth0", .dst = "10.7.0.0/16", .gw = "10.6.0.1"},
                {.if_name = "net1", .dst = "192.168.0.0/16", .gw = "172.16.1.1"}};
    return ipamapi::ToJson(r);
  }

  Json Conf(const std::string& version, Json ipam_extra = Json::object()) {
    Json ipam = {{"type", "spiderpool"},
                 {"ipam_unix_socket_path", socket_},
                 {"log_file_path", log_},
                 {"default_ipv4_ippool", {"default-v4"}},
                 {"clean_gateway", true},
                 {"match_master_subnet", true}};
    for (auto it = ipam_extra.begin(); it != ipam_extra.end(); ++it) ipam[it.key()] = it.value();
    return {{"cniVersion", version}, {"name", "macvlan-net"}, {"type", "macvlan"},
            {"master", "eth0"}, {"ipam", ipam}};
  }

  Exec Run(const std::string& stdin_text) { return RunWith(env_, stdin_text); }

  Exec RunWith(const std::map<std::string, std::string>& env, const std::string& stdin_text) {
    Exec r;
    int in[2], out[2];
    EXPECT_EQ(pipe(in), 0);
    EXPECT_EQ(pipe(out), 0);
    std::string err_path = dir_ + "/stderr";
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err, 2);
    posix_spawn_file_actions_addclose(&fa, in[1]);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    std::vector<std::string> env_strs;
    for (const auto& [k, v] : env) env_strs.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& s : env_strs) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string path = PluginPath();
    char* argv[] = {path.data(), nullptr};
    pid_t pid;
    int rc = posix_spawn(&pid, path.c_str(), &fa, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    close(err);
    EXPECT_EQ(rc, 0) << "spawn " << path;
    if (rc != 0) {
      close(in[1]);
      close(out[0]);
      return r;
    }
    // The plugin may exit without reading stdin (VERSION): ignore EPIPE.
    spiderpool::base::ScopedSigpipeBlock no_sigpipe;
    size_t off = 0;
    while (off < stdin_text.size()) {
      ssize_t n = write(in[1], stdin_text.data() + off, stdin_text.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(in[1]);
    char buf[4096];
    ssize_t n;
    while ((n = read(out[0], buf, sizeof(buf))) > 0) r.out.append(buf, static_cast<size_t>(n));
    close(out[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::ifstream ef(err_path);
    std::stringstream ss;
    ss << ef.rdbuf();
    r.err = ss.str();
    if (!r.out.empty()) {
      auto j = base::ParseJson(r.out);
      if (j.ok()) r.json = *j;
    }
    return r;
  }

  // Expects a CNI error JSON with `code` whose msg+details contain `text`.
  static void ExpectError(const Exec& r, int code, const std::string& text,
                          const std::string& version = "") {
    EXPECT_NE(r.exit_code, 0) << r.out;
    ASSERT_TRUE(r.json.is_object()) << "stdout: " << r.out;
    EXPECT_EQ(r.json.value("code", -1), code) << r.out;
    std::string all = r.json.value("msg", "") + " | " + r.json.value("details", "");
    EXPECT_NE(all.find(text), std::string::npos) << "want \"" << text << "\" in " << r.out;
    EXPECT_TRUE(r.json.contains("cniVersion")) << r.out;
    if (!version.empty()) {
      EXPECT_EQ(r.json.value("cniVersion", ""), version) << r.out;
    }
  }

  base::testing::TempDir tmp_{"cni"};  // before agent_, whose socket is in it
  std::string dir_, socket_, log_;
  std::map<std::string, std::string> env_;
  std::unique_ptr<FakeAgent> agent_;
};

const char* const kVersions[] = {"0.3.0", "0.3.1", "0.4.0", "1.0.0"};

TEST_F(PluginExecTest, Version) {
  env_ = {{"CNI_COMMAND", "VERSION"}};
  Exec r = Run("this is not read");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.json, Json::parse(R"({"cniVersion":"1.0.0",
      "supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0"]})"))
      << r.out;
  EXPECT_EQ(r.err, "");
}

TEST_F(PluginExecTest, NoCommandPrintsAbout) {
  env_.erase("CNI_COMMAND");
  Exec r = Run("");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("CNI protocol versions supported: 0.3.0, 0.3.1, 0.4.0, 1.0.0"),
            std::string::npos);
}

TEST_F(PluginExecTest, AddEveryVersion) {
  StartAgent();
  for (const char* v : kVersions) {
    SCOPED_TRACE(v);
    Exec r = Run(Conf(v).dump());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.err, "");
    bool old = std::string(v) != "1.0.0";
    Json ip4 = {{"address", "10.6.0.10/16"}, {"gateway", "10.6.0.1"}};
    Json ip6 = {{"address", "fd00::a/64"}, {"gateway", "fd00::1"}};
    if (old) {
      ip4["version"] = "4";
      ip6["version"] = "6";
    }
    Json want = {{"cniVersion", v},
                 {"ips", {ip4, ip6}},
                 {"routes", {{{"dst", "10.7.0.0/16"}, {"gw", "10.6.0.1"}}}},
                 {"dns", Json::object()}};
    EXPECT_EQ(r.json, want) << r.out;
  }
  // Every ADD: healthy first, then the request with upstream's field names.
  auto reqs = agent_->requests();
  ASSERT_EQ(reqs.size(), 8u);
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[0].path, "/v1/ipam/healthy");
  EXPECT_EQ(reqs[1].method, "POST");
  EXPECT_EQ(reqs[1].path, "/v1/ipam/ip");
  auto args = ipamapi::FromJson<ipamapi::IpamAddArgs>(reqs[1].body);
  ASSERT_TRUE(args.ok()) << args.status() << reqs[1].body;
  EXPECT_EQ(*args, (ipamapi::IpamAddArgs{.container_id = "a51debf7e1eb",
                                          .if_name = "eth0",
                                          .net_namespace = "/var/run/netns/pod1",
                                          .pod_namespace = "default",
                                          .pod_name = "web-0",
                                          .pod_uid = "uid-1",
                                          .default_ipv4_ippool = {"default-v4"},
                                          .default_ipv6_ippool = {},
                                          .clean_gateway = true,
                                          .match_master_subnet = true}));
}

TEST_F(PluginExecTest, AddSecondNicGetsOnlyItsIps) {
  StartAgent();
  env_["CNI_IFNAME"] = "net1";
  Exec r = Run(Conf("1.0.0").dump());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.json["ips"], Json::parse(R"([{"address":"172.16.1.5/24"}])")) << r.out;
  EXPECT_EQ(r.json["routes"], Json::parse(R"([{"dst":"192.168.0.0/16","gw":"172.16.1.1"}])"));
  env_["CNI_IFNAME"] = "net2";
  ExpectError(Run(Conf("1.0.0").dump()), 100, "no IP allocated for interface net2");
}

TEST_F(PluginExecTest, DelEveryVersion) {
  StartAgent();
  env_["CNI_COMMAND"] = "DEL";
  env_.erase("CNI_NETNS");  // optional on DEL
  for (const char* v : kVersions) {
    SCOPED_TRACE(v);
    Exec r = Run(Conf(v).dump());
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(r.out, "");
  }
  auto reqs = agent_->requests();
  ASSERT_EQ(reqs.size(), 8u);
  EXPECT_EQ(reqs[1].method, "DELETE");
  auto args = ipamapi::FromJson<ipamapi::IpamDelArgs>(reqs[1].body);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(*args, (ipamapi::IpamDelArgs{.container_id = "a51debf7e1eb",
                                          .if_name = "eth0",
                                          .net_namespace = "",
                                          .pod_namespace = "default",
                                          .pod_name = "web-0",
                                          .pod_uid = "uid-1"}));
}

// DEL neither lies nor blocks: an unreachable agent -> success (the GC reclaims); an agent that
// answers but cannot release -> a CNI error, so the kubelet retries.
TEST_F(PluginExecTest, DelFailsOnlyWhenTheAgentAnswersThatItCouldNotRelease) {
  env_["CNI_COMMAND"] = "DEL";
  Exec r = Run(Conf("1.0.0").dump());  // no agent at all
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "");
  StartAgent();
  for (int status : {200, 404, 409}) {
    agent_->del_status = status;
    agent_->del_body = status == 200 ? "{}" : ipamapi::ErrorJson("nothing here");
    r = Run(Conf("0.4.0").dump());
    EXPECT_EQ(r.exit_code, 0) << status << r.out;
    EXPECT_EQ(r.out, "");
  }
  struct Case {
    int status, code;
    std::string msg;
  };
  for (const Case& c : std::vector<Case>{
           {500, 100, "spiderpool IP release error: nope"},
           {429, 11, "busy, try again later: nope"},
           {503, 11, "busy, try again later: nope"},
           {400, 7, "spiderpool IP release error: nope"}}) {
    agent_->del_status = c.status;
    agent_->del_body = ipamapi::ErrorJson("nope");
    ExpectError(Run(Conf("0.4.0").dump()), c.code, c.msg);
  }
  // Reachable but not ready: retry later.
  agent_->del_status = 200;
  agent_->healthy_status = 503;
  ExpectError(Run(Conf("1.0.0").dump()), 11, "unhealthy spiderpool-agent backend");
  // Missing pod identity on DEL: nothing to release, success, no request.
  agent_->healthy_status = 200;
  agent_->del_status = 500;
  env_["CNI_ARGS"] = "IgnoreUnknown=1";
  r = Run(Conf("1.0.0").dump());
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

TEST_F(PluginExecTest, Timeout) {
  StartAgent();
  agent_->block = true;
  Json conf = Conf("1.0.0", {{"ipam_timeout_seconds", 0.3}});
  ExpectError(Run(conf.dump()), 11, "timeout");
  env_["CNI_COMMAND"] = "DEL";
  Exec r = Run(conf.dump());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "");
}

// A peer that answers one header byte every 50 ms forever: every read succeeds, so a timeout
// per read would never fire. The client's one deadline covers the whole exchange (and the
// whole-invocation watchdog stands behind it).
TEST_F(PluginExecTest, TricklingAgentIsCutOffAtTheDeadline) {
  int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(lfd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(lfd, 8), 0);
  std::atomic<bool> stop{false};
  std::thread peer([&] {
    while (!stop) {
      int fd = accept(lfd, nullptr, nullptr);
      if (fd < 0) return;
      char buf[4096];
      (void)read(fd, buf, sizeof(buf));
      std::string head = "HTTP/1.1 200 OK\r\nX-Slow: ";
      bool ok = send(fd, head.data(), head.size(), MSG_NOSIGNAL) > 0;
      while (ok && !stop) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the slow peer itself
        ok = send(fd, "a", 1, MSG_NOSIGNAL) > 0;
      }
      close(fd);
    }
  });
  Json conf = Conf("1.0.0", {{"ipam_timeout_seconds", 0.3}});
  Exec r = Run(conf.dump());
  ExpectError(r, 11, "timeout");
  env_["CNI_COMMAND"] = "DEL";
  r = Run(conf.dump());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "");
  stop = true;
  shutdown(lfd, SHUT_RDWR);
  peer.join();
  close(lfd);
}

TEST_F(PluginExecTest, LogsToFileOnlyWhenWritable) {
  StartAgent();
  Exec r = Run(Conf("1.0.0").dump());
  ASSERT_EQ(r.exit_code, 0);
  std::ifstream f(log_);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_NE(ss.str().find("IPAM allocation result"), std::string::npos) << ss.str();
  // Unwritable log path: the plugin still works and prints nothing else.
  r = Run(Conf("1.0.0", {{"log_file_path", "/proc/sp-no-such-dir/x.log"}}).dump());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(r.json.contains("ips"));
}

TEST_F(PluginExecTest, GcAndStatus) {
  env_ = {{"CNI_COMMAND", "GC"}, {"CNI_PATH", "/opt/cni/bin"}};
  Json conf = Conf("1.0.0");
  conf["cni.dev/valid-attachments"] = Json::array();
  Exec r = Run(conf.dump());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "");
  env_["CNI_COMMAND"] = "STATUS";
  ExpectError(Run(conf.dump()), 50, "spiderpool-agent is not available");
  StartAgent();
  r = Run(conf.dump());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace spiderpool::agent::cni
