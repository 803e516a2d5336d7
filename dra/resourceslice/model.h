#pragma once
// The device model of the `netresources.spidernet.io` DRA driver: how the NICs of one node and
// the free addresses of the SpiderIPPools they can reach become ResourceSlice devices, plus the
// DeviceClass and the CEL selectors that tie a ResourceClaim to a SpiderMultusConfig. Pure
// functions, no I/O (dra/README.md "Device model" explains the choices).
//
//   std::vector<api::Device> devices = BuildDevices(nics, pools, options);
//   publisher.Publish(devices);          // dra/resourceslice/publisher.h
//
// One eligible NIC (up, passing the include/exclude rules, its subnet served by a pool with
// free IPs for this node) becomes N "slot" devices `<nic-label>-<k>`, k = 0..N-1, where
// N = min(slots_per_nic, free IPs of the matching pools). A device is allocated to one claim
// at a time (unless the alpha DRAConsumableCapacity gate is on), so the N slots let N pods
// share the NIC as a macvlan/ipvlan master; a NIC whose subnet has no pool with free IPs
// publishes nothing, so the scheduler only picks nodes where the pod can get an address.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/resource_slice.h"
#include "api/spider_multusconfig.h"
#include "base/ip.h"
#include "dra/nic/nic.h"

namespace spiderpool::dra::resourceslice {

inline constexpr std::string_view kDriverName = "netresources.spidernet.io";
inline constexpr std::string_view kDeviceClassName = "netresources.spidernet.io";
inline constexpr int kDefaultSlotsPerNic = 32;
// Upper bound of slots_per_nic (device names stay short; a node pool stays a few slices).
inline constexpr int kMaxSlotsPerNic = 1024;

// Attribute names. Bare names are in the driver's domain (device.attributes["<driver>"].x).
namespace attr {
inline constexpr std::string_view kIfName = "ifName";
inline constexpr std::string_view kMac = "mac";
inline constexpr std::string_view kMtu = "mtu";
inline constexpr std::string_view kState = "state";
inline constexpr std::string_view kIPv4Subnet = "ipv4Subnet";
inline constexpr std::string_view kIPv6Subnet = "ipv6Subnet";
inline constexpr std::string_view kPciAddress = "pciAddress";
inline constexpr std::string_view kSriovTotalVfs = "sriovTotalVfs";
inline constexpr std::string_view kSriovVf = "sriovVf";
inline constexpr std::string_view kRdma = "rdma";
inline constexpr std::string_view kSlot = "slot";
// Standard attributes (k8s.io/dynamic-resource-allocation/deviceattribute).
inline constexpr std::string_view kPcieRoot = "resource.kubernetes.io/pcieRoot";
inline constexpr std::string_view kNumaNode = "resource.kubernetes.io/numaNode";
// Multus interop (what a device plugin would put in the pod's network-status).
inline constexpr std::string_view kMultusDeviceID = "k8s.cni.cncf.io/deviceID";
inline constexpr std::string_view kMultusResourceName = "k8s.cni.cncf.io/resourceName";
// CNI types the NIC can serve as master / device for (bool, published only when true):
// Ethernet NICs serve macvlan, ipvlan and vlan; an SR-IOV PF or VF serves sriov; an
// InfiniBand NIC (20-byte hardware address) serves ipoib, and ib-sriov when SR-IOV.
inline constexpr std::string_view kCniMacvlan = "cniMacvlan";
inline constexpr std::string_view kCniIpvlan = "cniIpvlan";
inline constexpr std::string_view kCniVlan = "cniVlan";
inline constexpr std::string_view kCniSriov = "cniSriov";
inline constexpr std::string_view kCniIpoib = "cniIpoib";
inline constexpr std::string_view kCniIbSriov = "cniIbSriov";
// One bool attribute per SpiderIPPool that serves the NIC on this node with free IPs:
// PoolAttributeName(pool) (see below), value true.
}  // namespace attr

// Free addresses of one SpiderIPPool usable by pods on this node (the pool's nodeName /
// nodeAffinity admit the node, it is not disabled; free = total - allocated - excluded).
struct PoolCapacity {
  base::IPPrefix subnet;  // spec.subnet (canonicalised when compared)
  int64_t free_ips = 0;
  std::string name;  // the pool's name: its attribute (PoolAttributeName) on the NICs it serves
  // The pool names this node explicitly (spec.nodeName lists it, or spec.nodeAffinity is set
  // and admits it). A NIC without an address in any subnet (and no declared subnet) is served
  // by these pools: a dedicated underlay NIC or an SR-IOV PF carries no host IP.
  bool selects_node = false;
};

struct ModelOptions {
  std::string driver = std::string(kDriverName);
  int slots_per_nic = kDefaultSlotsPerNic;  // clamped to [0, kMaxSlotsPerNic]
  // Interface name globs (fnmatch(3), as dra/nic's MatchRules): a NIC is eligible if it
  // matches some include pattern (all NICs when empty) and no exclude pattern. "lo" never is.
  std::vector<std::string> include_interfaces;
  std::vector<std::string> exclude_interfaces;
  // Subnets reachable through a NIC that carries no address in them (a dedicated underlay NIC
  // without an IP): NIC name -> subnets, used after the NIC's own addresses.
  std::map<std::string, std::vector<base::IPPrefix>> declared_subnets;
  // NIC name -> k8s.cni.cncf.io/resourceName (e.g. the SR-IOV device plugin's resource).
  std::map<std::string, std::string> resource_names;
  // Publish allowMultipleAllocations: true on every device (DRAConsumableCapacity, alpha);
  // off by default because an API server without the gate drops the field.
  bool allow_multiple_allocations = false;
  // PCI address -> pcieRoot ("pci<domain>:<bus>"); null = derived from the address itself
  // (PCIeRootOf). Discovery can plug in the sysfs walk to the root complex.
  std::function<std::string(const std::string& pci_address)> pcie_root_resolver;
};

// A NIC as the model sees it (for tests and logs): its label, published prefixes and slots.
struct NicPlan {
  std::string nic;    // interface name
  std::string label;  // DeviceLabel(nic)
  std::optional<base::IPPrefix> ipv4_subnet;  // canonical
  std::optional<base::IPPrefix> ipv6_subnet;
  int64_t free_ips = 0;  // max over families of the serving pools' free IPs
  int slots = 0;
  // Pools that serve this NIC (their subnet is the NIC's, or, for a NIC without one, they
  // select the node) with free IPs, by name; each becomes a PoolAttributeName attribute.
  std::vector<std::string> pools;
  // Serving pools left out because a device holds at most 32 attributes (logged by callers).
  std::vector<std::string> dropped_pools;
  std::string skipped;  // why no devices ("down", "excluded", "no pool with free IPs", ...)
};

// The per-NIC decisions, in NIC name order.
std::vector<NicPlan> PlanNics(const std::vector<nic::Nic>& nics,
                              const std::vector<PoolCapacity>& pools, const ModelOptions& options);

// Every device of this node, sorted by NIC name then slot (deterministic: the same inputs give
// the same devices, so an unchanged node causes no ResourceSlice write).
std::vector<api::Device> BuildDevices(const std::vector<nic::Nic>& nics,
                                      const std::vector<PoolCapacity>& pools,
                                      const ModelOptions& options = {});

// Splits devices into slices of at most `max_per_slice` (128, the v1 limit), keeping order.
// Always at least one (possibly empty) chunk: an empty pool is published as one empty slice.
std::vector<std::vector<api::Device>> SplitDevices(const std::vector<api::Device>& devices,
                                                   int max_per_slice = api::resourceslice::kMaxDevices);

// ---- naming ---------------------------------------------------------------------------------

// The device-name stem of an interface: the name itself when it is a DNS label (lower-case
// alphanumerics and '-', at most 63 - 5 characters so a slot suffix fits), otherwise
// "normalized-<base32 of the name>" (RFC 4648 alphabet, lower case, no padding), like dranet.
// Stable and injective.
std::string DeviceLabel(std::string_view interface_name);
// "<label>-<slot>".
std::string SlotDeviceName(std::string_view interface_name, int slot);
// The attribute a NIC's devices carry for a pool that serves them: "pool_<name>" with '-' as
// '_' when the name is only [a-z0-9-] and at most 27 characters (ids are C identifiers of at
// most 32), else "pool__<base32 of FNV-1a 64 of the name>" (a readable form never has "__"
// there, since pool names start with an alphanumeric). Value: bool true.
std::string PoolAttributeName(std::string_view pool);
// "pci<domain>:<bus>" of "dddd:bb:dd.f" ("0000:3b:00.0" -> "pci0000:3b"); "" if malformed.
std::string PCIeRootOf(std::string_view pci_address);

// ---- DeviceClass and selectors --------------------------------------------------------------

// DeviceClass `netresources.spidernet.io`: selector `device.driver == "netresources.spidernet.io"`.
api::DeviceClass BuildDeviceClass(std::string_view driver = kDriverName);

// A CEL string literal: "..." with backslash and quote escaped (and control bytes as \xNN).
std::string CelQuote(std::string_view s);

// What a claim's network needs from a device: the SMC and the pools its pods allocate from.
struct ClaimNetwork {
  std::vector<std::string> ipv4_pools;  // pool names; empty = no IPv4 requirement
  std::vector<std::string> ipv6_pools;
  bool rdma = false;  // SpiderClaimParameter enableRdma: the NIC must have an RDMA device
};

// The CEL expressions (each one a selector; all must hold) restricting a request to the
// devices that serve `smc` on their node (dra/README.md "Claims"):
//   master   "ifName" in A && A.ifName in ["eth1", "eth2"]   (A = device.attributes["<driver>"];
//            the bond's name when `bond` is set; ipoib's master; sriov / ib-sriov with a
//            resourceName: device.attributes["k8s.cni.cncf.io"].resourceName == "...")
//   cniType  "cniMacvlan" in A && A.cniMacvlan == true          (macvlan, ipvlan, vlan, sriov,
//            ipoib, ib-sriov; none for ovs / custom)
//   pools    one per family: ("pool_a" in A || "pool_b" in A)  (a pool of the claim serves the
//            NIC on that node with free IPs)
//   rdma     "rdma" in A && A.rdma == true                       (network.rdma)
// Names are de-duplicated keeping order. An empty list: nothing to narrow (custom SMC, no pools).
absl::StatusOr<std::vector<std::string>> SelectorFor(const api::SpiderMultusConfig& smc,
                                                     const ClaimNetwork& network,
                                                     std::string_view driver = kDriverName);

}  // namespace spiderpool::dra::resourceslice
