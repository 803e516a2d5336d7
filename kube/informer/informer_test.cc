// Integration tests of the informer against the loopback API server (or, where no fault
// injection is needed, a real cluster through SPIDERPOOL_TEST_KUBECONFIG).

#include "kube/informer/informer.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "api/core.h"
#include "kube/testing/test_cluster.h"

namespace spiderpool::kube {
namespace {

using testing::TestCluster;

// Records handler calls and lets the test wait for a condition on them.
struct Recorder {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> events;  // "add ns/a", "update ns/a", "delete ns/a"

  EventHandlers<api::ConfigMap> Handlers() {
    return {
        .on_add = [this](const api::ConfigMap& c) { Push("add " + c.metadata.Key()); },
        .on_update = [this](const api::ConfigMap&,
                            const api::ConfigMap& c) { Push("update " + c.metadata.Key()); },
        .on_delete = [this](const api::ConfigMap& c) { Push("delete " + c.metadata.Key()); },
    };
  }
  void Push(std::string e) {
    std::lock_guard<std::mutex> l(mu);
    events.push_back(std::move(e));
    cv.notify_all();
  }
  bool WaitFor(const std::string& e) {
    std::unique_lock<std::mutex> l(mu);
    return cv.wait_for(l, std::chrono::seconds(30), [&] {
      return std::find(events.begin(), events.end(), e) != events.end();
    });
  }
};

// The ConfigMaps these tests create carry this label and the informers select it: a real
// cluster has ConfigMaps of its own in every namespace (kube-root-ca.crt).
constexpr char kOurs[] = "informer-test=true";

base::Json ConfigMap(const std::string& ns, const std::string& name, const std::string& v) {
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"informer-test", "true"}}}}},
          {"data", {{"k", v}}}};
}

struct Fixture {
  std::unique_ptr<TestCluster> cluster;
  std::unique_ptr<DynamicClient> cms;
  void SetUp() {
    auto c = TestCluster::Start();
    ASSERT_TRUE(c.ok()) << c.status();
    cluster = std::move(*c);
    cms = std::make_unique<DynamicClient>(cluster->rest(), api::ConfigMap::Resource());
  }
  void Create(const std::string& name, const std::string& v = "1") {
    auto r = cms->Create(ConfigMap(cluster->ns(), name, v));
    ASSERT_TRUE(r.ok()) << r.status();
  }
};

// client-go's metadata informer: the objects come as PartialObjectMetadata (no data), and a
// change of the data alone is still an update (a new resourceVersion).
TEST(Informer, MetadataOnlyListsAndWatchesTheMetadata) {
  Fixture f;
  f.SetUp();
  f.Create("meta-a");
  using Meta = api::MetadataOnly<api::ConfigMap>;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> updates;  // resourceVersions seen by on_update
  Informer<Meta> inf(f.cluster->rest(), {.namespace_ = f.cluster->ns(), .label_selector = kOurs});
  inf.AddHandlers({.on_update = [&](const Meta&, const Meta& m) {
    std::lock_guard<std::mutex> l(mu);
    updates.push_back(m.metadata.resource_version);
    cv.notify_all();
  }});
  std::jthread t([&](std::stop_token s) { inf.Run(s); });
  ASSERT_TRUE(inf.WaitForCacheSync(absl::Seconds(30)));
  std::shared_ptr<const Meta> a = inf.store().Get(f.cluster->ns() + "/meta-a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->kind, "PartialObjectMetadata");
  EXPECT_EQ(a->api_version, "meta.k8s.io/v1");
  EXPECT_EQ(a->metadata.labels.at("informer-test"), "true");

  auto patched = f.cms->Patch(f.cluster->ns(), "meta-a", PatchType::kMerge, {{"data", {{"k", "2"}}}});
  ASSERT_TRUE(patched.ok()) << patched.status();
  const std::string rv = (*patched)["metadata"]["resourceVersion"].get<std::string>();
  std::unique_lock<std::mutex> l(mu);
  ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(30), [&] {
    return std::find(updates.begin(), updates.end(), rv) != updates.end();
  }));
  EXPECT_EQ(inf.store().Get(f.cluster->ns() + "/meta-a")->kind, "PartialObjectMetadata");
}

