// The `coordinator` plugin on a "node": the real macvlan plugin from /usr/lib/cni (with the
// real `static` IPAM plugin) puts eth0 into a pod network namespace, then our coordinator
// binary runs chained after it with macvlan's result as prevResult, exactly as libcni runs a
// conflist. Its cluster settings come from a stand-in agent on a unix socket (the real agent's
// endpoint is exercised by ipam_node_test). Root only; skipped with a reason elsewhere.
#include <unistd.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include <httplib.h>

#include "agent/ipamapi/ipamapi.h"
#include "base/json.h"
#include "base/strings.h"
#include "base/subprocess.h"
#include "base/testing/temp_dir.h"
#include "e2e/node/node_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spiderpool::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kNodeIP[] = "10.77.0.2";
constexpr char kPodIP[] = "10.77.0.10";
constexpr char kContainer[] = "ctr0123456789abcdef";

// Answers GET /v1/coordinator/config with `body` and `status`.
class StandInAgent {
 public:
  explicit StandInAgent(std::string socket) : socket_(std::move(socket)) {
    server_.Get(std::string(agent::ipamapi::kCoordinatorConfigPath),
                [this](const httplib::Request& req, httplib::Response& res) {
                  last_query_ = req.get_param_value("podName");
                  res.status = status_;
                  res.set_content(body_, "application/json");
                });
    server_.set_address_family(AF_UNIX);
    ::unlink(socket_.c_str());
    EXPECT_TRUE(server_.bind_to_port(socket_.c_str(), 80));
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~StandInAgent() {
    server_.stop();
    thread_.join();
    ::unlink(socket_.c_str());
  }
  void Answer(int status, std::string body) {
    status_ = status;
    body_ = std::move(body);
  }
  std::string last_query_;

 private:
  std::string socket_;
  httplib::Server server_;
  std::thread thread_;
  int status_ = 200;
  std::string body_;
};

std::string ClusterConfig(const std::string& extra = "") {
  return base::StrCat(R"({"mode":"auto","overlayPodCIDR":["10.244.0.0/16"],)",
                      R"("serviceCIDR":["10.96.0.0/12"],"tunePodRoutes":true,"hostRuleTable":500)",
                      extra, "}");
}

class CoordinatorNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = NodeTestSkipReason(); !why.empty()) GTEST_SKIP() << why;
    tmp_ = dir_.path();
    agent_ = std::make_unique<StandInAgent>(tmp_ + "/agent.sock");
    agent_->Answer(200, ClusterConfig());
    auto net = Network::Create();
    ASSERT_TRUE(net.ok()) << net.status();
    net_ = std::move(*net);
    ASSERT_TRUE(net_->AddNode("a").ok());
    node_ = net_->NodeNetns("a");
    ASSERT_TRUE(Ip({"-n", node_, "addr", "add", base::StrCat(kNodeIP, "/24"), "dev", "eth0"}).ok());
    ASSERT_TRUE(net_->AddPodNetns("p").ok());
    pod_ = net_->PodNetns("p");
  }
  void TearDown() override {
    agent_.reset();
  }

  // What a diff must not see change: links, routes of every table, rules, permanent neighbours.
  // IPv6 link-local addresses finishing duplicate address detection add a local route by
  // themselves: wait (bounded) until none is tentative, so the diff sees only our changes.
  std::string Snapshot(const std::string& ns) {
    for (int i = 0; i < 100; ++i) {
      auto tentative = Ip({"-n", ns, "-6", "addr", "show", "tentative"});
      if (tentative.ok() && tentative->empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::string out;
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"-n", ns, "-j", "link", "show"},
          {"-n", ns, "-j", "-4", "route", "show", "table", "all"},
          {"-n", ns, "-j", "-6", "route", "show", "table", "all"},
          {"-n", ns, "-j", "rule", "show"},
          {"-n", ns, "-j", "neigh", "show", "nud", "permanent"}}) {
      auto r = Ip(args);
      EXPECT_TRUE(r.ok()) << r.status();
      out += (r.ok() ? *r : "") + "\n";
    }
    return out;
  }

  base::Json MacvlanConf() {
    return base::Json{{"cniVersion", "1.0.0"},
                      {"name", "macvlan-conf"},
                      {"type", "macvlan"},
                      {"master", "eth0"},
                      {"mode", "bridge"},
                      {"ipam",
                       {{"type", "static"},
                        {"addresses", base::Json(std::vector<base::Json>{
                                          {{"address", base::StrCat(kPodIP, "/24")},
                                           {"gateway", "10.77.0.1"}}})},
                        {"routes", base::Json(std::vector<base::Json>{{{"dst", "0.0.0.0/0"}}})}}}};
  }
  base::Json CoordinatorConf(base::Json extra = base::Json::object()) {
    base::Json c = {{"cniVersion", "1.0.0"},
                    {"name", "macvlan-conf"},
                    {"type", "coordinator"},
                    {"ipam_unix_socket_path", tmp_ + "/agent.sock"},
                    {"logOptions", {{"logFile", tmp_ + "/coordinator.log"}}}};
    for (auto& [k, v] : extra.items()) c[k] = v;
    return c;
  }

  CniOutcome Run(const std::string& command, const std::string& plugin, const base::Json& conf,
                 const std::string& ifname = "eth0") {
    auto out = RunCni({.command = command,
                       .container_id = kContainer,
                       .netns_path = net_->PodNetnsPath("p"),
                       .if_name = ifname,
                       .cni_args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=p",
                       .config = base::DumpJson(conf),
                       .plugin = plugin,
                       .run_in_netns = node_,
                       .cni_path = "/usr/lib/cni"});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : CniOutcome{};
  }
  std::string Coordinator() { return Runfile("agent/coordinator/coordinator"); }

  // macvlan ADD; returns its result (prevResult for the coordinator).
  base::Json AddMacvlan() {
    CniOutcome out = Run("ADD", "/usr/lib/cni/macvlan", MacvlanConf());
    EXPECT_EQ(out.exit_code, 0) << out.Describe();
    return out.json;
  }
  CniOutcome AddCoordinator(const base::Json& prev, base::Json extra = base::Json::object()) {
    base::Json conf = CoordinatorConf(std::move(extra));
    conf["prevResult"] = prev;
    return Run("ADD", Coordinator(), conf);
  }
  // DEL in libcni's order (reverse), each with the ADD result as prevResult.
  void DelChain(const base::Json& prev, base::Json extra = base::Json::object()) {
    base::Json conf = CoordinatorConf(std::move(extra));
    conf["prevResult"] = prev;
    CniOutcome out = Run("DEL", Coordinator(), conf);
    EXPECT_EQ(out.exit_code, 0) << out.Describe();
    base::Json mconf = MacvlanConf();
    mconf["prevResult"] = prev;
    out = Run("DEL", "/usr/lib/cni/macvlan", mconf);
    EXPECT_EQ(out.exit_code, 0) << out.Describe();
  }

  base::testing::TempDir dir_{"coord"};  // before agent_, whose socket is in it
  std::unique_ptr<Network> net_;
  std::unique_ptr<StandInAgent> agent_;
  std::string tmp_, node_, pod_;
};

