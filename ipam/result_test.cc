#include "ipam/result.h"

#include "api/spider.h"
#include "gtest/gtest.h"

namespace spiderpool::ipam {
namespace {

using base::IPAddress;

IPAddress IP(std::string_view s) { return *IPAddress::Parse(s); }

FamilyAllocation V4(std::string ip, std::string pool, std::optional<std::string> gw,
                    std::vector<api::Route> routes = {}) {
  return FamilyAllocation{.ip = IP(ip),
                          .pool = std::move(pool),
                          .prefix_length = 24,
                          .gateway = gw ? std::optional(IP(*gw)) : std::nullopt,
                          .pool_routes = std::move(routes)};
}
FamilyAllocation V6(std::string ip, std::string pool, std::optional<std::string> gw) {
  return FamilyAllocation{.ip = IP(ip),
                          .pool = std::move(pool),
                          .prefix_length = 64,
                          .gateway = gw ? std::optional(IP(*gw)) : std::nullopt};
}

TEST(Result, FromPoolState) {
  api::SpiderIPPool p;
  p.metadata.name = "pool4";
  p.spec.subnet = "172.18.0.0/16";
  p.spec.ips = {"172.18.0.10-172.18.0.20"};
  p.spec.gateway = "172.18.0.1";
  p.spec.routes = std::vector<api::Route>{{.dst = "10.9.0.0/16", .gw = "172.18.0.2"}};
  auto st = PoolState::Build(p, {});
  ASSERT_TRUE(st.ok()) << st.status();
  auto a = st->Allocate({.pod = "ns/p", .pod_uid = "u", .interface_ = "eth0"});
  ASSERT_TRUE(a.ok());
  FamilyAllocation f = FamilyAllocation::FromPool(*st, a->ip);
  AllocationResult r = BuildAllocationResult({{.if_name = "eth0", .ipv4 = f}}, {}, false);
  ASSERT_EQ(r.details.size(), 1u);
  const api::IPAllocationDetail& d = r.details[0];
  EXPECT_EQ(d.interface_, "eth0");
  EXPECT_EQ(d.ipv4, "172.18.0.10/16");
  EXPECT_EQ(d.ipv4_pool, "pool4");
  EXPECT_EQ(d.ipv4_gateway, "172.18.0.1");
  EXPECT_EQ(d.clean_gateway, false);
  EXPECT_EQ(d.vlan, 0);
  EXPECT_FALSE(d.ipv6.has_value());
  EXPECT_EQ(d.routes, (std::vector<api::Route>{{.dst = "10.9.0.0/16", .gw = "172.18.0.2"}}));
  // The detail encodes as upstream's SpiderEndpoint shape.
  EXPECT_EQ(base::DumpJson(api::Encode(d)),
            R"({"cleanGateway":false,"interface":"eth0","ipv4":"172.18.0.10/16",)"
            R"("ipv4Gateway":"172.18.0.1","ipv4Pool":"pool4",)"
            R"("routes":[{"dst":"10.9.0.0/16","gw":"172.18.0.2"}],"vlan":0})");
}

TEST(Result, DualStackRoutesAndCustomRoutes) {
  std::vector<NicAllocation> nics = {
      {.if_name = "eth0",
       .ipv4 = V4("10.0.0.5", "p4", "10.0.0.1", {{.dst = "10.8.0.0/16", .gw = "10.0.0.2"}}),
       .ipv6 = V6("fd00::5", "p6", "fd00::1")},
      {.if_name = "net1", .clean_gateway = true, .ipv4 = V4("10.1.0.5", "q4", "10.1.0.1")},
  };
  std::vector<api::Route> custom = {{.dst = "192.168.0.0/16", .gw = "10.1.0.254"},
                                    {.dst = "fd09::/64", .gw = "fd00::fe"},
                                    {.dst = "172.30.0.0/16", .gw = "172.30.0.1"}};
  AllocationResult r = BuildAllocationResult(nics, custom, false);
  ASSERT_EQ(r.details.size(), 2u);
  EXPECT_EQ(r.details[0].ipv6, "fd00::5/64");
  EXPECT_EQ(r.details[0].ipv6_gateway, "fd00::1");
  EXPECT_EQ(r.details[0].routes,
            (std::vector<api::Route>{{.dst = "10.8.0.0/16", .gw = "10.0.0.2"},
                                     {.dst = "fd09::/64", .gw = "fd00::fe"}}));
  EXPECT_EQ(r.details[1].routes,
            (std::vector<api::Route>{{.dst = "192.168.0.0/16", .gw = "10.1.0.254"}}));
  EXPECT_EQ(r.details[1].clean_gateway, true);
  EXPECT_EQ(r.unattached_routes,
            (std::vector<api::Route>{{.dst = "172.30.0.0/16", .gw = "172.30.0.1"}}));

  Reply reply = ReplyFromDetails(r.details);
  ASSERT_EQ(reply.ips.size(), 3u);
  EXPECT_EQ(reply.ips[0].address, "10.0.0.5/24");
  EXPECT_EQ(reply.ips[0].gateway, "10.0.0.1");
  EXPECT_EQ(reply.ips[0].pool, "p4");
  EXPECT_EQ(reply.ips[0].version, 4);
  EXPECT_EQ(reply.ips[1].version, 6);
  EXPECT_EQ(reply.ips[2].nic, "net1");
  std::vector<std::string> routes;
  for (const ReplyRoute& rr : reply.routes) routes.push_back(rr.if_name + " " + rr.dst + " " + rr.gw);
  // Default routes for eth0 only (net1 has cleanGateway).
  EXPECT_EQ(routes, (std::vector<std::string>{"eth0 0.0.0.0/0 10.0.0.1", "eth0 ::/0 fd00::1",
                                              "eth0 10.8.0.0/16 10.0.0.2",
                                              "eth0 fd09::/64 fd00::fe",
                                              "net1 192.168.0.0/16 10.1.0.254"}));
}

TEST(Result, NoGatewayMeansNoDefaultRouteAndNoCleanGateway) {
  AllocationResult r =
      BuildAllocationResult({{.if_name = "eth0", .ipv4 = V4("10.0.0.5", "p", std::nullopt)}}, {},
                            false);
  EXPECT_FALSE(r.details[0].ipv4_gateway.has_value());
  EXPECT_FALSE(r.details[0].clean_gateway.has_value());
  EXPECT_TRUE(ReplyFromDetails(r.details).routes.empty());
}

TEST(Result, MultipleNICsWithoutNames) {
  std::vector<NicAllocation> nics = {
      {.if_name = "2", .ipv4 = V4("10.2.0.5", "c", std::nullopt)},
      {.if_name = "0", .ipv4 = V4("10.0.0.5", "a", "10.0.0.1")},
      {.if_name = "1", .ipv4 = V4("10.1.0.5", "b", std::nullopt)},
  };
  AllocationResult r = BuildAllocationResult(nics, {}, true);
  ASSERT_EQ(r.details.size(), 3u);
  EXPECT_EQ(r.details[0].interface_, "eth0");
  EXPECT_EQ(r.details[0].ipv4_pool, "a");
  EXPECT_EQ(r.details[1].interface_, "1");
  EXPECT_EQ(r.details[2].interface_, "2");
  std::vector<api::IPAllocationDetail> stored = EndpointDetails(r, true);
  EXPECT_EQ(stored[0].interface_, "eth0");
  EXPECT_EQ(stored[1].interface_, "");
  EXPECT_EQ(stored[2].interface_, "");
  EXPECT_EQ(EndpointDetails(r, false)[1].interface_, "1");
}

TEST(Result, DefaultRoute) {
  EXPECT_EQ(DefaultRoute(IP("10.0.0.1")), (api::Route{.dst = "0.0.0.0/0", .gw = "10.0.0.1"}));
  EXPECT_EQ(DefaultRoute(IP("fd00::1")), (api::Route{.dst = "::/0", .gw = "fd00::1"}));
}

}  // namespace
}  // namespace spiderpool::ipam
