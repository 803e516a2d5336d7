// The pre-delete cleanup against the loopback API server (or a real cluster with
// SPIDERPOOL_TEST_KUBECONFIG): every object here is the test's own, labelled with the test
// namespace; the cleanup is restricted to that label, and assertions name objects one by one.

#include "operator/cleanup/cleanup.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "api/admissionregistration.h"
#include "api/apps.h"
#include "api/core.h"
#include "api/spider.h"
#include "base/json.h"
#include "base/strings.h"
#include "base/testing/wait.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/rest/client.h"
#include "kube/rest/errors.h"
#include "kube/testing/spider_cluster.h"

namespace spiderpool::op::cleanup {
namespace {

using ::spiderpool::base::testing::WaitUntil;

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

constexpr char kLabel[] = "cleanup-test.spiderpool.spidernet.io/ns";
const std::string kOurs(api::kSpiderFinalizer);
constexpr char kOther[] = "example.com/keep";

class CleanupTest : public kube::testing::SpiderClusterTest {
 protected:
  void SetUp() override {
    SpiderClusterTest::SetUp();
    if (HasFatalFailure()) return;
    rest_ = cluster_->rest();
  }

  void TearDown() override {
    if (cluster_ == nullptr) return;
    // Whatever is left (finalizers first), so that a real cluster keeps nothing.
    for (const auto& [r, ns, name] : created_) {
      kube::DynamicClient c(rest_, r);
      absl::StatusOr<base::Json> obj = c.Get(ns, name);
      if (!obj.ok()) continue;
      if ((*obj)["metadata"].contains("finalizers")) {
        (*obj)["metadata"]["finalizers"] = base::Json::array();
        (void)c.Update(*obj);
      }
      (void)c.Delete(ns, name);
    }
    SpiderClusterTest::TearDown();
  }

  std::string Name(std::string_view base) const { return base::StrCat(base, "-", cluster_->ns()); }
  std::string Selector() const { return base::StrCat(kLabel, "=", cluster_->ns()); }

  base::Json Meta(const std::string& name, std::vector<std::string> finalizers, bool labelled,
                  const std::string& ns = "") {
    base::Json md = {{"name", name}, {"finalizers", finalizers}};
    if (!ns.empty()) md["namespace"] = ns;
    if (labelled) md["labels"] = {{kLabel, cluster_->ns()}};
    return md;
  }

  // Creates `obj` of resource `r`; remembers it for TearDown.
  void Create(const api::ResourceInfo& r, base::Json obj) {
    kube::DynamicClient c(rest_, r);
    const std::string ns = obj["metadata"].value("namespace", "");
    const std::string name = obj["metadata"]["name"];
    absl::StatusOr<base::Json> out = c.Create(obj);
    ASSERT_TRUE(out.ok()) << r.kind << " " << name << ": " << out.status();
    created_.push_back({r, ns, name});
  }

  void Pool(const std::string& name, std::vector<std::string> finalizers, bool labelled = true) {
    Create(api::SpiderIPPool::Resource(),
           {{"metadata", Meta(name, std::move(finalizers), labelled)},
            {"spec", {{"ipVersion", 4}, {"subnet", "10.250.0.0/24"}, {"ips", {"10.250.0.10-10.250.0.20"}}}}});
  }

  void DeleteObject(const api::ResourceInfo& r, const std::string& ns, const std::string& name) {
    absl::Status s = kube::DynamicClient(rest_, r).Delete(ns, name);
    ASSERT_TRUE(s.ok()) << r.kind << " " << name << ": " << s;
  }

  // The object, or nullopt once it is gone.
  std::optional<base::Json> Get(const api::ResourceInfo& r, const std::string& ns,
                                const std::string& name) {
    absl::StatusOr<base::Json> o = kube::DynamicClient(rest_, r).Get(ns, name);
    if (kube::IsNotFound(o.status())) return std::nullopt;
    EXPECT_TRUE(o.ok()) << o.status();
    return o.ok() ? std::optional<base::Json>(*o) : std::nullopt;
  }