TEST_F(CoordinatorNodeTest, UnderlayPodReachesItsNodeAndDelRestoresBothNamespaces) {
  const std::string node_before = Snapshot(node_);
  const std::string pod_before = Snapshot(pod_);
  base::Json prev = AddMacvlan();
  // Without the coordinator, a macvlan pod cannot reach its own node (the master's IP).
  EXPECT_FALSE(net_->Ping("p", kNodeIP));

  CniOutcome out = AddCoordinator(prev, {{"podMACPrefix", "0a:1b"}, {"txQueueLen", 2000}});
  ASSERT_EQ(out.exit_code, 0) << out.Describe();
  EXPECT_EQ(out.json, prev) << "a chained plugin passes its prevResult on";
  EXPECT_EQ(agent_->last_query_, "p");

  EXPECT_TRUE(net_->Ping("p", kNodeIP)) << Snapshot(pod_) << Snapshot(node_);

  // Pod side: veth0 up, the node's IP and the cluster CIDRs through it.
  auto routes = Ip({"-n", pod_, "-j", "route", "show", "table", "main"});
  ASSERT_TRUE(routes.ok());
  auto rj = base::ParseJson(*routes);
  ASSERT_TRUE(rj.ok());
  std::set<std::string> seen;
  for (const base::Json& r : *rj) {
    seen.insert(base::StrCat(r.value("dst", ""), " via ", r.value("gateway", "-"), " dev ",
                             r.value("dev", "")));
  }
  EXPECT_THAT(seen, ::testing::IsSupersetOf(
                        {base::StrCat(kNodeIP, " via - dev veth0"),
                         base::StrCat("10.96.0.0/12 via ", kNodeIP, " dev veth0"),
                         base::StrCat("10.244.0.0/16 via ", kNodeIP, " dev veth0"),
                         std::string("default via 10.77.0.1 dev eth0")}))
      << *routes;
  // MAC prefix + the IP's 4 bytes; txqueuelen.
  auto link = Ip({"-n", pod_, "-j", "link", "show", "eth0"});
  ASSERT_TRUE(link.ok());
  auto lj = base::ParseJson(*link);
  ASSERT_TRUE(lj.ok());
  EXPECT_EQ((*lj)[0].value("address", ""), "0a:1b:0a:4d:00:0a");
  EXPECT_EQ((*lj)[0].value("txqlen", 0), 2000);
  // Node side: "to <pod IP> lookup 500" and the pod's /32 on the host veth in table 500.
  auto rules = Ip({"-n", node_, "rule", "show"});
  ASSERT_TRUE(rules.ok());
  EXPECT_THAT(*rules, HasSubstr(base::StrCat("1000:\tfrom all to ", kPodIP, " lookup 500")));
  auto t500 = Ip({"-n", node_, "route", "show", "table", "500"});
  ASSERT_TRUE(t500.ok());
  EXPECT_THAT(*t500, HasSubstr(base::StrCat(kPodIP, " dev veth", std::string(kContainer).substr(0, 11),
                                            " scope link")));
  // CHECK agrees.
  base::Json check = CoordinatorConf();
  check["prevResult"] = prev;
  CniOutcome c = Run("CHECK", Coordinator(), check);
  EXPECT_EQ(c.exit_code, 0) << c.Describe();

  DelChain(prev);
  EXPECT_EQ(Snapshot(node_), node_before);
  EXPECT_EQ(Snapshot(pod_), pod_before);
  // DEL is idempotent.
  DelChain(prev);
  EXPECT_EQ(Snapshot(node_), node_before);
}

