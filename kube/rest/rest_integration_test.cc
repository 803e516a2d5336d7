// Integration tests of the REST client against the loopback API server, through TestCluster.
// They run unchanged against a real cluster with SPIDERPOOL_TEST_KUBECONFIG set; the ones
// that need fault injection (or loopback-only credentials) skip there.

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <set>
#include <thread>

#include "api/core.h"
#include "base/log.h"
#include "base/status.h"
#include "base/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "kube/rest/client.h"
#include "kube/rest/rest_client.h"
#include "kube/testing/test_cluster.h"

namespace spiderpool::kube {
namespace {

using base::Json;
using testing::TestCluster;

constexpr char kCrdDir[] = "kube/rest/testdata/crds";

struct WidgetSpec {
  std::string color;
  int64_t size = 0;
  template <typename V>
  void Visit(V& v) {
    v.Field("color", color);
    v.Field("size", size);
  }
};

struct WidgetStatus {
  std::string phase;
  int64_t observed_size = 0;
  template <typename V>
  void Visit(V& v) {
    v.Field("phase", phase);
    v.Field("observedSize", observed_size);
  }
};

struct Widget {
  SP_API_OBJECT_HEAD(Widget)
  WidgetSpec spec;
  WidgetStatus status;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec);
    v.Field("status", status);
  }
};

const api::ResourceInfo& Widget::Resource() {
  static const api::ResourceInfo info{.group = "test.spiderpool.io", .version = "v1",
                                      .kind = "Widget", .plural = "widgets",
                                      .singular = "widget", .namespaced = true,
                                      .has_status = true};
  return info;
}

std::unique_ptr<TestCluster> StartCluster(testing::LoopbackOptions options = {}) {
  absl::StatusOr<std::unique_ptr<TestCluster>> c = TestCluster::Start(std::move(options));
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? std::move(*c) : nullptr;
}

api::ConfigMap MakeConfigMap(const std::string& ns, const std::string& name,
                             const std::string& value) {
  api::ConfigMap cm;
  cm.metadata.namespace_ = ns;
  cm.metadata.name = name;
  cm.data["v"] = value;
  return cm;
}

// Advances a simulated clock whenever someone sleeps on it, until destroyed.
class AutoAdvance {
 public:
  AutoAdvance(base::SimulatedClock& clock, absl::Duration step)
      : thread_([&clock, step](std::stop_token st) {
          while (!st.stop_requested()) {
            if (clock.WaitForSleepers(1, absl::Milliseconds(5))) clock.Advance(step);
          }
        }) {}

 private:
  std::jthread thread_;
};

