// Unit tests of the server core without HTTP: watch fan-out limits, version ordering, strategic
// merge, Status shapes.

#include "kube/testing/core.h"

#include <algorithm>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/core_util.h"
#include "kube/testing/errors.h"
#include "kube/testing/resources.h"

namespace spiderpool::kube::testing::internal {
namespace {

using base::Json;

HttpRequest Req(std::string method, std::string path, Json body = nullptr,
                std::multimap<std::string, std::string> params = {}) {
  HttpRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.params = std::move(params);
  if (!body.is_null()) r.body = base::DumpJson(body);
  r.content_type = "application/json";
  r.user = {"test", "", {}};
  return r;
}

Json Cm(const std::string& name) { return {{"metadata", {{"name", name}}}}; }

TEST(Watcher, BoundedQueueClosesInsteadOfBlocking) {
  Watcher w(3, "v1");
  EXPECT_TRUE(w.Push({"ADDED", nullptr, "{}"}));
  EXPECT_TRUE(w.Push({"ADDED", nullptr, "{}"}));
  EXPECT_TRUE(w.Push({"ADDED", nullptr, "{}"}));
  EXPECT_FALSE(w.closed());
  EXPECT_FALSE(w.Push({"ADDED", nullptr, "{}"}));  // overflow
  EXPECT_TRUE(w.closed());
  bool finished = false;
  auto items = w.Wait(absl::Now(), &finished);
  EXPECT_TRUE(items.empty()) << "an overflowed watcher drops its queue";
  EXPECT_TRUE(finished);
}

TEST(Watcher, WaitReturnsQueuedItemsThenFinishes) {
  Watcher w(10, "v1");
  w.Push({"BOOKMARK", nullptr, R"({"kind":"X"})"});
  w.Close(false);
  bool finished = false;
  auto items = w.Wait(absl::Now() + absl::Seconds(5), &finished);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_TRUE(finished);
  EXPECT_EQ(w.Render(items[0]), "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"X\"}}\n");
}

TEST(Core, SlowWatcherDoesNotBlockWritersAndIsClosed) {
  Core core({.watch_queue_capacity = 5});
  HttpResponse wr = core.Handle(
      Req("GET", "/api/v1/namespaces/default/configmaps", nullptr, {{"watch", "true"}}));
  ASSERT_EQ(wr.code, 200);
  ASSERT_TRUE(wr.watch);
  EXPECT_EQ(core.OpenWatches(), 1u);
  for (int i = 0; i < 20; ++i) {
    HttpResponse c =
        core.Handle(Req("POST", "/api/v1/namespaces/default/configmaps", Cm("c" + std::to_string(i))));
    ASSERT_EQ(c.code, 201) << c.body;
  }
  EXPECT_TRUE(wr.watch->closed());
  core.RemoveWatcher(wr.watch);
  EXPECT_EQ(core.OpenWatches(), 0u);
  core.RemoveWatcher(wr.watch);  // idempotent
  EXPECT_EQ(core.OpenWatches(), 0u);
}

TEST(Core, WatchSeesEventsInOrder) {
  Core core({});
  HttpResponse wr = core.Handle(Req("GET", "/api/v1/namespaces/default/configmaps", nullptr,
                                    {{"watch", "true"}, {"resourceVersion", "0"}}));
  ASSERT_TRUE(wr.watch);
  ASSERT_EQ(core.Handle(Req("POST", "/api/v1/namespaces/default/configmaps", Cm("a"))).code, 201);
  ASSERT_EQ(core.Handle(Req("DELETE", "/api/v1/namespaces/default/configmaps/a")).code, 200);
  bool finished = false;
  auto items = wr.watch->Wait(absl::Now(), &finished);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].type, "ADDED");
  EXPECT_EQ(items[1].type, "DELETED");
  EXPECT_LT(items[0].obj->rv, items[1].obj->rv);
  EXPECT_FALSE(finished);
  core.CloseWatches();
  wr.watch->Wait(absl::Now(), &finished);
  EXPECT_TRUE(finished);
}

