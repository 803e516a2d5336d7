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
#include <filesystem>
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
#include "agent/cni/fake_agent.h"

extern char** environ;

namespace spiderpool::agent::cni {
namespace {

namespace fs = std::filesystem;
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
    char tmpl[] = "/tmp/sp-cni-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
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
    std::error_code ec;
    fs::remove_all(dir_, ec);
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

TEST_F(PluginExecTest, DelSucceedsWhateverTheAgentSays) {
  env_["CNI_COMMAND"] = "DEL";
  Exec r = Run(Conf("1.0.0").dump());  // no agent at all
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "");
  StartAgent();
  for (int status : {500, 404, 409, 429, 503, 400}) {
    agent_->del_status = status;
    agent_->del_body = ipamapi::ErrorJson("nope");
    r = Run(Conf("0.4.0").dump());
    EXPECT_EQ(r.exit_code, 0) << status << r.out;
    EXPECT_EQ(r.out, "");
  }
  agent_->healthy_status = 500;
  EXPECT_EQ(Run(Conf("1.0.0").dump()).exit_code, 0);
  // Missing pod identity on DEL: nothing to release, success.
  env_["CNI_ARGS"] = "IgnoreUnknown=1";
  EXPECT_EQ(Run(Conf("1.0.0").dump()).exit_code, 0);
}

TEST_F(PluginExecTest, Check) {
  env_["CNI_COMMAND"] = "CHECK";
  Json prev = Json::parse(R"({"cniVersion":"1.0.0","ips":[{"address":"10.6.0.10/16"}]})");
  for (const char* v : {"0.4.0", "1.0.0"}) {
    SCOPED_TRACE(v);
    Json conf = Conf(v);
    Json p = prev;
    if (std::string(v) == "0.4.0") p["ips"][0]["version"] = "4";
    conf["prevResult"] = p;
    Exec r = Run(conf.dump());
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(r.out, "");
    ExpectError(Run(Conf(v).dump()), 7, "prevResult", v);
    conf["prevResult"] = Json::parse(R"({"ips":[{"address":"banana"}]})");
    ExpectError(Run(conf.dump()), 6, "prevResult.ips[0].address", v);
  }
  for (const char* v : {"0.3.0", "0.3.1"}) {
    Json conf = Conf(v);
    conf["prevResult"] = prev;
    ExpectError(Run(conf.dump()), 1, "config version does not allow CHECK", v);
  }
}

TEST_F(PluginExecTest, EnvErrors) {
  StartAgent();
  std::string conf = Conf("1.0.0").dump();
  auto env = env_;
  env.erase("CNI_NETNS");
  env.erase("CNI_PATH");
  ExpectError(RunWith(env, conf), 4, "required env variables [CNI_NETNS,CNI_PATH] missing");
  env = env_;
  env["CNI_COMMAND"] = "DEL";
  env.erase("CNI_IFNAME");
  ExpectError(RunWith(env, conf), 4, "[CNI_IFNAME]");
  env = env_;
  env["CNI_COMMAND"] = "FROB";
  ExpectError(RunWith(env, conf), 4, "unknown CNI_COMMAND: FROB");
  env = env_;
  env["CNI_ARGS"] = "K8S_POD_NAMESPACE=default";
  ExpectError(RunWith(env, conf), 4, "required CNI_ARGS [K8S_POD_NAME] missing", "1.0.0");
  env["CNI_ARGS"] = "IgnoreUnknown=1";
  ExpectError(RunWith(env, conf), 4, "[K8S_POD_NAMESPACE,K8S_POD_NAME]");
  env["CNI_ARGS"] = "K8S_POD_NAMESPACE=default;K8S_POD_NAME=p;FOO=1";
  ExpectError(RunWith(env, conf), 4, "unknown args [\"FOO=1\"]");
  env = env_;
  env["CNI_IFNAME"] = "eth0:1";
  ExpectError(RunWith(env, conf), 4, "interface name contains");
  env = env_;
  env["CNI_CONTAINERID"] = "-bad";
  ExpectError(RunWith(env, conf), 4, "invalid characters in containerID");
  // The agent was never asked.
  EXPECT_TRUE(agent_->requests().empty());
  // No K8S_POD_UID (podman): still allocates, podUID is sent empty.
  env = env_;
  env["CNI_ARGS"] = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=p";
  Exec r = RunWith(env, conf);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  auto reqs = agent_->requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_NE(reqs[1].body.find(R"("podUID":"")"), std::string::npos) << reqs[1].body;
}

TEST_F(PluginExecTest, MalformedStdin) {
  StartAgent();
  Exec r = Run(R"({"cniVersion":"1.0.0","name":"n","ipam":{"type":"spiderpool",}})");
  ExpectError(r, 6, "column");
  ExpectError(Run(""), 6, "network config");
  ExpectError(Run("[1,2]"), 6, "expected a JSON object");
  ExpectError(Run(R"({"cniVersion":"1.0.0","ipam":{"type":"s"}})"), 7, "missing network name");
  ExpectError(Run(R"({"cniVersion":"0.2.0","name":"n","ipam":{"type":"s"}})"), 1,
              R"(config is "0.2.0", plugin supports ["0.3.0" "0.3.1" "0.4.0" "1.0.0"])",
              "0.2.0");
  ExpectError(Run(R"({"name":"n","ipam":{"type":"s"}})"), 1, R"(config is "0.1.0")");
  Json conf = Conf("1.0.0");
  conf["ipam"].erase("type");
  ExpectError(Run(conf.dump()), 7, "ipam.type", "1.0.0");
  conf = Conf("0.4.0");
  conf["ipam"]["default_ipv4_ippool"] = "not-a-list";
  conf["ipam"]["clean_gateway"] = 1;
  r = Run(conf.dump());
  ExpectError(r, 6, "ipam.default_ipv4_ippool: expected array", "0.4.0");
  ExpectError(r, 6, "ipam.clean_gateway: expected boolean");
  EXPECT_TRUE(agent_->requests().empty());
}

TEST_F(PluginExecTest, AgentDown) {
  ExpectError(Run(Conf("1.0.0").dump()), 11, "cannot connect to spiderpool-agent");
  // A stale socket file with nobody listening.
  { FakeAgent gone(socket_); }
  int fd = open(socket_.c_str(), O_CREAT | O_WRONLY, 0600);
  close(fd);
  ExpectError(Run(Conf("1.0.0").dump()), 11, "spiderpool-agent");
}

TEST_F(PluginExecTest, AgentBusyOrUnhealthy) {
  StartAgent();
  for (int status : {429, 503}) {
    agent_->post_status = status;
    agent_->post_body = ipamapi::ErrorJson("too many requests in flight");
    ExpectError(Run(Conf("1.0.0").dump()), 11, "too many requests in flight");
  }
  agent_->healthy_status = 500;
  ExpectError(Run(Conf("1.0.0").dump()), 11, "unhealthy spiderpool-agent backend");
}

TEST_F(PluginExecTest, AgentErrors) {
  StartAgent();
  agent_->post_status = 500;
  agent_->post_body = ipamapi::ErrorJson("pool default-v4 has no free IP");
  ExpectError(Run(Conf("1.0.0").dump()), 100, "pool default-v4 has no free IP");
  // Upstream's go-swagger Error is a bare JSON string.
  agent_->post_body = R"("failed to allocate: all IP used out")";
  ExpectError(Run(Conf("0.3.1").dump()), 100, "failed to allocate: all IP used out", "0.3.1");
  agent_->post_status = 404;
  agent_->post_body = ipamapi::ErrorJson("pod default/web-0 not found on this node");
  ExpectError(Run(Conf("1.0.0").dump()), 100, "not found on this node");
  agent_->post_status = 400;
  agent_->post_body = ipamapi::ErrorJson("defaultIPv4IPPool: pool \"x\" does not exist");
  ExpectError(Run(Conf("1.0.0").dump()), 7, "does not exist");
  agent_->post_status = 200;
  agent_->post_body = R"({"ips":[{"version":4,"address":"10.0.0.300/24","nic":"eth0"}]})";
  ExpectError(Run(Conf("1.0.0").dump()), 101, "ips[0].address");
  agent_->post_body = "not json";
  ExpectError(Run(Conf("1.0.0").dump()), 101, "invalid JSON");
}

// With a detection flag the plugin enters CNI_NETNS; this one does not exist: the ADD fails with
// 104 after releasing the IPs (the real probes are in netprobe_node_test).
TEST_F(PluginExecTest, DetectionFailureReleases) {
  StartAgent();
  ipamapi::IpamAddResponse r;
  r.ips = {{.version = 4, .address = "10.6.0.10/16", .gateway = "10.6.0.1", .nic = "eth0",
            .enable_gateway_detection = true}};
  agent_->post_body = ipamapi::ToJson(r);
  env_["CNI_NETNS"] = dir_ + "/no-such-netns";
  ExpectError(Run(Conf("1.0.0").dump()), 104, "no-such-netns");
  auto reqs = agent_->requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[2].method, "DELETE");
  EXPECT_EQ(reqs[2].path, "/v1/ipam/ip");
  EXPECT_NE(reqs[2].body.find(R"("containerID":"a51debf7e1eb")"), std::string::npos);
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
