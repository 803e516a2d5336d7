#pragma once
// Pieces shared by several Spider kinds (spiderpool.spidernet.io/v2beta1): Route,
// SpiderpoolPools, BondConfig, CoordinatorSpec. Field names and CRD bounds follow upstream
// Spiderpool (docs/reference/spiderpool.md §1).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/codec.h"
#include "api/meta.h"

namespace spiderpool::api {

// spec.routes[] of pools and subnets, and of SpiderEndpoint allocations.
struct Route {
  std::string dst;
  std::string gw;
  template <typename V>
  void Visit(V& v) {
    v.Field("dst", dst, {.required = true, .format = Format::kCIDR});
    v.Field("gw", gw, {.required = true, .format = Format::kIP});
  }
  friend bool operator==(const Route&, const Route&) = default;
};

// The default pools a SpiderMultusConfig writes into the spiderpool IPAM block.
struct SpiderpoolPools {
  std::vector<std::string> ipv4;
  std::vector<std::string> ipv6;
  std::optional<bool> match_master_subnet;  // meaningful only for sriov
  template <typename V>
  void Visit(V& v) {
    v.Field("ipv4", ipv4);
    v.Field("ipv6", ipv6);
    v.Field("matchMasterSubnet", match_master_subnet);
  }
};

// A bond the ifacer plugin builds from several masters.
struct BondConfig {
  std::string name;
  int32_t mode = 0;  // 0..6 (balance-rr .. balance-alb)
  std::optional<std::string> options;  // "k=v;k=v"
  template <typename V>
  void Visit(V& v) {
    v.Field("name", name, {.required = true});
    v.Field("mode", mode, {.required = true, .minimum = 0, .maximum = 6});
    v.Field("options", options);
  }
};

// coordinator.policyRoutes[]: dst may be a bare IP until the mutating webhook turns it into
// a /32 or /128.
struct PolicyRoute {
  std::string dst;
  std::string gw;
  template <typename V>
  void Visit(V& v) {
    v.Field("dst", dst, {.required = true, .format = Format::kIPOrCIDR});
    v.Field("gw", gw, {.required = true, .format = Format::kIP});
  }
  friend bool operator==(const PolicyRoute&, const PolicyRoute&) = default;
};

// SpiderCoordinator.spec, also embedded in SpiderMultusConfig.spec.coordinator where every
// unset field is inherited from the SpiderCoordinator (hence all pointers upstream).
struct CoordinatorSpec {
  std::optional<std::string> mode;           // auto | underlay | overlay | disabled
  std::optional<std::string> pod_cidr_type;  // auto | cluster | calico | cilium | none
  std::vector<std::string> hijack_cidr;      // IPs or CIDRs
  std::vector<PolicyRoute> policy_routes;
  std::optional<std::string> pod_mac_prefix;  // "xx:yy"
  std::optional<bool> tune_pod_routes;
  std::optional<std::string> pod_default_route_nic;
  std::optional<int64_t> host_rule_table;
  std::optional<int64_t> pod_rp_filter;  // 0/1/2, negative = leave as is
  std::optional<int64_t> tx_queue_len;   // >= 0 (webhook message, not a CRD bound)
  std::optional<std::string> veth_link_address;
  std::optional<int64_t> veth_mtu;  // >= 1 (CRD minimum; default 1500)
  template <typename V>
  void Visit(V& v) {
    v.Field("mode", mode, {.enum_values = {"auto", "underlay", "overlay", "disabled"}});
    v.Field("podCIDRType", pod_cidr_type,
            {.enum_values = {"auto", "cluster", "calico", "cilium", "none"}});
    v.Field("hijackCIDR", hijack_cidr, {.format = Format::kIPOrCIDR});
    v.Field("policyRoutes", policy_routes);
    v.Field("podMACPrefix", pod_mac_prefix);
    v.Field("tunePodRoutes", tune_pod_routes);
    v.Field("podDefaultRouteNIC", pod_default_route_nic);
    v.Field("hostRuleTable", host_rule_table);
    v.Field("podRPFilter", pod_rp_filter);
    v.Field("txQueueLen", tx_queue_len);
    v.Field("vethLinkAddress", veth_link_address);
    v.Field("vethMTU", veth_mtu, {.minimum = 1});
  }
};

}  // namespace spiderpool::api
