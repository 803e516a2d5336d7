// Apply() against a fake kernel: the checks before any change, idempotent reuse, the order of
// the changes, and the rollback when a step fails (what this machine's kernel cannot show: it
// has no 8021q and no bonding).

#include "agent/ifacer/links.h"

#include <linux/if_link.h>

#include <algorithm>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "base/strings.h"

namespace spiderpool::agent::ifacer {
namespace {

// An in-memory link table; a step named in `fail` is refused.
class FakeOps : public LinkOps {
 public:
  absl::StatusOr<std::vector<Link>> List() override {
    if (fail.count("list")) return absl::UnavailableError("dump failed");
    return links;
  }
  absl::StatusOr<int> CreateBond(const std::string& name, int mode,
                                 const std::vector<BondOption>& options) override {
    calls.push_back(base::StrCat("create bond ", name, " mode ", mode));
    bond_options = options;
    if (fail.count("bond")) {
      return absl::FailedPreconditionError("Operation not supported (kernel: Unknown device type)");
    }
    return Add({.name = name, .kind = "bond"});
  }
  absl::StatusOr<int> CreateVlan(const std::string& name, int parent, int vlan_id) override {
    calls.push_back(base::StrCat("create vlan ", name, " parent ", parent, " id ", vlan_id));
    if (fail.count("vlan")) {
      return absl::FailedPreconditionError("Operation not supported (kernel: Unknown device type)");
    }
    return Add({.name = name, .kind = "vlan", .vlan_id = vlan_id, .parent = parent});
  }
  absl::Status Enslave(int bond, int slave) override {
    calls.push_back(base::StrCat("enslave ", slave, " to ", bond));
    if (fail.count("enslave")) return absl::FailedPreconditionError("Device or resource busy");
    Get(slave)->master = bond;
    return absl::OkStatus();
  }
  absl::Status SetUp(int ifindex, bool up) override {
    calls.push_back(base::StrCat("set ", ifindex, up ? " up" : " down"));
    if (up && fail.count(base::StrCat("up ", ifindex))) {
      return absl::FailedPreconditionError("Network is down");
    }
    Get(ifindex)->up = up;
    return absl::OkStatus();
  }
  absl::Status Delete(int ifindex) override {
    calls.push_back(base::StrCat("delete ", ifindex));
    for (Link& l : links) {
      if (l.master == ifindex) l.master = 0;  // a bond's slaves are released with it
    }
    links.erase(std::remove_if(links.begin(), links.end(),
                               [&](const Link& l) { return l.ifindex == ifindex; }),
                links.end());
    return absl::OkStatus();
  }

  int Add(Link l) {
    l.ifindex = next_index++;
    links.push_back(l);
    return l.ifindex;
  }
  Link* Get(int ifindex) {
    for (Link& l : links) {
      if (l.ifindex == ifindex) return &l;
    }
    ADD_FAILURE() << "no ifindex " << ifindex;
    static Link dummy;
    return &dummy;
  }
  Link* Named(const std::string& name) {
    for (Link& l : links) {
      if (l.name == name) return &l;
    }
    return nullptr;
  }

  std::vector<Link> links;
  std::set<std::string> fail;
  std::vector<std::string> calls;
  std::vector<BondOption> bond_options;
  int next_index = 10;
};

class ApplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ops_.links = {{.name = "lo", .ifindex = 1, .up = true},
                  {.name = "eth0", .ifindex = 2, .kind = "", .up = true},
                  {.name = "eth1", .ifindex = 3, .kind = "", .up = true},
                  {.name = "eth2", .ifindex = 4, .kind = "", .up = false}};
  }
  IfacerConf Vlan(const std::string& master, int id) {
    IfacerConf c;
    c.interfaces = {master};
    c.vlan_id = id;
    return c;
  }
  IfacerConf Bond(std::vector<std::string> slaves, int vlan = 0) {
    IfacerConf c;
    c.interfaces = std::move(slaves);
    c.vlan_id = vlan;
    c.bond = BondConf{.name = "sp_bond0", .mode = 1, .options = ""};
    return c;
  }
  static void ExpectError(const std::optional<CniError>& e, int code,
                          std::vector<std::string> texts) {
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->code, code) << e->msg;
    for (const auto& t : texts) {
      EXPECT_NE((e->msg + " | " + e->details).find(t), std::string::npos)
          << "want \"" << t << "\" in " << e->msg << " | " << e->details;
    }
  }
  std::vector<Link> Snapshot() { return ops_.links; }
  void ExpectUnchanged(const std::vector<Link>& before) {
    ASSERT_EQ(ops_.links.size(), before.size());
    for (size_t i = 0; i < before.size(); ++i) {
      EXPECT_EQ(ops_.links[i].name, before[i].name);
      EXPECT_EQ(ops_.links[i].up, before[i].up) << before[i].name;
      EXPECT_EQ(ops_.links[i].master, before[i].master) << before[i].name;
    }
  }
  FakeOps ops_;
};