TEST(Informer, ListsWatchesAndIndexes) {
  Fixture f;
  f.SetUp();
  for (int i = 0; i < 25; ++i) f.Create("cm-" + std::to_string(i));
  Recorder rec;
  metrics::Registry registry;
  Informer<api::ConfigMap> inf(f.cluster->rest(), {.namespace_ = f.cluster->ns(), .label_selector = kOurs,
                                                   .page_size = 10, .registry = &registry});
  inf.AddHandlers(rec.Handlers());
  inf.AddIndexer("value", [](const api::ConfigMap& c) {
    auto it = c.data.find("k");
    return std::vector<std::string>{it == c.data.end() ? "" : it->second};
  });
  std::jthread t([&](std::stop_token s) { inf.Run(s); });
  ASSERT_TRUE(inf.WaitForCacheSync(absl::Seconds(30)));
  EXPECT_EQ(inf.store().Size(), 25u);
  EXPECT_EQ(inf.store().ByIndex("value", "1").size(), 25u);
  EXPECT_EQ(inf.store().ByIndex("namespace", f.cluster->ns()).size(), 25u);

  auto patched = f.cms->Patch(f.cluster->ns(), "cm-3", PatchType::kMerge, {{"data", {{"k", "2"}}}});
  ASSERT_TRUE(patched.ok());
  ASSERT_TRUE(rec.WaitFor("update " + f.cluster->ns() + "/cm-3"));
  EXPECT_EQ(inf.store().ByIndex("value", "2").size(), 1u);
  EXPECT_EQ(inf.store().ByIndex("value", "1").size(), 24u) << "the old value unindexed";
  ASSERT_TRUE(f.cms->Delete(f.cluster->ns(), "cm-4").ok());
  ASSERT_TRUE(rec.WaitFor("delete " + f.cluster->ns() + "/cm-4"));
  EXPECT_EQ(inf.store().Get(f.cluster->ns() + "/cm-4"), nullptr);
  EXPECT_EQ(inf.store().ByIndex("value", "1").size(), 23u);
  EXPECT_EQ(inf.store().ByIndex("namespace", f.cluster->ns()).size(), 24u);
  EXPECT_EQ(inf.reflector().stats().lists, 1u);
}

// A field selector the server refuses (ConfigMaps have no selectable data.k, as a CRD's
// selectableFields on an API server older than 1.31): with field_selector_fallback the
// informer lists and watches without it; without, it never syncs.
TEST(Informer, FallsBackWhenTheServerRefusesTheFieldSelector) {
  Fixture f;
  f.SetUp();
  f.Create("fs-a", "1");
  f.Create("fs-b", "2");
  Informer<api::ConfigMap> strict(f.cluster->rest(), {.namespace_ = f.cluster->ns(),
                                                      .label_selector = kOurs,
                                                      .field_selector = "data.k=1"});
  std::jthread ts([&](std::stop_token s) { strict.Run(s); });
  EXPECT_FALSE(strict.WaitForCacheSync(absl::Seconds(2)));

  Recorder rec;
  Informer<api::ConfigMap> inf(f.cluster->rest(), {.namespace_ = f.cluster->ns(),
                                                   .label_selector = kOurs,
                                                   .field_selector = "data.k=1",
                                                   .field_selector_fallback = true});
  inf.AddHandlers(rec.Handlers());
  std::jthread t([&](std::stop_token s) { inf.Run(s); });
  ASSERT_TRUE(inf.WaitForCacheSync(absl::Seconds(30)));
  EXPECT_EQ(inf.store().Size(), 2u) << "every object: the selector was dropped";
  f.Create("fs-c", "3");
  ASSERT_TRUE(rec.WaitFor("add " + f.cluster->ns() + "/fs-c")) << "and the watch runs without it";
  EXPECT_EQ(inf.reflector().stats().lists, 1u);
}