TEST_F(CoordinatorNodeTest, AFailureLateInAddLeavesNothingBehind) {
  base::Json prev = AddMacvlan();
  const std::string node_before = Snapshot(node_);
  const std::string pod_before = Snapshot(pod_);
  // The policy route's gateway is on no link: the kernel refuses it after everything else.
  CniOutcome out = AddCoordinator(
      prev, {{"podMACPrefix", "0a:1b"},
             {"policyRoutes", base::Json(std::vector<base::Json>{
                                  {{"dst", "192.0.2.0/24"}, {"gw", "198.51.100.1"}}})}});
  EXPECT_EQ(out.exit_code, 1) << out.Describe();
  EXPECT_EQ(out.json.value("code", 0), 100);
  EXPECT_THAT(out.json.value("msg", ""), HasSubstr("192.0.2.0/24 via 198.51.100.1"));
  EXPECT_EQ(Snapshot(node_), node_before);
  EXPECT_EQ(Snapshot(pod_), pod_before);
  DelChain(prev);
}

TEST_F(CoordinatorNodeTest, BadInputIsACniErrorNamingTheFieldAndChangesNothing) {
  base::Json prev = AddMacvlan();
  const std::string node_before = Snapshot(node_);
  const std::string pod_before = Snapshot(pod_);
  struct Case {
    base::Json extra;
    int code;
    std::string msg;
  };
  for (const Case& c : std::vector<Case>{
           {{{"mode", "sideways"}}, 7, "mode: unknown tuneMode \"sideways\""},
           {{{"hijackCIDR", base::Json(std::vector<base::Json>{"10.0.0.0/8", "10.0.0.300/33"})}},
            7, "hijackCIDR[1]"},
           {{{"podMACPrefix", "0b:00"}}, 7, "podMACPrefix: \"0b:00\" not a unicast MAC"},
           {{{"podMACPrefix", "zz:00"}}, 7, "podMACPrefix"},
           {{{"podRPFilter", 3}}, 7, "podRPFilter"},
           {{{"vethLinkAddress", "fe80::1"}}, 7, "vethLinkAddress"},
           {{{"txQueueLen", "long"}}, 6, "txQueueLen"},
       }) {
    CniOutcome out = AddCoordinator(prev, c.extra);
    EXPECT_EQ(out.exit_code, 1) << out.Describe();
    EXPECT_EQ(out.json.value("code", 0), c.code) << out.Describe();
    EXPECT_THAT(out.json.value("msg", ""), HasSubstr(c.msg)) << out.Describe();
  }
  // No prevResult: a chained plugin cannot run first.
  CniOutcome out = Run("ADD", Coordinator(), CoordinatorConf());
  EXPECT_EQ(out.json.value("code", 0), 7) << out.Describe();
  EXPECT_THAT(out.json.value("msg", ""), HasSubstr("prevResult"));
  // The agent's SpiderCoordinator is not Synced: its message reaches the runtime.
  agent_->Answer(500, R"({"message":"SpiderCoordinator default is NotReady: no serviceCIDR"})");
  out = AddCoordinator(prev);
  EXPECT_EQ(out.json.value("code", 0), 100) << out.Describe();
  EXPECT_THAT(out.json.value("msg", ""), HasSubstr("NotReady: no serviceCIDR"));
  EXPECT_EQ(Snapshot(node_), node_before);
  EXPECT_EQ(Snapshot(pod_), pod_before);
  // The agent gone: DEL still succeeds (a pod must never hang Terminating on us).
  agent_.reset();
  DelChain(prev);
}