TEST_F(ApplyTest, NothingToDoTouchesNothing) {
  IfacerConf c = Vlan("missing0", 0);
  EXPECT_FALSE(Apply(c, ops_).has_value());
  IfacerConf several;
  several.interfaces = {"eth0", "eth1"};
  several.vlan_id = 10;
  EXPECT_FALSE(Apply(several, ops_).has_value());
  EXPECT_TRUE(ops_.calls.empty());
}

TEST_F(ApplyTest, CreatesVlanAndBringsUpTheMaster) {
  EXPECT_FALSE(Apply(Vlan("eth2", 100), ops_).has_value());
  EXPECT_EQ(ops_.calls, (std::vector<std::string>{"create vlan eth2.100 parent 4 id 100", "set 4 up",
                                                  "set 10 up"}));
  ASSERT_NE(ops_.Named("eth2.100"), nullptr);
  EXPECT_TRUE(ops_.Named("eth2.100")->up);
}

TEST_F(ApplyTest, ReusesACorrectVlan) {
  ops_.Add({.name = "eth0.100", .kind = "vlan", .up = false, .vlan_id = 100, .parent = 2});
  EXPECT_FALSE(Apply(Vlan("eth0", 100), ops_).has_value());
  EXPECT_EQ(ops_.calls, std::vector<std::string>{"set 10 up"});
  ops_.calls.clear();
  EXPECT_FALSE(Apply(Vlan("eth0", 100), ops_).has_value());  // all up: no change at all
  EXPECT_TRUE(ops_.calls.empty());
}

TEST_F(ApplyTest, MasterNotFound) {
  auto before = Snapshot();
  ExpectError(Apply(Vlan("eth9", 10), ops_), kErrLinkNotFound,
              {"interfaces[0] eth9", "Link not found"});
  EXPECT_TRUE(ops_.calls.empty());
  ExpectUnchanged(before);
}

TEST_F(ApplyTest, SameVlanIDUnderAnotherName) {
  ops_.Add({.name = "vlan100", .kind = "vlan", .up = true, .vlan_id = 100, .parent = 3});
  ExpectError(Apply(Vlan("eth0", 100), ops_), kErrLinkConflict,
              {"cannot have multiple different vlan interfaces with the same vlanId 100",
               "vlan100 (on eth1) exists", "eth0.100 wanted"});
  EXPECT_TRUE(ops_.calls.empty());
}

TEST_F(ApplyTest, TargetNameTakenByAnotherLink) {
  ops_.Add({.name = "eth0.100", .kind = "macvlan", .up = true, .parent = 2});
  ExpectError(Apply(Vlan("eth0", 100), ops_), kErrLinkConflict,
              {"eth0.100 already exists and is not vlan 100 of eth0", "kind macvlan"});
  ops_.links.pop_back();
  ops_.Add({.name = "eth0.100", .kind = "vlan", .up = true, .vlan_id = 100, .parent = 3});
  ExpectError(Apply(Vlan("eth0", 100), ops_), kErrLinkConflict,
              {"not vlan 100 of eth0", "vlanID 100, on eth1"});
  EXPECT_TRUE(ops_.calls.empty());
}

TEST_F(ApplyTest, VlanRefusedTouchesNothing) {
  ops_.fail = {"vlan"};
  auto before = Snapshot();
  ExpectError(Apply(Vlan("eth2", 10), ops_), kErrInternal,
              {"failed to create vlan interface eth2.10 on eth2", "Unknown device type"});
  EXPECT_EQ(ops_.calls, std::vector<std::string>{"create vlan eth2.10 parent 4 id 10"});
  ExpectUnchanged(before);  // eth2 still down
}

TEST_F(ApplyTest, CreatesBondWithOptionsAndEnslaves) {
  IfacerConf c = Bond({"eth1", "eth2"});
  c.bond_options = {{.key = "primary", .attr = IFLA_BOND_PRIMARY,
                     .kind = BondOption::Kind::kLinkName, .link_name = "eth2"}};
  EXPECT_FALSE(Apply(c, ops_).has_value());
  EXPECT_EQ(ops_.calls,
            (std::vector<std::string>{"create bond sp_bond0 mode 1", "set 3 down", "enslave 3 to 10",
                                      "set 3 up", "enslave 4 to 10", "set 4 up", "set 10 up"}));
  ASSERT_EQ(ops_.bond_options.size(), 1u);
  EXPECT_EQ(ops_.bond_options[0].number, 4u);  // resolved to eth2's ifindex
  EXPECT_EQ(ops_.Named("eth1")->master, 10);
  EXPECT_EQ(ops_.Named("eth2")->master, 10);
}

