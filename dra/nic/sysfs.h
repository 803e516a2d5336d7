#pragma once
// What sysfs says about a network device: PCI address, NUMA node, SR-IOV counts, VF-ness and
// the RDMA device bound to it. The sysfs root is a parameter ("/sys" in production, a fake
// tree in tests). Every file is optional: a missing or unparsable file leaves the default
// (the Nic defaults), it is never an error.
//
// Layout read (relative to root):
//   class/net/<ifname>/ifindex                     the netdev's ifindex (to check the name
//                                                  refers to the same device netlink saw)
//   class/net/<ifname>/device -> ../../../<dev>    resolved; the deepest path component that
//                                                  is a PCI address, below a "pci<dom>:<bus>"
//                                                  host bridge under devices/, is the PCI
//                                                  address (virtio: the PCI function above
//                                                  virtioN)
//   <dev>/numa_node (else <pci dev>/numa_node)     -1 = none
//   <dev>/sriov_totalvfs, <dev>/sriov_numvfs       a PF's VF counts
//   <dev>/physfn                                   exists on a VF
//   <dev>/infiniband/<name>                        RDMA device (first by name)
//
// sysfs shows the network namespace of the process that mounted it, not of the calling
// thread: a netdev in another netns is usually absent here (or, by name clash, a different
// device; compare `ifindex`).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dra/nic/nic.h"

namespace spiderpool::dra::nic {

struct SysfsFacts {
  int ifindex = 0;          // 0 = class/net/<ifname>/ifindex missing or unparsable
  std::string pci_address;  // "0000:3b:00.0", "" when not under a PCI bus
  int numa_node = -1;
  int sriov_total_vfs = 0;
  int sriov_num_vfs = 0;
  bool sriov_vf = false;
  std::string rdma_device;  // "mlx5_0", "" if none

  bool operator==(const SysfsFacts&) const = default;
};

// nullopt when <root>/class/net/<ifname> does not exist or `ifname` is not a valid netdev
// name (empty, longer than 15 bytes, ".", "..", or containing '/', ':' or whitespace).
std::optional<SysfsFacts> ReadSysfsFacts(std::string_view root, std::string_view ifname);

// Copies the facts into the sysfs fields of `nic` (pci_address, numa_node, sriov_*, rdma,
// rdma_device).
void ApplySysfsFacts(const SysfsFacts& facts, Nic* nic);

// --- parsers of sysfs text (exposed for tests) ---

// A decimal integer as sysfs prints it: optional surrounding whitespace (the trailing
// newline), optional '-', digits, within int range. nullopt for anything else.
std::optional<int> ParseSysfsInt(std::string_view text);

// "0000:3b:00.0" (domain 4-8 hex digits, bus 2, device 2 (<= 0x1f), function 0-7), any hex
// case; returns it lower-cased. nullopt for anything else.
std::optional<std::string> ParsePciAddress(std::string_view text);

// A netdev name the kernel would accept (see ReadSysfsFacts).
bool IsValidIfName(std::string_view name);

}  // namespace spiderpool::dra::nic