  std::vector<std::string> FinalizersOf(const api::ResourceInfo& r, const std::string& ns,
                                        const std::string& name) {
    std::optional<base::Json> o = Get(r, ns, name);
    if (!o) return {"<gone>"};
    return (*o)["metadata"].value("finalizers", std::vector<std::string>{});
  }

  Options Opts() {
    return Options{.namespace_ = cluster_->ns(),
                   .controller_deployment = "",
                   .webhook_configuration = "",
                   .label_selector = Selector(),
                   .timeout = absl::Seconds(10),
                   .poll_interval = absl::Milliseconds(20)};
  }

  std::shared_ptr<kube::RestClient> rest_;
  std::vector<std::tuple<api::ResourceInfo, std::string, std::string>> created_;
};

TEST_F(CleanupTest, RemovesOnlyOurFinalizerAndTerminatingObjectsGo) {
  const auto& pools = api::SpiderIPPool::Resource();
  const std::string ns = cluster_->ns();
  Pool(Name("terminating"), {kOurs});
  Pool(Name("shared"), {kOther, kOurs});
  Pool(Name("live"), {kOurs});
  Pool(Name("no-finalizer"), {});
  Pool(Name("unlabelled"), {kOurs}, /*labelled=*/false);
  Create(api::SpiderSubnet::Resource(),
         {{"metadata", Meta(Name("subnet"), {kOurs}, true)},
          {"spec", {{"ipVersion", 4}, {"subnet", "10.251.0.0/24"}}}});
  Create(api::SpiderCoordinator::Resource(),
         {{"metadata", Meta(Name("coordinator"), {kOurs}, true)}, {"spec", {{"podCIDRType", "none"}}}});
  Create(api::SpiderEndpoint::Resource(),
         {{"metadata", Meta("pod-a", {kOurs}, true, ns)},
          {"status", {{"current", {{"uid", "u-1"}, {"node", "n1"},
                                  {"ips", {{{"interface", "eth0"}, {"ipv4", "10.250.0.11/24"},
                                            {"ipv4Pool", Name("live")}}}}}},
                      {"ownerControllerType", "Pod"},
                      {"ownerControllerName", "pod-a"}}}});
  DeleteObject(pools, "", Name("terminating"));
  DeleteObject(pools, "", Name("shared"));
  DeleteObject(pools, "", Name("unlabelled"));
  DeleteObject(api::SpiderSubnet::Resource(), "", Name("subnet"));
  DeleteObject(api::SpiderEndpoint::Resource(), ns, "pod-a");
  // Stuck, as after `helm uninstall` without the hook.
  ASSERT_THAT(FinalizersOf(pools, "", Name("terminating")), ElementsAre(kOurs));
  ASSERT_THAT(FinalizersOf(api::SpiderEndpoint::Resource(), ns, "pod-a"), ElementsAre(kOurs));

  absl::StatusOr<Result> r = cleanup::Run(rest_, Opts());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->finalizers_removed,
              UnorderedElementsAre(
                  "SpiderIPPool/" + Name("terminating"), "SpiderIPPool/" + Name("shared"),
                  "SpiderIPPool/" + Name("live"), "SpiderSubnet/" + Name("subnet"),
                  "SpiderCoordinator/" + Name("coordinator"), "SpiderEndpoint/" + ns + "/pod-a"));
  EXPECT_FALSE(r->controller_scaled_down);
  EXPECT_TRUE(r->webhook_configurations_deleted.empty());

