#include "bench/nad_reconcile.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "api/codec.h"
#include "api/nad.h"
#include "api/spider.h"
#include "base/json.h"
#include "base/status.h"
#include "base/strings.h"
#include "kube/controller/manager.h"
#include "kube/informer/informer.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/client.h"
#include "kube/testing/test_cluster.h"
#include "multus/generate.h"
#include "operator/multus/controller.h"

namespace spiderpool::bench {

namespace {

using api::NetworkAttachmentDefinition;
using api::SpiderMultusConfig;

std::string CrdDir() {
  const std::string rel = "charts/spiderpool/crds";
  if (std::filesystem::is_directory(rel)) return rel;
  const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  return std::string(ws != nullptr ? ws : ".") + "/" + rel;
}

base::Json SMC(const std::string& ns, int i) {
  const std::string name = base::StrCat("smc-", std::to_string(i));
  base::Json macvlan = {{"master", {base::StrCat("eth", std::to_string(i % 4))}},
                        {"vlanID", i % 4000 + 1},
                        {"mtu", 1500},
                        {"ippools", {{"ipv4", {base::StrCat("pool-v4-", std::to_string(i % 10))}}}}};
  return {{"apiVersion", "spiderpool.spidernet.io/v2beta1"},
          {"kind", "SpiderMultusConfig"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"cniType", i % 2 == 0 ? "macvlan" : "ipvlan"},
                    {i % 2 == 0 ? "macvlan" : "ipvlan", macvlan}}}};
}

// Expected config per NAD name; counts NADs that match, as a watch sees them.
class Tracker {
 public:
  absl::Status Expect(const base::Json& smc_json) {
    SP_ASSIGN_OR_RETURN(SpiderMultusConfig smc, api::Decode<SpiderMultusConfig>(smc_json));
    SP_ASSIGN_OR_RETURN(std::string config, multus::GenerateCNIConfig(smc));
    std::lock_guard<std::mutex> l(mu_);
    expected_[smc.metadata.name] = std::move(config);
    return absl::OkStatus();
  }
  void Observe(const NetworkAttachmentDefinition& nad) {
    const api::OwnerReference* ref = nad.metadata.ControllerRef();
    std::lock_guard<std::mutex> l(mu_);
    auto it = expected_.find(nad.metadata.name);
    if (it == expected_.end()) return;
    const bool ok = ref != nullptr && ref->kind == "SpiderMultusConfig" &&
                    ref->name == nad.metadata.name &&
                    multus::CNIConfigsEqual(it->second, nad.spec.config);
    if (ok) {
      done_.insert(nad.metadata.name);
    } else {
      done_.erase(nad.metadata.name);
    }
    if (done_.size() == expected_.size()) cv_.notify_all();
  }
  void Forget(const NetworkAttachmentDefinition& nad) {
    std::lock_guard<std::mutex> l(mu_);
    done_.erase(nad.metadata.name);
  }
  // Waits until every expected NAD matches (expected must be complete) or `deadline`.
  bool WaitAll(size_t n, absl::Time deadline) {
    std::unique_lock<std::mutex> l(mu_);
    while (!(expected_.size() == n && done_.size() == n)) {
      absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return false;
      cv_.wait_for(l, absl::ToChronoMilliseconds(std::min(left, absl::Milliseconds(100))));
    }
    return true;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> expected_;
  std::set<std::string> done_;
};

}  // namespace

absl::StatusOr<double> MeasureSmcToNadSeconds(int n) {
  if (n <= 0) return absl::InvalidArgumentError("n must be positive");
  SP_ASSIGN_OR_RETURN(auto cluster, kube::testing::TestCluster::Start());
  SP_RETURN_IF_ERROR(cluster->ApplyCRDs(CrdDir()));
  const std::string ns = cluster->ns();
  SP_ASSIGN_OR_RETURN(auto controller_rest, cluster->NewRest());
  SP_ASSIGN_OR_RETURN(auto watch_rest, cluster->NewRest());

  kube::metrics::Registry registry;
  Tracker tracker;
  kube::Informer<NetworkAttachmentDefinition> watch(
      watch_rest, {.namespace_ = ns, .registry = &registry});
  watch.AddHandlers(
      {.on_add = [&](const NetworkAttachmentDefinition& nad) { tracker.Observe(nad); },
       .on_update = [&](const NetworkAttachmentDefinition&,
                        const NetworkAttachmentDefinition& nad) { tracker.Observe(nad); },
       .on_delete = [&](const NetworkAttachmentDefinition& nad) { tracker.Forget(nad); }});

  auto manager = std::make_unique<kube::Manager>(kube::ManagerOptions{.name = "nad-bench"});
  SP_RETURN_IF_ERROR(
      op::multus::AddToManager(manager.get(), controller_rest,
                               {.namespace_ = ns, .registry = &registry})
          .status());
  std::stop_source stop;
  absl::Status run_status;
  std::jthread watch_thread([&](std::stop_token s) { watch.Run(s); });
  std::jthread run([&] { run_status = manager->Run(stop.get_token()); });
  auto finish = [&]() -> absl::Status {
    stop.request_stop();
    run.join();
    watch_thread.request_stop();
    watch_thread.join();
    return run_status;
  };

  kube::DynamicClient smcs(cluster->rest(), SpiderMultusConfig::Resource());
  // Warm-up: caches synced and workers running before the clock starts.
  {
    base::Json w = SMC(ns, -1);
    w["metadata"]["name"] = "warm-up";
    kube::Client<NetworkAttachmentDefinition> nads(cluster->rest());
    absl::Status s = smcs.Create(w).status();
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    while (s.ok() && !nads.Get(ns, "warm-up").ok()) {
      if (absl::Now() > deadline) s = absl::DeadlineExceededError("warm-up NAD never appeared");
      absl::SleepFor(absl::Milliseconds(10));
    }
    if (!s.ok()) {
      (void)finish();
      return s;
    }
  }

  std::vector<base::Json> objects;
  objects.reserve(n);
  for (int i = 0; i < n; ++i) {
    objects.push_back(SMC(ns, i));
    if (absl::Status s = tracker.Expect(objects.back()); !s.ok()) {
      (void)finish();
      return s;
    }
  }
  const int kCreators = std::min(4, n);
  std::atomic<int> next{0};
  std::mutex err_mu;
  absl::Status create_err;
  const absl::Time start = absl::Now();
  {
    std::vector<std::jthread> creators;
    for (int t = 0; t < kCreators; ++t) {
      creators.emplace_back([&] {
        for (int i = next++; i < n; i = next++) {
          absl::Status s = smcs.Create(objects[i]).status();
          if (!s.ok()) {
            std::lock_guard<std::mutex> l(err_mu);
            if (create_err.ok()) create_err = s;
          }
        }
      });
    }
  }
  const absl::Time deadline =
      start + std::max(absl::Seconds(120), absl::Milliseconds(100) * static_cast<int64_t>(n));
  const bool all = create_err.ok() && tracker.WaitAll(static_cast<size_t>(n), deadline);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  absl::Status stopped = finish();
  SP_RETURN_IF_ERROR(create_err);
  if (!all) {
    return absl::DeadlineExceededError(
        base::StrCat("not all ", std::to_string(n), " NADs were reconciled in time"));
  }
  SP_RETURN_IF_ERROR(stopped);
  return seconds;
}

}  // namespace spiderpool::bench