TEST_F(ApplyTest, BondThenVlan) {
  EXPECT_FALSE(Apply(Bond({"eth0", "eth1"}, 200), ops_).has_value());
  ASSERT_NE(ops_.Named("sp_bond0.200"), nullptr);
  EXPECT_EQ(ops_.Named("sp_bond0.200")->parent, ops_.Named("sp_bond0")->ifindex);
  // Second ADD: everything reused, nothing changed.
  ops_.calls.clear();
  EXPECT_FALSE(Apply(Bond({"eth0", "eth1"}, 200), ops_).has_value());
  EXPECT_TRUE(ops_.calls.empty()) << ops_.calls[0];
}

TEST_F(ApplyTest, ExistingBondReusedAndBroughtUp) {
  int bond = ops_.Add({.name = "sp_bond0", .kind = "bond", .up = false});
  EXPECT_FALSE(Apply(Bond({"eth0", "eth1"}), ops_).has_value());
  EXPECT_EQ(ops_.calls, std::vector<std::string>{base::StrCat("set ", bond, " up")});
}

TEST_F(ApplyTest, NonBondWithTheBondName) {
  ops_.Add({.name = "sp_bond0", .kind = "bridge", .up = true});
  ExpectError(Apply(Bond({"eth0", "eth1"}), ops_), kErrLinkConflict,
              {"createBondDevice failure: a non-bond type interface named sp_bond0 already "
               "exists on the host",
               "kind bridge"});
  EXPECT_TRUE(ops_.calls.empty());
}

TEST_F(ApplyTest, SlaveMissingOrEnslavedElsewhere) {
  ExpectError(Apply(Bond({"eth0", "eth7"}), ops_), kErrLinkNotFound, {"interfaces[1] eth7"});
  int other = ops_.Add({.name = "bond9", .kind = "bond", .up = true});
  ops_.Named("eth1")->master = other;
  ExpectError(Apply(Bond({"eth0", "eth1"}), ops_), kErrLinkConflict,
              {"interfaces[1] eth1 is already enslaved to bond9"});
  EXPECT_TRUE(ops_.calls.empty());
}

TEST_F(ApplyTest, BondRefused) {
  ops_.fail = {"bond"};
  auto before = Snapshot();
  ExpectError(Apply(Bond({"eth0", "eth1"}, 10), ops_), kErrInternal,
              {"failed to create bond interface sp_bond0 (mode 1)", "Unknown device type"});
  ExpectUnchanged(before);
}

TEST_F(ApplyTest, VlanRefusedAfterBondRemovesTheBond) {
  ops_.fail = {"vlan"};
  auto before = Snapshot();
  auto e = Apply(Bond({"eth1", "eth2"}, 10), ops_);
  ExpectError(e, kErrInternal, {"failed to create vlan interface sp_bond0.10 on sp_bond0"});
  EXPECT_EQ(e->details, "");  // rollback complete
  EXPECT_EQ(ops_.Named("sp_bond0"), nullptr);
  ExpectUnchanged(before);  // slaves released, eth1 up again, eth2 down again
  EXPECT_EQ(ops_.calls.back(), "set 4 down");
}

TEST_F(ApplyTest, EnslaveRefusedRollsBack) {
  ops_.fail = {"enslave"};
  auto before = Snapshot();
  ExpectError(Apply(Bond({"eth0", "eth1"}), ops_), kErrInternal,
              {"failed to enslave eth0 to sp_bond0", "Device or resource busy"});
  EXPECT_EQ(ops_.Named("sp_bond0"), nullptr);
  ExpectUnchanged(before);
}

TEST_F(ApplyTest, SetUpRefusedRollsBack) {
  ops_.fail = {"up 10"};  // the new VLAN
  auto before = Snapshot();
  ExpectError(Apply(Vlan("eth2", 30), ops_), kErrInternal, {"failed to set eth2.30 up"});
  ExpectUnchanged(before);  // the VLAN deleted, eth2 down again
  EXPECT_EQ(ops_.calls.back(), "set 4 down");
}

TEST_F(ApplyTest, ListRefused) {
  ops_.fail = {"list"};
  ExpectError(Apply(Vlan("eth0", 3), ops_), kErrInternal, {"failed to list links: dump failed"});
}

}  // namespace
}  // namespace spiderpool::agent::ifacer
