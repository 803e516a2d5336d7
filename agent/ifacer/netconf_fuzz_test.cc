// Fuzz-style test of the ifacer's decoders of untrusted input: the stdin network config
// (cni::ParseStdin + DecodeIfacerConf) and bond.options (ParseBondOptions), with deterministic
// mutations (base/testing/json_mutator for the JSON; byte edits for the options string).
// Nothing may crash (tools/test.sh runs it under --config=sanitizers), and what decodes keeps
// the invariants the link code relies on.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "agent/cni/cni.h"
#include "agent/ifacer/netconf.h"
#include "agent/ifacer/plugin.h"
#include "base/json.h"
#include "base/testing/json_mutator.h"

namespace spiderpool::agent::ifacer {
namespace {

constexpr uint64_t kSeed = 0x1face7ULL;
constexpr int kIterations = 20000;

std::vector<Json> Seeds() {
  std::vector<Json> seeds;
  for (const char* text : {
           R"({"cniVersion":"0.3.1","name":"n","type":"ifacer","interfaces":["eth0"],"vlanID":100})",
           R"({"cniVersion":"1.0.0","name":"n","type":"ifacer","interfaces":["eth0","eth1"],
               "vlanID":7,"bond":{"name":"b0","mode":1,"options":"primary=eth1;miimon=100"}})",
           R"({"cniVersion":"0.4.0","name":"n","type":"ifacer","interfaces":["a","b"],
               "bond":{"mode":4,"options":"lacp_rate=1;xmit_hash_policy=2;ad_actor_system=02:00:00:00:00:01;arp_ip_target=[10.0.0.1,10.0.0.2]"},
               "prevResult":{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.0.0.2/24"}]}})",
       }) {
    auto j = base::ParseJson(text);
    EXPECT_TRUE(j.ok()) << text;
    if (j.ok()) seeds.push_back(*j);
  }
  return seeds;
}

void CheckInvariants(const IfacerConf& c) {
  ASSERT_FALSE(c.interfaces.empty());
  for (const auto& i : c.interfaces) ASSERT_FALSE(InvalidLinkName(i).has_value()) << i;
  ASSERT_GE(c.vlan_id, 0);
  ASSERT_LE(c.vlan_id, kMaxVlanID);
  if (c.bond.has_value()) {
    ASSERT_FALSE(InvalidLinkName(c.bond->name).has_value());
    ASSERT_GE(c.bond->mode, 0);
    ASSERT_LE(c.bond->mode, kMaxBondMode);
  }
  Action a = ActionFor(c);
  if (a == Action::kVlan) {
    ASSERT_LE(VlanName(c.interfaces[0], c.vlan_id).size(), 15u);
  }
  if (a == Action::kBondVlan) {
    ASSERT_LE(VlanName(c.bond->name, c.vlan_id).size(), 15u);
  }
  if (c.prev_result.has_value()) {
    (void)cni::ValidatePrevResult(*c.prev_result, c.cni_version.empty() ? "1.0.0" : c.cni_version);
    auto out = base::ParseJson(AddResult(c.prev_result, "1.0.0"));
    ASSERT_TRUE(out.ok());
  }
}

TEST(IfacerFuzz, NetconfDecoderNeverCrashes) {
  base::testing::JsonMutator m({.seeds = Seeds(),
                                .strings = {"eth0", "sp_bond0", "a-very-long-interface", "",
                                            "miimon=1;miimon=2", "primary=zz", "4095", ".."},
                                .keys = {"interfaces", "vlanID", "bond", "mode", "options",
                                         "name", "prevResult", "cniVersion"},
                                .seed = kSeed});
  int decoded = 0;
  for (int i = 0; i < kIterations; ++i) {
    std::string text = m.Next();
    Json json;
    std::string version, name;
    if (cni::ParseStdin(text, &json, &version, &name)) continue;
    IfacerConf c;
    auto e = DecodeIfacerConf(json, &c);
    if (e) {
      ASSERT_TRUE(e->code == cni::kErrDecoding || e->code == cni::kErrInvalidNetworkConfig)
          << e->code << " " << e->msg;
      ASSERT_FALSE(e->msg.empty());
      continue;
    }
    ++decoded;
    CheckInvariants(c);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(decoded, kIterations / 50) << "mutations hardly ever decode: the seeds are off";
}

TEST(IfacerFuzz, BondOptionsNeverCrash) {
  std::mt19937_64 rng(kSeed);
  auto pick = [&rng](size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); };
  const std::vector<std::string> seeds = {
      "miimon=100;updelay=200", "primary=eth0;active_slave=eth1;up_delay=5",
      "arp_ip_target=[10.0.0.1,\"10.0.0.2\"];arp_interval=100",
      "ad_actor_system=02:00:00:00:00:01;ad_actor_sys_prio=65535;lacp_rate=1",
      " ; use_carrier = 0 ;; "};
  static const char kBytes[] = "=;[],\":0123456789abcdefx.- \t\n\\";
  int parsed = 0;
  for (int i = 0; i < kIterations; ++i) {
    std::string t = seeds[pick(seeds.size())];
    for (int k = 0, n = 1 + static_cast<int>(pick(4)); k < n; ++k) {
      switch (pick(4)) {
        case 0:
          if (!t.empty()) t[pick(t.size())] = kBytes[pick(sizeof(kBytes) - 1)];
          break;
        case 1:
          t.insert(pick(t.size() + 1), 1, kBytes[pick(sizeof(kBytes) - 1)]);
          break;
        case 2:
          if (!t.empty()) t.erase(pick(t.size()), 1 + pick(3));
          break;
        default:
          t += ";" + seeds[pick(seeds.size())].substr(0, pick(20));
      }
    }
    auto o = ParseBondOptions(t);
    if (!o.ok()) {
      ASSERT_FALSE(o.status().message().empty());
      continue;
    }
    ++parsed;
    for (const BondOption& b : *o) {
      ASSERT_FALSE(b.key.empty());
      ASSERT_GT(b.attr, 0);
      if (b.kind == BondOption::Kind::kU8) {
        ASSERT_LE(b.number, 0xffu);
      }
      if (b.kind == BondOption::Kind::kU16) {
        ASSERT_LE(b.number, 0xffffu);
      }
      if (b.kind == BondOption::Kind::kIPv4List) {
        ASSERT_FALSE(b.ipv4.empty());
        ASSERT_LE(b.ipv4.size(), kMaxArpIPTargets);
      }
      if (b.kind == BondOption::Kind::kLinkName) {
        ASSERT_FALSE(InvalidLinkName(b.link_name));
      }
    }
  }
  EXPECT_GT(parsed, 0);
}

}  // namespace
}  // namespace spiderpool::agent::ifacer
