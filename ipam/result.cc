#include "ipam/result.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "base/strings.h"

namespace spiderpool::ipam {
namespace {

using base::StrCat;

std::string Cidr(const FamilyAllocation& a) { return StrCat(a.ip.ToString(), "/", a.prefix_length); }

// The NIC index in no-name multi-NIC mode ("0","1",...); non-numbers sort last, as upstream's
// comparator leaves them in place.
std::optional<int> NicIndex(const std::string& nic) {
  int v = 0;
  auto [p, ec] = std::from_chars(nic.data(), nic.data() + nic.size(), v);
  if (ec != std::errc() || p != nic.data() + nic.size()) return std::nullopt;
  return v;
}

}  // namespace

FamilyAllocation FamilyAllocation::FromPool(const PoolState& pool, const base::IPAddress& ip) {
  return FamilyAllocation{.ip = ip,
                          .pool = pool.name(),
                          .prefix_length = pool.subnet().length(),
                          .gateway = pool.gateway(),
                          .pool_routes = pool.routes()};
}

api::Route DefaultRoute(const base::IPAddress& gateway) {
  return api::Route{.dst = gateway.is_v4() ? "0.0.0.0/0" : "::/0", .gw = gateway.ToString()};
}

AllocationResult BuildAllocationResult(std::vector<NicAllocation> nics,
                                       const std::vector<api::Route>& custom_routes,
                                       bool multiple_nic_no_name) {
  if (multiple_nic_no_name) {
    std::stable_sort(nics.begin(), nics.end(), [](const NicAllocation& a, const NicAllocation& b) {
      std::optional<int> x = NicIndex(a.if_name), y = NicIndex(b.if_name);
      return x && y && *x < *y;
    });
  }
  AllocationResult out;
  for (NicAllocation& nic : nics) {
    api::IPAllocationDetail d;
    d.interface_ = nic.if_name;
    if (multiple_nic_no_name && nic.if_name == "0") d.interface_ = "eth0";
    d.vlan = 0;
    bool has_gateway = false;
    if (nic.ipv4) {
      d.ipv4 = Cidr(*nic.ipv4);
      d.ipv4_pool = nic.ipv4->pool;
      if (nic.ipv4->gateway) {
        d.ipv4_gateway = nic.ipv4->gateway->ToString();
        has_gateway = true;
      }
      d.routes.insert(d.routes.end(), nic.ipv4->pool_routes.begin(), nic.ipv4->pool_routes.end());
    }
    if (nic.ipv6) {
      d.ipv6 = Cidr(*nic.ipv6);
      d.ipv6_pool = nic.ipv6->pool;
      if (nic.ipv6->gateway) {
        d.ipv6_gateway = nic.ipv6->gateway->ToString();
        has_gateway = true;
      }
      d.routes.insert(d.routes.end(), nic.ipv6->pool_routes.begin(), nic.ipv6->pool_routes.end());
    }
    if (has_gateway) d.clean_gateway = nic.clean_gateway;
    out.details.push_back(std::move(d));
  }

  // Custom routes: each goes to the first allocated subnet (in NIC order, v4 then v6) that
  // contains its gateway.
  for (const api::Route& r : custom_routes) {
    auto gw = base::IPAddress::Parse(r.gw);
    bool attached = false;
    for (size_t i = 0; gw.ok() && !attached && i < nics.size(); ++i) {
      for (const std::optional<FamilyAllocation>* fam : {&nics[i].ipv4, &nics[i].ipv6}) {
        if (!fam->has_value()) continue;
        auto subnet = base::IPPrefix::Parse(Cidr(**fam));
        if (subnet.ok() && subnet->Contains(*gw)) {
          out.details[i].routes.push_back(r);
          attached = true;
          break;
        }
      }
    }
    if (!attached) out.unattached_routes.push_back(r);
  }
  return out;
}

std::vector<api::IPAllocationDetail> EndpointDetails(const AllocationResult& result,
                                                     bool multiple_nic_no_name) {
  std::vector<api::IPAllocationDetail> out = result.details;
  if (multiple_nic_no_name) {
    for (size_t i = 1; i < out.size(); ++i) out[i].interface_.clear();
  }
  return out;
}

Reply ReplyFromDetails(const std::vector<api::IPAllocationDetail>& details) {
  Reply reply;
  for (const api::IPAllocationDetail& d : details) {
    const bool clean = d.clean_gateway.value_or(false);
    for (int version : {4, 6}) {
      const std::optional<std::string>& ip = version == 4 ? d.ipv4 : d.ipv6;
      if (!ip.has_value()) continue;
      const std::optional<std::string>& gw = version == 4 ? d.ipv4_gateway : d.ipv6_gateway;
      const std::optional<std::string>& pool = version == 4 ? d.ipv4_pool : d.ipv6_pool;
      ReplyIP rip{.address = *ip,
                  .gateway = gw.value_or(""),
                  .pool = pool.value_or(""),
                  .nic = d.interface_,
                  .version = version,
                  .vlan = d.vlan.value_or(0)};
      reply.ips.push_back(std::move(rip));
      if (gw.has_value() && !clean) {
        auto g = base::IPAddress::Parse(*gw);
        if (g.ok()) {
          api::Route def = DefaultRoute(*g);
          reply.routes.push_back({.if_name = d.interface_, .dst = def.dst, .gw = def.gw});
        }
      }
    }
    for (const api::Route& r : d.routes) {
      reply.routes.push_back({.if_name = d.interface_, .dst = r.dst, .gw = r.gw});
    }
  }
  return reply;
}

}  // namespace spiderpool::ipam