TEST(RestIntegrationTest, TypedRoundTripWithStatusAndPatches) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  ASSERT_TRUE(cluster->ApplyCRDs(kCrdDir).ok());
  Client<Widget> widgets(cluster->rest());

  Widget w;
  w.metadata.namespace_ = cluster->ns();
  w.metadata.name = "w1";
  w.metadata.labels["app"] = "test";
  w.spec.color = "red";
  w.spec.size = 1;
  absl::StatusOr<Widget> created = widgets.Create(w);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_FALSE(created->metadata.uid.empty());
  EXPECT_FALSE(created->metadata.resource_version.empty());
  EXPECT_EQ(created->kind, "Widget");
  EXPECT_EQ(created->api_version, "test.spiderpool.io/v1");

  // A second create of the same name.
  EXPECT_TRUE(kube::IsAlreadyExists(widgets.Create(w).status()));

  absl::StatusOr<Widget> got = widgets.Get(cluster->ns(), "w1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->spec.color, "red");
  EXPECT_EQ(got->metadata.labels.at("app"), "test");

  // Update the spec.
  Widget update = *got;
  update.spec.size = 2;
  absl::StatusOr<Widget> updated = widgets.Update(update);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ(updated->spec.size, 2);
  EXPECT_NE(updated->metadata.resource_version, got->metadata.resource_version);

  // The stale copy conflicts.
  EXPECT_TRUE(kube::IsConflict(widgets.Update(update).status()));

  // Status through the subresource: the spec change in the same body is ignored.
  Widget with_status = *updated;
  with_status.status.phase = "Ready";
  with_status.status.observed_size = 2;
  with_status.spec.color = "ignored";
  absl::StatusOr<Widget> status_updated = widgets.UpdateStatus(with_status);
  ASSERT_TRUE(status_updated.ok()) << status_updated.status();
  EXPECT_EQ(status_updated->status.phase, "Ready");
  EXPECT_EQ(status_updated->spec.color, "red");

  // Merge patch of the spec; the main resource ignores status changes.
  absl::StatusOr<Widget> patched = widgets.Patch(
      cluster->ns(), "w1", PatchType::kMerge,
      {{"spec", {{"color", "blue"}}}, {"status", {{"phase", "Ignored"}}}});
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ(patched->spec.color, "blue");
  EXPECT_EQ(patched->spec.size, 2);
  EXPECT_EQ(patched->status.phase, "Ready");

  // JSON patch of the status subresource.
  absl::StatusOr<Widget> status_patched = widgets.Patch(
      cluster->ns(), "w1", PatchType::kJson,
      Json::array({{{"op", "replace"}, {"path", "/status/phase"}, {"value", "Done"}}}),
      {.subresource = "status"});
  ASSERT_TRUE(status_patched.ok()) << status_patched.status();
  EXPECT_EQ(status_patched->status.phase, "Done");
  EXPECT_EQ(status_patched->spec.color, "blue");

  // Delete with a wrong UID precondition conflicts; with the right one it deletes.
  DeleteOptions wrong;
  wrong.precondition_uid = "00000000-0000-0000-0000-000000000000";
  EXPECT_TRUE(kube::IsConflict(widgets.Delete(cluster->ns(), "w1", wrong)));
  DeleteOptions right;
  right.precondition_uid = created->metadata.uid;
  ASSERT_TRUE(widgets.Delete(cluster->ns(), "w1", right).ok());
  absl::StatusOr<Widget> gone = widgets.Get(cluster->ns(), "w1");
  EXPECT_TRUE(kube::IsNotFound(gone.status())) << gone.status();
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(kube::IsNotFound(widgets.Delete(cluster->ns(), "w1")));
}

TEST(RestIntegrationTest, InvalidObjectsReportCausesWithFieldPaths) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  ASSERT_TRUE(cluster->ApplyCRDs(kCrdDir).ok());
  DynamicClient widgets(cluster->rest(), Widget::Resource());
  absl::StatusOr<Json> bad = widgets.Create(
      {{"metadata", {{"name", "bad"}, {"namespace", cluster->ns()}}},
       {"spec", {{"size", -3}}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(kube::IsInvalid(bad.status())) << bad.status();
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<api::StatusCause> causes = StatusCauses(bad.status());
  ASSERT_FALSE(causes.empty());
  EXPECT_NE(causes[0].field.find("spec.size"), std::string::npos) << causes[0].field;
}

TEST(RestIntegrationTest, PaginationVisitsEveryObjectOnce) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  Client<api::ConfigMap> setup(cluster->rest());
  // Only the objects made here are counted (a real namespace has its own, kube-root-ca.crt).
  for (int i = 0; i < 25; ++i) {
    api::ConfigMap cm = MakeConfigMap(cluster->ns(), "cm-" + std::to_string(i), "x");
    cm.metadata.labels["page"] = "test";
    ASSERT_TRUE(setup.Create(cm).ok());
  }
  absl::StatusOr<std::shared_ptr<RestClient>> rest = cluster->NewRest();
  ASSERT_TRUE(rest.ok());
  Client<api::ConfigMap> cms(*rest);

  // One page by hand.
  absl::StatusOr<api::List<api::ConfigMap>> page = cms.List(cluster->ns(), {.label_selector = "page=test", .limit = 10});
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->items.size(), 10u);
  EXPECT_FALSE(page->metadata.continue_.empty());

  uint64_t before = (*rest)->stats().requests;
  absl::StatusOr<api::List<api::ConfigMap>> all = cms.ListAll(cluster->ns(), {.label_selector = "page=test", .limit = 10});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ((*rest)->stats().requests - before, 3u);  // 10 + 10 + 5
  std::set<std::string> names;
  for (const api::ConfigMap& cm : all->items) names.insert(cm.metadata.name);
  EXPECT_EQ(all->items.size(), 25u);
  EXPECT_EQ(names.size(), 25u);
  EXPECT_FALSE(all->metadata.resource_version.empty());

  // Set-based label selectors (spaces, parentheses, commas) are sent escaped.
  api::ConfigMap labelled = MakeConfigMap(cluster->ns(), "labelled", "x");
  labelled.metadata.labels["tier"] = "gold";
  ASSERT_TRUE(setup.Create(labelled).ok());
  absl::StatusOr<api::List<api::ConfigMap>> selected =
      cms.ListAll(cluster->ns(), {.label_selector = "tier in (gold,silver)"});
  ASSERT_TRUE(selected.ok()) << selected.status();
  ASSERT_EQ(selected->items.size(), 1u);
  EXPECT_EQ(selected->items[0].metadata.name, "labelled");
}