// Overlay: the pod's eth0 is a Calico-style veth (a /32, default route via 169.254.1.1, the
// node end answering ARP by proxy and routing the pod's /32); macvlan adds net1 and the
// coordinator, in auto mode, picks overlay: the node reaches the pod's underlay IP through the
// Calico veth, net1's routes move into table 100 behind "from/to" rules, the default route
// stays on eth0, and DEL gives both namespaces back as they were.
TEST_F(CoordinatorNodeTest, OverlayLaterNicIsReachedThroughTheFirstNicsVeth) {
  const std::string cali = "calitest0";
  ASSERT_TRUE(Ip({"link", "add", cali, "netns", node_, "type", "veth", "peer", "name", "eth0",
                  "netns", pod_}).ok());
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"-n", node_, "link", "set", cali, "up"},
           {"-n", node_, "route", "add", "10.244.1.5/32", "dev", cali, "scope", "link"},
           {"-n", pod_, "link", "set", "eth0", "up"},
           {"-n", pod_, "addr", "add", "10.244.1.5/32", "dev", "eth0"},
           {"-n", pod_, "route", "add", "169.254.1.1", "dev", "eth0", "scope", "link"},
           {"-n", pod_, "route", "add", "default", "via", "169.254.1.1", "dev", "eth0"}}) {
    ASSERT_TRUE(Ip(args).ok()) << ::testing::PrintToString(args);
  }
  ASSERT_TRUE(base::RunProcess({.argv = {"/usr/sbin/ip", "netns", "exec", node_, "sysctl", "-qw",
                                         "net.ipv4.conf." + cali + ".proxy_arp=1"},
                                .inherit_env = true})
                  .ok());
  const std::string node_before = Snapshot(node_);
  const std::string pod_before = Snapshot(pod_);

  base::Json mconf = MacvlanConf();
  mconf["ipam"]["routes"] = base::Json::array();  // the default route stays Calico's
  CniOutcome m = Run("ADD", "/usr/lib/cni/macvlan", mconf, "net1");
  ASSERT_EQ(m.exit_code, 0) << m.Describe();
  base::Json conf = CoordinatorConf();
  conf["prevResult"] = m.json;
  CniOutcome out = Run("ADD", Coordinator(), conf, "net1");
  ASSERT_EQ(out.exit_code, 0) << out.Describe();
  EXPECT_FALSE(net_->PodLinkExists("p", "veth0")) << "overlay mode makes no veth pair";

  // The node reaches the pod's macvlan IP through the Calico veth (macvlan alone cannot).
  auto ping = base::RunProcess({.argv = {"/usr/sbin/ip", "netns", "exec", node_, "/bin/busybox",
                                         "ping", "-c", "1", "-W", "2", kPodIP},
                                .inherit_env = true,
                                .timeout = absl::Seconds(10)});
  ASSERT_TRUE(ping.ok());
  EXPECT_EQ(ping->exit_code, 0) << ping->stdout_data << Snapshot(pod_) << Snapshot(node_);

  auto rules = Ip({"-n", pod_, "rule", "show"});
  ASSERT_TRUE(rules.ok());
  EXPECT_THAT(*rules, HasSubstr(base::StrCat("from ", kPodIP, " lookup 100")));
  EXPECT_THAT(*rules, HasSubstr("from all to 10.77.0.0/24 lookup 100"));
  auto t100 = Ip({"-n", pod_, "route", "show", "table", "100"});
  ASSERT_TRUE(t100.ok());
  EXPECT_THAT(*t100, HasSubstr("10.77.0.0/24 dev net1"));
  EXPECT_THAT(*t100, HasSubstr(base::StrCat(kNodeIP, " dev eth0 scope link")));
  EXPECT_THAT(*t100, HasSubstr(base::StrCat("10.96.0.0/12 via ", kNodeIP, " dev eth0")));
  auto main_routes = Ip({"-n", pod_, "route", "show", "table", "main"});
  ASSERT_TRUE(main_routes.ok());
  EXPECT_THAT(*main_routes, HasSubstr("default via 169.254.1.1 dev eth0"));
  EXPECT_THAT(*main_routes, Not(HasSubstr("net1"))) << "net1's routes moved to table 100";
  auto node_t500 = Ip({"-n", node_, "route", "show", "table", "500"});
  ASSERT_TRUE(node_t500.ok());
  EXPECT_THAT(*node_t500, HasSubstr(base::StrCat(kPodIP, " dev ", cali, " scope link")));

  base::Json del = CoordinatorConf();
  del["prevResult"] = m.json;
  EXPECT_EQ(Run("DEL", Coordinator(), del, "net1").exit_code, 0);
  mconf["prevResult"] = m.json;
  EXPECT_EQ(Run("DEL", "/usr/lib/cni/macvlan", mconf, "net1").exit_code, 0);
  EXPECT_EQ(Snapshot(node_), node_before);
  EXPECT_EQ(Snapshot(pod_), pod_before);
}

