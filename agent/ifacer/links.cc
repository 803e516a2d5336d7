#include "agent/ifacer/links.h"

#include <map>
#include <utility>

#include "base/strings.h"

namespace spiderpool::agent::ifacer {

namespace {

std::string Reason(const absl::Status& s) { return std::string(base::FromAbsl(s.message())); }

const Link* Find(const std::vector<Link>& links, const std::string& name) {
  for (const Link& l : links) {
    if (l.name == name) return &l;
  }
  return nullptr;
}

std::string NameOf(const std::vector<Link>& links, int ifindex) {
  for (const Link& l : links) {
    if (l.ifindex == ifindex) return l.name;
  }
  return base::StrCat("ifindex ", ifindex);
}

std::string Describe(const std::vector<Link>& links, const Link& l) {
  std::string out = base::StrCat("kind ", l.kind.empty() ? "(none)" : l.kind);
  if (l.kind == "vlan") {
    out += base::StrCat(", vlanID ", l.vlan_id, ", on ", NameOf(links, l.parent));
  }
  return out;
}

// The changes of one ADD, undone in reverse when a later step fails.
class Transaction {
 public:
  explicit Transaction(LinkOps& ops) : ops_(ops) {}

  void Created(int ifindex) { created_.push_back(ifindex); }

  // Sets `link` up/down unless it already is; remembers its first known state.
  absl::Status SetUp(int ifindex, bool was_up, bool up) {
    if (was_up == up) return absl::OkStatus();
    original_.emplace(ifindex, was_up);  // keeps the first
    return ops_.SetUp(ifindex, up);
  }

  // Deletes what was created (newest first; a bond's slaves are released with it), then puts
  // back the up/down state of the links that remain. Failures go to `details`.
  void Rollback(std::string* details) {
    std::vector<std::string> failures;
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
      if (absl::Status s = ops_.Delete(*it); !s.ok()) {
        failures.push_back(base::StrCat("delete ifindex ", *it, ": ", Reason(s)));
      }
      original_.erase(*it);
    }
    for (const auto& [ifindex, up] : original_) {
      if (absl::Status s = ops_.SetUp(ifindex, up); !s.ok()) {
        failures.push_back(base::StrCat("set ifindex ", ifindex, up ? " up" : " down", ": ",
                                        Reason(s)));
      }
    }
    if (failures.empty()) return;
    std::string text = "rollback incomplete: ";
    for (size_t i = 0; i < failures.size(); ++i) text += (i ? "; " : "") + failures[i];
    *details = details->empty() ? text : base::StrCat(*details, "; ", text);
  }