TEST(RestIntegrationTest, ConcurrentWritersConvergeWithRetryOnConflict) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  Client<api::ConfigMap> cms(cluster->rest());
  ASSERT_TRUE(cms.Create(MakeConfigMap(cluster->ns(), "counter", "0")).ok());
  base::BackoffPolicy policy = DefaultRetry();
  policy.steps = 1000;
  policy.initial = absl::Milliseconds(1);
  constexpr int kWriters = 2;
  constexpr int kIncrements = 25;
  std::atomic<int> conflicts{0};
  std::vector<std::jthread> writers;
  std::atomic<int> failures{0};
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&] {
      for (int i = 0; i < kIncrements; ++i) {
        absl::Status s = RetryOnConflict(policy, [&]() -> absl::Status {
          SP_ASSIGN_OR_RETURN(api::ConfigMap cm, cms.Get(cluster->ns(), "counter"));
          cm.data["v"] = std::to_string(std::stoi(cm.data["v"]) + 1);
          absl::Status st = cms.Update(cm).status();
          if (kube::IsConflict(st)) ++conflicts;
          return st;
        });
        if (!s.ok()) ++failures;
      }
    });
  }
  writers.clear();
  EXPECT_EQ(failures.load(), 0);
  absl::StatusOr<api::ConfigMap> final_cm = cms.Get(cluster->ns(), "counter");
  ASSERT_TRUE(final_cm.ok());
  EXPECT_EQ(final_cm->data["v"], std::to_string(kWriters * kIncrements));  // no lost update
  SP_LOG(Info).Msg("conflicts retried").KV("conflicts", conflicts.load());
}

TEST(RestIntegrationTest, RateLimiterSpacesRequestsInVirtualTime) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  base::SimulatedClock clock;
  Config config = cluster->config();
  config.clock = &clock;
  config.qps = 5;
  config.burst = 2;
  absl::StatusOr<std::shared_ptr<RestClient>> rest = RestClient::Create(config);
  ASSERT_TRUE(rest.ok());
  Client<api::ConfigMap> cms(*rest);
  absl::Time start = clock.Now();
  {
    AutoAdvance advance(clock, absl::Milliseconds(10));
    for (int i = 0; i < 12; ++i) {
      absl::StatusOr<api::List<api::ConfigMap>> l = cms.List(cluster->ns());
      ASSERT_TRUE(l.ok()) << l.status();
    }
  }
  // Two from the burst, ten more at 5 per second.
  EXPECT_GE(clock.Now() - start, absl::Seconds(2));
  EXPECT_EQ((*rest)->stats().throttled, 10u);
}

