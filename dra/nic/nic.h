#pragma once
// A host network interface as the DRA driver and the device plugin see it. Filled by NIC
// discovery (netlink + sysfs, dra/nic/discovery.h); consumed by the ResourceSlice device model
// and the device plugin. Plain data, no I/O.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/ip.h"

namespace spiderpool::dra::nic {

struct Nic {
  std::string name;         // "eth1"
  int ifindex = 0;
  std::string mac;          // "aa:bb:cc:dd:ee:ff" (lower case), "" if none
  int mtu = 0;
  bool up = false;          // IFF_UP and operstate up/unknown (carrier present)
  std::string kind;         // rtnl link kind: "veth", "macvlan", "bond", "" for physical
  std::vector<base::IPPrefix> ipv4;  // global-scope addresses with their prefix length
  std::vector<base::IPPrefix> ipv6;  // global-scope, not link-local
  std::string pci_address;  // "0000:3b:00.0", "" when not a PCI device
  int numa_node = -1;       // -1 = unknown / not NUMA
  int sriov_total_vfs = 0;  // sriov_totalvfs of a PF
  int sriov_num_vfs = 0;    // sriov_numvfs
  bool sriov_vf = false;    // this netdev is a VF (has a physfn link)
  bool rdma = false;        // an RDMA device is bound to this netdev
  std::string rdma_device;  // "mlx5_0", "" if none

  bool operator==(const Nic&) const = default;
};

}  // namespace spiderpool::dra::nic
