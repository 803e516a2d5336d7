// Decoding and encoding cost of the API codec on a realistic workload: one SpiderIPPoolList of
// kPools pools (as a LIST of a big cluster returns it), each with ~20 records in
// status.allocatedIPs. Run: bazel run -c opt //bench:decode_bench

#include <string>

#include <benchmark/benchmark.h>

#include "api/spider.h"
#include "base/json.h"
#include "base/strings.h"

namespace spiderpool::bench {
namespace {

constexpr int kPools = 10000;
constexpr int kAllocationsPerPool = 20;

std::string PoolPrefix(int i) { return base::StrCat("10.", i / 256, ".", i % 256, "."); }

api::SpiderIPPool MakePool(int i) {
  api::SpiderIPPool p;
  p.SetTypeMeta();
  std::string prefix = PoolPrefix(i);
  p.metadata.name = base::StrCat("pool-", i);
  p.metadata.uid = base::StrCat("2b3c4d5e-6f7a-4b8c-9d0e-", 100000000000 + i);
  p.metadata.resource_version = std::to_string(100000 + i);
  p.metadata.generation = 3;
  p.metadata.creation_timestamp = api::Time{absl::FromUnixSeconds(1740000000 + i)};
  p.metadata.finalizers = {"spiderpool.spidernet.io"};
  p.metadata.labels = {{"ipam.spidernet.io/ippool-cidr", base::StrCat("10-", i / 256, "-",
                                                                      i % 256, "-0-24")},
                       {"ipam.spidernet.io/owner-spider-subnet", "subnet-10"}};
  p.metadata.owner_references.push_back({.api_version = "spiderpool.spidernet.io/v2beta1",
                                         .kind = "SpiderSubnet",
                                         .name = "subnet-10",
                                         .uid = "4a5b6c7d-8e9f-4a0b-9c1d-2e3f4a5b6c7d",
                                         .controller = true,
                                         .block_owner_deletion = true});
  p.spec.ip_version = 4;
  p.spec.subnet = prefix + "0/24";
  p.spec.ips = {prefix + "10-" + prefix + "250"};
  p.spec.exclude_ips = {prefix + "100"};
  p.spec.gateway = prefix + "1";
  p.spec.routes = std::vector<api::Route>{{.dst = "172.16.0.0/16", .gw = prefix + "254"}};
  p.spec.pod_affinity.emplace();
  p.spec.pod_affinity->match_labels = {{"app", base::StrCat("app-", i % 50)}};
  p.spec.node_name = {base::StrCat("worker-", i % 100)};
  p.spec.multus_name = {"kube-system/macvlan-conf"};
  p.spec.default_ = false;
  api::PoolIPAllocations allocs;
  for (int k = 0; k < kAllocationsPerPool; ++k) {
    allocs[prefix + std::to_string(10 + k)] = {
        .pod = base::StrCat("team-", i % 20, "/app-", i % 50, "-", k),
        .pod_uid = base::StrCat("7f0e4b5c-2f1d-4c1a-a8de-", 300000000000 + i * 100 + k)};
  }
  p.SetAllocatedIPs(allocs);
  p.status.total_ip_count = 240;
  p.status.free_ip_count = 240 - kAllocationsPerPool;
  return p;
}

const std::string& ListText() {
  static const std::string* text = [] {
    api::SpiderIPPoolList list;
    list.api_version = "spiderpool.spidernet.io/v2beta1";
    list.kind = "SpiderIPPoolList";
    list.metadata.resource_version = "999999";
    list.items.reserve(kPools);
    for (int i = 0; i < kPools; ++i) list.items.push_back(MakePool(i));
    return new std::string(base::DumpJson(api::Encode(list)));
  }();
  return *text;
}

void Report(benchmark::State& state) {
  state.SetItemsProcessed(state.iterations() * kPools);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(ListText().size()));
}

// Text -> typed list: what an informer's LIST costs.
void BM_ParseAndDecodeList(benchmark::State& state) {
  const std::string& text = ListText();
  for (auto _ : state) {
    auto list = api::DecodeJson<api::SpiderIPPoolList>(text);
    if (!list.ok() || list->items.size() != kPools) state.SkipWithError("decode failed");
    benchmark::DoNotOptimize(list);
  }
  Report(state);
}
BENCHMARK(BM_ParseAndDecodeList)->Unit(benchmark::kMillisecond);

// The two halves of the above.
void BM_ParseJsonOnly(benchmark::State& state) {
  const std::string& text = ListText();
  for (auto _ : state) {
    auto j = base::ParseJson(text);
    if (!j.ok()) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(j);
  }
  Report(state);
}
BENCHMARK(BM_ParseJsonOnly)->Unit(benchmark::kMillisecond);

void BM_DecodeFromJsonOnly(benchmark::State& state) {
  auto j = base::ParseJson(ListText());
  for (auto _ : state) {
    auto list = api::Decode<api::SpiderIPPoolList>(*j);
    if (!list.ok()) state.SkipWithError("decode failed");
    benchmark::DoNotOptimize(list);
  }
  Report(state);
}
BENCHMARK(BM_DecodeFromJsonOnly)->Unit(benchmark::kMillisecond);

// Typed list -> text: what writing them all back would cost.
void BM_EncodeAndDumpList(benchmark::State& state) {
  auto list = api::DecodeJson<api::SpiderIPPoolList>(ListText());
  for (auto _ : state) {
    std::string text = base::DumpJson(api::Encode(*list));
    if (text.size() != ListText().size()) state.SkipWithError("encoding differs");
    benchmark::DoNotOptimize(text);
  }
  Report(state);
}
BENCHMARK(BM_EncodeAndDumpList)->Unit(benchmark::kMillisecond);

// status.allocatedIPs string -> typed map, for every pool (what the IPAM agent does per pool
// it allocates from).
void BM_ParseAllocatedIPs(benchmark::State& state) {
  auto list = api::DecodeJson<api::SpiderIPPoolList>(ListText());
  for (auto _ : state) {
    size_t n = 0;
    for (const api::SpiderIPPool& p : list->items) {
      auto m = p.AllocatedIPs();
      if (!m.ok()) state.SkipWithError("allocatedIPs failed");
      n += m->size();
    }
    if (n != static_cast<size_t>(kPools) * kAllocationsPerPool) state.SkipWithError("count");
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(state.iterations() * kPools);
}
BENCHMARK(BM_ParseAllocatedIPs)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace spiderpool::bench