TEST(RestIntegrationTest, TooManyRequestsIsRetriedAfterRetryAfter) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  if (cluster->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
  base::SimulatedClock clock;
  Config config = cluster->config();
  config.clock = &clock;
  config.qps = -1;
  absl::StatusOr<std::shared_ptr<RestClient>> rest = RestClient::Create(config);
  ASSERT_TRUE(rest.ok());
  Client<api::ConfigMap> cms(*rest);
  ASSERT_TRUE(cms.Create(MakeConfigMap(cluster->ns(), "a", "1")).ok());

  cluster->loopback()->FailNext(2, 429, {.verb = "get", .resource = "configmaps"},
                                /*retry_after_seconds=*/3);
  absl::Time start = clock.Now();
  auto result = std::async(std::launch::async, [&] { return cms.Get(cluster->ns(), "a"); });
  ASSERT_TRUE(clock.WaitForSleepers(1));
  EXPECT_EQ((*rest)->stats().requests, 2u);  // the create + the first 429
  EXPECT_NE(result.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  clock.Advance(absl::Seconds(3));
  ASSERT_TRUE(clock.WaitForSleepers(1));
  clock.Advance(absl::Seconds(3));
  absl::StatusOr<api::ConfigMap> got = result.get();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->data["v"], "1");
  EXPECT_EQ((*rest)->stats().retries, 2u);
  EXPECT_GE(clock.Now() - start, absl::Seconds(6));
}

// An API server restart closes every kept-alive connection. The client must not send a write
// on one of them: its answer would be lost (a Read error), and a POST cannot be resent.
TEST(RestIntegrationTest, WritesAfterTheServerClosedIdleConnectionsGoOnNewOnes) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  if (cluster->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
  Config config = cluster->config();
  config.qps = -1;
  absl::StatusOr<std::shared_ptr<RestClient>> rest = RestClient::Create(config);
  ASSERT_TRUE(rest.ok());
  Client<api::ConfigMap> cms(*rest);
  // Several idle keep-alive connections: requests in parallel, each on its own.
  cluster->loopback()->InjectDelay(absl::Milliseconds(200), {.verb = "create", .resource = "configmaps"});
  {
    std::vector<std::future<absl::Status>> creates;
    for (int i = 0; i < 4; ++i) {
      creates.push_back(std::async(std::launch::async, [&, i] {
        return cms.Create(MakeConfigMap(cluster->ns(), base::StrCat("idle-", i), "1")).status();
      }));
    }
    for (auto& c : creates) ASSERT_TRUE(c.get().ok());
  }
  cluster->loopback()->InjectDelay(absl::ZeroDuration(), {.verb = "create", .resource = "configmaps"});
  const RestClientStats before = (*rest)->stats();
  ASSERT_GE(before.connections, 2u);
  ASSERT_GE(cluster->loopback()->CutConnections(), 2);
  absl::SleepFor(absl::Milliseconds(50));  // the FINs arrive

  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<api::ConfigMap> created =
        cms.Create(MakeConfigMap(cluster->ns(), base::StrCat("after-cut-", i), "2"));
    ASSERT_TRUE(created.ok()) << created.status();
  }
  const RestClientStats after = (*rest)->stats();
  EXPECT_EQ(after.retries, before.retries);  // no failed attempt at all
  EXPECT_GE(after.dropped_idle - before.dropped_idle, 2u);
  EXPECT_EQ(after.connections, before.connections + 1);  // one new connection, kept alive
}

