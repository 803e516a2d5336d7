#pragma once
// What ADD does on the host: the checks against the current links (pure, before any change),
// then the changes through LinkOps (netlink in netlink_ops.h, a fake in links_test.cc), with
// everything this call created or changed undone when a later step fails.

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/ifacer/netconf.h"

namespace spiderpool::agent::ifacer {

// Codes of ours (the CNI spec leaves 100+ to plugins; 999 is libcni's ErrInternal, what
// upstream's plain Go errors become).
inline constexpr int kErrLinkNotFound = 100;  // an interface named in the config is missing
inline constexpr int kErrLinkConflict = 101;  // a link in the way (wrong kind/id/master, same VLAN id)
inline constexpr int kErrInternal = 999;      // the kernel refused a change (reason in msg)

// One link of the host as the checks need it.
struct Link {
  std::string name;
  int ifindex = 0;
  std::string kind;    // IFLA_INFO_KIND ("vlan", "bond", "veth", ...; "" for a plain device)
  bool up = false;     // IFF_UP
  int vlan_id = -1;    // kind "vlan"
  int parent = 0;      // IFLA_LINK (a VLAN's master)
  int master = 0;      // IFLA_MASTER (the bond of a slave)
};

class LinkOps {
 public:
  virtual ~LinkOps() = default;
  virtual absl::StatusOr<std::vector<Link>> List() = 0;
  // Create and return the new link's ifindex. Errors carry the kernel's reason.
  virtual absl::StatusOr<int> CreateBond(const std::string& name, int mode,
                                         const std::vector<BondOption>& options) = 0;
  virtual absl::StatusOr<int> CreateVlan(const std::string& name, int parent, int vlan_id) = 0;
  virtual absl::Status Enslave(int bond, int slave) = 0;
  virtual absl::Status SetUp(int ifindex, bool up) = 0;
  virtual absl::Status Delete(int ifindex) = 0;
};

// ADD's link work for a decoded config (DecodeIfacerConf). nullopt on success: every link the
// config asks for exists, is what it should be, and is up. On error nothing this call created
// is left, and links it brought up/down are put back (rollback failures are added to details).
std::optional<CniError> Apply(const IfacerConf& conf, LinkOps& ops);

}  // namespace spiderpool::agent::ifacer
