// Node test: the conflists GenerateNAD writes, run exactly as generated through the real CNI
// plugins, the way Multus runs them (ADD in order with prevResult, DEL in reverse): macvlan,
// bridge and tuning from /usr/lib/cni, and our `spiderpool` IPAM plugin and `coordinator`
// (Bazel data). Needs root, `ip`, /bin/sh + mount and /usr/lib/cni/{macvlan,bridge,tuning};
// otherwise it skips and says why. ipvlan and vlan cannot run on this kernel (no ipvlan/8021q
// links); their JSON is covered by the golden tests.
//
// The one change to the generated config: each spiderpool IPAM block and coordinator entry is
// pointed at this test's stand-in agent socket (testing::UseAgentSocket says why). libcni's
// own injections (name, cniVersion, prevResult) are the runner's.
//
// Layout: a "node" network namespace holding the macvlan master (one end of a veth pair, with
// a node IP), and a "pod" namespace. Every plugin runs in the node namespace (`ip netns exec`),
// because the coordinator changes the node's routing (host veth, `to <pod IP> lookup 500`);
// /var/log is a bind of the test's directory there, so the plugins' default log files do not
// land on the machine. The stand-in agent listens in a short /tmp directory.
//
// Everything it creates (both namespaces and all links in them, the temp directory with the
// socket and logs) is named after the process id or mkdtemp and removed at the end, pass or
// fail.

#include <limits.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/codec.h"
#include "base/json.h"
#include "base/testing/temp_dir.h"
#include "multus/generate.h"
#include "multus/testing/cni_runner.h"
#include "multus/testing/stand_in_agent.h"

namespace spiderpool::multus {
namespace {

using ::spiderpool::base::testing::ReadFile;

namespace fs = std::filesystem;
using base::Json;
using testing::CniArgs;
using testing::RunProcess;
using testing::StandInAgent;

constexpr const char* kSystemCniDir = "/usr/lib/cni";
constexpr const char* kNodeCidr = "192.0.2.1/24";  // the node's IP, on the macvlan master

// A runfile (Bazel data) as an absolute path; the test runs in the runfiles tree.
std::string Runfile(const std::string& path) {
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

class NodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "node test needs root (creates netns and links)";
    ip_ = testing::IpBinary();
    if (ip_.empty()) GTEST_SKIP() << "no `ip` binary (iproute2)";
    for (const char* tool : {"/bin/sh", "/usr/bin/mount"}) {
      if (access(tool, X_OK) != 0) GTEST_SKIP() << tool << " is missing (binds /var/log)";
    }
    for (const char* plugin : {"macvlan", "bridge", "tuning"}) {
      std::string path = std::string(kSystemCniDir) + "/" + plugin;
      if (access(path.c_str(), X_OK) != 0) GTEST_SKIP() << path << " is missing";
    }
    // Our plugins come from the runfiles; their directories go first in CNI_PATH so an
    // installed copy in /usr/lib/cni is never picked instead.
    for (const char* ours : {"agent/cni/spiderpool", "agent/coordinator/coordinator"}) {
      ASSERT_EQ(access(Runfile(ours).c_str(), X_OK), 0) << Runfile(ours) << " (Bazel data)";
    }
    cni_path_ = Runfile("agent/cni") + ":" + Runfile("agent/coordinator") + ":" + kSystemCniDir;

    tmp_ = dir_.path();  // set past the skips only: TearDown's guard
    fs::create_directories(tmp_ + "/log");
    socket_ = tmp_ + "/agent.sock";
    agent_ = std::make_unique<StandInAgent>(socket_);
    ASSERT_TRUE(agent_->listening()) << socket_;

    std::string id = std::to_string(getpid());
    node_ = "sp-mn-" + id;
    pod_ = "sp-mp-" + id;
    master_ = "spm" + id + "a";  // <= 15 bytes for any pid
    master_peer_ = "spm" + id + "b";
    bridge_ = "spb" + id;
    Cleanup();  // leftovers of a crashed run with the same pid
    ASSERT_TRUE(Ip({"netns", "add", node_}));
    ASSERT_TRUE(Ip({"netns", "add", pod_}));
    ASSERT_TRUE(Ip({"-n", node_, "link", "set", "lo", "up"}));
    ASSERT_TRUE(Ip({"-n", node_, "link", "add", master_, "type", "veth", "peer", "name",
                    master_peer_}));
    ASSERT_TRUE(Ip({"-n", node_, "addr", "add", kNodeCidr, "dev", master_}));
    ASSERT_TRUE(Ip({"-n", node_, "link", "set", master_, "up"}));
    ASSERT_TRUE(Ip({"-n", node_, "link", "set", master_peer_, "up"}));
  }

