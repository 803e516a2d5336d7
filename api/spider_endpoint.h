#pragma once
// SpiderEndpoint (spiderpool.spidernet.io/v2beta1; namespaced, short name `se`; status only,
// no status subresource): the IPs one Pod (or KubeVirt VM) holds. Reference §1.4.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/codec.h"
#include "api/meta.h"
#include "api/spider_types.h"

namespace spiderpool::api {

struct IPAllocationDetail {
  std::string interface_;                 // "interface": the pod NIC, e.g. eth0, net1
  std::optional<std::string> ipv4;        // CIDR form: 10.0.0.5/24
  std::optional<std::string> ipv6;        // CIDR form
  std::optional<std::string> ipv4_pool;
  std::optional<std::string> ipv6_pool;
  std::optional<int64_t> vlan;            // deprecated upstream; 0..4094
  std::optional<std::string> ipv4_gateway;
  std::optional<std::string> ipv6_gateway;
  std::optional<bool> clean_gateway;
  std::vector<Route> routes;
  std::optional<std::string> mac;         // set by the IaaS network provider
  template <typename V>
  void Visit(V& v) {
    v.Field("interface", interface_, {.required = true});
    v.Field("ipv4", ipv4, {.format = Format::kCIDR});
    v.Field("ipv6", ipv6, {.format = Format::kCIDR});
    v.Field("ipv4Pool", ipv4_pool);
    v.Field("ipv6Pool", ipv6_pool);
    v.Field("vlan", vlan, {.minimum = 0, .maximum = 4094});
    v.Field("ipv4Gateway", ipv4_gateway, {.format = Format::kIP});
    v.Field("ipv6Gateway", ipv6_gateway, {.format = Format::kIP});
    v.Field("cleanGateway", clean_gateway);
    v.Field("routes", routes);
    v.Field("mac", mac);
  }
};

struct PodIPAllocation {
  std::string uid;   // the pod's UID
  std::string node;
  std::vector<IPAllocationDetail> ips;
  template <typename V>
  void Visit(V& v) {
    v.Field("uid", uid, {.required = true});
    v.Field("node", node, {.required = true});
    v.Field("ips", ips, {.required = true});
  }
};

struct WorkloadEndpointStatus {
  PodIPAllocation current;
  // Pod | Deployment | ReplicaSet | StatefulSet | DaemonSet | Job | CronJob |
  // VirtualMachineInstance | <third-party Kind>
  std::string owner_controller_type;
  std::string owner_controller_name;
  template <typename V>
  void Visit(V& v) {
    v.Field("current", current, {.required = true});
    v.Field("ownerControllerType", owner_controller_type, {.required = true});
    v.Field("ownerControllerName", owner_controller_name, {.required = true});
  }
};

struct SpiderEndpoint {
  SP_API_OBJECT_HEAD(SpiderEndpoint)
  // Optional so that an endpoint read without a status encodes back without one (its fields
  // are required once it is there).
  std::optional<WorkloadEndpointStatus> status;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("status", status);
  }
};
using SpiderEndpointList = List<SpiderEndpoint>;

// The CRD's selectable field (charts/spiderpool/crds, selectableFields): the node of an
// endpoint's current pod, for a fieldSelector ("status.current.node=<node>").
inline constexpr std::string_view kSpiderEndpointNodeField = "status.current.node";

}  // namespace spiderpool::api
