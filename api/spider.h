#pragma once
// Every kind of spiderpool.spidernet.io/v2beta1, plus the group's well-known names: finalizer,
// labels and annotations (reference docs/reference/spiderpool.md §1, §2.2, §2.7, §1.5, §6).
//
//   SpiderIPPool, SpiderSubnet, SpiderReservedIP   api/spider_ippool.h
//   SpiderEndpoint                                 api/spider_endpoint.h
//   SpiderMultusConfig                             api/spider_multusconfig.h
//   SpiderCoordinator                              api/spider_coordinator.h
//   SpiderClaimParameter                           api/spider_claimparameter.h
//   shared pieces (Route, BondConfig, ...)          api/spider_types.h

#include <string_view>

#include "api/spider_claimparameter.h"
#include "api/spider_coordinator.h"
#include "api/spider_endpoint.h"
#include "api/spider_ippool.h"
#include "api/spider_multusconfig.h"
#include "api/spider_types.h"

namespace spiderpool::api {

inline constexpr std::string_view kSpiderGroup = "spiderpool.spidernet.io";
inline constexpr std::string_view kSpiderVersion = "v2beta1";
inline constexpr std::string_view kSpiderApiVersion = "spiderpool.spidernet.io/v2beta1";
inline constexpr std::string_view kSpiderCategory = "spiderpool";
// On pools, subnets, endpoints and the coordinator.
inline constexpr std::string_view kSpiderFinalizer = "spiderpool.spidernet.io";

// ---- Pod annotations (IPAM requests) ------------------------------------------------------
// {"ipv4":[...],"ipv6":[...]} for the current NIC.
inline constexpr std::string_view kAnnoPodIPPool = "ipam.spidernet.io/ippool";
// [{"interface":..,"ipv4":[..],"ipv6":[..],"cleangateway":bool}] for several NICs.
inline constexpr std::string_view kAnnoPodIPPools = "ipam.spidernet.io/ippools";
// Auto pools from a SpiderSubnet: {"interface":..,"ipv4":[..],"ipv6":[..]} / a list of them.
inline constexpr std::string_view kAnnoSubnet = "ipam.spidernet.io/subnet";
inline constexpr std::string_view kAnnoSubnets = "ipam.spidernet.io/subnets";
// "N" (fixed) or "+N" (flexible) size of auto pools.
inline constexpr std::string_view kAnnoIPPoolIPNumber = "ipam.spidernet.io/ippool-ip-number";
// "true" (default) | "false": delete the auto pool with its application.
inline constexpr std::string_view kAnnoIPPoolReclaim = "ipam.spidernet.io/ippool-reclaim";
// [{"dst":..,"gw":..}] extra routes for the pod.
inline constexpr std::string_view kAnnoPodRoutes = "ipam.spidernet.io/routes";
// The NIC that carries the pod's default route (read by the coordinator config endpoint).
inline constexpr std::string_view kAnnoDefaultRouteNIC = "ipam.spidernet.io/default-route-nic";
// Defined upstream but unused (no DNS is ever returned).
inline constexpr std::string_view kAnnoPodDNS = "ipam.spidernet.io/dns";
// Where the NRI path records the CNI result.
inline constexpr std::string_view kAnnoNetworkStatus = "ipam.spidernet.io/network-status";

// ---- Namespace annotations ----------------------------------------------------------------
// JSON arrays of pool names.
inline constexpr std::string_view kAnnoNSDefaultIPv4Pool = "ipam.spidernet.io/default-ipv4-ippool";
inline constexpr std::string_view kAnnoNSDefaultIPv6Pool = "ipam.spidernet.io/default-ipv6-ippool";

// ---- Labels the system sets on pools and subnets -----------------------------------------
// The CIDR as a label value: 10.148.4.0/24 -> "10-148-4-0-24".
inline constexpr std::string_view kLabelIPPoolCIDR = "ipam.spidernet.io/ippool-cidr";
inline constexpr std::string_view kLabelSubnetCIDR = "ipam.spidernet.io/subnet-cidr";
inline constexpr std::string_view kLabelOwnerSpiderSubnet = "ipam.spidernet.io/owner-spider-subnet";
// Auto pools: the application that owns them.
inline constexpr std::string_view kLabelOwnerApplicationGV =
    "ipam.spidernet.io/owner-application-gv";
inline constexpr std::string_view kLabelOwnerApplicationKind =
    "ipam.spidernet.io/owner-application-kind";
inline constexpr std::string_view kLabelOwnerApplicationNamespace =
    "ipam.spidernet.io/owner-application-namespace";
inline constexpr std::string_view kLabelOwnerApplicationName =
    "ipam.spidernet.io/owner-application-name";
inline constexpr std::string_view kLabelOwnerApplicationUID =
    "ipam.spidernet.io/owner-application-uid";
inline constexpr std::string_view kLabelIPPoolInterface = "ipam.spidernet.io/interface";
inline constexpr std::string_view kLabelIPPoolVersion = "ipam.spidernet.io/ip-version";  // IPv4|IPv6
inline constexpr std::string_view kLabelIPPoolReclaim = "ipam.spidernet.io/ippool-reclaim";
// An auto pool's podAffinity: the application's identity.
inline constexpr std::string_view kAppLabelAPIGroup = "ipam.spidernet.io/app-api-group";
inline constexpr std::string_view kAppLabelAPIVersion = "ipam.spidernet.io/app-api-version";
inline constexpr std::string_view kAppLabelKind = "ipam.spidernet.io/app-kind";
inline constexpr std::string_view kAppLabelNamespace = "ipam.spidernet.io/app-namespace";
inline constexpr std::string_view kAppLabelName = "ipam.spidernet.io/app-name";

// ---- SpiderMultusConfig annotations -------------------------------------------------------
// A NAD name other than the SMC's own.
inline constexpr std::string_view kAnnoMultusCRName = "multus.spidernet.io/cr-name";
// cniVersion of the generated config (default 0.3.1).
inline constexpr std::string_view kAnnoMultusCNIVersion = "multus.spidernet.io/cni-version";
inline constexpr std::string_view kDefaultCNIVersion = "0.3.1";
// The `name` inside the generated CNI config.
inline constexpr std::string_view kAnnoCNIConfigName = "cni.spidernet.io/cniconfig-name";
// Pod resource injection (copied into SMC labels by the webhook).
inline constexpr std::string_view kAnnoRdmaResourceInject = "cni.spidernet.io/rdma-resource-inject";
inline constexpr std::string_view kAnnoNetworkResourceInject =
    "cni.spidernet.io/network-resource-inject";

// ---- Multus / KubeVirt / DRA names we read or write --------------------------------------
inline constexpr std::string_view kMultusNetworks = "k8s.v1.cni.cncf.io/networks";
inline constexpr std::string_view kMultusDefaultNetwork = "v1.multus-cni.io/default-network";
inline constexpr std::string_view kMultusResourceName = "k8s.v1.cni.cncf.io/resourceName";
inline constexpr std::string_view kKubevirtMigrationJobName = "kubevirt.io/migrationJobName";
inline constexpr std::string_view kAnnoDRACDIVersion = "dra.spidernet.io/cdi-version";

// ---- Misc ---------------------------------------------------------------------------------
// The single SpiderCoordinator.
inline constexpr std::string_view kDefaultCoordinatorName = "default";

}  // namespace spiderpool::api
