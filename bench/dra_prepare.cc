// NodePrepareResources latency of the DRA driver, end to end on one node: the stand-in kubelet
// (dra/kubeletplugin/testing FakeKubelet) calls the real gRPC plugin (dra/kubeletplugin Plugin,
// v1 over its unix socket, flock serialization) in front of NetDriver, which GETs the claim,
// the SpiderClaimParameter and its SpiderMultusConfig from the loopback API server, writes the
// checkpoint twice (PrepareStarted, PrepareCompleted) and the CDI spec, each with fsync of the
// file and the directory, and PUTs the claim's status.devices. One claim per call, like the
// kubelet with one claim per pod. Also: the repeated (checkpoint-hit) prepare and unprepare.
// Prints one JSON line:
//
//   {"bench":"dra_prepare","claims":100,"prepare_p50_ms":..,"prepare_p99_ms":..,
//    "prepare_max_ms":..,"reprepare_p50_ms":..,"unprepare_p50_ms":..,"unprepare_p99_ms":..,
//    "api_gets_per_prepare":..,"api_writes_per_prepare":..,"fs":"ext4",...}
//
//   bazel run -c opt //bench:dra_prepare -- [claims=100] [dir=/tmp]
//
// `dir` is where the plugin and CDI directories go (the default /tmp is ext4 here; on tmpfs
// fsync costs nothing). Not a test: the numbers go to bench/README.md.

#include <stdlib.h>
#include <sys/statfs.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "api/resource_claim.h"
#include "api/spider.h"
#include "base/json.h"
#include "base/log.h"
#include "base/sigpipe.h"
#include "base/strings.h"
#include "dra/driver/driver.h"
#include "dra/kubeletplugin/plugin.h"
#include "dra/kubeletplugin/testing/fake_kubelet.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/client.h"
#include "kube/testing/test_cluster.h"

