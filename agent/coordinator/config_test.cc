#include "agent/coordinator/config.h"

#include <random>

#include "base/json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spiderpool::agent::coordinator {
namespace {

using ::testing::HasSubstr;

NetConf Decode(const std::string& text) {
  NetConf conf;
  auto j = base::ParseJson(text);
  EXPECT_TRUE(j.ok());
  auto e = DecodeNetConf(*j, &conf);
  EXPECT_FALSE(e.has_value()) << e->msg;
  return conf;
}

TEST(ResolveTest, NetconfKeysWinAndUnsetOnesComeFromTheCluster) {
  ipamapi::CoordinatorConfig cluster;
  cluster.mode = "underlay";
  cluster.service_cidr = {"10.96.0.0/12"};
  cluster.overlay_pod_cidr = {"10.244.0.0/16"};
  cluster.hijack_cidr = {"169.254.0.0/16"};
  cluster.pod_mac_prefix = "0a:1b";
  cluster.host_rule_table = 600;
  cluster.tx_queue_len = 3000;
  Config c;
  ASSERT_FALSE(Resolve(Decode(R"({"mode":"overlay","serviceCIDR":["10.100.0.0/16"],
                                 "hijackCIDR":["1.2.3.4"],"podRPFilter":-1})"),
                       cluster, &c)
                   .has_value());
  EXPECT_EQ(c.mode, Mode::kOverlay);
  std::vector<std::string> hijack;
  for (const auto& p : c.hijack) hijack.push_back(p.ToString());
  EXPECT_THAT(hijack, ::testing::ElementsAre("10.244.0.0/16", "10.100.0.0/16", "1.2.3.4/32"));
  ASSERT_TRUE(c.mac_prefix.has_value());
  EXPECT_EQ((*c.mac_prefix)[0], 0x0a);
  EXPECT_EQ(c.host_rule_table, 600);
  EXPECT_EQ(c.tx_queue_len, 3000);
  EXPECT_EQ(c.pod_rp_filter, -1);
  EXPECT_EQ(c.veth_mtu, 1500);
  EXPECT_EQ(c.pod_default_cni_nic, "eth0");
}

TEST(ResolveTest, WithoutTheAgentTheDefaultsApply) {
  Config c;
  ASSERT_FALSE(Resolve(Decode("{}"), std::nullopt, &c).has_value());
  EXPECT_EQ(c.mode, Mode::kAuto);
  EXPECT_EQ(c.host_rule_table, 500);
  EXPECT_TRUE(c.tune_pod_routes);
  EXPECT_TRUE(c.hijack.empty());
}

TEST(ResolveTest, TheCrdSpellingDisabledIsAccepted) {
  Config c;
  ASSERT_FALSE(Resolve(Decode(R"({"mode":"disabled"})"), std::nullopt, &c).has_value());
  EXPECT_EQ(c.mode, Mode::kDisable);
}

TEST(ResolveTest, BadValuesNameTheirKey) {
  struct Case {
    std::string conf, want;
  };
  for (const Case& k : std::vector<Case>{
           {R"({"mode":"x"})", "mode: unknown tuneMode \"x\""},
           {R"({"serviceCIDR":["10.0.0.0/8","nope"]})", "serviceCIDR[1]"},
           {R"({"overlayPodCIDR":["10.0.0.0/40"]})", "overlayPodCIDR[0]"},
           {R"({"hijackCIDR":["x"]})", "hijackCIDR[0]"},
           {R"({"podMACPrefix":"01:00"})", "not a unicast MAC"},
           {R"({"podMACPrefix":"0a1b"})", "podMACPrefix"},
           {R"({"policyRoutes":[{"dst":"10.0.0.0/8","gw":"fd00::1"}]})", "same IP family"},
           {R"({"hostRuleTable":254})", "hostRuleTable"},
           {R"({"podRPFilter":3})", "podRPFilter"},
           {R"({"txQueueLen":-1})", "txQueueLen"},
           {R"({"vethLinkAddress":"::1"})", "vethLinkAddress"},
           {R"({"vethMTU":10})", "vethMTU"},
           {R"({"podDefaultCniNic":"a/b"})", "podDefaultCniNic"},
           {R"({"logOptions":{"logLevel":"loud"}})", "logOptions.logLevel"},
       }) {
    Config c;
    auto e = Resolve(Decode(k.conf), std::nullopt, &c);
    ASSERT_TRUE(e.has_value()) << k.conf;
    EXPECT_EQ(e->code, cni::kErrInvalidNetworkConfig) << k.conf;
    EXPECT_THAT(e->msg, HasSubstr(k.want)) << k.conf;
  }
}

