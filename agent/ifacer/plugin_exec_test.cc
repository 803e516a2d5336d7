// Execs the built `ifacer` binary the way a runtime does (environment + stdin; stdout and the
// exit code read back) inside a fresh network namespace (root) whose "host NIC" is one end of
// a veth pair: `ip netns exec <ns> ifacer`, so the plugin's "host" is that namespace.
//
// This machine's kernel has no 8021q and no bonding: creating a VLAN or a bond is refused
// ("Unknown device type"). The success-path cases therefore assert what the plugin reports for
// the refusal (a CNI error naming the link and the kernel's reason) and that nothing was left
// behind, then GTEST_SKIP saying what the kernel refused; on a kernel with both they check the
// links instead. Reuse of an existing, correct VLAN needs a VLAN created beforehand: skipped
// with the reason when `ip` cannot create one either.

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/json.h"
#include "base/subprocess.h"

namespace spiderpool::agent::ifacer {
namespace {

using base::Json;

constexpr int kErrLinkNotFound = 100;
constexpr int kErrLinkConflict = 101;
constexpr int kErrInternal = 999;

// Skips or stops the calling test when the namespace could not be made.
#define NEED_NAMESPACE()                         \
  do {                                           \
    NeedNamespace();                             \
    if (IsSkipped() || HasFatalFailure()) return; \
  } while (0)

std::string PluginPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return std::string(srcdir ? srcdir : ".") + "/spiderpool/agent/ifacer/ifacer";
}

std::string FindIp() {
  for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

struct Exec {
  int exit_code = -1;
  std::string out;
  std::string err;
  Json json;
};

class IfacerExecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = {{"CNI_COMMAND", "ADD"},
            {"CNI_CONTAINERID", "a51debf7e1eb"},
            {"CNI_NETNS", "/var/run/netns/pod1"},
            {"CNI_IFNAME", "net1"},
            {"CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0"},
            {"CNI_PATH", "/opt/cni/bin"},
            {"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}};
  }
  void TearDown() override {
    if (!ns_.empty()) Ip({"netns", "del", ns_}, /*quiet=*/true);
  }

  // A fresh namespace with veth sp0 (the master, down) <-> sp0p and veth sp1 <-> sp1p.
  void NeedNamespace() {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (creates a network namespace and links)";
    ip_ = FindIp();
    if (ip_.empty()) GTEST_SKIP() << "no `ip` binary (iproute2)";
    static std::atomic<int> counter{0};
    ns_ = "sp-ifc-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
    Ip({"netns", "del", ns_}, /*quiet=*/true);
    ASSERT_TRUE(Ip({"netns", "add", ns_}));
    ASSERT_TRUE(InNs({"link", "add", "sp0", "type", "veth", "peer", "name", "sp0p"}));
    ASSERT_TRUE(InNs({"link", "add", "sp1", "type", "veth", "peer", "name", "sp1p"}));
  }

  bool Ip(std::vector<std::string> args, bool quiet = false, std::string* out = nullptr,
          std::string* err = nullptr) {
    args.insert(args.begin(), ip_);
    auto r = base::RunProcess({.argv = args, .env = {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}}});
    if (!r.ok()) {
      ADD_FAILURE() << r.status();
      return false;
    }
    if (out != nullptr) *out = r->stdout_data;
    if (err != nullptr) *err = r->stderr_data;
    if (r->exit_code != 0 && !quiet) {
      ADD_FAILURE() << "ip " << ::testing::PrintToString(args) << " exited " << r->exit_code
                    << ": " << r->stderr_data;
    }
    return r->exit_code == 0;
  }
  bool InNs(std::vector<std::string> args, bool quiet = false, std::string* err = nullptr) {
    args.insert(args.begin(), {"-n", ns_});
    return Ip(std::move(args), quiet, nullptr, err);
  }
  // `ip -o link show` in the namespace: one line per link with its flags and state.
  std::string Links() {
    std::string out;
    Ip({"-n", ns_, "-o", "link", "show"}, false, &out);
    return out;
  }
  std::string LinkLine(const std::string& name) {
    std::string out;
    Ip({"-n", ns_, "-o", "-d", "link", "show", "dev", name}, /*quiet=*/true, &out);
    return out;
  }

  // Runs the plugin with `env_` (overridden by `extra`), in the namespace when there is one.
  Exec Run(const std::string& stdin_text, const std::map<std::string, std::string>& extra = {}) {
    std::map<std::string, std::string> env = env_;
    for (const auto& [k, v] : extra) env[k] = v;
    std::vector<std::string> argv = {PluginPath()};
    if (!ns_.empty()) argv.insert(argv.begin(), {ip_, "netns", "exec", ns_});
    Exec r;
    auto p = base::RunProcess({.argv = argv, .env = env, .stdin_data = stdin_text,
                               .timeout = absl::Seconds(30)});
    if (!p.ok()) {
      ADD_FAILURE() << p.status();
      return r;
    }
    r.exit_code = p->exit_code;
    r.out = p->stdout_data;
    r.err = p->stderr_data;
    if (!r.out.empty()) {
      auto j = base::ParseJson(r.out);
      if (j.ok()) r.json = *j;
    }
    return r;
  }

  static Json Conf(Json extra, const std::string& version = "0.3.1") {
    Json j = {{"cniVersion", version}, {"name", "macvlan-vlan"}, {"type", "ifacer"}};
    for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
    return j;
  }

  static void ExpectError(const Exec& r, int code, const std::vector<std::string>& texts) {
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    ASSERT_TRUE(r.json.is_object()) << "stdout: " << r.out << " stderr: " << r.err;
    EXPECT_EQ(r.json.value("code", -1), code) << r.out;
    std::string all = r.json.value("msg", "") + " | " + r.json.value("details", "");
    for (const auto& t : texts) {
      EXPECT_NE(all.find(t), std::string::npos) << "want \"" << t << "\" in " << r.out;
    }
  }
  static void ExpectEmptyResult(const Exec& r, const std::string& version) {
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.json, Json({{"cniVersion", version}, {"dns", Json::object()}})) << r.out;
  }

