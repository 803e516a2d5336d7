// Node test: the conflists GenerateNAD writes, run through the real CNI plugins from
// /usr/lib/cni inside a fresh network namespace, the way Multus runs them (ADD in order with
// prevResult, DEL in reverse). Needs root, `ip`, and /usr/lib/cni/{macvlan,bridge,tuning,
// host-local}; otherwise it skips and says why.
//
// For now two substitutions (both named helpers in multus/testing/cni_runner.h):
//   - the `spiderpool` IPAM block becomes host-local (the IPAM plugin is built in parallel;
//     switch UseHostLocalIpamInsteadOfSpiderpool off once it and an agent can run here);
//   - the `coordinator` entry is dropped (the coordinator plugin is not built yet).
// ipvlan and vlan cannot run on this kernel (no ipvlan/8021q links); their JSON is covered by
// the golden tests.
//
// Everything it creates (namespace, veth pair, bridge, host-local data dir) is named after the
// process id and removed at the end, pass or fail.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/codec.h"
#include "base/json.h"
#include "multus/generate.h"
#include "multus/testing/cni_runner.h"

namespace spiderpool::multus {
namespace {

namespace fs = std::filesystem;
using base::Json;
using testing::CniArgs;
using testing::ProcessResult;
using testing::RunProcess;

constexpr const char* kCniDir = "/usr/lib/cni";

std::string FindIp() {
  for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

class NodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "node test needs root (creates netns and links)";
    ip_ = FindIp();
    if (ip_.empty()) GTEST_SKIP() << "no `ip` binary (iproute2)";
    for (const char* plugin : {"macvlan", "bridge", "tuning", "host-local"}) {
      std::string path = std::string(kCniDir) + "/" + plugin;
      if (access(path.c_str(), X_OK) != 0) GTEST_SKIP() << path << " is missing";
    }
    std::string id = std::to_string(getpid());
    ns_ = "sp-multus-" + id;
    veth_ = "spm" + id + "a";  // <= 15 bytes for any pid
    veth_peer_ = "spm" + id + "b";
    bridge_ = "spb" + id;
    data_dir_ = "/tmp/sp-multus-hl-" + id;
    Cleanup();  // leftovers of a crashed run with the same pid
    ASSERT_TRUE(Ip({"netns", "add", ns_}));
    ASSERT_TRUE(Ip({"link", "add", veth_, "type", "veth", "peer", "name", veth_peer_}));
    ASSERT_TRUE(Ip({"link", "set", veth_, "up"}));
    ASSERT_TRUE(Ip({"link", "set", veth_peer_, "up"}));
  }

  void TearDown() override {
    if (!ns_.empty()) Cleanup();
  }

  void Cleanup() {
    Ip({"netns", "del", ns_}, /*quiet=*/true);
    Ip({"link", "del", veth_}, true);
    Ip({"link", "del", bridge_}, true);
    std::error_code ec;
    fs::remove_all(data_dir_, ec);
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
    a.netns = "/var/run/netns/" + ns_;
    a.ifname = ifname;
    a.cni_path = kCniDir;
    a.args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=multus-node-test;"
             "K8S_POD_INFRA_CONTAINER_ID=" + a.container_id + ";K8S_POD_UID=0000-node-test";
    return a;
  }

  // The generated config as the node test runs it (see the file comment).
  Json Runnable(const api::SpiderMultusConfig& smc, const std::string& subnet,
                const std::string& ip) {
    auto config = GenerateCNIConfig(smc);
    EXPECT_TRUE(config.ok()) << config.status();
    auto j = base::ParseJson(config.ok() ? *config : "{}");
    EXPECT_TRUE(j.ok()) << j.status();
    Json conflist = testing::DropCoordinatorPlugin(j.ok() ? *j : Json::object());
    return testing::UseHostLocalIpamInsteadOfSpiderpool(std::move(conflist), subnet, ip,
                                                        data_dir_);
  }

  // ADD, check the address and MTU inside the namespace, DEL, check it is gone (twice: DEL
  // must be idempotent).
  void AddCheckDel(const Json& conflist, const std::string& ifname, const std::string& cidr,
                   const std::string& mtu) {
    SCOPED_TRACE(base::DumpJson(conflist));
    CniArgs args = Args(ifname);
    auto result = testing::ConflistAdd(conflist, args);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_TRUE((*result)["ips"].is_array() && !(*result)["ips"].empty()) << *result;
    EXPECT_EQ((*result)["ips"][0]["address"], cidr) << *result;

    std::string out;
    ASSERT_TRUE(Ip({"-n", ns_, "addr", "show", "dev", ifname}, false, &out));
    EXPECT_NE(out.find("inet " + cidr), std::string::npos) << out;
    EXPECT_NE(out.find("mtu " + mtu), std::string::npos) << out;
    EXPECT_NE(out.find(",UP"), std::string::npos) << out;
    // host-local recorded the lease under the network name.
    std::string ip = cidr.substr(0, cidr.find('/'));
    std::string lease = data_dir_ + "/" + conflist["name"].get<std::string>() + "/" + ip;
    EXPECT_TRUE(fs::exists(lease)) << lease;

    ASSERT_TRUE(testing::ConflistDel(conflist, args, *result).ok());
    EXPECT_FALSE(Ip({"-n", ns_, "link", "show", "dev", ifname}, /*quiet=*/true))
        << ifname << " still exists after DEL";
    EXPECT_FALSE(fs::exists(lease)) << "host-local kept " << lease;
    auto again = testing::ConflistDel(conflist, args, *result);
    EXPECT_TRUE(again.ok()) << again;
  }

  std::string ip_, ns_, veth_, veth_peer_, bridge_, data_dir_;
};

// The seed-style macvlan SMC (master = our veth) with a chained tuning plugin, generated with
// the defaults a real API server applies: macvlan, then tuning (it must get prevResult).
TEST_F(NodeTest, MacvlanAddDel) {
  auto smc = api::DecodeJson<api::SpiderMultusConfig>(R"({
    "apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderMultusConfig",
    "metadata": {"name": "macvlan-node", "namespace": "kube-system"},
    "spec": {"cniType": "macvlan", "macvlan": {"master": [")" + veth_ + R"("]},
             "chainCNIJsonData": ["{\"type\":\"tuning\",\"mtu\":1400}"]}})");
  ASSERT_TRUE(smc.ok()) << smc.status();
  Json conflist = Runnable(*smc, "192.0.2.0/24", "192.0.2.10");
  ASSERT_EQ(conflist["plugins"].size(), 2u) << conflist;
  EXPECT_EQ(conflist["plugins"][0]["type"], "macvlan");
  EXPECT_EQ(conflist["plugins"][0]["master"], veth_);
  EXPECT_EQ(conflist["plugins"][0]["ipam"]["type"], "host-local");
  EXPECT_EQ(conflist["cniVersion"], "0.3.1");
  AddCheckDel(conflist, "net1", "192.0.2.10/24", "1400");
}

// A custom SMC: customCNI verbatim (a 0.4.0 bridge + tuning list, so DEL gets prevResult).
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
  Json conflist = Runnable(smc, "198.51.100.0/24", "198.51.100.20");
  EXPECT_EQ(conflist["plugins"][0]["ipam"]["type"], "host-local");
  AddCheckDel(conflist, "net2", "198.51.100.20/24", "1450");
}

}  // namespace
}  // namespace spiderpool::multus