 private:
  LinkOps& ops_;
  std::vector<int> created_;
  std::map<int, bool> original_;
};

CniError NotFound(std::string msg) { return CniError{kErrLinkNotFound, std::move(msg), ""}; }
CniError Conflict(std::string msg, std::string details = "") {
  return CniError{kErrLinkConflict, std::move(msg), std::move(details)};
}
CniError Refused(std::string msg) { return CniError{kErrInternal, std::move(msg), ""}; }

// Everything decided from the current links before anything is changed.
struct Plan {
  // bond
  const Link* bond = nullptr;              // existing bond (reused)
  std::vector<const Link*> slaves;         // when the bond is created
  std::vector<BondOption> options;         // link names resolved to ifindexes
  // vlan
  std::string vlan_name;
  std::string vlan_master_name;
  const Link* vlan_master = nullptr;       // existing master (nullptr: the bond to create)
  const Link* vlan = nullptr;              // existing VLAN (reused)
};

std::optional<CniError> PlanBond(const IfacerConf& conf, const std::vector<Link>& links,
                                 Plan* plan) {
  const BondConf& bond = *conf.bond;
  plan->bond = Find(links, bond.name);
  if (plan->bond != nullptr) {
    if (plan->bond->kind != "bond") {
      return Conflict(base::StrCat("createBondDevice failure: a non-bond type interface named ",
                                   bond.name, " already exists on the host"),
                      Describe(links, *plan->bond));
    }
    return std::nullopt;  // reused as it is (upstream does not touch an existing bond)
  }
  for (size_t i = 0; i < conf.interfaces.size(); ++i) {
    const Link* l = Find(links, conf.interfaces[i]);
    if (l == nullptr) {
      return NotFound(base::StrCat("failed to find interfaces[", i, "] ", conf.interfaces[i],
                                   " on the host: Link not found"));
    }
    if (l->master != 0) {
      return Conflict(base::StrCat("interfaces[", i, "] ", l->name,
                                   " is already enslaved to ", NameOf(links, l->master)),
                      base::StrCat("cannot add it to the new bond ", bond.name));
    }
    plan->slaves.push_back(l);
  }
  plan->options = conf.bond_options;
  for (BondOption& o : plan->options) {
    if (o.kind != BondOption::Kind::kLinkName) continue;
    const Link* l = Find(links, o.link_name);  // one of interfaces (checked when decoding)
    if (l == nullptr) {
      return NotFound(base::StrCat("failed to find bond option ", o.key, " ", o.link_name,
                                   " on the host: Link not found"));
    }
    o.number = static_cast<uint32_t>(l->ifindex);
  }
  return std::nullopt;
}

std::optional<CniError> PlanVlan(const IfacerConf& conf, Action action,
                                 const std::vector<Link>& links, Plan* plan) {
  const int id = static_cast<int>(conf.vlan_id);
  plan->vlan_master_name = action == Action::kVlan ? conf.interfaces[0] : conf.bond->name;
  plan->vlan_name = VlanName(plan->vlan_master_name, id);
  plan->vlan_master = Find(links, plan->vlan_master_name);
  if (action == Action::kVlan && plan->vlan_master == nullptr) {
    return NotFound(base::StrCat("failed to find master interfaces[0] ", plan->vlan_master_name,
                                 " on the host: Link not found"));
  }
  // Upstream's rule: one VLAN per id on the node, whatever its master.
  for (const Link& l : links) {
    if (l.kind == "vlan" && l.vlan_id == id && l.name != plan->vlan_name) {
      return Conflict(
          base::StrCat("cannot have multiple different vlan interfaces with the same vlanId ",
                       id, " on node at the same time: ", l.name, " (on ",
                       NameOf(links, l.parent), ") exists, ", plan->vlan_name, " wanted"),
          base::StrCat("delete ", l.name, " or use another vlanID"));
    }
  }
  plan->vlan = Find(links, plan->vlan_name);
  if (plan->vlan != nullptr) {
    const Link& v = *plan->vlan;
    bool right = v.kind == "vlan" && v.vlan_id == id && plan->vlan_master != nullptr &&
                 v.parent == plan->vlan_master->ifindex;
    if (!right) {
      return Conflict(base::StrCat("interface ", v.name, " already exists and is not vlan ", id,
                                   " of ", plan->vlan_master_name),
                      base::StrCat("found ", Describe(links, v)));
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<CniError> Apply(const IfacerConf& conf, LinkOps& ops) {
  const Action action = ActionFor(conf);
  if (action == Action::kNothing) return std::nullopt;
  auto listed = ops.List();
  if (!listed.ok()) {
    return Refused(base::StrCat("failed to list links: ", Reason(listed.status())));
  }
  const std::vector<Link>& links = *listed;
  const bool with_bond = action == Action::kBond || action == Action::kBondVlan;
  const bool with_vlan = action == Action::kVlan || action == Action::kBondVlan;
  Plan plan;
  if (with_bond) {
    if (auto e = PlanBond(conf, links, &plan)) return e;
  }
  if (with_vlan) {
    if (auto e = PlanVlan(conf, action, links, &plan)) return e;
  }

  Transaction tx(ops);
  auto fail = [&tx](CniError e) {
    tx.Rollback(&e.details);
    return e;
  };
  int master_index = plan.vlan_master != nullptr ? plan.vlan_master->ifindex : 0;
  if (with_bond) {
    const BondConf& bond = *conf.bond;
    if (plan.bond != nullptr) {
      if (auto s = tx.SetUp(plan.bond->ifindex, plan.bond->up, true); !s.ok()) {
        return fail(Refused(base::StrCat("failed to set ", bond.name, " up: ", Reason(s))));
      }
      master_index = plan.bond->ifindex;
    } else {
      auto created = ops.CreateBond(bond.name, static_cast<int>(bond.mode), plan.options);
      if (!created.ok()) {
        return fail(Refused(base::StrCat("failed to create bond interface ", bond.name,
                                         " (mode ", bond.mode, "): ",
                                         Reason(created.status()))));
      }
      tx.Created(*created);
      master_index = *created;
      for (const Link* slave : plan.slaves) {
        // A link must be down to be enslaved; it is brought up again afterwards.
        if (auto s = tx.SetUp(slave->ifindex, slave->up, false); !s.ok()) {
          return fail(
              Refused(base::StrCat("failed to set slave ", slave->name, " down: ", Reason(s))));
        }
        if (auto s = ops.Enslave(*created, slave->ifindex); !s.ok()) {
          return fail(Refused(base::StrCat("failed to enslave ", slave->name, " to ", bond.name,
                                           ": ", Reason(s))));
        }
        if (auto s = tx.SetUp(slave->ifindex, false, true); !s.ok()) {
          return fail(
              Refused(base::StrCat("failed to set slave ", slave->name, " up: ", Reason(s))));
        }
      }
      if (auto s = tx.SetUp(*created, false, true); !s.ok()) {
        return fail(Refused(base::StrCat("failed to set ", bond.name, " up: ", Reason(s))));
      }
    }
  }
  if (with_vlan) {
    int vlan_index = 0;
    bool vlan_up = false;
    if (plan.vlan != nullptr) {
      vlan_index = plan.vlan->ifindex;
      vlan_up = plan.vlan->up;
    } else {
      // Created first, on a master still as it was: a refusal leaves nothing changed.
      auto created = ops.CreateVlan(plan.vlan_name, master_index, static_cast<int>(conf.vlan_id));
      if (!created.ok()) {
        return fail(Refused(base::StrCat("failed to create vlan interface ", plan.vlan_name,
                                         " on ", plan.vlan_master_name, ": ",
                                         Reason(created.status()))));
      }
      tx.Created(*created);
      vlan_index = *created;
    }
    if (plan.vlan_master != nullptr && !with_bond) {
      // The master must be up for the VLAN to carry traffic (upstream brings it up too).
      if (auto s = tx.SetUp(master_index, plan.vlan_master->up, true); !s.ok()) {
        return fail(Refused(
            base::StrCat("failed to set ", plan.vlan_master_name, " up: ", Reason(s))));
      }
    }
    if (auto s = tx.SetUp(vlan_index, vlan_up, true); !s.ok()) {
      return fail(Refused(base::StrCat("failed to set ", plan.vlan_name, " up: ", Reason(s))));
    }
  }
  return std::nullopt;
}

}  // namespace spiderpool::agent::ifacer
