// Deterministic random inputs: (1) mutated pod-template annotations through WantedAutoPools
// (user text: never a crash, errors are InvalidArgument, results sane); (2) PlanPoolIPs against
// a std::set model on a small IPv4 universe (no IP of another pool, allocated IPs kept, the
// lowest free IPs claimed, sizes as asked, everything not kept is released).

#include <random>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "operator/subnet/plan.h"

namespace spiderpool::op::subnet {
namespace {

using base::IPAddress;
using base::IPRange;

const std::vector<std::string> kSeeds = {
    R"({"interface":"eth0","ipv4":["s4"],"ipv6":["s6"]})",
    R"([{"interface":"eth0","ipv4":["a"]},{"interface":"net1","ipv6":["b"]}])",
    R"({"ipv4":["s4","s5"]})",
    "+3",
    "7",
    "true",
    "false",
    "null",
    "",
};
const std::vector<std::string> kFragments = {
    "{",        "}",   "[", "]", ",", ":", "\"", "null", "+", "-", "99999999999999999999",
    "\"ipv4\"", "\xff"};
const std::vector<std::string> kKeys = {"ipam.spidernet.io/subnet", "ipam.spidernet.io/subnets",
                                        "ipam.spidernet.io/ippool-ip-number",
                                        "ipam.spidernet.io/ippool-reclaim"};

std::string Mutate(std::string s, std::mt19937& rng) {
  const int edits = static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    const size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 4) {
      case 0:
        if (pos < s.size()) s[pos] = static_cast<char>(rng() % 256);
        break;
      case 1:
        s.insert(pos, kFragments[rng() % kFragments.size()]);
        break;
      case 2:
        if (pos < s.size()) s.erase(pos, 1 + rng() % 6);
        break;
      default:
        s = s.substr(0, pos);
        break;
    }
  }
  return s;
}

TEST(PlanFuzzTest, WantedAutoPoolsOnMutatedAnnotations) {
  std::mt19937 rng(20240611);
  int ok = 0;
  for (int i = 0; i < 20000; ++i) {
    Application app;
    app.api_version = "apps/v1";
    app.kind = "Deployment";
    app.replicas = static_cast<int64_t>(rng() % 5) - 1;
    for (const std::string& k : kKeys) {
      if (rng() % 2 == 0) continue;
      app.pod_annotations[k] = Mutate(kSeeds[rng() % kSeeds.size()], rng);
    }
    auto w = WantedAutoPools(
        app, {.enable_ipv4 = rng() % 4 != 0,
              .enable_ipv6 = rng() % 2 == 0,
              .cluster_subnet_default_flexible_ip_number = static_cast<int64_t>(rng() % 3)});
    if (!w.ok()) {
      EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument) << w.status();
      continue;
    }
    ++ok;
    for (const AutoPoolWant& x : *w) {
      EXPECT_TRUE(x.ip_version == 4 || x.ip_version == 6);
      EXPECT_GE(x.ip_number, 0);
      EXPECT_FALSE(x.subnet.empty());
    }
  }
  EXPECT_GT(ok, 100);  // the generator reaches the success path too
}

// ---- PlanPoolIPs against a set model --------------------------------------------------------

constexpr uint32_t kBase = 0x0a000000;  // 10.0.0.0
constexpr uint32_t kSize = 48;
using Set = std::set<uint32_t>;

std::vector<IPRange> ToRanges(const Set& s) {
  std::vector<IPRange> out;
  for (uint32_t v : s) out.emplace_back(IPAddress::V4(kBase + v), IPAddress::V4(kBase + v));
  return base::MergeIPRanges(std::move(out));
}
Set ToSet(const std::vector<IPRange>& r) {
  Set s;
  for (const IPRange& x : r) {
    for (const IPAddress& ip : x) s.insert(static_cast<uint32_t>(ip.value()) - kBase);
  }
  return s;
}
Set Random(std::mt19937& rng, int percent, const Set& within = {}) {
  Set s;
  for (uint32_t v = 0; v < kSize; ++v) {
    if ((within.empty() || within.count(v)) && static_cast<int>(rng() % 100) < percent) s.insert(v);
  }
  return s;
}
Set Minus(Set a, const Set& b) {
  for (uint32_t v : b) a.erase(v);
  return a;
}
Set Plus(Set a, const Set& b) {
  a.insert(b.begin(), b.end());
  return a;
}
Set And(const Set& a, const Set& b) {
  Set out;
  for (uint32_t v : a) {
    if (b.count(v)) out.insert(v);
  }
  return out;
}