  void TearDown() override {
    agent_.reset();
    if (!node_.empty()) Cleanup();
    // The plugins' logs, before dir_ goes with them.
    if (!tmp_.empty() && HasFailure()) {
      for (const char* log : {"/log/spidernet/spiderpool.log", "/log/spidernet/coordinator.log"}) {
        std::string text = ReadFile(tmp_ + log);
        if (!text.empty()) std::cerr << "---- " << log << " ----\n" << text;
      }
    }
  }

  // Deleting the namespaces deletes every link in them (the master pair, macvlan, the bridge,
  // the coordinator's veth pair) and the node's rules and routes.
  void Cleanup() {
    Ip({"netns", "del", pod_}, /*quiet=*/true);
    Ip({"netns", "del", node_}, true);
  }

  // Runs `ip args...`; returns true on exit 0 (failures are reported unless quiet).
  bool Ip(const std::vector<std::string>& args, bool quiet = false, std::string* out = nullptr) {
    std::vector<std::string> argv = {ip_};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = RunProcess(argv, {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"});
    if (!r.ok()) {
      ADD_FAILURE() << r.status();
      return false;
    }
    if (out != nullptr) *out = r->out;
    if (r->exit_code != 0 && !quiet) {
      ADD_FAILURE() << "ip " << ::testing::PrintToString(args) << " exited " << r->exit_code
                    << ": " << r->err;
    }
    return r->exit_code == 0;
  }

  CniArgs Args(const std::string& ifname) {
    CniArgs a;
    a.container_id = "multus-node-test-" + std::to_string(getpid()) + "-" + ifname;
    a.netns = "/var/run/netns/" + pod_;
    a.ifname = ifname;
    a.cni_path = cni_path_;
    a.args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=multus-node-test;"
             "K8S_POD_INFRA_CONTAINER_ID=" + a.container_id + ";K8S_POD_UID=0000-node-test";
    a.run_in_netns = node_;
    a.var_log_dir = tmp_ + "/log";
    return a;
  }

  // The generated config, as generated, with our plugins pointed at the stand-in agent.
  Json Runnable(const api::SpiderMultusConfig& smc) {
    auto config = GenerateCNIConfig(smc);
    EXPECT_TRUE(config.ok()) << config.status();
    auto j = base::ParseJson(config.ok() ? *config : "{}");
    EXPECT_TRUE(j.ok()) << j.status();
    Json generated = j.ok() ? *j : Json::object();
    Json runnable = testing::UseAgentSocket(generated, socket_);
    // Nothing but the socket keys differs from what was generated.
    Json stripped = runnable;
    for (Json& p : stripped["plugins"]) {
      p.erase("ipam_unix_socket_path");
      if (p.contains("ipam") && p["ipam"].is_object()) p["ipam"].erase("ipam_unix_socket_path");
    }
    EXPECT_EQ(stripped, generated);
    return runnable;
  }

  bool NodeHasRuleToTable500() {
    std::string rules;
    EXPECT_TRUE(Ip({"-n", node_, "rule", "show"}, false, &rules));
    return rules.find("lookup 500") != std::string::npos;
  }

  // ADD, check the address, MTU and UP inside the pod (and, when the conflist has a
  // coordinator, its veth0 and the node's rule), DEL, check it is all gone (twice: DEL must be
  // idempotent).
  void AddCheckDel(const Json& conflist, const std::string& ifname, const std::string& cidr,
                   const std::string& mtu, bool coordinator) {
    SCOPED_TRACE(base::DumpJson(conflist));
    CniArgs args = Args(ifname);
    auto result = testing::ConflistAdd(conflist, args);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_TRUE((*result)["ips"].is_array() && !(*result)["ips"].empty()) << *result;
    EXPECT_EQ((*result)["ips"][0]["address"], cidr) << *result;
    EXPECT_EQ(agent_->Count("POST", "/v1/ipam/ip"), 1) << "the IP came from our IPAM plugin";

    std::string out;
    ASSERT_TRUE(Ip({"-n", pod_, "addr", "show", "dev", ifname}, false, &out));
    EXPECT_NE(out.find("inet " + cidr), std::string::npos) << out;
    EXPECT_NE(out.find("mtu " + mtu), std::string::npos) << out;
    EXPECT_NE(out.find(",UP"), std::string::npos) << out;
    if (coordinator) {
      EXPECT_GE(agent_->Count("GET", "/v1/coordinator/config"), 1);
      EXPECT_TRUE(Ip({"-n", pod_, "link", "show", "dev", "veth0"}, false, &out))
          << "the coordinator did not make veth0";
      EXPECT_TRUE(NodeHasRuleToTable500()) << "no `to <pod IP> lookup 500` on the node";
    }

    ASSERT_TRUE(testing::ConflistDel(conflist, args, *result).ok());
    EXPECT_FALSE(Ip({"-n", pod_, "link", "show", "dev", ifname}, /*quiet=*/true))
        << ifname << " still exists after DEL";
    EXPECT_FALSE(Ip({"-n", pod_, "link", "show", "dev", "veth0"}, true))
        << "veth0 still exists after DEL";
    EXPECT_FALSE(NodeHasRuleToTable500()) << "a `lookup 500` rule is left on the node";
    EXPECT_EQ(agent_->Count("DELETE", "/v1/ipam/ip"), 1) << "the IP went back to the agent";
    auto again = testing::ConflistDel(conflist, args, *result);
    EXPECT_TRUE(again.ok()) << again;
    EXPECT_FALSE(NodeHasRuleToTable500());
  }

  // Short, under /tmp: the agent's socket path must fit 107 bytes. Before agent_, whose socket
  // is in it.
  base::testing::TempDir dir_{"mn"};
  std::string ip_, node_, pod_, master_, master_peer_, bridge_, tmp_, socket_, cni_path_;
  std::unique_ptr<StandInAgent> agent_;
};

// The seed-style macvlan SMC (master = the node's veth) with a chained tuning plugin,
// generated with the defaults a real API server applies: macvlan (spiderpool IPAM), tuning
// (it must get prevResult), coordinator. The NIC is eth0, the pod's first: the coordinator's
// auto mode then works as underlay and builds veth0 (a later NIC would need an overlay eth0).
TEST_F(NodeTest, MacvlanAddDel) {
  auto smc = api::DecodeJson<api::SpiderMultusConfig>(R"({
    "apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderMultusConfig",
    "metadata": {"name": "macvlan-node", "namespace": "kube-system"},
    "spec": {"cniType": "macvlan", "macvlan": {"master": [")" + master_ + R"("]},
             "chainCNIJsonData": ["{\"type\":\"tuning\",\"mtu\":1400}"]}})");
  ASSERT_TRUE(smc.ok()) << smc.status();
  Json conflist = Runnable(*smc);
  ASSERT_EQ(conflist["plugins"].size(), 3u) << conflist;
  EXPECT_EQ(conflist["plugins"][0]["type"], "macvlan");
  EXPECT_EQ(conflist["plugins"][0]["master"], master_);
  EXPECT_EQ(conflist["plugins"][0]["ipam"]["type"], "spiderpool");
  EXPECT_EQ(conflist["plugins"][1]["type"], "tuning");
  EXPECT_EQ(conflist["plugins"][2]["type"], "coordinator");
  EXPECT_EQ(conflist["cniVersion"], "0.3.1");
  agent_->SetAddress("eth0", "192.0.2.10/24", "192.0.2.254");
  AddCheckDel(conflist, "eth0", "192.0.2.10/24", "1400", /*coordinator=*/true);
}

// A custom SMC: customCNI verbatim (a 0.4.0 bridge + tuning list, so DEL gets prevResult). A
// custom NAD has no coordinator entry.
TEST_F(NodeTest, CustomAddDel) {
  Json custom = {
      {"cniVersion", "0.4.0"},
      {"name", "custom-node"},
      {"plugins",
       Json::array({Json{{"type", "bridge"},
                         {"bridge", bridge_},
                         {"isGateway", false},
                         {"ipam", {{"type", "spiderpool"}}}},
                    Json{{"type", "tuning"}, {"mtu", 1450}}})}};
  api::SpiderMultusConfig smc;
  smc.metadata.name = "custom-node";
  smc.metadata.namespace_ = "default";
  smc.spec.cni_type = "custom";
  smc.spec.custom_cni = base::DumpJson(custom);
  Json conflist = Runnable(smc);
  ASSERT_EQ(conflist["plugins"].size(), 2u) << conflist;
  EXPECT_EQ(conflist["plugins"][0]["ipam"]["type"], "spiderpool");
  agent_->SetAddress("net2", "198.51.100.20/24", "");
  AddCheckDel(conflist, "net2", "198.51.100.20/24", "1450", /*coordinator=*/false);
}

}  // namespace
}  // namespace spiderpool::multus
