#include "ipam/allocator.h"

#include <limits>
#include <random>
#include <set>

#include "gtest/gtest.h"

namespace spiderpool::ipam {
namespace {

using base::IPAddress;
using base::IPFamily;
using base::IPRange;

IPAddress IP(std::string_view s) { return *IPAddress::Parse(s); }
IPRange R(std::string_view s) { return *IPRange::Parse(s); }

std::vector<std::string> Free(const Allocator& a) {
  return base::FormatIPRanges(a.FreeRanges());
}

TEST(Allocator, BuildFromRangesAndAllocated) {
  Allocator a(IPFamily::kV4, {R("10.0.0.10-10.0.0.20"), R("10.0.0.1-10.0.0.5"), R("10.0.0.4-10.0.0.6"),
                              R("fd00::1-fd00::9")},
              {IP("10.0.0.1"), IP("10.0.0.3"), IP("10.0.0.3"), IP("10.0.0.20"), IP("10.0.0.99"),
               IP("fd00::1")});
  EXPECT_EQ(base::FormatIPRanges(a.usable_ranges()),
            (std::vector<std::string>{"10.0.0.1-10.0.0.6", "10.0.0.10-10.0.0.20"}));
  EXPECT_EQ(Free(a), (std::vector<std::string>{"10.0.0.2", "10.0.0.4-10.0.0.6",
                                                "10.0.0.10-10.0.0.19"}));
  EXPECT_EQ(a.UsableCount(), 17);
  EXPECT_EQ(a.FreeCount(), 14);
  EXPECT_EQ(a.AllocatedCount(), 3);
  EXPECT_TRUE(a.IsUsable(IP("10.0.0.20")));
  EXPECT_FALSE(a.IsFree(IP("10.0.0.20")));
  EXPECT_FALSE(a.IsUsable(IP("10.0.0.7")));
  EXPECT_FALSE(a.IsUsable(IP("10.0.0.99")));
  EXPECT_FALSE(a.IsUsable(IP("fd00::2")));  // other family
  EXPECT_FALSE(a.IsFree(IP("fd00::2")));
}

TEST(Allocator, LowestFirstAndSpecific) {
  Allocator a(IPFamily::kV4, {R("10.0.0.1-10.0.0.4")}, {IP("10.0.0.1")});
  EXPECT_EQ(a.LowestFree(), IP("10.0.0.2"));
  EXPECT_EQ(a.AllocateLowest(), IP("10.0.0.2"));
  EXPECT_TRUE(a.Allocate(IP("10.0.0.4")));
  EXPECT_FALSE(a.Allocate(IP("10.0.0.4")));  // taken
  EXPECT_FALSE(a.Allocate(IP("10.0.0.9")));  // not usable
  EXPECT_FALSE(a.Allocate(IP("fd00::1")));   // other family
  EXPECT_EQ(a.AllocateLowest(), IP("10.0.0.3"));
  EXPECT_EQ(a.AllocateLowest(), std::nullopt);
  EXPECT_EQ(a.FreeCount(), 0);
  EXPECT_FALSE(a.Release(IP("10.0.0.9")));  // not usable
  EXPECT_TRUE(a.Release(IP("10.0.0.1")));
  EXPECT_FALSE(a.Release(IP("10.0.0.1")));  // already free
  EXPECT_TRUE(a.Release(IP("10.0.0.3")));
  EXPECT_TRUE(a.Release(IP("10.0.0.2")));  // joins both neighbours
  EXPECT_EQ(Free(a), (std::vector<std::string>{"10.0.0.1-10.0.0.3"}));
  EXPECT_TRUE(a.Release(IP("10.0.0.4")));
  EXPECT_EQ(Free(a), (std::vector<std::string>{"10.0.0.1-10.0.0.4"}));
  EXPECT_TRUE(a.Allocate(IP("10.0.0.2")));  // splits
  EXPECT_EQ(Free(a), (std::vector<std::string>{"10.0.0.1", "10.0.0.3-10.0.0.4"}));
  EXPECT_TRUE(a.Allocate(IP("10.0.0.3")));  // trims the start
  EXPECT_TRUE(a.Allocate(IP("10.0.0.4")));  // removes a single
  EXPECT_EQ(Free(a), (std::vector<std::string>{"10.0.0.1"}));
}

TEST(Allocator, EdgesOfTheAddressSpace) {
  Allocator v4(IPFamily::kV4, {R("255.255.255.254-255.255.255.255"), R("0.0.0.0-0.0.0.1")},
               {IP("255.255.255.255"), IP("0.0.0.0")});
  EXPECT_EQ(Free(v4), (std::vector<std::string>{"0.0.0.1", "255.255.255.254"}));
  EXPECT_TRUE(v4.Release(IP("255.255.255.255")));
  EXPECT_TRUE(v4.Release(IP("0.0.0.0")));
  EXPECT_EQ(Free(v4), (std::vector<std::string>{"0.0.0.0-0.0.0.1", "255.255.255.254-255.255.255.255"}));

  Allocator all6(IPFamily::kV6, {R("::-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")},
                 {IP("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")});
  EXPECT_EQ(all6.UsableCount(), absl::Uint128Max());  // saturated
  EXPECT_EQ(all6.AllocateLowest(), IP("::"));
  EXPECT_EQ(all6.AllocateLowest(), IP("::1"));
  EXPECT_TRUE(all6.Release(IP("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")));
  EXPECT_TRUE(all6.IsFree(IP("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")));

  Allocator empty;
  EXPECT_EQ(empty.AllocateLowest(), std::nullopt);
  EXPECT_EQ(empty.UsableCount(), 0);
}

TEST(Allocator, HugePoolsNeverScan) {
  // A /8 and a /64 with allocations at both ends and in the middle: building is instant and
  // the intervals are few.
  Allocator v4(IPFamily::kV4, {R("10.0.0.0-10.255.255.255")},
               {IP("10.0.0.0"), IP("10.128.0.0"), IP("10.255.255.255")});
  EXPECT_EQ(v4.free_interval_count(), 2u);
  EXPECT_EQ(v4.FreeCount(), (absl::uint128(1) << 24) - 3);
  Allocator v6(IPFamily::kV6, {R("fd00::-fd00::ffff:ffff:ffff:ffff")}, {IP("fd00::")});
  EXPECT_EQ(v6.FreeCount(), (absl::uint128(1) << 64) - 1);
  EXPECT_EQ(v6.AllocateLowest(), IP("fd00::1"));
  EXPECT_EQ(SaturatingInt64(v6.FreeCount()), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(SaturatingInt64(v4.FreeCount()), (int64_t{1} << 24) - 3);
}

TEST(Allocator, SaturatingInt64) {
  EXPECT_EQ(SaturatingInt64(0), 0);
  EXPECT_EQ(SaturatingInt64(absl::uint128(std::numeric_limits<int64_t>::max())),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(SaturatingInt64(absl::uint128(std::numeric_limits<int64_t>::max()) + 1),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(SaturatingInt64(absl::MakeUint128(1, 0)), std::numeric_limits<int64_t>::max());
}

// Random allocate / allocate-specific / release sequences against a std::set model of the
// taken addresses: no address is ever handed out twice, AllocateLowest is the lowest free
// usable address, and the counts always agree.
void PropertyRun(IPFamily family, absl::uint128 base_value, uint32_t seed) {
  auto addr = [&](uint64_t off) {
    absl::uint128 v = base_value + off;
    return family == IPFamily::kV4 ? IPAddress::V4(static_cast<uint32_t>(v)) : IPAddress::V6(v);
  };
  std::mt19937_64 rng(seed);
  // Usable: a few ranges in [0, 300) with holes.
  std::vector<IPRange> usable;
  std::set<uint64_t> usable_set;
  for (int i = 0; i < 5; ++i) {
    uint64_t a = rng() % 300, len = rng() % 60;
    uint64_t b = std::min<uint64_t>(a + len, 299);
    usable.emplace_back(addr(a), addr(b));
    for (uint64_t x = a; x <= b; ++x) usable_set.insert(x);
  }
  std::set<uint64_t> taken;
  std::vector<IPAddress> initial;
  for (int i = 0; i < 40; ++i) {
    uint64_t x = rng() % 320;
    initial.push_back(addr(x));
    if (usable_set.count(x)) taken.insert(x);
  }
  Allocator a(family, usable, initial);
  auto check = [&]() {
    ASSERT_EQ(a.UsableCount(), usable_set.size());
    ASSERT_EQ(a.AllocatedCount(), taken.size());
    ASSERT_EQ(a.FreeCount(), usable_set.size() - taken.size());
  };
  check();
  for (int step = 0; step < 3000; ++step) {
    int op = static_cast<int>(rng() % 3);
    uint64_t x = rng() % 320;
    if (op == 0) {
      std::optional<uint64_t> want;
      for (uint64_t u : usable_set) {
        if (!taken.count(u)) {
          want = u;
          break;
        }
      }
      std::optional<IPAddress> got = a.AllocateLowest();
      ASSERT_EQ(got.has_value(), want.has_value());
      if (got) {
        ASSERT_EQ(*got, addr(*want)) << "step " << step;
        ASSERT_TRUE(taken.insert(*want).second);  // never handed out twice
      }
    } else if (op == 1) {
      bool want = usable_set.count(x) && !taken.count(x);
      ASSERT_EQ(a.Allocate(addr(x)), want) << "step " << step;
      if (want) taken.insert(x);
    } else {
      bool want = usable_set.count(x) && taken.count(x);
      ASSERT_EQ(a.Release(addr(x)), want) << "step " << step;
      if (want) taken.erase(x);
    }
    ASSERT_EQ(a.IsFree(addr(x)), usable_set.count(x) && !taken.count(x));
    ASSERT_EQ(a.IsUsable(addr(x)), usable_set.count(x) > 0);
    check();
  }
  // The intervals are maximal and disjoint: adjacent intervals never touch.
  std::vector<IPRange> fr = a.FreeRanges();
  for (size_t i = 1; i < fr.size(); ++i) {
    ASSERT_LT(fr[i - 1].last().Next(), fr[i].first());
  }
}

TEST(Allocator, PropertyAgainstSetModel) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    PropertyRun(IPFamily::kV4, IPAddress::Parse("10.0.0.0")->value(), seed);
    PropertyRun(IPFamily::kV6, IPAddress::Parse("fd00::ffff:ffff:ffff:ff00")->value(), seed);
  }
}

}  // namespace
}  // namespace spiderpool::ipam