  // Terminating and only ours: deleted by the API server.
  EXPECT_TRUE(WaitUntil([&] { return !Get(pools, "", Name("terminating")); }));
  EXPECT_TRUE(WaitUntil([&] { return !Get(api::SpiderSubnet::Resource(), "", Name("subnet")); }));
  EXPECT_TRUE(WaitUntil([&] { return !Get(api::SpiderEndpoint::Resource(), ns, "pod-a"); }));
  // Another finalizer stays (and holds the object); live objects stay, released.
  EXPECT_THAT(FinalizersOf(pools, "", Name("shared")), ElementsAre(kOther));
  EXPECT_TRUE(Get(pools, "", Name("shared"))->at("metadata").contains("deletionTimestamp"));
  EXPECT_THAT(FinalizersOf(pools, "", Name("live")), ElementsAre());
  EXPECT_THAT(FinalizersOf(api::SpiderCoordinator::Resource(), "", Name("coordinator")), ElementsAre());
  EXPECT_THAT(FinalizersOf(pools, "", Name("no-finalizer")), ElementsAre());
  // Outside the selector: untouched.
  EXPECT_THAT(FinalizersOf(pools, "", Name("unlabelled")), ElementsAre(kOurs));

  // Idempotent: a second run finds nothing to do.
  absl::StatusOr<Result> again = cleanup::Run(rest_, Opts());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->finalizers_removed.empty());
}

TEST_F(CleanupTest, DeletesOnlyTheNamedWebhookConfigurations) {
  const auto& mwc = api::MutatingWebhookConfiguration::Resource();
  const auto& vwc = api::ValidatingWebhookConfiguration::Resource();
  for (const auto* r : {&mwc, &vwc}) {
    Create(*r, {{"metadata", {{"name", Name("sp-ctl")}}}, {"webhooks", base::Json::array()}});
    Create(*r, {{"metadata", {{"name", Name("someone-else")}}}, {"webhooks", base::Json::array()}});
  }
  Options o = Opts();
  o.webhook_configuration = Name("sp-ctl");
  absl::StatusOr<Result> r = cleanup::Run(rest_, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->webhook_configurations_deleted,
              ElementsAre("MutatingWebhookConfiguration/" + Name("sp-ctl"),
                          "ValidatingWebhookConfiguration/" + Name("sp-ctl")));
  for (const auto* r2 : {&mwc, &vwc}) {
    EXPECT_TRUE(WaitUntil([&] { return !Get(*r2, "", Name("sp-ctl")); })) << r2->kind;
    EXPECT_TRUE(Get(*r2, "", Name("someone-else")).has_value()) << r2->kind;
  }
  // Already gone: not an error.
  EXPECT_TRUE(cleanup::Run(rest_, o).ok());
}

class ControllerStopTest : public CleanupTest {
 protected:
  void SetUp() override {
    CleanupTest::SetUp();
    if (HasFatalFailure()) return;
    const std::string ns = cluster_->ns();
    // The controller: a Deployment and one pod of it. The pod has another controller owner
    // (a ConfigMap) so that on a real cluster the ReplicaSet does not adopt it: only the test
    // deletes it.
    Create(api::Deployment::Resource(),
           {{"metadata", {{"name", "spiderpool-controller"}, {"namespace", ns}}},
            {"spec",
             {{"replicas", 1},
              {"selector", {{"matchLabels", {{"app", "sp-cleanup-test"}}}}},
              {"template",
               {{"metadata", {{"labels", {{"app", "sp-cleanup-test"}}}}},
                {"spec",
                 {{"terminationGracePeriodSeconds", 0},
                  {"containers",
                   {{{"name", "c"}, {"image", "registry.k8s.io/pause:3.9"}}}}}}}}}}});
    Create(api::ConfigMap::Resource(), {{"metadata", {{"name", "holder"}, {"namespace", ns}}}});
    absl::StatusOr<base::Json> holder =
        kube::DynamicClient(rest_, api::ConfigMap::Resource()).Get(ns, "holder");
    ASSERT_TRUE(holder.ok());
    Create(api::Pod::Resource(),
           {{"metadata",
             {{"name", "controller-pod"},
              {"namespace", ns},
              {"labels", {{"app", "sp-cleanup-test"}}},
              {"ownerReferences",
               {{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "holder"},
                 {"uid", (*holder)["metadata"]["uid"]}, {"controller", true}}}}}},
            {"spec",
             {{"terminationGracePeriodSeconds", 0},
              {"containers", {{{"name", "c"}, {"image", "registry.k8s.io/pause:3.9"}}}}}}});
    Pool(Name("pool"), {kOurs});
  }

  int64_t Replicas() {
    std::optional<base::Json> d = Get(api::Deployment::Resource(), cluster_->ns(), "spiderpool-controller");
    return d ? (*d)["spec"].value("replicas", int64_t{-1}) : -2;
  }

  Options StopOpts() {
    Options o = Opts();
    o.controller_deployment = "spiderpool-controller";
    return o;
  }
};