TEST(PlanFuzzTest, PlanPoolIPsMatchesTheModel) {
  std::mt19937 rng(7);
  int grown = 0, shrunk = 0, exhausted = 0;
  for (int i = 0; i < 5000; ++i) {
    const Set usable = Random(rng, 80);
    const Set reserved = Random(rng, 10);
    const Set others = Random(rng, 30);
    const Set mine_pool = Minus(Random(rng, 25), others);  // recorded for this pool
    Set entry, releasing;
    for (uint32_t v : mine_pool) (rng() % 4 == 0 ? releasing : entry).insert(v);
    const bool has_pool = rng() % 5 != 0;
    // The pool lists part of its records, plus (rarely) unrecorded IPs (maybe other pools').
    Set pool = Plus(Random(rng, 80, Plus(entry, releasing)), Random(rng, 3));
    const Set allocated = Random(rng, 40, pool);
    const int64_t desired = static_cast<int64_t>(rng() % 2 == 0 ? rng() % 20 : rng() % 45);

    PlanInput in;
    in.subnet_usable = ToRanges(usable);
    in.reserved = ToRanges(reserved);
    in.others = ToRanges(others);
    in.entry = ToRanges(entry);
    in.releasing = ToRanges(releasing);
    if (has_pool) in.pool = ToRanges(pool);
    in.allocated = has_pool ? ToRanges(allocated) : std::vector<IPRange>{};
    in.desired = desired;
    auto plan = PlanPoolIPs(in);

    const Set own = Plus(entry, releasing);
    Set base = has_pool ? pool : entry;
    const Set conflict = And(Minus(base, own), others);
    const Set alloc = has_pool ? allocated : Set{};
    if (!And(conflict, alloc).empty()) {
      EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
      continue;
    }
    base = Minus(base, conflict);
    const Set free = Minus(Minus(Minus(Minus(usable, reserved), others), own), base);
    const size_t spare = Minus(own, base).size();
    if (base.size() + spare + free.size() < static_cast<size_t>(desired)) {
      EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
      ++exhausted;
      continue;
    }
    ASSERT_TRUE(plan.ok()) << plan.status();
    const Set target = ToSet(plan->target);
    EXPECT_TRUE(And(target, others).empty());
    EXPECT_EQ(And(target, And(alloc, base)), And(alloc, base)) << "allocated IPs are kept";
    EXPECT_EQ(ToSet(plan->releasing), Minus(Plus(own, base), target));
    EXPECT_EQ(ToSet(plan->conflicts_dropped), conflict);
    if (base.size() < static_cast<size_t>(desired)) {
      ++grown;
      EXPECT_EQ(target.size(), static_cast<size_t>(desired));
      const Set claimed = ToSet(plan->claimed);
      EXPECT_EQ(And(claimed, free), claimed);
      // Own spare IPs first, then the lowest free ones.
      if (!claimed.empty()) {
        EXPECT_EQ(Minus(own, base), And(Minus(own, base), target));
        for (uint32_t v : free) {
          if (v < *claimed.rbegin()) {
            EXPECT_TRUE(claimed.count(v)) << v;
          }
        }
      }
    } else {
      if (base.size() > static_cast<size_t>(desired)) ++shrunk;
      const size_t keep = std::max(static_cast<size_t>(desired), And(alloc, base).size());
      EXPECT_EQ(target.size(), keep);
      EXPECT_EQ(plan->over_desired, static_cast<int64_t>(keep) - desired);
      EXPECT_EQ(And(target, base), target);
      // The dropped ones are the lowest unallocated.
      const Set dropped = Minus(base, target);
      for (uint32_t v : Minus(target, alloc)) {
        if (!dropped.empty()) {
          EXPECT_GT(v, *dropped.rbegin());
        }
      }
    }
  }
  EXPECT_GT(grown, 500);
  EXPECT_GT(shrunk, 500);
  EXPECT_GT(exhausted, 10);
}

}  // namespace
}  // namespace spiderpool::op::subnet