namespace {

using namespace spiderpool;
using base::Json;
using base::StrCat;
using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

double Round(double v) { return std::round(v * 1000) / 1000; }

std::string FsType(const std::string& path) {
  struct statfs s {};
  if (::statfs(path.c_str(), &s) != 0) return "unknown";
  switch (static_cast<unsigned long>(s.f_type)) {
    case 0xEF53: return "ext4";
    case 0x01021994: return "tmpfs";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x794C7630: return "overlay";
    default: return StrCat("0x", s.f_type);
  }
}

int Fail(const std::string& what) {
  std::cerr << "dra_prepare: " << what << std::endl;
  return 1;
}

int Run(int argc, char** argv) {
  int claims = 100;
  std::string base_dir = "/tmp";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("claims=", 0) == 0) claims = std::stoi(a.substr(7));
    if (a.rfind("dir=", 0) == 0) base_dir = a.substr(4);
  }
  base::SetLogLevel(base::LogLevel::kWarning);

  auto cluster = kube::testing::TestCluster::Start();
  if (!cluster.ok()) return Fail(std::string(cluster.status().message()));
  if (auto s = (*cluster)->ApplyCRDs("charts/spiderpool/crds"); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  const std::string ns = (*cluster)->ns();
  auto rest = (*cluster)->NewRest();
  if (!rest.ok()) return Fail(std::string(rest.status().message()));

  std::string tmpl = base_dir + "/sp-drab-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return Fail("mkdtemp in " + base_dir);
  const std::string root = tmpl;

  // The objects: one SpiderMultusConfig, one SpiderClaimParameter, `claims` allocated claims.
  api::SpiderMultusConfig smc;
  smc.metadata.name = "macvlan-eth1";
  smc.metadata.namespace_ = ns;
  smc.spec.cni_type = "macvlan";
  smc.spec.macvlan = api::SpiderMacvlanCniConfig{.master = {"eth1"}};
  if (!kube::Client<api::SpiderMultusConfig>(*rest).Create(smc).ok()) return Fail("create smc");
  api::SpiderClaimParameter scp;
  scp.metadata.name = "scp";
  scp.metadata.namespace_ = ns;
  scp.spec.default_nic = api::ClaimNic{.multus_name = "macvlan-eth1", .namespace_ = ns};
  if (!kube::Client<api::SpiderClaimParameter>(*rest).Create(scp).ok()) return Fail("create scp");
  kube::DynamicClient rc(*rest, api::resource_v1::ResourceClaim::Resource());
  std::vector<dra::kubeletplugin::ClaimRef> refs;
  for (int i = 0; i < claims; ++i) {
    const std::string name = StrCat("claim-", i);
    Json claim = {{"apiVersion", "resource.k8s.io/v1"},
                  {"kind", "ResourceClaim"},
                  {"metadata", {{"name", name}, {"namespace", ns}}},
                  {"spec",
                   {{"devices",
                     {{"requests",
                       {{{"name", "nic"},
                         {"exactly", {{"deviceClassName", "netresources.spidernet.io"}}}}}}}}}}};
    auto created = rc.Create(claim);
    if (!created.ok()) return Fail(std::string(created.status().message()));
    Json obj = *created;
    obj["status"] = {
        {"allocation",
         {{"devices",
           {{"results",
             {{{"request", "nic"}, {"driver", "netresources.spidernet.io"}, {"pool", "node-1"},
               {"device", "eth1"}}}},
            {"config",
             {{{"source", "FromClaim"},
               {"opaque",
                {{"driver", "netresources.spidernet.io"},
                 {"parameters",
                  {{"apiVersion", "spiderpool.spidernet.io/v2beta1"},
                   {"kind", "SpiderClaimParameter"},
                   {"name", "scp"}}}}}}}}}}}}};
    if (!rc.UpdateStatus(obj).ok()) return Fail("allocate " + name);
    refs.push_back({ns, (*created)["metadata"]["uid"].get<std::string>(), name});
  }

  kube::metrics::Registry registry;
  dra::driver::NetDriver driver(*rest, {.node_name = "node-1",
                                        .plugin_dir = root + "/plugins/net",
                                        .cdi_dir = root + "/cdi",
                                        .registry = &registry});
  dra::kubeletplugin::PluginOptions po;
  po.registry_dir = root + "/registry";
  po.plugin_dir = root + "/plugins/net";
  po.metrics = &registry;
  dra::kubeletplugin::Plugin plugin(po, &driver);
  if (auto s = plugin.Start(); !s.ok()) return Fail(std::string(s.message()));
  dra::kubeletplugin::testing::FakeKubelet kubelet({.registry_dir = po.registry_dir});
  if (auto s = kubelet.Discover(); !s.ok()) return Fail(std::string(s.message()));

  auto* lb = (*cluster)->loopback();
  kube::testing::RequestCounts before{};
  if (lb != nullptr) before = lb->request_counts();
  std::vector<double> prepare, reprepare, unprepare;
  auto t_all = Clock::now();
  for (const auto& ref : refs) {
    auto t0 = Clock::now();
    auto out = kubelet.Prepare({ref});
    prepare.push_back(Ms(Clock::now() - t0));
    if (!out.ok()) return Fail(std::string(out.status().message()));
    if (!(*out)[ref.uid].error.empty()) return Fail((*out)[ref.uid].error);
  }
  double total_prepare_s = Ms(Clock::now() - t_all) / 1000;
  kube::testing::RequestCounts after{};
  if (lb != nullptr) after = lb->request_counts();
  for (const auto& ref : refs) {
    auto t0 = Clock::now();
    auto out = kubelet.Prepare({ref});
    reprepare.push_back(Ms(Clock::now() - t0));
    if (!out.ok() || !(*out)[ref.uid].error.empty()) return Fail("re-prepare");
  }
  for (const auto& ref : refs) {
    auto t0 = Clock::now();
    auto out = kubelet.Unprepare({ref});
    unprepare.push_back(Ms(Clock::now() - t0));
    if (!out.ok() || !(*out)[ref.uid].empty()) return Fail("unprepare");
  }
  plugin.Stop();

  Json j = Json::object();
  j["bench"] = "dra_prepare";
  j["claims"] = claims;
  j["path"] = "fake kubelet -> gRPC v1 unix socket -> Plugin (flock) -> NetDriver -> loopback API";
  j["prepare_p50_ms"] = Round(Percentile(prepare, 0.50));
  j["prepare_p99_ms"] = Round(Percentile(prepare, 0.99));
  j["prepare_max_ms"] = Round(Percentile(prepare, 1.0));
  j["prepare_total_s"] = Round(total_prepare_s);
  j["reprepare_p50_ms"] = Round(Percentile(reprepare, 0.50));
  j["reprepare_p99_ms"] = Round(Percentile(reprepare, 0.99));
  j["unprepare_p50_ms"] = Round(Percentile(unprepare, 0.50));
  j["unprepare_p99_ms"] = Round(Percentile(unprepare, 0.99));
  if (lb != nullptr) {
    j["api_gets_per_prepare"] = Round(static_cast<double>(after.get - before.get) / claims);
    j["api_writes_per_prepare"] = Round(static_cast<double>(after.writes() - before.writes()) / claims);
  }
  j["fsync"] = true;
  j["fs"] = FsType(root);
  std::cout << base::DumpJson(j) << std::endl;
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
  return Run(argc, argv);
}
