#include "base/ip.h"

#include <gtest/gtest.h>

namespace spiderpool::base {
namespace {

TEST(IPAddress, ParsesAndPrintsBothFamilies) {
  auto v4 = IPAddress::Parse("172.18.30.131");
  ASSERT_TRUE(v4.ok());
  EXPECT_TRUE(v4->is_v4());
  EXPECT_EQ(v4->ToString(), "172.18.30.131");
  auto v6 = IPAddress::Parse("fd00::0001");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->ToString(), "fd00::1");
  EXPECT_EQ(v6->family(), IPFamily::kV6);
}

TEST(IPAddress, RejectsMalformed) {
  for (const char* bad : {"", "10.0.0.300", "010.0.0.1", "10.0.0", "fe80::1%eth0", "1.2.3.4/32",
                          "abc", "::g", " 10.0.0.1"}) {
    auto r = IPAddress::Parse(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_EQ(IPAddress::Parse("10.0.0.300").status().message(), "\"10.0.0.300\" is not an IP");
}

TEST(IPAddress, OrdersWithinAndAcrossFamilies) {
  auto a = *IPAddress::Parse("10.0.0.1");
  auto b = *IPAddress::Parse("10.0.0.2");
  auto c = *IPAddress::Parse("::1");
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);  // v4 sorts before v6
  EXPECT_EQ(a.Next(), b);
  EXPECT_EQ(b.Prev(), a);
  auto last = *IPAddress::Parse("255.255.255.255");
  EXPECT_TRUE(last.IsLast());
  EXPECT_EQ(last.Next(), last);
}

TEST(IPPrefix, ParsesCanonicalAndNot) {
  auto p = IPPrefix::Parse("172.18.0.0/16");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->IsCanonical());
  EXPECT_EQ(p->First().ToString(), "172.18.0.0");
  EXPECT_EQ(p->Last().ToString(), "172.18.255.255");
  EXPECT_EQ(p->Size(), 65536);
  auto q = IPPrefix::Parse("10.0.0.1/24");
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(q->IsCanonical());
  EXPECT_EQ(q->Canonical().ToString(), "10.0.0.0/24");
  for (const char* bad : {"10.0.0.0", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/", "fd00::/129",
                          "10.0.0.0/08", "x/8", "10.0.0.0/2222222222"}) {
    EXPECT_FALSE(IPPrefix::Parse(bad).ok()) << bad;
  }
}

TEST(IPPrefix, CountsWithoutOverflow) {
  EXPECT_EQ(IPPrefix::Parse("fd00::/64")->Size(), absl::uint128(1) << 64);
  EXPECT_EQ(IPPrefix::Parse("::/1")->Size(), absl::uint128(1) << 127);
  EXPECT_EQ(IPPrefix::Parse("::/0")->Size(), absl::Uint128Max());  // saturates
  EXPECT_EQ(IPPrefix::Parse("0.0.0.0/0")->Size(), absl::uint128(1) << 32);
  EXPECT_EQ(Uint128ToString(IPPrefix::Parse("fd00::/64")->Size()), "18446744073709551616");
}

TEST(IPPrefix, ContainmentAndOverlap) {
  auto p = *IPPrefix::Parse("172.18.0.0/16");
  EXPECT_TRUE(p.Contains(*IPAddress::Parse("172.18.30.131")));
  EXPECT_FALSE(p.Contains(*IPAddress::Parse("172.19.0.1")));
  EXPECT_FALSE(p.Contains(*IPAddress::Parse("::1")));
  EXPECT_TRUE(p.Contains(*IPRange::Parse("172.18.30.131-172.18.30.140")));
  EXPECT_FALSE(p.Contains(*IPRange::Parse("172.18.255.250-172.19.0.3")));
  EXPECT_TRUE(p.Overlaps(*IPPrefix::Parse("172.18.30.0/24")));
  EXPECT_TRUE(p.Overlaps(*IPPrefix::Parse("172.0.0.0/8")));
  EXPECT_FALSE(p.Overlaps(*IPPrefix::Parse("172.19.0.0/16")));
  EXPECT_FALSE(p.Overlaps(*IPPrefix::Parse("::/0")));
}

TEST(IPRange, ParsesSeedRangeAndIterates) {
  auto r = IPRange::Parse("172.18.30.131-172.18.30.140");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->Count(), 10);
  std::vector<std::string> seen;
  for (const IPAddress& ip : *r) seen.push_back(ip.ToString());
  ASSERT_EQ(seen.size(), 10u);
  EXPECT_EQ(seen.front(), "172.18.30.131");
  EXPECT_EQ(seen.back(), "172.18.30.140");
  EXPECT_EQ(r->ToString(), "172.18.30.131-172.18.30.140");
  EXPECT_EQ(IPRange::Parse("10.0.0.5")->ToString(), "10.0.0.5");
}