  // The kernel's refusal of a link kind: asserts the CNI error names the link and the kernel's
  // reason, and that the namespace is as it was. Returns the reason for the skip message.
  std::string ExpectRefused(const Exec& r, const std::string& what, const std::string& link,
                            const std::string& before) {
    ExpectError(r, kErrInternal, {"failed to create " + what + " interface " + link,
                                  "Operation not supported (kernel: Unknown device type)"});
    EXPECT_EQ(Links(), before) << "something was left behind or changed";
    return r.json.value("msg", "");
  }

  std::string ip_, ns_;
  std::map<std::string, std::string> env_;
};

TEST_F(IfacerExecTest, Version) {
  Exec r = Run("", {{"CNI_COMMAND", "VERSION"}});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.json["supportedVersions"], Json({"0.3.0", "0.3.1", "0.4.0", "1.0.0"})) << r.out;
  r = Run("", {{"CNI_COMMAND", ""}});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.err.find("CNI plugin ifacer"), std::string::npos) << r.err;
}

TEST_F(IfacerExecTest, DelAndCheckSucceedAndChangeNothing) {
  NEED_NAMESPACE();
  std::string before = Links();
  std::string conf = base::DumpJson(Conf({{"interfaces", {"sp0"}}, {"vlanID", 10}}, "1.0.0"));
  for (const char* cmd : {"DEL", "CHECK", "DEL"}) {  // DEL twice: idempotent
    Exec r = Run(conf, {{"CNI_COMMAND", cmd}});
    EXPECT_EQ(r.exit_code, 0) << cmd << ": " << r.out;
    EXPECT_EQ(r.out, "") << cmd;
  }
  // DEL does not even need a valid ifacer config (upstream's DEL ignores it), nor CNI_NETNS.
  Exec r = Run(base::DumpJson(Conf({{"vlanID", 99999}})),
               {{"CNI_COMMAND", "DEL"}, {"CNI_NETNS", ""}});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  // CHECK before 0.4.0 is refused by the protocol (libcni skel).
  r = Run(base::DumpJson(Conf({{"interfaces", {"sp0"}}})), {{"CNI_COMMAND", "CHECK"}});
  ExpectError(r, 1, {"config version does not allow CHECK"});
  EXPECT_EQ(Links(), before);
}