TEST(RestIntegrationTest, ServerErrorsSurfaceAfterBoundedRetries) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  if (cluster->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
  base::SimulatedClock clock;
  Config config = cluster->config();
  config.clock = &clock;
  config.qps = -1;
  absl::StatusOr<std::shared_ptr<RestClient>> rest = RestClient::Create(config);
  ASSERT_TRUE(rest.ok());
  Client<api::ConfigMap> cms(*rest);

  // Without Retry-After: not retried.
  cluster->loopback()->FailNext(1, 500, {.verb = "list"});
  absl::StatusOr<api::List<api::ConfigMap>> l = cms.List(cluster->ns());
  EXPECT_TRUE(kube::IsServerError(l.status())) << l.status();
  EXPECT_EQ(l.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ((*rest)->stats().requests, 1u);

  // With Retry-After: retried max_retries (10) times, then surfaced.
  cluster->loopback()->FailNext(100, 500, {.verb = "list"}, /*retry_after_seconds=*/1);
  {
    AutoAdvance advance(clock, absl::Seconds(1));
    l = cms.List(cluster->ns());
  }
  EXPECT_TRUE(kube::IsServerError(l.status())) << l.status();
  EXPECT_EQ((*rest)->stats().requests, 1u + 11u);
  cluster->loopback()->ClearFaults();

  // 503 with Retry-After that clears up: succeeds.
  cluster->loopback()->FailNext(2, 503, {.verb = "list"}, /*retry_after_seconds=*/1);
  {
    AutoAdvance advance(clock, absl::Seconds(1));
    l = cms.List(cluster->ns());
  }
  EXPECT_TRUE(l.ok()) << l.status();
}

TEST(RestIntegrationTest, WatchDeliversEventsAndEndsWhenTheServerCloses) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  Client<api::ConfigMap> cms(cluster->rest());
  absl::StatusOr<api::List<api::ConfigMap>> list = cms.List(cluster->ns());
  ASSERT_TRUE(list.ok());
  std::string rv = list->metadata.resource_version;

  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<WatchEventType, std::string>> events;
  std::stop_source stop;
  auto watch = std::async(std::launch::async, [&] {
    return cms.Watch(cluster->ns(), {.resource_version = rv, .allow_watch_bookmarks = true},
                     [&](WatchEvent e) {
                       if (e.type == WatchEventType::kBookmark) return true;
                       absl::StatusOr<api::ConfigMap> cm = api::Decode<api::ConfigMap>(e.object);
                       EXPECT_TRUE(cm.ok()) << cm.status();
                       // Only ours: the cluster writes its own (kube-root-ca.crt) meanwhile.
                       if (cm.ok() && cm->metadata.name != "a") return true;
                       std::lock_guard<std::mutex> lock(mu);
                       events.emplace_back(e.type, cm.ok() ? cm->metadata.name : "");
                       cv.notify_all();
                       return true;
                     },
                     stop.get_token());
  });
  auto wait_for = [&](size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(30), [&] { return events.size() >= n; });
  };
  ASSERT_TRUE(cms.Create(MakeConfigMap(cluster->ns(), "a", "1")).ok());
  ASSERT_TRUE(wait_for(1));
  ASSERT_TRUE(cms.Patch(cluster->ns(), "a", PatchType::kMerge, {{"data", {{"v", "2"}}}}).ok());
  ASSERT_TRUE(wait_for(2));
  ASSERT_TRUE(cms.Delete(cluster->ns(), "a").ok());
  ASSERT_TRUE(wait_for(3));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(events[0], std::make_pair(WatchEventType::kAdded, std::string("a")));
    EXPECT_EQ(events[1], std::make_pair(WatchEventType::kModified, std::string("a")));
    EXPECT_EQ(events[2], std::make_pair(WatchEventType::kDeleted, std::string("a")));
  }
  if (cluster->loopback() != nullptr) {
    // The server drops the stream: Watch returns OK (the caller resumes from its last RV).
    cluster->loopback()->CloseWatches();
    ASSERT_EQ(watch.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    absl::Status st = watch.get();
    EXPECT_TRUE(st.ok()) << st;
  } else {
    stop.request_stop();
    EXPECT_TRUE(watch.get().ok());
  }
}

TEST(RestIntegrationTest, WatchFromACompactedResourceVersionIsGone) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  if (cluster->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
  Client<api::ConfigMap> cms(cluster->rest());
  absl::StatusOr<api::List<api::ConfigMap>> list = cms.List(cluster->ns());
  ASSERT_TRUE(list.ok());
  std::string old_rv = list->metadata.resource_version;
  ASSERT_TRUE(cms.Create(MakeConfigMap(cluster->ns(), "a", "1")).ok());
  cluster->loopback()->CompactHistory();
  absl::Status st = cms.Watch(cluster->ns(), {.resource_version = old_rv},
                              [&](WatchEvent) { return true; });
  EXPECT_TRUE(kube::IsGone(st)) << st;
}

