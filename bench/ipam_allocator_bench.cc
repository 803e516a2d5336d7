// IPAM hot paths (ipam/): building the free-interval allocator from many allocated IPs,
// lowest-first allocate + release on huge pools, PoolState built from a big status, and
// candidate-pool selection over 1000 pools. Run: bazel run -c opt //bench:ipam_allocator

#include <random>
#include <set>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "api/spider.h"
#include "base/ip.h"
#include "base/strings.h"
#include "ipam/allocator.h"
#include "ipam/pool.h"
#include "ipam/selection.h"

namespace spiderpool::bench {
namespace {

using base::IPAddress;
using base::IPFamily;
using base::IPRange;

constexpr int kAllocated = 100000;

// `n` distinct addresses spread uniformly at random over [first, first + span).
std::vector<IPAddress> Spread(IPFamily f, absl::uint128 first, uint64_t span, int n) {
  std::mt19937_64 rng(42);
  std::set<uint64_t> offs;
  while (static_cast<int>(offs.size()) < n) offs.insert(rng() % span);
  std::vector<IPAddress> out;
  out.reserve(n);
  for (uint64_t o : offs) {
    absl::uint128 v = first + o;
    out.push_back(f == IPFamily::kV4 ? IPAddress::V4(static_cast<uint32_t>(v)) : IPAddress::V6(v));
  }
  std::shuffle(out.begin(), out.end(), rng);  // records arrive unordered
  return out;
}

struct Huge {
  IPFamily family;
  IPRange range;
  std::vector<IPAddress> allocated;
};

const Huge& V4Slash8() {
  static const Huge* h = [] {
    IPRange r = *IPRange::Parse("10.0.0.0-10.255.255.255");
    return new Huge{IPFamily::kV4, r, Spread(IPFamily::kV4, r.first().value(), 1u << 24, kAllocated)};
  }();
  return *h;
}

const Huge& V6Slash64() {
  static const Huge* h = [] {
    IPRange r = *IPRange::Parse("fd00::-fd00::ffff:ffff:ffff:ffff");
    // Spread over the first 2^40 addresses of the /64 (any span works; the structure never
    // looks at unallocated addresses).
    return new Huge{IPFamily::kV6, r,
                    Spread(IPFamily::kV6, r.first().value(), uint64_t{1} << 40, kAllocated)};
  }();
  return *h;
}

void BM_AllocatorBuild(benchmark::State& state, const Huge& (*pool)()) {
  const Huge& h = pool();
  for (auto _ : state) {
    ipam::Allocator a(h.family, {h.range}, h.allocated);
    benchmark::DoNotOptimize(a.FreeCount());
  }
  state.counters["free_intervals"] =
      static_cast<double>(ipam::Allocator(h.family, {h.range}, h.allocated).free_interval_count());
}
BENCHMARK_CAPTURE(BM_AllocatorBuild, v4_slash8_100k, V4Slash8)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AllocatorBuild, v6_slash64_100k, V6Slash64)->Unit(benchmark::kMillisecond);

// Lowest-first allocate, then release it again (the intervals split and merge every time).
void BM_AllocateLowestRelease(benchmark::State& state, const Huge& (*pool)()) {
  const Huge& h = pool();
  ipam::Allocator a(h.family, {h.range}, h.allocated);
  for (auto _ : state) {
    std::optional<IPAddress> ip = a.AllocateLowest();
    benchmark::DoNotOptimize(ip);
    a.Release(*ip);
  }
}
BENCHMARK_CAPTURE(BM_AllocateLowestRelease, v4_slash8_100k, V4Slash8);
BENCHMARK_CAPTURE(BM_AllocateLowestRelease, v6_slash64_100k, V6Slash64);

// Release a random held IP in the middle of the map and take it back.
void BM_ReleaseAllocateRandom(benchmark::State& state, const Huge& (*pool)()) {
  const Huge& h = pool();
  ipam::Allocator a(h.family, {h.range}, h.allocated);
  size_t i = 0;
  for (auto _ : state) {
    const IPAddress& ip = h.allocated[i++ % h.allocated.size()];
    a.Release(ip);
    benchmark::DoNotOptimize(a.Allocate(ip));
  }
}
BENCHMARK_CAPTURE(BM_ReleaseAllocateRandom, v4_slash8_100k, V4Slash8);
BENCHMARK_CAPTURE(BM_ReleaseAllocateRandom, v6_slash64_100k, V6Slash64);

// A SpiderIPPool whose status holds `n` records: PoolState::Build parses the allocatedIPs
// JSON, the spec, and builds the allocator and the UID index.
api::SpiderIPPool BigPool(int n) {
  api::SpiderIPPool p;
  p.metadata.name = "big";
  p.spec.ip_version = 4;
  p.spec.subnet = "10.0.0.0/8";
  p.spec.ips = {"10.0.0.1-10.255.255.254"};
  p.spec.exclude_ips = {"10.0.0.1-10.0.0.9"};
  api::PoolIPAllocations recs;
  for (const IPAddress& ip : Spread(IPFamily::kV4, IPAddress::Parse("10.0.0.10")->value(),
                                    (1u << 24) - 20, n)) {
    recs[ip.ToString()] = {.pod = base::StrCat("ns/pod-", static_cast<uint64_t>(ip.value() % 1000000)),
                           .pod_uid = base::StrCat("uid-", ip.ToString())};
  }
  p.SetAllocatedIPs(recs);
  return p;
}

void BM_PoolStateBuild(benchmark::State& state) {
  api::SpiderIPPool p = BigPool(static_cast<int>(state.range(0)));
  std::vector<IPRange> reserved = {*IPRange::Parse("10.1.0.0-10.1.0.255")};
  for (auto _ : state) {
    auto st = ipam::PoolState::Build(p, reserved, {.max_allocated_ips = 1 << 30});
    benchmark::DoNotOptimize(st);
  }
}
BENCHMARK(BM_PoolStateBuild)->Arg(5000)->Arg(kAllocated)->Unit(benchmark::kMillisecond);

// PoolState Allocate + ReleasePod at the upstream record cap (5000 records).
void BM_PoolAllocateRelease(benchmark::State& state) {
  api::SpiderIPPool p = BigPool(4999);
  auto st = ipam::PoolState::Build(p, {});
  for (auto _ : state) {
    auto a = st->Allocate({.pod = "ns/new", .pod_uid = "new-uid", .interface_ = "eth0"});
    benchmark::DoNotOptimize(a);
    st->ReleasePod("new-uid");
  }
}
BENCHMARK(BM_PoolAllocateRelease);

// SelectPools over 1000 pools: a wildcard matching all of them (filters + sort run on every
// pool) and the cluster-default rule (every pool default).
std::vector<api::SpiderIPPool> ManyPools(int n) {
  std::vector<api::SpiderIPPool> pools(n);
  for (int i = 0; i < n; ++i) {
    api::SpiderIPPool& p = pools[i];
    p.metadata.name = base::StrCat("pool-", i);
    p.spec.ip_version = 4;
    p.spec.subnet = base::StrCat("10.", i / 256, ".", i % 256, ".0/24");
    p.spec.default_ = true;
    if (i % 3 == 0) p.spec.node_name = {"node1", "node2"};
    if (i % 5 == 0) {
      p.spec.pod_affinity = api::LabelSelector{.match_labels = {{"app", "web"}}};
    }
    if (i % 7 == 0) {
      p.spec.namespace_affinity = api::LabelSelector{
          .match_expressions = {{.key = "team", .op = "In", .values = {"a", "b"}}}};
    }
  }
  return pools;
}

void BM_Selection(benchmark::State& state, bool wildcard) {
  static const std::vector<api::SpiderIPPool> pools = ManyPools(1000);
  std::vector<const api::SpiderIPPool*> ptrs;
  for (const auto& p : pools) ptrs.push_back(&p);
  ipam::SelectionRequest req;
  req.pod = {.namespace_ = "default", .name = "web-1", .uid = "u", .labels = {{"app", "web"}},
             .owner = {.api_version = "apps/v1", .kind = "Deployment", .namespace_ = "default",
                       .name = "web", .uid = "x-y"}};
  if (wildcard) req.pod.annotations = {{"ipam.spidernet.io/ippool", R"({"ipv4":["pool-*"]})"}};
  req.namespace_.labels = {{"team", "a"}};
  req.node = {.name = "node1", .labels = {{"zone", "z1"}}};
  req.if_name = "eth0";
  ipam::SelectionConfig cfg;
  for (auto _ : state) {
    auto sel = ipam::SelectPools(req, cfg, ptrs);
    if (!sel.ok() || sel->nics[0].ipv4_pools.size() != 1000) state.SkipWithError("bad selection");
    benchmark::DoNotOptimize(sel);
  }
}
BENCHMARK_CAPTURE(BM_Selection, wildcard_1000_pools, true)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Selection, cluster_default_1000_pools, false)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace spiderpool::bench