TEST_F(IfacerExecTest, NothingToDoPrintsEmptyResultOrPrevResult) {
  NEED_NAMESPACE();
  std::string before = Links();
  for (const char* v : {"0.3.0", "0.3.1", "0.4.0", "1.0.0"}) {
    ExpectEmptyResult(Run(base::DumpJson(Conf({{"interfaces", {"sp0"}}}, v))), v);
  }
  Json prev = {{"cniVersion", "1.0.0"},
               {"interfaces", {{{"name", "net1"}, {"sandbox", "/var/run/netns/pod1"}}}},
               {"ips", {{{"address", "10.6.0.10/16"}, {"interface", 0}}}},
               {"dns", Json::object()}};
  Exec r = Run(base::DumpJson(Conf({{"interfaces", {"sp0"}}, {"prevResult", prev}}, "1.0.0")));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.json, prev);
  // A prevResult that is not a result of the config's version.
  r = Run(base::DumpJson(
      Conf({{"interfaces", {"sp0"}}, {"prevResult", {{"ips", "x"}}}}, "1.0.0")));
  ExpectError(r, 6, {"ips"});
  EXPECT_EQ(Links(), before);
}

TEST_F(IfacerExecTest, BadInput) {
  NEED_NAMESPACE();
  std::string before = Links();
  struct Case {
    Json conf;
    int code;
    std::string text;
  } cases[] = {
      {Conf({{"vlanID", 10}}), 7, "interfaces have at least one interface"},
      {Conf({{"interfaces", {"sp0"}}, {"vlanID", 4095}}), 7, "invalid vlanID 4095"},
      {Conf({{"interfaces", {"sp0", "sp1"}}, {"bond", {{"mode", 8}}}}), 7, "bond.mode"},
      {Conf({{"interfaces", {"sp0", "sp1"}}, {"bond", {{"options", "miimon"}}}}), 7,
       "bond.options"},
      {Conf({{"interfaces", "sp0"}}), 6, "interfaces"},
      {Conf({{"interfaces", {"sp0"}}}, "0.2.0"), 1, "incompatible CNI versions"},
      {Conf({{"interfaces", {"nosuch0"}}, {"vlanID", 10}}), kErrLinkNotFound,
       "failed to find master interfaces[0] nosuch0 on the host"},
      {Conf({{"interfaces", {"sp0", "nosuch1"}}, {"bond", Json::object()}}), kErrLinkNotFound,
       "interfaces[1] nosuch1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(base::DumpJson(c.conf));
    ExpectError(Run(base::DumpJson(c.conf)), c.code, {c.text});
  }
  ExpectError(Run("{not json"), 6, {"error unmarshalling network config"});
  ExpectError(Run("{}", {{"CNI_NETNS", ""}}), 4, {"required env variables [CNI_NETNS] missing"});
  EXPECT_EQ(Links(), before);
}

TEST_F(IfacerExecTest, VlanOnVeth) {
  NEED_NAMESPACE();
  std::string before = Links();
  Exec r = Run(base::DumpJson(Conf({{"interfaces", {"sp0"}}, {"vlanID", 10}})));
  if (r.exit_code != 0) {
    std::string reason = ExpectRefused(r, "vlan", "sp0.10", before);
    EXPECT_NE(LinkLine("sp0").find("state DOWN"), std::string::npos)
        << "the master was brought up and not put back: " << LinkLine("sp0");
    GTEST_SKIP() << "kernel refused to create the VLAN (no 8021q): " << reason;
  }
  ExpectEmptyResult(r, "0.3.1");
  std::string line = LinkLine("sp0.10");
  EXPECT_NE(line.find("vlan protocol 802.1Q id 10"), std::string::npos) << line;
  EXPECT_NE(line.find("<BROADCAST,MULTICAST,UP"), std::string::npos) << line;
  // Second ADD reuses it.
  ExpectEmptyResult(Run(base::DumpJson(Conf({{"interfaces", {"sp0"}}, {"vlanID", 10}}))),
                    "0.3.1");
}

TEST_F(IfacerExecTest, BondOfTwoVeths) {
  NEED_NAMESPACE();
  std::string before = Links();
  Json conf = Conf({{"interfaces", {"sp0", "sp1"}},
                    {"bond", {{"mode", 1}, {"options", "miimon=100;primary=sp1"}}}});
  Exec r = Run(base::DumpJson(conf));
  if (r.exit_code != 0) {
    std::string reason = ExpectRefused(r, "bond", "sp_bond0", before);
    GTEST_SKIP() << "kernel refused to create the bond (no bonding): " << reason;
  }
  ExpectEmptyResult(r, "0.3.1");
  std::string line = LinkLine("sp_bond0");
  EXPECT_NE(line.find("bond mode active-backup"), std::string::npos) << line;
  EXPECT_NE(line.find("miimon 100"), std::string::npos) << line;
  EXPECT_NE(LinkLine("sp0").find("master sp_bond0"), std::string::npos);
  ExpectEmptyResult(Run(base::DumpJson(conf)), "0.3.1");
}

TEST_F(IfacerExecTest, BondThenVlan) {
  NEED_NAMESPACE();
  std::string before = Links();
  Json conf = Conf({{"interfaces", {"sp0", "sp1"}}, {"vlanID", 20}, {"bond", {{"mode", 0}}}},
                   "1.0.0");
  Exec r = Run(base::DumpJson(conf));
  if (r.exit_code != 0) {
    // The bond is the first refusal here; a VLAN refusal after a created bond is covered by
    // links_test (the bond is deleted again).
    std::string reason = ExpectRefused(r, "bond", "sp_bond0", before);
    GTEST_SKIP() << "kernel refused to create the bond (no bonding): " << reason;
  }
  ExpectEmptyResult(r, "1.0.0");
  EXPECT_NE(LinkLine("sp_bond0.20").find("vlan protocol 802.1Q id 20"), std::string::npos);
}

TEST_F(IfacerExecTest, ExistingCorrectVlanIsReused) {
  NEED_NAMESPACE();
  std::string err;
  if (!InNs({"link", "add", "link", "sp0", "name", "sp0.30", "type", "vlan", "id", "30"},
            /*quiet=*/true, &err)) {
    GTEST_SKIP() << "cannot pre-create a VLAN to reuse: `ip link add ... type vlan` refused: "
                 << err;
  }
  ExpectEmptyResult(Run(base::DumpJson(Conf({{"interfaces", {"sp0"}}, {"vlanID", 30}}))),
                    "0.3.1");
  EXPECT_NE(LinkLine("sp0.30").find(",UP"), std::string::npos) << LinkLine("sp0.30");
  // Another name with the same id: refused, naming both.
  ExpectError(Run(base::DumpJson(Conf({{"interfaces", {"sp1"}}, {"vlanID", 30}}))),
              kErrLinkConflict, {"same vlanId 30", "sp0.30", "sp1.30"});
}

TEST_F(IfacerExecTest, TargetNameTakenByAnotherKind) {
  NEED_NAMESPACE();
  // Kinds this kernel has: a macvlan where the VLAN should be, a bridge where the bond should be.
  ASSERT_TRUE(InNs({"link", "add", "link", "sp0", "name", "sp0.40", "type", "macvlan"}));
  ASSERT_TRUE(InNs({"link", "add", "sp_bond0", "type", "bridge"}));
  std::string before = Links();
  ExpectError(Run(base::DumpJson(Conf({{"interfaces", {"sp0"}}, {"vlanID", 40}}))),
              kErrLinkConflict, {"sp0.40 already exists and is not vlan 40 of sp0", "macvlan"});
  ExpectError(
      Run(base::DumpJson(Conf({{"interfaces", {"sp0", "sp1"}}, {"bond", Json::object()}}))),
      kErrLinkConflict,
      {"createBondDevice failure: a non-bond type interface named sp_bond0 already exists on "
       "the host",
       "kind bridge"});
  EXPECT_EQ(Links(), before) << "an existing link was changed";
}

}  // namespace
}  // namespace spiderpool::agent::ifacer
