#include "operator/ipam/counts.h"

#include <gtest/gtest.h>

namespace spiderpool::op::ipam {
namespace {

api::SpiderIPPool Pool(std::vector<std::string> ips, std::vector<std::string> exclude,
                       std::vector<std::string> allocated, std::string subnet = "10.0.0.0/24") {
  api::SpiderIPPool p;
  p.metadata.name = "p";
  p.spec.subnet = std::move(subnet);
  p.spec.ips = std::move(ips);
  p.spec.exclude_ips = std::move(exclude);
  api::PoolIPAllocations recs;
  for (const std::string& ip : allocated) recs[ip] = {.pod = "ns/p-" + ip, .pod_uid = "u-" + ip};
  p.SetAllocatedIPs(recs);
  p.status.allocated_ip_count = 99;  // drift: the count must come from the records
  return p;
}

std::vector<base::IPRange> Ranges(std::vector<std::string> texts) {
  auto r = base::ParseIPRanges(texts);
  EXPECT_TRUE(r.ok());
  return base::MergeIPRanges(*r);
}

TEST(Counts, PoolTotalAllocatedFree) {
  auto p = Pool({"10.0.0.10-10.0.0.29"}, {"10.0.0.10-10.0.0.11"}, {"10.0.0.12", "10.0.0.13"});
  auto c = ComputePoolCounts(p, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c, (api::PoolIPCounts{.total = 18, .allocated = 2, .reserved = 0, .free = 16}));
}

TEST(Counts, ReservedIPsAreNotFreeAndNotCountedTwice) {
  // 10.0.0.20 is reserved AND allocated (a pod kept it): free loses it once.
  auto p = Pool({"10.0.0.10-10.0.0.29"}, {}, {"10.0.0.12", "10.0.0.20"});
  auto c = ComputePoolCounts(p, Ranges({"10.0.0.20-10.0.0.21", "10.0.1.0-10.0.1.255"}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->total, 20);  // upstream: reserved IPs stay in the total
  EXPECT_EQ(c->allocated, 2);
  EXPECT_EQ(c->reserved, 1);  // 10.0.0.21; 10.0.0.20 is the pod's
  EXPECT_EQ(c->free, 20 - 2 /*reserved*/ - 1 /*12*/);
  EXPECT_EQ(c->allocated + c->reserved + c->free, c->total);
}

TEST(Counts, RecordsOutsideTheUsableSetCountAsAllocatedOnly) {
  // A record for an excluded IP (excludeIPs grew after the allocation).
  auto p = Pool({"10.0.0.10-10.0.0.19"}, {"10.0.0.10"}, {"10.0.0.10", "10.0.0.11"});
  auto c = ComputePoolCounts(p, {});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, (api::PoolIPCounts{.total = 9, .allocated = 2, .reserved = 0, .free = 8}));
}

// Node reservations (an agent's IPs held ahead, api::IsNodeReservation) are neither a pod's nor
// free: reservedIPCount shows them, so allocated + reserved + free == total.
TEST(Counts, NodeReservationsAreReservedNotAllocatedNorFree) {
  auto p = Pool({"10.0.0.1-10.0.0.5"}, {}, {"10.0.0.1"});
  auto recs = p.AllocatedIPs();
  ASSERT_TRUE(recs.ok());
  (*recs)["10.0.0.2"] = {.pod = "", .pod_uid = "", .node = "node1"};
  (*recs)["10.0.0.3"] = {.pod = "", .pod_uid = "", .node = "node1"};
  p.SetAllocatedIPs(*recs);
  auto c = ComputePoolCounts(p, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c, (api::PoolIPCounts{.total = 5, .allocated = 1, .reserved = 2, .free = 2}));
  // A SpiderReservedIP over a node reservation and a free IP: the free one becomes reserved.
  c = ComputePoolCounts(p, Ranges({"10.0.0.3-10.0.0.4"}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, (api::PoolIPCounts{.total = 5, .allocated = 1, .reserved = 3, .free = 1}));
}

TEST(Counts, EmptyAndIPv6AndHuge) {
  auto empty = ComputePoolCounts(Pool({}, {}, {}), {});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, (api::PoolIPCounts{}));

  auto v6 = Pool({"fd00::10-fd00::1f"}, {"fd00::10"}, {"fd00::11"}, "fd00::/64");
  auto c = ComputePoolCounts(v6, Ranges({"fd00::1f"}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, (api::PoolIPCounts{.total = 15, .allocated = 1, .reserved = 1, .free = 13}));

  auto huge = Pool({"fd00::-fd00::ffff:ffff:ffff:ffff"}, {}, {}, "fd00::/32");
  huge.spec.ips = {"fd00::-fd00:0:ffff:ffff:ffff:ffff:ffff:ffff"};  // 2^96 addresses
  c = ComputePoolCounts(huge, {});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->total, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(c->free, std::numeric_limits<int64_t>::max());
}

TEST(Counts, FamilyMismatchAndBadInputAreErrorsWithTheField) {
  auto p = Pool({"10.0.0.10", "fd00::1"}, {}, {});
  auto c = ComputePoolCounts(p, {});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find("spec.ips[1]"), std::string::npos);
  p = Pool({"10.0.0.10"}, {"10.0.0.300"}, {});
  c = ComputePoolCounts(p, {});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find("spec.excludeIPs[0]"), std::string::npos);
  p = Pool({"10.0.0.10"}, {}, {});
  p.status.allocated_ips = "{not json";
  EXPECT_FALSE(ComputePoolCounts(p, {}).ok());
}

TEST(Counts, ReservedRangesSkipGarbage) {
  auto a = std::make_shared<api::SpiderReservedIP>();
  a->spec.ips = {"10.0.0.5-10.0.0.6", "bogus"};
  auto b = std::make_shared<api::SpiderReservedIP>();
  b->spec.ips = {"10.0.0.7", "fd00::1"};
  auto r = ReservedRanges({a, b, nullptr});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].ToString(), "10.0.0.5-10.0.0.7");
  EXPECT_EQ(r[1].ToString(), "fd00::1");
}