TEST(Core, ClockDrivesTimestamps) {
  base::SimulatedClock clock(absl::FromUnixSeconds(1700000000));
  Core core({.clock = &clock});
  HttpResponse c = core.Handle(Req("POST", "/api/v1/namespaces/default/configmaps", Cm("t")));
  auto j = base::ParseJson(c.body);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["metadata"]["creationTimestamp"], "2023-11-14T22:13:20Z");
}

TEST(Core, FaultsMatchVerbResourceNamespaceName) {
  Core core({});
  core.FailNext(1, 503, {.verb = "get", .resource = "configmaps", .namespace_name = "default",
                         .name = "x"}, 0);
  EXPECT_EQ(core.Handle(Req("GET", "/api/v1/namespaces/default/configmaps/y")).code, 404);
  EXPECT_EQ(core.Handle(Req("GET", "/api/v1/namespaces/kube-system/configmaps/x")).code, 404);
  HttpResponse r = core.Handle(Req("GET", "/api/v1/namespaces/default/configmaps/x"));
  EXPECT_EQ(r.code, 503);
  EXPECT_THAT(r.body, ::testing::HasSubstr("\"reason\":\"ServiceUnavailable\""));
  EXPECT_EQ(core.Handle(Req("GET", "/api/v1/namespaces/default/configmaps/x")).code, 404);
  core.FailNext(1, 500, {.resource = "pods/status"}, 0);
  EXPECT_EQ(core.Handle(Req("GET", "/api/v1/namespaces/default/pods/p")).code, 404);
  EXPECT_EQ(core.Handle(Req("GET", "/api/v1/namespaces/default/pods/p/status")).code, 500);
}

TEST(Resources, VersionPriority) {
  std::vector<std::string> v = {"v1alpha1", "foo", "v2", "v1beta1", "v1", "v1beta2", "v11alpha2",
                                "bar", "v10"};
  std::sort(v.begin(), v.end(), VersionPriorityLess);
  EXPECT_EQ(v, (std::vector<std::string>{"v10", "v2", "v1", "v1beta2", "v1beta1", "v11alpha2",
                                         "v1alpha1", "bar", "foo"}));
}

TEST(Resources, BuiltinsAreNormalized) {
  for (const ResourceInfo& r : BuiltinResources()) {
    EXPECT_FALSE(r.singular.empty()) << r.plural;
    EXPECT_EQ(r.list_kind, r.kind + "List");
  }
}

TEST(Resources, StrategicMergePatch) {
  Json target = Json::parse(R"({"a":{"b":1,"c":2},"l":[{"name":"x","v":1},{"name":"y","v":2}],
                                "p":[1,2,3],"keep":true})");
  Json patch = Json::parse(R"({"a":{"c":null,"d":4},"l":[{"name":"y","v":3},{"name":"z","v":4},
                               {"name":"x","$patch":"delete"}],"p":[9],
                               "$setElementOrder/l":[{"name":"y"}],
                               "$deleteFromPrimitiveList/q":[1]})");
  auto out = ApplyStrategicMergePatch(target, patch);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, Json::parse(R"({"a":{"b":1,"d":4},"l":[{"name":"y","v":3},{"name":"z","v":4}],
                                   "p":[9],"keep":true})"));
  auto replaced = ApplyStrategicMergePatch(target, Json::parse(R"({"a":{"$patch":"replace","z":1}})"));
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ((*replaced)["a"], Json::parse(R"({"z":1})"));
  EXPECT_FALSE(ApplyStrategicMergePatch(target, Json::parse(R"({"a":{"$patch":"bogus"}})")).ok());
  EXPECT_FALSE(ApplyStrategicMergePatch(target, Json::array()).ok());
}

Json OwnedCm(const std::string& name, const std::vector<std::string>& owner_uids) {
  Json refs = Json::array();
  for (const std::string& uid : owner_uids) {
    refs.push_back({{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "o"}, {"uid", uid}});
  }
  return {{"metadata", {{"name", name}, {"ownerReferences", refs}}}};
}

