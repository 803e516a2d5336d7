// List + watch 10k SpiderIPPools from the loopback API server into an informer.
// Prints one JSON line:
//   {"objects":10000,"create_s":..,"list_sync_s":..,"lists":1,"watch_events":10000,
//    "watch_s":..,"watch_events_per_s":..,"rss_mb":..}
// Objects are created in-process (setup is not measured against the client); the informer
// lists over HTTPS in pages of 500, then receives 10k MODIFIED events over its watch.
// Run: bazel run -c opt //bench:informer_bench [-- objects]

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "api/spider.h"
#include "base/log.h"
#include "base/sigpipe.h"
#include "base/strings.h"
#include "kube/informer/informer.h"
#include "kube/testing/test_cluster.h"

namespace sp = spiderpool;

namespace {

double RssMb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  }
  return 0;
}

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

sp::base::Json Pool(int i) {
  int a = (i >> 8) & 0xff, b = i & 0xff;
  std::string subnet = sp::base::StrCat("10.", a, ".", b, ".0/24");
  sp::base::Json allocated = sp::base::Json::object();
  for (int k = 1; k <= 20; ++k) {
    allocated[sp::base::StrCat("10.", a, ".", b, ".", k)] = {
        {"pod", sp::base::StrCat("default/app-", i, "-", k)},
        {"podUid", sp::base::StrCat("6f1c0d2e-0000-4000-8000-", 100000000000LL + i * 100 + k)}};
  }
  return {{"apiVersion", "spiderpool.spidernet.io/v2beta1"},
          {"kind", "SpiderIPPool"},
          {"metadata", {{"name", sp::base::StrCat("pool-", i)}}},
          {"spec",
           {{"ipVersion", 4},
            {"subnet", subnet},
            {"ips", {sp::base::StrCat("10.", a, ".", b, ".1-10.", a, ".", b, ".254")}},
            {"gateway", sp::base::StrCat("10.", a, ".", b, ".254")}}},
          {"status",
           {{"allocatedIPs", sp::base::DumpJson(allocated)},
            {"allocatedIPCount", 20},
            {"totalIPCount", 254}}}};
}

}  // namespace

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
  const int n = argc > 1 ? std::atoi(argv[1]) : 10000;
  sp::base::SetLogLevel(sp::base::LogLevel::kWarning);
  auto cluster = sp::kube::testing::TestCluster::Start();
  if (!cluster.ok() || (*cluster)->loopback() == nullptr) {
    std::fprintf(stderr, "needs the loopback server: %s\n", cluster.status().ToString().c_str());
    return 1;
  }
  auto* server = (*cluster)->loopback();
  const char* crds = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  std::string dir = std::string(crds != nullptr ? crds : ".") + "/charts/spiderpool/crds";
  if (absl::Status s = (*cluster)->ApplyCRDs(dir); !s.ok()) {
    std::fprintf(stderr, "CRDs: %s\n", s.ToString().c_str());
    return 1;
  }
  const std::string path = "/apis/spiderpool.spidernet.io/v2beta1/spiderippools";
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    auto r = server->Call("POST", path, Pool(i));
    if (r.code != 201) {
      std::fprintf(stderr, "create %d: %d %s\n", i, r.code, sp::base::DumpJson(r.body).c_str());
      return 1;
    }
  }
  const double create_s = Since(t0);

  std::atomic<int> updates{0};
  sp::kube::Informer<sp::api::SpiderIPPool> inf((*cluster)->rest(), {.page_size = 500});
  inf.AddHandlers({.on_update = [&](const sp::api::SpiderIPPool&, const sp::api::SpiderIPPool&) {
    updates.fetch_add(1, std::memory_order_relaxed);
  }});
  auto t1 = std::chrono::steady_clock::now();
  std::jthread run([&](std::stop_token s) { inf.Run(s); });
  if (!inf.WaitForCacheSync(absl::Minutes(5))) {
    std::fprintf(stderr, "informer did not sync\n");
    return 1;
  }
  const double list_s = Since(t1);
  const double rss_after_list = RssMb();
  if (inf.store().Size() != static_cast<size_t>(n)) {
    std::fprintf(stderr, "store has %zu of %d\n", inf.store().Size(), n);
    return 1;
  }
  server->WaitForWatches(1);

  auto t2 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    server->Call("PATCH", sp::base::StrCat(path, "/pool-", i, "/status"),
                 {{"status", {{"allocatedIPCount", 21}}}}, "application/merge-patch+json");
  }
  while (updates.load() < n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const double watch_s = Since(t2);

  std::printf(
      "{\"objects\":%d,\"create_s\":%.3f,\"list_sync_s\":%.3f,\"lists\":%llu,"
      "\"watch_events\":%d,\"watch_s\":%.3f,\"watch_events_per_s\":%.0f,\"rss_mb\":%.1f}\n",
      n, create_s, list_s, static_cast<unsigned long long>(inf.reflector().stats().lists),
      updates.load(), watch_s, n / watch_s, rss_after_list);
  return 0;
}