TEST(RestIntegrationTest, StopAbortsAnIdleWatchPromptly) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  Client<api::ConfigMap> cms(cluster->rest());
  std::stop_source stop;
  auto start = std::chrono::steady_clock::now();
  auto watch = std::async(std::launch::async, [&] {
    return cms.Watch(cluster->ns(), {}, [](WatchEvent) { return true; }, stop.get_token());
  });
  if (cluster->loopback() != nullptr) {
    ASSERT_TRUE(cluster->loopback()->WaitForWatches(1));
  }
  stop.request_stop();
  ASSERT_EQ(watch.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_TRUE(watch.get().ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST(RestIntegrationTest, TlsTrustAndCredentials) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  Request version{.path = "/version"};
  {
    absl::StatusOr<std::shared_ptr<RestClient>> rest = RestClient::Create(cluster->config());
    ASSERT_TRUE(rest.ok());
    absl::StatusOr<Response> r = (*rest)->Do(version);
    ASSERT_TRUE(r.ok()) << r.status();
  }
  if (cluster->loopback() == nullptr) GTEST_SKIP() << "the rest needs the loopback server";
  // A CA that did not sign the server certificate: refused, even though the system store
  // is not involved.
  {
    auto other = testing::LoopbackApiServer::Start();
    ASSERT_TRUE(other.ok());
    Config config = cluster->config();
    config.ca_pem = (*other)->ca_pem();
    absl::StatusOr<std::shared_ptr<RestClient>> rest = RestClient::Create(config);
    ASSERT_TRUE(rest.ok());
    absl::StatusOr<Response> r = (*rest)->Do(version);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    // insecure-skip-tls-verify connects anyway.
    config.insecure_skip_tls_verify = true;
    rest = RestClient::Create(config);
    ASSERT_TRUE(rest.ok());
    EXPECT_TRUE((*rest)->Do(version).ok());
  }
  // No credentials: 401.
  Config anonymous = cluster->config();
  anonymous.bearer_token.clear();
  anonymous.bearer_token_file.clear();
  absl::StatusOr<std::shared_ptr<RestClient>> rest = RestClient::Create(anonymous);
  ASSERT_TRUE(rest.ok());
  absl::StatusOr<Response> r = (*rest)->Do({.path = ResourcePath(api::ConfigMap::Resource(),
                                                                 cluster->ns())});
  EXPECT_TRUE(kube::IsUnauthorized(r.status())) << r.status();
  // A client certificate signed by the server CA authenticates.
  auto cert = cluster->loopback()->IssueClientCertificate("tester", {"system:masters"});
  ASSERT_TRUE(cert.ok()) << cert.status();
  Config with_cert = anonymous;
  with_cert.client_cert_pem = cert->first;
  with_cert.client_key_pem = cert->second;
  rest = RestClient::Create(with_cert);
  ASSERT_TRUE(rest.ok()) << rest.status();
  r = (*rest)->Do({.path = ResourcePath(api::ConfigMap::Resource(), cluster->ns())});
  EXPECT_TRUE(r.ok()) << r.status();
}

TEST(RestIntegrationTest, KubeconfigFromTheLoopbackServer) {
  auto cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  if (cluster->loopback() == nullptr) GTEST_SKIP() << "needs the loopback server";
  base::testing::TempDir dir("kube-rest-it");
  std::string path = dir.Join("kubeconfig");
  ASSERT_TRUE(cluster->loopback()->WriteKubeconfig(path).ok());
  absl::StatusOr<Config> config = LoadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, cluster->loopback()->url());
  absl::StatusOr<std::shared_ptr<RestClient>> rest = RestClient::Create(*config);
  ASSERT_TRUE(rest.ok());
  EXPECT_TRUE((*rest)->Do({.path = "/api/v1/namespaces/" + cluster->ns()}).ok());
}

}  // namespace
}  // namespace spiderpool::kube