TEST_F(ControllerStopTest, NoFinalizerIsRemovedWhileTheControllerRuns) {
  for (const auto* r : {&api::MutatingWebhookConfiguration::Resource(),
                        &api::ValidatingWebhookConfiguration::Resource()}) {
    Create(*r, {{"metadata", {{"name", Name("sp-ctl")}}}, {"webhooks", base::Json::array()}});
  }
  Options o = StopOpts();
  o.webhook_configuration = Name("sp-ctl");
  o.timeout = absl::Milliseconds(500);
  absl::StatusOr<Result> r = cleanup::Run(rest_, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("controller-pod"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("spiderpool-controller"));
  EXPECT_EQ(Replicas(), 0);
  EXPECT_THAT(FinalizersOf(api::SpiderIPPool::Resource(), "", Name("pool")), ElementsAre(kOurs));
  // The webhook configurations are gone already: nothing left that no controller answers.
  for (const auto* r : {&api::MutatingWebhookConfiguration::Resource(),
                        &api::ValidatingWebhookConfiguration::Resource()}) {
    EXPECT_TRUE(WaitUntil([&] { return !Get(*r, "", Name("sp-ctl")); })) << r->kind;
  }
}

TEST_F(ControllerStopTest, ScalesTheControllerDownAndWaitsForItsPods) {
  // The "kubelet": once the Deployment is at 0, checks that the cleanup still waits (the
  // pool keeps its finalizer), then removes the controller's pod.
  std::atomic<bool> held_while_running{false};
  std::jthread kubelet([&] {
    if (!WaitUntil([&] { return Replicas() == 0; })) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    held_while_running = FinalizersOf(api::SpiderIPPool::Resource(), "", Name("pool")) ==
                         std::vector<std::string>{kOurs};
    (void)kube::DynamicClient(rest_, api::Pod::Resource())
        .Delete(cluster_->ns(), "controller-pod", {.grace_period_seconds = 0});
  });
  absl::StatusOr<Result> r = cleanup::Run(rest_, StopOpts());
  kubelet.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->controller_scaled_down);
  EXPECT_TRUE(held_while_running);
  EXPECT_THAT(r->finalizers_removed, ElementsAre("SpiderIPPool/" + Name("pool")));
  EXPECT_THAT(FinalizersOf(api::SpiderIPPool::Resource(), "", Name("pool")), ElementsAre());
}

TEST_F(CleanupTest, MissingDeploymentIsNothingToStop) {
  Options o = Opts();
  o.controller_deployment = "not-there";
  absl::StatusOr<Result> r = cleanup::Run(rest_, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->controller_scaled_down);
}

TEST_F(CleanupTest, BadSelectorIsRefusedBeforeAnything) {
  Pool(Name("pool"), {kOurs});
  Options o = Opts();
  o.label_selector = "a in (";
  absl::StatusOr<Result> r = cleanup::Run(rest_, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("cleanup label selector"));
  EXPECT_THAT(FinalizersOf(api::SpiderIPPool::Resource(), "", Name("pool")), ElementsAre(kOurs));
}

}  // namespace
}  // namespace spiderpool::op::cleanup
