// Netconf decoding and validation: every accepted shape and every bad input (code + the field
// named in the message), plus the bond options parser and ADD's output.

#include "agent/ifacer/netconf.h"

#include <arpa/inet.h>
#include <linux/if_link.h>

#include <gtest/gtest.h>

#include "agent/ifacer/plugin.h"
#include "base/json.h"

namespace spiderpool::agent::ifacer {
namespace {

Json Conf(Json extra) {
  Json j = {{"cniVersion", "0.3.1"}, {"name", "macvlan-vlan10"}, {"type", "ifacer"}};
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

IfacerConf MustDecode(const Json& j) {
  IfacerConf c;
  auto e = DecodeIfacerConf(j, &c);
  EXPECT_FALSE(e.has_value()) << (e ? e->msg + " | " + e->details : "");
  return c;
}

// Expects error `code` whose msg (+details) contains `text`.
void ExpectError(const Json& j, int code, const std::string& text) {
  IfacerConf c;
  auto e = DecodeIfacerConf(j, &c);
  ASSERT_TRUE(e.has_value()) << base::DumpJson(j);
  EXPECT_EQ(e->code, code) << e->msg;
  std::string all = e->msg + " | " + e->details;
  EXPECT_NE(all.find(text), std::string::npos) << "want \"" << text << "\" in " << all;
}

TEST(DecodeIfacerConf, SingleInterfaceVlan) {
  IfacerConf c = MustDecode(Conf({{"interfaces", {"eth0"}}, {"vlanID", 100}}));
  EXPECT_EQ(c.interfaces, std::vector<std::string>{"eth0"});
  EXPECT_EQ(c.vlan_id, 100);
  EXPECT_FALSE(c.bond.has_value());
  EXPECT_EQ(ActionFor(c), Action::kVlan);
  EXPECT_EQ(VlanName("eth0", 100), "eth0.100");
}

TEST(DecodeIfacerConf, Actions) {
  EXPECT_EQ(ActionFor(MustDecode(Conf({{"interfaces", {"eth0"}}}))), Action::kNothing);
  EXPECT_EQ(ActionFor(MustDecode(Conf({{"interfaces", {"eth0"}}, {"vlanID", 0}}))),
            Action::kNothing);
  // Upstream: a bond with one interface is ignored; several interfaces without bond: nothing.
  EXPECT_EQ(ActionFor(MustDecode(Conf({{"interfaces", {"eth0"}}, {"bond", {{"mode", 1}}}}))),
            Action::kNothing);
  EXPECT_EQ(ActionFor(MustDecode(Conf({{"interfaces", {"eth0", "eth1"}}, {"vlanID", 5}}))),
            Action::kNothing);
  EXPECT_EQ(ActionFor(MustDecode(Conf({{"interfaces", {"eth0", "eth1"}}, {"bond", Json::object()}}))),
            Action::kBond);
  EXPECT_EQ(ActionFor(MustDecode(
                Conf({{"interfaces", {"eth0", "eth1"}}, {"vlanID", 4094}, {"bond", Json::object()}}))),
            Action::kBondVlan);
}

TEST(DecodeIfacerConf, BondDefaultsAndOptions) {
  IfacerConf c = MustDecode(Conf({{"interfaces", {"eth0", "eth1"}},
                                  {"bond", {{"mode", 1}, {"options", "primary=eth1;miimon=100"}}}}));
  ASSERT_TRUE(c.bond.has_value());
  EXPECT_EQ(c.bond->name, "sp_bond0");
  EXPECT_EQ(c.bond->mode, 1);
  ASSERT_EQ(c.bond_options.size(), 2u);
  EXPECT_EQ(c.bond_options[0].key, "primary");
  EXPECT_EQ(c.bond_options[0].attr, IFLA_BOND_PRIMARY);
  EXPECT_EQ(c.bond_options[0].link_name, "eth1");
  EXPECT_EQ(c.bond_options[1].attr, IFLA_BOND_MIIMON);
  EXPECT_EQ(c.bond_options[1].number, 100u);
  c = MustDecode(Conf({{"interfaces", {"eth0", "eth1"}}, {"bond", {{"name", "bond7"}}}}));
  EXPECT_EQ(c.bond->name, "bond7");
  EXPECT_EQ(c.bond->mode, 0);
}

TEST(DecodeIfacerConf, PrevResultKept) {
  IfacerConf c = MustDecode(
      Conf({{"interfaces", {"eth0"}}, {"prevResult", {{"cniVersion", "0.3.1"}, {"ips", Json::array()}}}}));
  ASSERT_TRUE(c.prev_result.has_value());
}

// ---- every bad input -------------------------------------------------------------------------

TEST(DecodeIfacerConf, InterfacesMissingOrEmpty) {
  ExpectError(Conf(Json::object()), cni::kErrInvalidNetworkConfig,
              "invalid config: interfaces have at least one interface");
  ExpectError(Conf({{"interfaces", Json::array()}}), cni::kErrInvalidNetworkConfig, "interfaces");
}

TEST(DecodeIfacerConf, InterfacesBadNames) {
  ExpectError(Conf({{"interfaces", {""}}}), cni::kErrInvalidNetworkConfig, "interfaces[0]: empty");
  ExpectError(Conf({{"interfaces", {"eth0", "a-very-long-name0"}}}), cni::kErrInvalidNetworkConfig,
              "interfaces[1]: \"a-very-long-name0\" is longer than 15 bytes");
  ExpectError(Conf({{"interfaces", {"eth/0"}}}), cni::kErrInvalidNetworkConfig, "interfaces[0]");
  ExpectError(Conf({{"interfaces", {"eth 0"}}}), cni::kErrInvalidNetworkConfig, "interfaces[0]");
  ExpectError(Conf({{"interfaces", {".."}}}), cni::kErrInvalidNetworkConfig, "interfaces[0]");
  ExpectError(Conf({{"interfaces", {"eth0", "eth0"}}}), cni::kErrInvalidNetworkConfig,
              "interfaces[1]: \"eth0\" is listed twice");
}

TEST(DecodeIfacerConf, WrongTypes) {
  ExpectError(Conf({{"interfaces", "eth0"}}), cni::kErrDecoding, "interfaces");
  ExpectError(Conf({{"interfaces", {1}}}), cni::kErrDecoding, "interfaces[0]");
  ExpectError(Conf({{"interfaces", {"eth0"}}, {"vlanID", "10"}}), cni::kErrDecoding, "vlanID");
  ExpectError(Conf({{"interfaces", {"eth0"}}, {"vlanID", 1.5}}), cni::kErrDecoding, "vlanID");
  ExpectError(Conf({{"interfaces", {"eth0", "eth1"}}, {"bond", "sp_bond0"}}), cni::kErrDecoding,
              "bond");
  ExpectError(Conf({{"interfaces", {"eth0", "eth1"}}, {"bond", {{"mode", "1"}}}}),
              cni::kErrDecoding, "bond.mode");
  ExpectError(Conf({{"interfaces", {"eth0", "eth1"}}, {"bond", {{"options", 5}}}}),
              cni::kErrDecoding, "bond.options");
  ExpectError(Conf({{"interfaces", {"eth0", "eth1"}}, {"bond", {{"name", false}}}}),
              cni::kErrDecoding, "bond.name");
}

TEST(DecodeIfacerConf, VlanIDOutOfRange) {
  ExpectError(Conf({{"interfaces", {"eth0"}}, {"vlanID", -1}}), cni::kErrInvalidNetworkConfig,
              "invalid vlanID -1: vlanID must be in range [0,4094]");
  ExpectError(Conf({{"interfaces", {"eth0"}}, {"vlanID", 4095}}), cni::kErrInvalidNetworkConfig,
              "invalid vlanID 4095");
  ExpectError(Conf({{"interfaces", {"eth0", "eth1"}}, {"vlanID", 100000}, {"bond", Json::object()}}),
              cni::kErrInvalidNetworkConfig, "vlanID");
}

TEST(DecodeIfacerConf, VlanNameTooLong) {
  ExpectError(Conf({{"interfaces", {"enp175s0f1np1"}}, {"vlanID", 100}}),
              cni::kErrInvalidNetworkConfig, "\"enp175s0f1np1.100\" (interfaces[0]");
  ExpectError(Conf({{"interfaces", {"a", "b"}}, {"vlanID", 4000}, {"bond", {{"name", "bond-uplink-0"}}}}),
              cni::kErrInvalidNetworkConfig, "(bond.name");
}

TEST(DecodeIfacerConf, BondName) {
  ExpectError(Conf({{"interfaces", {"a", "b"}}, {"bond", {{"name", "bond:0"}}}}),
              cni::kErrInvalidNetworkConfig, "bond.name");
  ExpectError(Conf({{"interfaces", {"a", "b"}}, {"bond", {{"name", "0123456789abcdef"}}}}),
              cni::kErrInvalidNetworkConfig, "bond.name");
}

TEST(DecodeIfacerConf, BondMode) {
  ExpectError(Conf({{"interfaces", {"a", "b"}}, {"bond", {{"mode", 7}}}}),
              cni::kErrInvalidNetworkConfig,
              "bond.mode: unknown bond mode: 7, available mode: [0,6]");
  ExpectError(Conf({{"interfaces", {"a", "b"}}, {"bond", {{"mode", -1}}}}),
              cni::kErrInvalidNetworkConfig, "bond.mode");
  // Validated whenever present, even where upstream ignores the bond (one interface).
  ExpectError(Conf({{"interfaces", {"a"}}, {"bond", {{"mode", 9}}}}),
              cni::kErrInvalidNetworkConfig, "bond.mode");
}

TEST(DecodeIfacerConf, BondOptionsMalformed) {
  struct Case {
    const char* options;
    const char* want;
  } cases[] = {
      {"miimon", "\"miimon\" is not key=value"},
      {"miimon=1=2", "is not key=value"},
      {"=5", "unknown option \"\""},
      {"mode=4", "unknown option \"mode\""},
      {"miimon=", "option miimon=: empty value"},
      {"miimon=abc", "option miimon=abc: expected a non-negative integer"},
      {"miimon=-1", "option miimon=-1: expected a non-negative integer"},
      {"miimon=4294967296", "out of range [0,4294967295]"},
      {"lacp_rate=256", "option lacp_rate=256: out of range [0,255]"},
      {"ad_user_port_key=65536", "out of range [0,65535]"},
      {"miimon=100;miimon=200", "option miimon=200: given more than once"},
      {"ad_actor_system=00:11:22:33:44", "expected a MAC address"},
      {"ad_actor_system=00:11:22:33:44:zz", "expected a MAC address"},
      {"arp_ip_target=[10.0.0.1,fd00::1]", "\"fd00::1\" is not an IPv4 address"},
      {"arp_ip_target=[10.0.0.1", "unterminated list"},
      {"arp_ip_target=[]", "is not an IPv4 address"},
      {"arp_ip_target=1.1.1.1,1.1.1.2,1.1.1.3,1.1.1.4,1.1.1.5,1.1.1.6,1.1.1.7,1.1.1.8,1.1.1.9,"
       "1.1.1.10,1.1.1.11,1.1.1.12,1.1.1.13,1.1.1.14,1.1.1.15,1.1.1.16,1.1.1.17",
       "at most 16 targets"},
      {"primary=eth9", "option primary=eth9: not one of interfaces"},
      {"active_slave=a/b", "option active_slave=a/b"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.options);
    ExpectError(Conf({{"interfaces", {"a", "b"}}, {"bond", {{"mode", 1}, {"options", c.options}}}}),
                cni::kErrInvalidNetworkConfig, "invalid config: bond.options: ");
    ExpectError(Conf({{"interfaces", {"a", "b"}}, {"bond", {{"mode", 1}, {"options", c.options}}}}),
                cni::kErrInvalidNetworkConfig, c.want);
  }
}

TEST(ParseBondOptions, AcceptedForms) {
  auto o = ParseBondOptions("  miimon = 100 ;; up_delay=200;");
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_EQ(o->size(), 2u);
  EXPECT_EQ((*o)[1].attr, IFLA_BOND_UPDELAY);
  EXPECT_EQ((*o)[1].number, 200u);
  o = ParseBondOptions("arp_ip_target=[\"10.0.0.1\", \"10.0.0.2\"];arp_interval=100");
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_EQ((*o)[0].ipv4.size(), 2u);
  EXPECT_EQ((*o)[0].ipv4[0], htonl(0x0a000001));
  o = ParseBondOptions("arp_ip_target=10.0.0.1,10.0.0.2");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ((*o)[0].ipv4.size(), 2u);
  o = ParseBondOptions("ad_actor_system=02:00:5e:10:00:ff;use_carrier=0");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ((*o)[0].mac[5], 0xff);
  EXPECT_EQ((*o)[1].attr, IFLA_BOND_USE_CARRIER);
  EXPECT_EQ((*o)[1].kind, BondOption::Kind::kU8);
  o = ParseBondOptions("");
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->empty());
}

TEST(AddResult, EmptyOrPassThrough) {
  EXPECT_EQ(AddResult(std::nullopt, "1.0.0"), R"({"cniVersion":"1.0.0","dns":{}})");
  EXPECT_EQ(AddResult(std::nullopt, "0.3.1"), R"({"cniVersion":"0.3.1","dns":{}})");
  Json prev = {{"cniVersion", "0.4.0"}, {"ips", {{{"version", "4"}, {"address", "10.0.0.2/24"}}}}};
  auto out = base::ParseJson(AddResult(prev, "0.4.0"));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, prev);
}

}  // namespace
}  // namespace spiderpool::agent::ifacer