std::vector<std::string> Names(const std::vector<ObjectRef>& refs) {
  std::vector<std::string> out;
  for (const ObjectRef& r : refs) out.push_back(MetaStr(r.obj->obj, "name"));
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Core, DependentsFollowCreatesUpdatesAndDeletes) {
  Core core({});
  const std::string cms = "/api/v1/namespaces/default/configmaps";
  ASSERT_EQ(core.Handle(Req("POST", cms, OwnedCm("a", {"u1"}))).code, 201);
  ASSERT_EQ(core.Handle(Req("POST", cms, OwnedCm("b", {"u1", "u2"}))).code, 201);
  ASSERT_EQ(core.Handle(Req("POST", cms, Cm("c"))).code, 201);
  EXPECT_THAT(Names(core.DependentsOf({"u1"})), ::testing::ElementsAre("a", "b"));
  EXPECT_THAT(Names(core.DependentsOf({"u1", "u2"})), ::testing::ElementsAre("a", "b"));
  EXPECT_THAT(Names(core.DependentsOf({"u2"})), ::testing::ElementsAre("b"));
  // b drops u1 and gains u3; c gains u2.
  ASSERT_EQ(core.Handle(Req("PUT", cms + "/b", OwnedCm("b", {"u2", "u3"}))).code, 200);
  ASSERT_EQ(core.Handle(Req("PUT", cms + "/c", OwnedCm("c", {"u2"}))).code, 200);
  EXPECT_THAT(Names(core.DependentsOf({"u1"})), ::testing::ElementsAre("a"));
  EXPECT_THAT(Names(core.DependentsOf({"u2"})), ::testing::ElementsAre("b", "c"));
  EXPECT_THAT(Names(core.DependentsOf({"u3"})), ::testing::ElementsAre("b"));
  ASSERT_EQ(core.Handle(Req("DELETE", cms + "/a")).code, 200);
  EXPECT_THAT(core.DependentsOf({"u1"}), ::testing::IsEmpty());
  EXPECT_THAT(core.DependentsOf({"nobody"}), ::testing::IsEmpty());
}

TEST(Resources, FieldValue) {
  Json pod = Json::parse(R"({"spec":{"nodeName":"n1","hostNetwork":true,"n":3},"status":{}})");
  EXPECT_EQ(FieldValue(pod, "spec.nodeName"), "n1");
  EXPECT_EQ(FieldValue(pod, "spec.hostNetwork"), "true");
  EXPECT_EQ(FieldValue(pod, "spec.n"), "3");
  EXPECT_EQ(FieldValue(pod, "status.phase"), std::nullopt);
  EXPECT_EQ(FieldValue(pod, "spec.nodeName.x"), std::nullopt);
}

TEST(Errors, StatusShapes) {
  EXPECT_EQ(NotFoundStatus("spiderpool.spidernet.io", "spiderippools", "x").ToJson(),
            Json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
               "message":"spiderippools.spiderpool.spidernet.io \"x\" not found",
               "reason":"NotFound","details":{"name":"x","group":"spiderpool.spidernet.io",
               "kind":"spiderippools"},"code":404})"));
  ApiStatus inv = InvalidStatus("g.io", "Kind", "n",
                                {FieldInvalid("spec.a", "1", "bad"), FieldRequired("spec.b", "")});
  EXPECT_EQ(inv.message,
            "Kind.g.io \"n\" is invalid: [spec.a: Invalid value: 1: bad, spec.b: Required value]");
  EXPECT_EQ(inv.code, 422);
  ASSERT_EQ(inv.causes.size(), 2u);
  EXPECT_EQ(inv.causes[1].reason, "FieldValueRequired");
  ApiStatus tmr = TooManyRequestsStatus(7);
  EXPECT_EQ(tmr.ToJson()["details"]["retryAfterSeconds"], 7);
  EXPECT_EQ(StatusForCode(418, "", "", "", 0).code, 418);
}

}  // namespace
}  // namespace spiderpool::kube::testing::internal