TEST(ResolveTest, WrongTypesAreDecodingErrorsWithTheirPath) {
  NetConf conf;
  auto j = base::ParseJson(R"({"tunePodRoutes":"yes","policyRoutes":[{"dst":1}]})");
  ASSERT_TRUE(j.ok());
  auto e = DecodeNetConf(*j, &conf);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, cni::kErrDecoding);
  EXPECT_THAT(e->msg, HasSubstr("tunePodRoutes"));
  EXPECT_THAT(e->msg, HasSubstr("policyRoutes[0].dst"));
}

TEST(HelpersTest, MacTableAndVethNames) {
  std::string why;
  auto prefix = ParseMacPrefix("0a:1b", &why);
  ASSERT_TRUE(prefix.has_value());
  auto mac = PodMac(*prefix, *base::IPAddress::Parse("10.6.1.2"));
  EXPECT_EQ(mac, (std::array<uint8_t, 6>{0x0a, 0x1b, 10, 6, 1, 2}));
  EXPECT_EQ(HostVethName("0123456789abcdef"), "veth0123456789a");
  EXPECT_EQ(RuleTableFor("net1", "net"), 100);
  EXPECT_EQ(RuleTableFor("net3", "net"), 102);
  EXPECT_EQ(RuleTableFor("eth1", "net"), std::nullopt);
  EXPECT_EQ(RuleTableFor("net", "net"), std::nullopt);
  EXPECT_EQ(RuleTableFor("net0", "net"), std::nullopt);
  EXPECT_EQ(RuleTableFor("net1x", "net"), std::nullopt);
}

// Deterministic mutations of a full netconf: decoding and resolving never crash, and every
// refusal carries a code and a message.
TEST(ConfigFuzzTest, MutatedNetconfsNeverCrash) {
  const std::string seed = R"({"cniVersion":"1.0.0","name":"n","type":"coordinator","mode":"auto",
    "tunePodRoutes":true,"podDefaultRouteNic":"net1","podMACPrefix":"0a:1b","multusNicPrefix":"net",
    "overlayPodCIDR":["10.244.0.0/16"],"serviceCIDR":["10.96.0.0/12"],"hijackCIDR":["169.254.0.0/16"],
    "policyRoutes":[{"dst":"10.0.0.0/8","gw":"10.1.0.1"}],"hostRuleTable":500,"podRPFilter":0,
    "txQueueLen":0,"vethLinkAddress":"169.254.1.1","vethMTU":1500,"logOptions":{"logLevel":"info"}})";
  std::mt19937 rng(14);
  const std::string alphabet = "{}[]\":,0123456789abcdef-./ xnul";
  for (int i = 0; i < 20000; ++i) {
    std::string text = seed;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: text.erase(at, 1 + rng() % 8); break;
        default: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      }
      if (text.empty()) text = "{}";
    }
    auto j = base::ParseJson(text);
    if (!j.ok()) continue;
    NetConf conf;
    if (auto e = DecodeNetConf(*j, &conf)) {
      EXPECT_FALSE(e->msg.empty());
      continue;
    }
    Config c;
    if (auto e = Resolve(conf, std::nullopt, &c)) {
      EXPECT_EQ(e->code, cni::kErrInvalidNetworkConfig);
      EXPECT_FALSE(e->msg.empty());
    }
  }
}

}  // namespace
}  // namespace spiderpool::agent::coordinator
