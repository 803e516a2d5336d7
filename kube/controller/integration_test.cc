// The whole controller stack against the loopback API server (or a real cluster through
// SPIDERPOOL_TEST_KUBECONFIG): a Manager with Lease leader election runs an informer on every
// replica and, once elected, a controller whose reconciler converges ConfigMaps; stopping the
// manager stops everything and releases the Lease.

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "api/core.h"
#include "base/testing/wait.h"
#include "kube/controller/controller.h"
#include "kube/controller/manager.h"
#include "kube/informer/informer.h"
#include "kube/leaderelection/lease_lock.h"
#include "kube/rest/errors.h"
#include "kube/testing/test_cluster.h"

namespace spiderpool::kube {
namespace {

using ::spiderpool::base::testing::WaitUntil;

constexpr char kMark[] = "spiderpool.test/reconciled";

// Converges every ConfigMap to carry the annotation kMark = its data["k"].
class MarkReconciler : public Reconciler {
 public:
  MarkReconciler(Informer<api::ConfigMap>* cache, std::shared_ptr<RestClient> rest)
      : cache_(cache), client_(std::move(rest)) {}
  absl::StatusOr<ReconcileResult> Reconcile(const ReconcileRequest& r, std::stop_token) override {
    auto cm = cache_->store().Get(r.Key());
    if (cm == nullptr) return ReconcileResult{};  // deleted: nothing to converge
    auto want = cm->data.count("k") ? cm->data.at("k") : "";
    auto it = cm->metadata.annotations.find(kMark);
    if (it != cm->metadata.annotations.end() && it->second == want) return ReconcileResult{};
    // Conditional on the cached resourceVersion: a stale cache gets 409 and a retry.
    base::Json patch = {
        {"metadata",
         {{"resourceVersion", cm->metadata.resource_version}, {"annotations", {{kMark, want}}}}}};
    auto out = client_.Patch(r.namespace_, r.name, PatchType::kMerge, patch);
    if (!out.ok()) return out.status();
    return ReconcileResult{};
  }

 private:
  Informer<api::ConfigMap>* cache_;
  Client<api::ConfigMap> client_;
};

TEST(ControllerStack, ElectedManagerReconcilesThroughTheInformer) {
  auto cluster = testing::TestCluster::Start();
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::string ns = (*cluster)->ns();
  auto rest = (*cluster)->NewRest();
  ASSERT_TRUE(rest.ok());

  metrics::Registry registry;
  Informer<api::ConfigMap> cms(*rest, {.namespace_ = ns, .registry = &registry});
  MarkReconciler reconciler(&cms, *rest);
  ControllerOptions copts;
  copts.name = "configmap-mark";
  copts.workers = 3;
  copts.registry = &registry;
  copts.cache_synced = {[&] { return cms.HasSynced(); }};
  Controller ctrl(std::move(copts), &reconciler);
  auto enqueue = [&](const api::ConfigMap& c) {
    ctrl.Enqueue({c.metadata.namespace_, c.metadata.name});
  };
  cms.AddHandlers({.on_add = enqueue,
                   .on_update = [&](const api::ConfigMap&, const api::ConfigMap& c) { enqueue(c); },
                   .on_delete = enqueue});

  ManagerOptions mopts;
  mopts.name = "test-controller";
  LeaderElectionConfig le;
  le.identity = "replica-1";
  mopts.leader_election = le;
  mopts.lease_lock = [&] {
    return std::make_unique<KubeLeaseLock>(*rest, ns, "spiderpool-controller-leases");
  };
  mopts.health = health::ServerOptions{.address = "127.0.0.1", .port = 0, .registry = &registry};
  Manager mgr(std::move(mopts));
  mgr.Add(std::make_unique<FuncRunnable>("configmap-informer", false, [&](std::stop_token s) {
    cms.Run(s);
    return absl::OkStatus();
  }));
  mgr.Add(std::make_unique<FuncRunnable>("configmap-mark", true,
                                         [&](std::stop_token s) { return ctrl.Run(s); }));

  DynamicClient raw((*cluster)->rest(), api::ConfigMap::Resource());
  for (int i = 0; i < 20; ++i) {
    base::Json cm = {{"apiVersion", "v1"},
                     {"kind", "ConfigMap"},
                     {"metadata", {{"name", "cm-" + std::to_string(i)}, {"namespace", ns}}},
                     {"data", {{"k", "v1"}}}};
    ASSERT_TRUE(raw.Create(cm).ok());
  }
  std::stop_source stop;
  absl::Status result;
  std::jthread run([&] { result = mgr.Run(stop.get_token()); });

  auto all_marked = [&](const std::string& v) {
    auto list = raw.List(ns);
    if (!list.ok()) return false;
    int marked = 0;
    for (const auto& item : (*list)["items"]) {
      if (item["metadata"].contains("annotations") &&
          item["metadata"]["annotations"].value(kMark, "") == v) {
        ++marked;
      }
    }
    return marked == 20;
  };
  ASSERT_TRUE(WaitUntil([&] { return all_marked("v1"); }));
  EXPECT_TRUE(mgr.IsLeader());

  // A change of the desired state flows through watch -> handler -> queue -> reconcile.
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(
        raw.Patch(ns, "cm-" + std::to_string(i), PatchType::kMerge, {{"data", {{"k", "v2"}}}})
            .ok());
  }
  ASSERT_TRUE(WaitUntil([&] { return all_marked("v2"); }));

  stop.request_stop();
  run.join();
  EXPECT_TRUE(result.ok()) << result;
  KubeLeaseLock reader((*cluster)->rest(), ns, "spiderpool-controller-leases");
  auto lease = reader.Get();
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(lease->holder_identity, "");  // released on shutdown
  std::string text = registry.Expose();
  EXPECT_NE(text.find("workqueue_adds_total{name=\"configmap-mark\"}"), std::string::npos);
  EXPECT_NE(
      text.find(
          "controller_runtime_reconcile_total{controller=\"configmap-mark\",result=\"success\"}"),
      std::string::npos);
}

}  // namespace
}  // namespace spiderpool::kube
