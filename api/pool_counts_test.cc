#include "api/pool_counts.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace spiderpool::api {
namespace {

std::vector<base::IPRange> Ranges(const std::vector<std::string>& texts) {
  auto r = base::ParseIPRanges(texts);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : std::vector<base::IPRange>{};
}

base::IPAddress IP(const std::string& text) { return *base::IPAddress::Parse(text); }

PoolIPAllocation Pod(const std::string& name) {
  return PoolIPAllocation{.pod = "default/" + name, .pod_uid = "uid-" + name, .node = "node1"};
}
PoolIPAllocation NodeHeld(const std::string& node) {
  return PoolIPAllocation{.pod = "", .pod_uid = "", .node = node};
}

void ExpectAddsUp(const PoolIPCounts& c) {
  EXPECT_EQ(c.allocated + c.reserved + c.free, c.total)
      << c.allocated << " + " << c.reserved << " + " << c.free << " != " << c.total;
}

TEST(PoolCounts, Empty) {
  PoolIPCounts c = CountPoolIPs(Ranges({"10.0.0.1-10.0.0.5"}), {}, {});
  EXPECT_EQ(c, (PoolIPCounts{.total = 5, .allocated = 0, .reserved = 0, .free = 5}));
  EXPECT_EQ(CountPoolIPs({}, {}, {}), PoolIPCounts{});
}

TEST(PoolCounts, PodsOnly) {
  PoolRecordsByIP recs = {{IP("10.0.0.1"), Pod("a")}, {IP("10.0.0.2"), Pod("b")}};
  PoolIPCounts c = CountPoolIPs(Ranges({"10.0.0.1-10.0.0.5"}), {}, recs);
  EXPECT_EQ(c, (PoolIPCounts{.total = 5, .allocated = 2, .reserved = 0, .free = 3}));
}

TEST(PoolCounts, NodeReservationsOnly) {
  PoolRecordsByIP recs = {{IP("10.0.0.1"), NodeHeld("node1")},
                          {IP("10.0.0.2"), NodeHeld("node1")},
                          {IP("10.0.0.3"), NodeHeld("node2")}};
  PoolIPCounts c = CountPoolIPs(Ranges({"10.0.0.1-10.0.0.5"}), {}, recs);
  EXPECT_EQ(c, (PoolIPCounts{.total = 5, .allocated = 0, .reserved = 3, .free = 2}));
}

// The example: 1 pod IP of 5, two IPs reserved by the node: "free 2" now adds up.
TEST(PoolCounts, MixedAddsUp) {
  PoolRecordsByIP recs = {{IP("10.0.0.1"), Pod("a")},
                          {IP("10.0.0.2"), NodeHeld("node1")},
                          {IP("10.0.0.3"), NodeHeld("node1")}};
  PoolIPCounts c = CountPoolIPs(Ranges({"10.0.0.1-10.0.0.5"}), {}, recs);
  EXPECT_EQ(c, (PoolIPCounts{.total = 5, .allocated = 1, .reserved = 2, .free = 2}));
}

TEST(PoolCounts, IPv6) {
  PoolRecordsByIP recs = {{IP("fd00::10"), Pod("a")},
                          {IP("fd00::11"), Pod("b")},
                          {IP("fd00::12"), NodeHeld("node1")}};
  // fd00::10-fd00::1f minus excluded fd00::1f: usable 15.
  auto usable = base::SubtractIPRanges(Ranges({"fd00::10-fd00::1f"}), Ranges({"fd00::1f"}));
  PoolIPCounts c = CountPoolIPs(usable, Ranges({"10.0.0.0-10.0.0.255"}), recs);
  EXPECT_EQ(c, (PoolIPCounts{.total = 15, .allocated = 2, .reserved = 1, .free = 12}));
}

// A SpiderReservedIP holds back the addresses no record holds; a pod still on a reserved IP
// (reserving does not evict) is allocated, once; a node reservation there is reserved, once.
TEST(PoolCounts, SpiderReservedIPs) {
  PoolRecordsByIP recs = {{IP("10.0.0.1"), Pod("a")},          // inside the SpiderReservedIP
                          {IP("10.0.0.2"), NodeHeld("node1")},  // inside it too
                          {IP("10.0.0.6"), Pod("b")},
                          {IP("10.0.0.7"), NodeHeld("node1")}};
  PoolIPCounts c = CountPoolIPs(Ranges({"10.0.0.1-10.0.0.10"}),
                                Ranges({"10.0.0.1-10.0.0.4", "10.0.0.200", "fd00::1"}), recs);
  // reserved: node held .2 and .7, unheld SpiderReservedIP .3 and .4.
  EXPECT_EQ(c, (PoolIPCounts{.total = 10, .allocated = 2, .reserved = 4, .free = 4}));
}

// A pod record outside spec.ips − excludeIPs (the webhook forbids it) still counts, as upstream
// counts every record; a node reservation there is not the pool's any more.
TEST(PoolCounts, RecordsOutsideTheUsableSet) {
  PoolRecordsByIP recs = {{IP("10.0.0.1"), Pod("a")},
                          {IP("10.0.0.99"), Pod("b")},
                          {IP("10.0.0.98"), NodeHeld("node1")}};
  PoolIPCounts c = CountPoolIPs(Ranges({"10.0.0.1-10.0.0.5"}), {}, recs);
  EXPECT_EQ(c, (PoolIPCounts{.total = 5, .allocated = 2, .reserved = 0, .free = 4}));
}

TEST(PoolCounts, EveryMixAddsUp) {
  const auto usable = Ranges({"10.0.0.1-10.0.0.20"});
  const auto blocked = Ranges({"10.0.0.5-10.0.0.9"});
  for (int mask = 0; mask < (1 << 10); mask += 7) {
    PoolRecordsByIP recs;
    for (int i = 0; i < 10; ++i) {
      const base::IPAddress ip = IP("10.0.0." + std::to_string(2 * i + 1));
      if (mask & (1 << i)) {
        recs.emplace(ip, i % 3 == 0 ? NodeHeld("node1") : Pod(std::to_string(i)));
      }
    }
    PoolIPCounts c = CountPoolIPs(usable, blocked, recs);
    EXPECT_EQ(c.total, 20);
    ExpectAddsUp(c);
  }
}

TEST(PoolCounts, HugeIPv6Saturates) {
  PoolRecordsByIP recs = {{IP("fd00::1"), Pod("a")}, {IP("fd00::2"), NodeHeld("node1")}};
  PoolIPCounts c = CountPoolIPs(Ranges({"fd00::-fd00::ffff:ffff:ffff:ffff:ffff"}), {}, recs);
  EXPECT_EQ(c.total, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(c.allocated, 1);
  EXPECT_EQ(c.reserved, 1);
  EXPECT_EQ(c.free, std::numeric_limits<int64_t>::max());
}

TEST(PoolCounts, SetAndCompareStatus) {
  const PoolIPCounts c{.total = 5, .allocated = 1, .reserved = 2, .free = 2};
  IPPoolStatus st;
  EXPECT_FALSE(HasPoolIPCounts(st, c));
  SetPoolIPCounts(c, &st);
  EXPECT_EQ(st.total_ip_count, 5);
  EXPECT_EQ(st.allocated_ip_count, 1);
  EXPECT_EQ(st.reserved_ip_count, 2);
  EXPECT_EQ(st.free_ip_count, 2);
  EXPECT_TRUE(HasPoolIPCounts(st, c));
  st.reserved_ip_count.reset();  // written by an older version: rewrite
  EXPECT_FALSE(HasPoolIPCounts(st, c));
}

}  // namespace
}  // namespace spiderpool::api