TEST(Counts, Overlaps) {
  auto p = Pool({"10.0.0.10-10.0.0.20"}, {}, {});
  EXPECT_TRUE(PoolOverlaps(p, Ranges({"10.0.0.20-10.0.0.30"})));
  EXPECT_FALSE(PoolOverlaps(p, Ranges({"10.0.0.21-10.0.0.30", "fd00::1"})));
  api::SpiderSubnet s;
  s.spec.ips = {"10.0.0.1-10.0.0.5"};
  EXPECT_TRUE(SubnetOverlaps(s, Ranges({"10.0.0.5"})));
  EXPECT_FALSE(SubnetOverlaps(s, Ranges({"10.0.0.6"})));
}

TEST(Counts, Subnet) {
  api::SpiderSubnet s;
  s.spec.subnet = "10.0.0.0/24";
  s.spec.ips = {"10.0.0.10-10.0.0.29"};
  s.spec.exclude_ips = {"10.0.0.29"};
  api::PoolIPPreAllocations controlled = {
      {"a", {.ips = {"10.0.0.10-10.0.0.14"}}},
      {"b", {.ips = {"10.0.0.15", "10.0.0.16"}, .application = "apps_v1_Deployment_ns_d"}},
      {"bad", {.ips = {"nonsense"}}},
  };
  auto c = ComputeSubnetCounts(s, controlled, Ranges({"10.0.0.20"}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->total, 19);
  EXPECT_EQ(c->allocated, 7);
  EXPECT_EQ(c->free, 19 - 7 - 1);
  EXPECT_EQ(CountPreAllocation(controlled["a"], base::IPFamily::kV4), 5);
  EXPECT_EQ(CountPreAllocation(controlled["a"], base::IPFamily::kV6), 0);
}

TEST(Counts, FamilyOf) {
  EXPECT_EQ(FamilyOf(4, ""), base::IPFamily::kV4);
  EXPECT_EQ(FamilyOf(6, "10.0.0.0/8"), base::IPFamily::kV6);  // ipVersion wins
  EXPECT_EQ(FamilyOf(std::nullopt, "fd00::/64"), base::IPFamily::kV6);
  EXPECT_EQ(FamilyOf(std::nullopt, "x"), std::nullopt);
  EXPECT_EQ(ClampCount(absl::MakeUint128(1, 0)), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ClampCount(42), 42);
}

}  // namespace
}  // namespace spiderpool::op::ipam