TEST(Informer, ResumesAfterADroppedWatchWithoutRelisting) {
  Fixture f;
  f.SetUp();
  if (f.cluster->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
  f.Create("a");
  Recorder rec;
  Informer<api::ConfigMap> inf(f.cluster->rest(), {.namespace_ = f.cluster->ns(), .label_selector = kOurs});
  inf.AddHandlers(rec.Handlers());
  std::jthread t([&](std::stop_token s) { inf.Run(s); });
  ASSERT_TRUE(inf.WaitForCacheSync(absl::Seconds(30)));
  ASSERT_TRUE(f.cluster->loopback()->WaitForWatches(1));
  f.cluster->loopback()->CloseWatches();  // the connection drops
  f.Create("b");                          // happens while the informer reconnects
  ASSERT_TRUE(rec.WaitFor("add " + f.cluster->ns() + "/b"));
  EXPECT_EQ(inf.reflector().stats().lists, 1u);  // resumed from its resourceVersion
  EXPECT_GE(inf.reflector().stats().watches, 2u);
  EXPECT_EQ(inf.store().Size(), 2u);
}

TEST(Informer, RelistsOn410AndSeesDeletesThatHappenedMeanwhile) {
  Fixture f;
  f.SetUp();
  if (f.cluster->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
  auto* server = f.cluster->loopback();
  f.Create("stays");
  f.Create("goes");
  Recorder rec;
  base::SimulatedClock clock;  // drives the reflector's backoff
  Informer<api::ConfigMap> inf(f.cluster->rest(), {.namespace_ = f.cluster->ns(), .label_selector = kOurs,
                                                   .clock = &clock});
  inf.AddHandlers(rec.Handlers());
  std::jthread t([&](std::stop_token s) { inf.Run(s); });
  ASSERT_TRUE(inf.WaitForCacheSync(absl::Seconds(30)));
  ASSERT_TRUE(server->WaitForWatches(1));

  // Cut the watch and keep it down (the reflector backs off on the simulated clock).
  server->FailNext(1000, 500, {.verb = "watch"});
  server->CloseWatches();
  ASSERT_TRUE(clock.WaitForSleepers(1));
  // Meanwhile: a delete and a create, and the server forgets the old history.
  ASSERT_TRUE(f.cms->Delete(f.cluster->ns(), "goes").ok());
  f.Create("new");
  server->CompactHistory();
  server->ClearFaults();
  clock.Advance(absl::Minutes(1));

  ASSERT_TRUE(rec.WaitFor("delete " + f.cluster->ns() + "/goes"));
  ASSERT_TRUE(rec.WaitFor("add " + f.cluster->ns() + "/new"));
  EXPECT_EQ(inf.reflector().stats().lists, 2u);  // 410 -> relist
  EXPECT_NE(inf.store().Get(f.cluster->ns() + "/stays"), nullptr);
  EXPECT_EQ(inf.store().Get(f.cluster->ns() + "/goes"), nullptr);
  EXPECT_EQ(inf.store().Size(), 2u);
}

TEST(Informer, SkipsObjectsThatDoNotDecode) {
  Fixture f;
  f.SetUp();
  // A real API server would refuse a non-string ConfigMap value; the loopback server stores it.
  if (f.cluster->loopback() == nullptr) GTEST_SKIP() << "needs the loopback server";
  f.Create("good");
  base::Json bad = ConfigMap(f.cluster->ns(), "bad", "x");
  bad["data"]["k"] = 5;
  ASSERT_TRUE(f.cms->Create(bad).ok());
  metrics::Registry registry;
  Informer<api::ConfigMap> inf(f.cluster->rest(), {.namespace_ = f.cluster->ns(), .label_selector = kOurs,
                                                   .registry = &registry});
  std::jthread t([&](std::stop_token s) { inf.Run(s); });
  ASSERT_TRUE(inf.WaitForCacheSync(absl::Seconds(30)));
  EXPECT_EQ(inf.store().Size(), 1u);
  EXPECT_NE(registry.Expose().find(
                "spiderpool_informer_decode_errors_total{resource=\"configmaps\"} 1"),
            std::string::npos);
}

}  // namespace
}  // namespace spiderpool::kube