TEST(IPRange, IteratesToTheEndOfTheAddressSpace) {
  auto r = *IPRange::Parse("255.255.255.254-255.255.255.255");
  int n = 0;
  for (auto it = r.begin(); it != r.end(); ++it) ++n;
  EXPECT_EQ(n, 2);
}

TEST(IPRange, RejectsBadRanges) {
  EXPECT_FALSE(IPRange::Parse("10.0.0.9-10.0.0.1").ok());
  EXPECT_FALSE(IPRange::Parse("10.0.0.1-fd00::1").ok());
  EXPECT_FALSE(IPRange::Parse("10.0.0.1-10.0.0.2-10.0.0.3").ok());
  EXPECT_FALSE(IPRange::Parse("10.0.0.1-").ok());
}

TEST(IPRange, CountsWholeV6SpaceSaturated) {
  auto r = *IPRange::Parse("::-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
  EXPECT_EQ(r.Count(), absl::Uint128Max());
  auto r64 = *IPRange::Parse("fd00::-fd00::ffff:ffff:ffff:ffff");
  EXPECT_EQ(r64.Count(), absl::uint128(1) << 64);
}

TEST(IPRanges, ParseListNamesTheIndex) {
  auto r = ParseIPRanges({"10.0.0.1", "10.0.0.2-10.0.0.3", "10.0.0.300"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "[2]: \"10.0.0.300\" is not an IP");
  auto fam = ParseIPRanges({"10.0.0.1", "fd00::1"}, IPFamily::kV4);
  ASSERT_FALSE(fam.ok());
  EXPECT_EQ(fam.status().message(), "[1]: \"fd00::1\" is not IPv4");
}

TEST(IPRanges, MergeSubtractCount) {
  auto ranges = *ParseIPRanges({"10.0.0.5-10.0.0.9", "10.0.0.1", "10.0.0.2-10.0.0.4",
                                "10.0.0.20", "10.0.0.8-10.0.0.12"});
  auto merged = MergeIPRanges(ranges);
  EXPECT_EQ(FormatIPRanges(merged),
            (std::vector<std::string>{"10.0.0.1-10.0.0.12", "10.0.0.20"}));
  EXPECT_EQ(CountIPs(merged), 13);
  auto minus = SubtractIPRanges(merged, *ParseIPRanges({"10.0.0.1", "10.0.0.5-10.0.0.6",
                                                        "10.0.0.12-10.0.0.30"}));
  EXPECT_EQ(FormatIPRanges(minus),
            (std::vector<std::string>{"10.0.0.2-10.0.0.4", "10.0.0.7-10.0.0.11"}));
  auto mixed = MergeIPRanges(*ParseIPRanges({"fd00::1", "10.0.0.1", "fd00::2"}));
  EXPECT_EQ(FormatIPRanges(mixed), (std::vector<std::string>{"10.0.0.1", "fd00::1-fd00::2"}));
}

}  // namespace
}  // namespace spiderpool::base