// Dual stack: the same underlay path for IPv6 (IPv6 enabled in the pod, the node's /128 and a
// v6 service CIDR through veth0, "to <pod IPv6> lookup 500" on the node), and DEL restores both.
TEST_F(CoordinatorNodeTest, DualStackPodReachesItsNodeOverBothFamilies) {
  ASSERT_TRUE(Ip({"-n", node_, "addr", "add", "fd00:77::2/64", "dev", "eth0", "nodad"}).ok());
  const std::string node_before = Snapshot(node_);
  const std::string pod_before = Snapshot(pod_);
  base::Json mconf = MacvlanConf();
  mconf["ipam"]["addresses"].push_back({{"address", "fd00:77::10/64"}, {"gateway", "fd00:77::1"}});
  CniOutcome m = Run("ADD", "/usr/lib/cni/macvlan", mconf);
  ASSERT_EQ(m.exit_code, 0) << m.Describe();
  agent_->Answer(200, R"({"mode":"auto","overlayPodCIDR":["10.244.0.0/16"],)"
                      R"("serviceCIDR":["10.96.0.0/12","fd00:96::/108"],"tunePodRoutes":true})");
  CniOutcome out = AddCoordinator(m.json);
  ASSERT_EQ(out.exit_code, 0) << out.Describe();

  EXPECT_TRUE(net_->Ping("p", kNodeIP));
  // The pod's IPv6 address must leave DAD before it can be a source (bounded wait).
  for (int i = 0; i < 100; ++i) {
    auto tentative = Ip({"-n", pod_, "-6", "addr", "show", "tentative"});
    if (tentative.ok() && tentative->empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto ping6 = base::RunProcess({.argv = {"/usr/sbin/ip", "netns", "exec", pod_, "/bin/busybox",
                                          "ping", "-6", "-c", "1", "-W", "2", "fd00:77::2"},
                                 .inherit_env = true,
                                 .timeout = absl::Seconds(10)});
  ASSERT_TRUE(ping6.ok());
  EXPECT_EQ(ping6->exit_code, 0) << ping6->stdout_data << ping6->stderr_data << Snapshot(pod_)
                                 << Snapshot(node_);
  auto routes6 = Ip({"-n", pod_, "-6", "route", "show", "table", "main"});
  ASSERT_TRUE(routes6.ok());
  EXPECT_THAT(*routes6, HasSubstr("fd00:77::2 dev veth0"));
  EXPECT_THAT(*routes6, HasSubstr("fd00:96::/108 via fd00:77::2 dev veth0"));
  auto rules6 = Ip({"-n", node_, "-6", "rule", "show"});
  ASSERT_TRUE(rules6.ok());
  EXPECT_THAT(*rules6, HasSubstr("from all to fd00:77::10 lookup 500"));

  DelChain(m.json);
  EXPECT_EQ(Snapshot(node_), node_before);
  EXPECT_EQ(Snapshot(pod_), pod_before);
}

TEST_F(CoordinatorNodeTest, DisableModeOnlyPassesTheResultOn) {
  base::Json prev = AddMacvlan();
  const std::string node_before = Snapshot(node_);
  const std::string pod_before = Snapshot(pod_);
  agent_->Answer(200, ClusterConfig().replace(9, 4, "disabled"));
  CniOutcome out = AddCoordinator(prev);
  ASSERT_EQ(out.exit_code, 0) << out.Describe();
  EXPECT_EQ(out.json, prev);
  EXPECT_EQ(Snapshot(node_), node_before);
  EXPECT_EQ(Snapshot(pod_), pod_before);
  DelChain(prev);
}

}  // namespace
}  // namespace spiderpool::e2e
