#pragma once
// From allocated IPs to what the SpiderEndpoint stores (api::IPAllocationDetail, reference
// §1.4) and to the agent's reply (IPs + routes, §2.5):
//
//   AllocationResult r = BuildAllocationResult(nics, custom_routes, sel.multiple_nic_no_name);
//   endpoint.status->current.ips = EndpointDetails(r, sel.multiple_nic_no_name);
//   Reply reply = ReplyFromDetails(r.details);   // ips + routes for every NIC
//
// Upstream keeps the default route out of the stored detail: a detail holds the gateway,
// cleanGateway and the pool + annotation routes; the default route (0.0.0.0/0 or ::/0 via the
// gateway, unless cleanGateway) is added when the reply is built, both on a fresh ADD and on
// one served from the SpiderEndpoint. This header does the same.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/spider_endpoint.h"
#include "api/spider_types.h"
#include "base/ip.h"
#include "ipam/pool.h"

namespace spiderpool::ipam {

// One IP of one family, with what the result needs from its pool.
struct FamilyAllocation {
  base::IPAddress ip;
  std::string pool;                        // pool name
  int prefix_length = 0;                   // of the pool's subnet
  std::optional<base::IPAddress> gateway;  // spec.gateway
  std::vector<api::Route> pool_routes;     // spec.routes

  static FamilyAllocation FromPool(const PoolState& pool, const base::IPAddress& ip);
};

struct NicAllocation {
  std::string if_name;  // as selection gave it ("0","1",... in no-name multi-NIC mode)
  bool clean_gateway = false;
  std::optional<FamilyAllocation> ipv4;
  std::optional<FamilyAllocation> ipv6;
};

struct AllocationResult {
  // One detail per NIC, in the order given (no-name multi-NIC: sorted by index, and "0"
  // named eth0). interface, ipv4/ipv6 ("ip/prefix"), ipv4Pool/ipv6Pool, vlan 0,
  // ipv4Gateway/ipv6Gateway (when the pool has one), cleanGateway (set when a gateway is),
  // routes = the pools' spec.routes (v4 then v6) + the annotation routes attached here.
  std::vector<api::IPAllocationDetail> details;
  // ipam.spidernet.io/routes entries whose gw lies in no allocated subnet (upstream logs
  // them as "Invalid custom routes" and drops them).
  std::vector<api::Route> unattached_routes;
};

// Each custom route goes to the first NIC (in order, v4 then v6) whose allocated subnet
// contains its gw (upstream groupCustomRoutes).
AllocationResult BuildAllocationResult(std::vector<NicAllocation> nics,
                                       const std::vector<api::Route>& custom_routes,
                                       bool multiple_nic_no_name);

// What SpiderEndpoint.status.current.ips stores: `result.details`, except that in no-name
// multi-NIC mode every NIC after the first has interface "" (upstream fills in the real
// name when the later ADD for that NIC reads the endpoint).
std::vector<api::IPAllocationDetail> EndpointDetails(const AllocationResult& result,
                                                     bool multiple_nic_no_name);

// The agent's reply (upstream models.IPConfig / models.Route).
struct ReplyIP {
  std::string address;  // "10.0.0.5/24"
  std::string gateway;  // "" when none
  std::string pool;
  std::string nic;
  int version = 4;
  int64_t vlan = 0;
};
struct ReplyRoute {
  std::string if_name;
  std::string dst;
  std::string gw;
};
struct Reply {
  std::vector<ReplyIP> ips;
  std::vector<ReplyRoute> routes;
};
// Upstream ConvertIPDetailsToIPConfigsAndAllRoutes: per detail, the IPv4 IP (+ its default
// route unless cleanGateway), the IPv6 IP (+ default route), then the detail's routes on
// that NIC.
Reply ReplyFromDetails(const std::vector<api::IPAllocationDetail>& details);

// "0.0.0.0/0" or "::/0" via `gateway`.
api::Route DefaultRoute(const base::IPAddress& gateway);

}  // namespace spiderpool::ipam
