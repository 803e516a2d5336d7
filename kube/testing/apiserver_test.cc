// End-to-end tests of the loopback API server through real HTTPS: CRUD, concurrency, status,
// patch, delete, list, discovery, auth, namespaces, fault injection, admission, kubeconfig.

#include "kube/testing/apiserver.h"

#include <chrono>
#include <thread>
#include <functional>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/apiserver_test_fixture.h"
#include "kube/testing/test_client.h"

namespace spiderpool::kube::testing {
namespace {

using base::Json;
using ::testing::HasSubstr;
using namespace apiserver_test;  // NOLINT(build/namespaces)

// ---- CRUD ----

TEST_F(ApiServerTest, CreateGetUpdateDelete) {
  HttpResult c = MustCreate(kCmPath, ConfigMap("cm1", {}, {{"k", "v"}}));
  const Json& m = c.body["metadata"];
  EXPECT_EQ(m["namespace"], "default");
  EXPECT_TRUE(Matches(m["uid"].get<std::string>(), "xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx"))
      << m["uid"];
  EXPECT_TRUE(Matches(m["creationTimestamp"].get<std::string>(), "dddd-dd-ddTdd:dd:ddZ"))
      << m["creationTimestamp"];
  EXPECT_TRUE(m["resourceVersion"].is_string());
  EXPECT_EQ(m["generation"], 1);
  EXPECT_EQ(c.Header("Content-Type"), "application/json");

  HttpResult g = client_->Get(std::string(kCmPath) + "/cm1");
  ASSERT_EQ(g.status, 200) << g.raw;
  EXPECT_EQ(g.body, c.body);

  Json upd = g.body;
  upd["data"]["k"] = "v2";
  HttpResult u = client_->Put(std::string(kCmPath) + "/cm1", upd);
  ASSERT_EQ(u.status, 200) << u.raw;
  EXPECT_EQ(u.body["data"]["k"], "v2");
  EXPECT_GT(std::stoll(Rv(u.body)), std::stoll(Rv(c.body)));
  EXPECT_EQ(u.body["metadata"]["uid"], m["uid"]);

  HttpResult d = client_->Delete(std::string(kCmPath) + "/cm1");
  ASSERT_EQ(d.status, 200) << d.raw;
  EXPECT_EQ(d.body["kind"], "Status");
  EXPECT_EQ(d.body["status"], "Success");

  HttpResult nf = client_->Get(std::string(kCmPath) + "/cm1");
  EXPECT_EQ(nf.status, 404);
  EXPECT_EQ(nf.body, Json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},
      "status":"Failure","message":"configmaps \"cm1\" not found","reason":"NotFound",
      "details":{"name":"cm1","kind":"configmaps"},"code":404})"));
  EXPECT_EQ(client_->Delete(std::string(kCmPath) + "/cm1").status, 404);
}

TEST_F(ApiServerTest, ResourceVersionIsGlobalAndMonotonic) {
  int64_t last = server_->CurrentResourceVersion();
  for (int i = 0; i < 5; ++i) {
    HttpResult c = MustCreate(i % 2 ? kCmPath : "/api/v1/namespaces/default/secrets",
                              {{"metadata", {{"name", "o" + std::to_string(i)}}}});
    int64_t rv = std::stoll(Rv(c.body));
    EXPECT_GT(rv, last);
    last = rv;
  }
  EXPECT_EQ(server_->CurrentResourceVersion(), last);
}

TEST_F(ApiServerTest, GenerateName) {
  HttpResult c = MustCreate(kCmPath, {{"metadata", {{"generateName", "gen-"}}}});
  std::string name = c.body["metadata"]["name"];
  EXPECT_TRUE(Matches(name, "gen-aaaaa")) << name;
  EXPECT_EQ(c.body["kind"], "ConfigMap");
  EXPECT_EQ(c.body["apiVersion"], "v1");
  HttpResult c2 = MustCreate(kCmPath, {{"metadata", {{"generateName", "gen-"}}}});
  EXPECT_NE(c2.body["metadata"]["name"], name);
}

TEST_F(ApiServerTest, AlreadyExists) {
  MustCreate(kCmPath, ConfigMap("dup"));
  HttpResult r = client_->Post(kCmPath, ConfigMap("dup"));
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.body["reason"], "AlreadyExists");
  EXPECT_EQ(r.body["message"], "configmaps \"dup\" already exists");
  EXPECT_EQ(r.body["details"]["kind"], "configmaps");
}

TEST_F(ApiServerTest, NameValidationAndNamespaceChecks) {
  HttpResult bad = client_->Post(kCmPath, ConfigMap("Bad_Name"));
  EXPECT_EQ(bad.status, 422) << bad.raw;
  EXPECT_EQ(bad.body["reason"], "Invalid");
  EXPECT_THAT(bad.body["message"].get<std::string>(),
              HasSubstr("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: "
                        "\"Bad_Name\": a lowercase RFC 1123 subdomain"));
  EXPECT_EQ(bad.body["details"]["causes"][0]["field"], "metadata.name");
  EXPECT_EQ(bad.body["details"]["causes"][0]["reason"], "FieldValueInvalid");

  HttpResult noname = client_->Post(kCmPath, {{"metadata", Json::object()}});
  EXPECT_EQ(noname.status, 422);
  EXPECT_EQ(noname.body["details"]["causes"][0]["message"],
            "Required value: name or generateName is required");

  Json other = ConfigMap("x");
  other["metadata"]["namespace"] = "kube-system";
  HttpResult mismatch = client_->Post(kCmPath, other);
  EXPECT_EQ(mismatch.status, 400);
  EXPECT_EQ(mismatch.body["reason"], "BadRequest");
  EXPECT_EQ(mismatch.body["message"],
            "the namespace of the provided object does not match the namespace sent on the "
            "request");

  Json wrong_kind = ConfigMap("y");
  wrong_kind["apiVersion"] = "apps/v1";
  EXPECT_EQ(client_->Post(kCmPath, wrong_kind).status, 400);

  Json labels = ConfigMap("z", {{"bad key!", "v"}});
  EXPECT_EQ(client_->Post(kCmPath, labels).status, 422);

  Json with_rv = ConfigMap("w");
  with_rv["metadata"]["resourceVersion"] = "5";
  EXPECT_EQ(client_->Post(kCmPath, with_rv).status, 500);
}

TEST_F(ApiServerTest, UnknownResourcesAndMethods) {
  HttpResult r = client_->Get("/apis/nope.io/v1/things");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body["reason"], "NotFound");
  EXPECT_EQ(r.body["message"], "the server could not find the requested resource");
  EXPECT_EQ(client_->Get("/api/v2/pods").status, 404);
  EXPECT_EQ(client_->Get("/api/v1/namespaces/default/pods/p/exec").status, 404);
  EXPECT_EQ(client_->Get("/api/v1/namespaces/default/configmaps/c/status").status, 404);
  // Cluster-scoped resource addressed through a namespace, namespaced one without.
  EXPECT_EQ(client_->Get("/api/v1/namespaces/default/nodes").status, 404);
  EXPECT_EQ(client_->Get("/api/v1/configmaps/x").status, 404);
  EXPECT_EQ(client_->Post(std::string(kCmPath) + "/x", ConfigMap("x")).status, 405);
  EXPECT_EQ(client_->Put(kCmPath, ConfigMap("x")).status, 405);
}

// ---- optimistic concurrency ----

TEST_F(ApiServerTest, StaleResourceVersionConflicts) {
  HttpResult c = MustCreate(kCmPath, ConfigMap("occ"));
  Json first = c.body;
  first["data"]["a"] = "1";
  ASSERT_EQ(client_->Put(std::string(kCmPath) + "/occ", first).status, 200);
  Json stale = c.body;
  stale["data"]["a"] = "2";
  HttpResult r = client_->Put(std::string(kCmPath) + "/occ", stale);
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.body["reason"], "Conflict");
  EXPECT_EQ(r.body["message"],
            "Operation cannot be fulfilled on configmaps \"occ\": the object has been modified; "
            "please apply your changes to the latest version and try again");
  // Without a resourceVersion the update is unconditional for built-in types.
  Json uncond = ConfigMap("occ", {}, {{"a", "3"}});
  HttpResult u = client_->Put(std::string(kCmPath) + "/occ", uncond);
  EXPECT_EQ(u.status, 200) << u.raw;
  EXPECT_EQ(u.body["data"]["a"], "3");
  EXPECT_EQ(u.body["metadata"]["uid"], c.body["metadata"]["uid"]);
  EXPECT_EQ(u.body["metadata"]["creationTimestamp"], c.body["metadata"]["creationTimestamp"]);
  // A different uid is a failed precondition.
  Json other_uid = u.body;
  other_uid["metadata"]["uid"] = "00000000-0000-4000-8000-000000000000";
  HttpResult pu = client_->Put(std::string(kCmPath) + "/occ", other_uid);
  EXPECT_EQ(pu.status, 409);
  EXPECT_THAT(pu.body["message"].get<std::string>(), HasSubstr("Precondition failed: UID"));
  // Name mismatch with the URL.
  Json renamed = u.body;
  renamed["metadata"]["name"] = "other";
  EXPECT_EQ(client_->Put(std::string(kCmPath) + "/occ", renamed).status, 400);
  // Update of a missing object.
  EXPECT_EQ(client_->Put(std::string(kCmPath) + "/missing", ConfigMap("missing")).status, 404);
}

TEST_F(ApiServerTest, NoOpUpdateKeepsResourceVersion) {
  HttpResult c = MustCreate(kCmPath, ConfigMap("noop", {}, {{"a", "1"}}));
  HttpResult u = client_->Put(std::string(kCmPath) + "/noop", c.body);
  ASSERT_EQ(u.status, 200);
  EXPECT_EQ(Rv(u.body), Rv(c.body));
}

// ---- status subresource and generation ----

TEST_F(ApiServerTest, StatusSubresourceAndGeneration) {
  const std::string path = "/apis/apps/v1/namespaces/default/deployments";
  Json d = {{"apiVersion", "apps/v1"},
            {"kind", "Deployment"},
            {"metadata", {{"name", "web"}}},
            {"spec", DeploymentSpec(1)},
            {"status", {{"replicas", 7}}}};
  HttpResult c = MustCreate(path, d);
  EXPECT_FALSE(c.body.contains("status")) << "status is dropped on create";
  EXPECT_EQ(c.body["metadata"]["generation"], 1);

  // Main resource: spec change bumps generation, status change is ignored.
  Json upd = c.body;
  upd["spec"]["replicas"] = 3;
  upd["status"] = {{"replicas", 9}};
  HttpResult u = client_->Put(path + "/web", upd);
  ASSERT_EQ(u.status, 200) << u.raw;
  EXPECT_EQ(u.body["spec"]["replicas"], 3);
  EXPECT_FALSE(u.body.contains("status"));
  EXPECT_EQ(u.body["metadata"]["generation"], 2);

  // Metadata-only change: no generation bump.
  Json lbl = u.body;
  lbl["metadata"]["labels"] = {{"a", "b"}};
  HttpResult l = client_->Put(path + "/web", lbl);
  ASSERT_EQ(l.status, 200) << l.raw;
  EXPECT_EQ(l.body["metadata"]["generation"], 2);
  EXPECT_EQ(l.body["metadata"]["labels"]["a"], "b");

  // /status: only status changes; spec and metadata changes are ignored; generation stays.
  Json st = l.body;
  st["status"] = {{"replicas", 3}, {"observedGeneration", 2}};
  st["spec"]["replicas"] = 100;
  st["metadata"]["labels"]["a"] = "changed";
  HttpResult s = client_->Put(path + "/web/status", st);
  ASSERT_EQ(s.status, 200) << s.raw;
  EXPECT_EQ(s.body["status"]["replicas"], 3);
  EXPECT_EQ(s.body["spec"]["replicas"], 3);
  EXPECT_EQ(s.body["metadata"]["labels"]["a"], "b");
  EXPECT_EQ(s.body["metadata"]["generation"], 2);

  // Stale RV on /status conflicts too.
  HttpResult stale = client_->Put(path + "/web/status", l.body);
  EXPECT_EQ(stale.status, 409);

  // Status patch.
  HttpResult p = client_->Patch(path + "/web/status", {{"status", {{"readyReplicas", 3}}}});
  ASSERT_EQ(p.status, 200) << p.raw;
  EXPECT_EQ(p.body["status"]["readyReplicas"], 3);
  EXPECT_EQ(p.body["status"]["replicas"], 3);
  EXPECT_EQ(p.body["metadata"]["generation"], 2);

  HttpResult g = client_->Get(path + "/web/status");
  EXPECT_EQ(g.status, 200);
  EXPECT_EQ(g.body["status"]["readyReplicas"], 3);
}

TEST_F(ApiServerTest, ResourcesWithoutStatusSubresourceBumpGenerationOnAnyChange) {
  HttpResult c = MustCreate(kCmPath, ConfigMap("g", {}, {{"a", "1"}}));
  HttpResult p = client_->Patch(std::string(kCmPath) + "/g", {{"data", {{"a", "2"}}}});
  ASSERT_EQ(p.status, 200);
  EXPECT_EQ(p.body["metadata"]["generation"], 2);
  HttpResult m = client_->Patch(std::string(kCmPath) + "/g",
                                {{"metadata", {{"annotations", {{"x", "y"}}}}}});
  EXPECT_EQ(m.body["metadata"]["generation"], 2);
}

// ---- patch ----

TEST_F(ApiServerTest, MergeJsonAndStrategicPatches) {
  HttpResult c = MustCreate(kCmPath, ConfigMap("p", {{"app", "a"}}, {{"x", "1"}, {"y", "2"}}));
  const std::string obj = std::string(kCmPath) + "/p";
  HttpResult m = client_->Patch(obj, {{"data", {{"x", nullptr}, {"z", "3"}}}});
  ASSERT_EQ(m.status, 200) << m.raw;
  EXPECT_EQ(m.body["data"], Json({{"y", "2"}, {"z", "3"}}));

  HttpResult j = client_->Patch(
      obj, Json::array({{{"op", "replace"}, {"path", "/data/y"}, {"value", "20"}},
                        {{"op", "add"}, {"path", "/metadata/labels/tier"}, {"value", "fe"}}}),
      "application/json-patch+json");
  ASSERT_EQ(j.status, 200) << j.raw;
  EXPECT_EQ(j.body["data"]["y"], "20");
  EXPECT_EQ(j.body["metadata"]["labels"]["tier"], "fe");

  HttpResult failed_test = client_->Patch(
      obj, Json::array({{{"op", "test"}, {"path", "/data/y"}, {"value", "nope"}}}),
      "application/json-patch+json");
  EXPECT_EQ(failed_test.status, 422) << failed_test.raw;

  HttpResult not_array = client_->Patch(obj, {{"op", "add"}}, "application/json-patch+json");
  EXPECT_EQ(not_array.status, 400);

  HttpResult smp = client_->Patch(obj, {{"data", {{"w", "4"}}}},
                                  "application/strategic-merge-patch+json");
  ASSERT_EQ(smp.status, 200) << smp.raw;
  EXPECT_EQ(smp.body["data"]["w"], "4");

  HttpResult bad_type = client_->Patch(obj, {{"data", {{"w", "5"}}}}, "application/yaml");
  EXPECT_EQ(bad_type.status, 415);
  EXPECT_EQ(bad_type.body["reason"], "UnsupportedMediaType");

  // A patch carrying a stale resourceVersion is conditional.
  HttpResult stale = client_->Patch(
      obj, {{"metadata", {{"resourceVersion", Rv(c.body)}}}, {"data", {{"q", "1"}}}});
  EXPECT_EQ(stale.status, 409);
  HttpResult fresh = client_->Patch(
      obj, {{"metadata", {{"resourceVersion", Rv(smp.body)}}}, {"data", {{"q", "1"}}}});
  EXPECT_EQ(fresh.status, 200) << fresh.raw;

  EXPECT_EQ(client_->Patch(std::string(kCmPath) + "/missing", {{"data", Json::object()}}).status,
            404);
}

TEST_F(ApiServerTest, StrategicMergeMergesNamedLists) {
  const std::string path = "/api/v1/namespaces/default/pods";
  Json pod = Pod("smp", "n1");
  pod["spec"]["containers"].push_back({{"name", "side"}, {"image", "envoy"}});
  MustCreate(path, pod);
  HttpResult r = client_->Patch(
      path + "/smp",
      {{"spec",
        {{"$setElementOrder/containers", {{{"name", "c"}}, {{"name", "side"}}}},
         {"containers", {{{"name", "side"}, {"image", "envoy:2"}}}}}}},
      "application/strategic-merge-patch+json");
  ASSERT_EQ(r.status, 200) << r.raw;
  ASSERT_EQ(r.body["spec"]["containers"].size(), 2u);
  EXPECT_EQ(r.body["spec"]["containers"][0]["image"], "busybox");
  EXPECT_EQ(r.body["spec"]["containers"][1]["image"], "envoy:2");
  EXPECT_FALSE(r.body["spec"].contains("$setElementOrder/containers"));
}

// ---- delete ----

TEST_F(ApiServerTest, DeleteWithFinalizers) {
  const std::string obj = std::string(kCmPath) + "/fin";
  Json cm = ConfigMap("fin");
  cm["metadata"]["finalizers"] = {"example.com/keep"};
  HttpResult c = MustCreate(kCmPath, cm);
  WatchReader w(*client_, std::string(kCmPath) + "?watch=true&resourceVersion=" + Rv(c.body));
  ASSERT_TRUE(server_->WaitForWatches(1));

  HttpResult d = client_->Delete(obj);
  ASSERT_EQ(d.status, 200) << d.raw;
  EXPECT_EQ(d.body["kind"], "ConfigMap");
  EXPECT_TRUE(d.body["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(d.body["metadata"]["deletionGracePeriodSeconds"], 0);
  EXPECT_EQ(d.body["metadata"]["generation"], 2);

  HttpResult g = client_->Get(obj);
  ASSERT_EQ(g.status, 200);
  EXPECT_EQ(g.body["metadata"]["deletionTimestamp"], d.body["metadata"]["deletionTimestamp"]);
  // Deleting again changes nothing.
  HttpResult again = client_->Delete(obj);
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(Rv(again.body), Rv(g.body));

  // No new finalizers on a deleting object.
  Json add = g.body;
  add["metadata"]["finalizers"].push_back("example.com/more");
  HttpResult f = client_->Put(obj, add);
  EXPECT_EQ(f.status, 422) << f.raw;
  EXPECT_THAT(f.body["message"].get<std::string>(),
              HasSubstr("no new finalizers can be added if the object is being deleted"));

  // Removing the last finalizer deletes it.
  Json rm = g.body;
  rm["metadata"]["finalizers"] = Json::array();
  HttpResult u = client_->Put(obj, rm);
  ASSERT_EQ(u.status, 200) << u.raw;
  EXPECT_EQ(client_->Get(obj).status, 404);

  auto e1 = w.Next();
  ASSERT_TRUE(e1);
  EXPECT_EQ((*e1)["type"], "MODIFIED");
  EXPECT_TRUE((*e1)["object"]["metadata"].contains("deletionTimestamp"));
  auto e2 = w.Next();
  ASSERT_TRUE(e2);
  EXPECT_EQ((*e2)["type"], "MODIFIED");
  auto e3 = w.Next();
  ASSERT_TRUE(e3);
  EXPECT_EQ((*e3)["type"], "DELETED");
  EXPECT_GT(std::stoll(Rv((*e3)["object"])), std::stoll(Rv((*e2)["object"])));
}

TEST_F(ApiServerTest, DeletePreconditionsAndOptions) {
  HttpResult c = MustCreate(kCmPath, ConfigMap("pre"));
  const std::string obj = std::string(kCmPath) + "/pre";
  HttpResult bad_uid = client_->Delete(obj, {{"kind", "DeleteOptions"},
                                             {"apiVersion", "v1"},
                                             {"preconditions", {{"uid", "nope"}}}});
  EXPECT_EQ(bad_uid.status, 409);
  EXPECT_THAT(bad_uid.body["message"].get<std::string>(),
              HasSubstr("Precondition failed: UID in precondition: nope"));
  HttpResult bad_rv = client_->Delete(obj, {{"preconditions", {{"resourceVersion", "1"}}}});
  EXPECT_EQ(bad_rv.status, 409);
  EXPECT_EQ(client_->Delete(obj, {{"propagationPolicy", "Sideways"}}).status, 422);
  HttpResult ok = client_->Delete(obj, {{"propagationPolicy", "Foreground"},
                                        {"preconditions",
                                         {{"uid", c.body["metadata"]["uid"]},
                                          {"resourceVersion", Rv(c.body)}}}});
  EXPECT_EQ(ok.status, 200) << ok.raw;
  // Foreground: the garbage collector's finalizer holds the owner until its dependents are
  // gone (without the controllers, as here, it stays).
  EXPECT_EQ(ok.body["metadata"]["finalizers"], Json::array({"foregroundDeletion"}));
  EXPECT_TRUE(ok.body["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(client_->Get(obj).status, 200);
}

TEST_F(ApiServerTest, DeleteCollection) {
  for (const char* n : {"a", "b", "c"}) {
    MustCreate(kCmPath, ConfigMap(n, {{"grp", std::string(n) == "c" ? "keep" : "drop"}}));
  }
  HttpResult r = client_->Delete(std::string(kCmPath) + "?labelSelector=grp%3Ddrop");
  ASSERT_EQ(r.status, 200) << r.raw;
  HttpResult l = client_->Get(kCmPath);
  EXPECT_EQ(Names(l.body), std::vector<std::string>{"c"});
}

// ---- list ----

TEST_F(ApiServerTest, ListWithSelectors) {
  const std::string pods = "/api/v1/namespaces/default/pods";
  MustCreate(pods, Pod("p1", "n1", {{"app", "web"}, {"tier", "fe"}}));
  MustCreate(pods, Pod("p2", "n2", {{"app", "web"}, {"tier", "be"}}));
  MustCreate(pods, Pod("p3", "n1", {{"app", "db"}}));
  MustCreate("/api/v1/namespaces/kube-system/pods", Pod("p4", "n1", {{"app", "web"}}));

  auto names = [&](const std::string& q) {
    HttpResult r = client_->Get(pods + q);
    EXPECT_EQ(r.status, 200) << q << " " << r.raw;
    return Names(r.body);
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names(""), (V{"p1", "p2", "p3"}));
  EXPECT_EQ(names("?labelSelector=app%3Dweb"), (V{"p1", "p2"}));
  EXPECT_EQ(names("?labelSelector=app%3D%3Dweb,tier!%3Dbe"), (V{"p1"}));
  EXPECT_EQ(names("?labelSelector=tier%20in%20(fe,be)"), (V{"p1", "p2"}));
  EXPECT_EQ(names("?labelSelector=tier%20notin%20(fe)"), (V{"p2", "p3"}));
  EXPECT_EQ(names("?labelSelector=tier"), (V{"p1", "p2"}));
  EXPECT_EQ(names("?labelSelector=!tier"), (V{"p3"}));
  EXPECT_EQ(names("?fieldSelector=spec.nodeName%3Dn1"), (V{"p1", "p3"}));
  EXPECT_EQ(names("?fieldSelector=spec.nodeName!%3Dn1"), (V{"p2"}));
  EXPECT_EQ(names("?fieldSelector=metadata.name%3D%3Dp2"), (V{"p2"}));
  EXPECT_EQ(names("?fieldSelector=metadata.namespace%3Ddefault,spec.nodeName%3Dn1&"
                  "labelSelector=app%3Dweb"),
            (V{"p1"}));

  HttpResult all = client_->Get("/api/v1/pods?labelSelector=app%3Dweb");
  ASSERT_EQ(all.status, 200);
  EXPECT_EQ(Names(all.body), (V{"p1", "p2", "p4"}));
  EXPECT_EQ(all.body["kind"], "PodList");
  EXPECT_EQ(all.body["apiVersion"], "v1");
  EXPECT_TRUE(all.body["metadata"]["resourceVersion"].is_string());
  EXPECT_EQ(all.body["items"][0]["kind"], "Pod");

  EXPECT_EQ(client_->Get(pods + "?labelSelector=a%20in%20(").status, 400);
  HttpResult unsupported = client_->Get(pods + "?fieldSelector=spec.foo%3Dx");
  EXPECT_EQ(unsupported.status, 400);
  EXPECT_THAT(unsupported.raw, HasSubstr("field label not supported: spec.foo"));
  EXPECT_EQ(client_->Get(std::string(kCmPath) + "?fieldSelector=spec.nodeName%3Dn1").status, 400);
}

TEST_F(ApiServerTest, ListPagination) {
  for (int i = 0; i < 25; ++i) {
    char name[16];
    std::snprintf(name, sizeof(name), "cm%02d", i);
    MustCreate(kCmPath, ConfigMap(name));
  }
  HttpResult p1 = client_->Get(std::string(kCmPath) + "?limit=10");
  ASSERT_EQ(p1.status, 200);
  ASSERT_EQ(p1.body["items"].size(), 10u);
  std::string token = p1.body["metadata"]["continue"];
  EXPECT_EQ(p1.body["metadata"]["remainingItemCount"], 15);
  const std::string rv = p1.body["metadata"]["resourceVersion"];

  // Changes after the first page do not show up in later pages.
  MustCreate(kCmPath, ConfigMap("cm99"));
  ASSERT_EQ(client_->Delete(std::string(kCmPath) + "/cm15").status, 200);

  std::vector<std::string> all = Names(p1.body);
  while (!token.empty()) {
    HttpResult p = client_->Get(std::string(kCmPath) + "?limit=10&continue=" + token);
    ASSERT_EQ(p.status, 200) << p.raw;
    EXPECT_EQ(p.body["metadata"]["resourceVersion"], rv);
    for (const std::string& n : Names(p.body)) all.push_back(n);
    token = p.body["metadata"].value("continue", "");
  }
  ASSERT_EQ(all.size(), 25u);
  EXPECT_EQ(all.front(), "cm00");
  EXPECT_EQ(all.back(), "cm24");
  EXPECT_TRUE(std::find(all.begin(), all.end(), "cm15") != all.end());

  // An expired token answers 410 Expired.
  HttpResult again = client_->Get(std::string(kCmPath) + "?limit=10");
  std::string old_token = again.body["metadata"]["continue"];
  server_->CompactHistory();
  HttpResult expired = client_->Get(std::string(kCmPath) + "?limit=10&continue=" + old_token);
  EXPECT_EQ(expired.status, 410);
  EXPECT_EQ(expired.body["reason"], "Expired");
  EXPECT_THAT(expired.body["message"].get<std::string>(),
              HasSubstr("The provided continue parameter is too old to display a consistent "
                        "list result."));
  EXPECT_EQ(client_->Get(std::string(kCmPath) + "?limit=10&continue=%%%garbage").status, 400);
}

TEST_F(ApiServerTest, ListSnapshotsAreBounded) {
  Start({.list_snapshots = 2});
  for (int i = 0; i < 3; ++i) MustCreate(kCmPath, ConfigMap("c" + std::to_string(i)));
  std::vector<std::string> tokens;
  for (int i = 0; i < 3; ++i) {
    tokens.push_back(client_->Get(std::string(kCmPath) + "?limit=1").body["metadata"]["continue"]);
  }
  EXPECT_EQ(client_->Get(std::string(kCmPath) + "?limit=1&continue=" + tokens[0]).status, 410);
  EXPECT_EQ(client_->Get(std::string(kCmPath) + "?limit=1&continue=" + tokens[2]).status, 200);
}

// ---- discovery ----

TEST_F(ApiServerTest, Discovery) {
  HttpResult v = client_->Get("/version");
  ASSERT_EQ(v.status, 200);
  EXPECT_EQ(v.body["major"], "1");
  EXPECT_TRUE(v.body["gitVersion"].is_string());

  HttpResult api = client_->Get("/api");
  ASSERT_EQ(api.status, 200);
  EXPECT_EQ(api.body["kind"], "APIVersions");
  EXPECT_EQ(api.body["versions"], Json({"v1"}));

  HttpResult core = client_->Get("/api/v1");
  ASSERT_EQ(core.status, 200);
  EXPECT_EQ(core.body["kind"], "APIResourceList");
  EXPECT_EQ(core.body["groupVersion"], "v1");
  std::map<std::string, Json> by_name;
  for (const Json& r : core.body["resources"]) by_name[r["name"]] = r;
  ASSERT_TRUE(by_name.count("pods"));
  EXPECT_EQ(by_name["pods"]["kind"], "Pod");
  EXPECT_EQ(by_name["pods"]["namespaced"], true);
  EXPECT_EQ(by_name["pods"]["singularName"], "pod");
  EXPECT_EQ(by_name["pods"]["shortNames"], Json({"po"}));
  EXPECT_THAT(by_name["pods"]["verbs"].get<std::vector<std::string>>(),
              ::testing::IsSupersetOf({"create", "get", "list", "watch", "patch", "update",
                                       "delete", "deletecollection"}));
  ASSERT_TRUE(by_name.count("pods/status"));
  EXPECT_EQ(by_name["pods/status"]["verbs"], Json({"get", "patch", "update"}));
  EXPECT_EQ(by_name["nodes"]["namespaced"], false);
  EXPECT_FALSE(by_name.count("configmaps/status"));
  for (const char* r : {"namespaces", "events", "configmaps", "secrets", "services",
                        "serviceaccounts", "endpoints"}) {
    EXPECT_TRUE(by_name.count(r)) << r;
  }

  HttpResult apis = client_->Get("/apis");
  ASSERT_EQ(apis.status, 200);
  EXPECT_EQ(apis.body["kind"], "APIGroupList");
  std::set<std::string> groups;
  for (const Json& g : apis.body["groups"]) {
    groups.insert(g["name"]);
    EXPECT_EQ(g["preferredVersion"]["groupVersion"], g["name"].get<std::string>() + "/v1");
  }
  for (const char* g : {"apps", "batch", "coordination.k8s.io", "events.k8s.io",
                        "apiextensions.k8s.io", "admissionregistration.k8s.io"}) {
    EXPECT_TRUE(groups.count(g)) << g;
  }
  HttpResult apps = client_->Get("/apis/apps/v1");
  ASSERT_EQ(apps.status, 200);
  std::set<std::string> app_resources;
  for (const Json& r : apps.body["resources"]) app_resources.insert(r["name"]);
  EXPECT_EQ(app_resources,
            (std::set<std::string>{"daemonsets", "daemonsets/status", "deployments",
                                   "deployments/status", "replicasets", "replicasets/status",
                                   "statefulsets", "statefulsets/status"}));
  HttpResult group = client_->Get("/apis/batch");
  EXPECT_EQ(group.body["kind"], "APIGroup");
  EXPECT_EQ(client_->Get("/apis/nope.io/v1").status, 404);
  EXPECT_EQ(client_->Get("/healthz").raw, "ok");
}

TEST_F(ApiServerTest, RegisterResource) {
  ASSERT_TRUE(server_
                  ->RegisterResource({"resource.k8s.io", "v1beta1", "ResourceSlice",
                                      "resourceslices", "resourceslice", false, false, {}, ""})
                  .ok());
  HttpResult d = client_->Get("/apis/resource.k8s.io/v1beta1");
  ASSERT_EQ(d.status, 200);
  EXPECT_EQ(d.body["resources"][0]["name"], "resourceslices");
  HttpResult c = MustCreate(
      "/apis/resource.k8s.io/v1beta1/resourceslices",
      {{"metadata", {{"name", "s1"}}},
       {"spec",
        {{"driver", "x.example.com"},
         {"nodeName", "n1"},
         {"pool", {{"name", "n1"}, {"generation", 1}, {"resourceSliceCount", 1}}}}}});
  EXPECT_EQ(c.body["kind"], "ResourceSlice");
  HttpResult l = client_->Get("/apis/resource.k8s.io/v1beta1/resourceslices");
  EXPECT_EQ(l.body["kind"], "ResourceSliceList");
  EXPECT_FALSE(server_
                   ->RegisterResource({"resource.k8s.io", "v1beta1", "Other", "resourceslices",
                                       "", true, false, {}, ""})
                   .ok());
}

// ---- auth ----

TEST_F(ApiServerTest, Unauthorized) {
  TestClient anon("127.0.0.1", server_->port(), server_->ca_pem(), "");
  HttpResult r = anon.Get("/api/v1/pods");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.body, Json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},
      "status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401})"));
  TestClient wrong("127.0.0.1", server_->port(), server_->ca_pem(), "not-the-token");
  EXPECT_EQ(wrong.Get("/version").status, 401);
  EXPECT_EQ(client_->Get("/version").status, 200);
}

TEST_F(ApiServerTest, ConfiguredTokensAndClientCertificates) {
  Start({.tokens = {"t1", "t2"}});
  EXPECT_EQ(server_->token(), "t1");
  TestClient t2("127.0.0.1", server_->port(), server_->ca_pem(), "t2");
  EXPECT_EQ(t2.Get("/api").status, 200);
  auto cert = server_->IssueClientCertificate("alice", {"system:masters"});
  ASSERT_TRUE(cert.ok()) << cert.status();
  TestClient by_cert("127.0.0.1", server_->port(), server_->ca_pem(), "");
  by_cert.set_client_cert(cert->first, cert->second);
  EXPECT_EQ(by_cert.Get("/api").status, 200);
}

TEST_F(ApiServerTest, TlsUsesTheServerCa) {
  // A client trusting another CA cannot connect.
  auto other = LoopbackApiServer::Start({});
  ASSERT_TRUE(other.ok());
  TestClient wrong_ca("127.0.0.1", server_->port(), (*other)->ca_pem(), server_->token());
  HttpResult r = wrong_ca.Get("/version");
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(r.error.empty());
}

// ---- namespaces ----

TEST_F(ApiServerTest, NamespaceLifecycle) {
  with_controllers_ = true;  // the namespace controller empties and removes namespaces
  Start(LoopbackOptions{});
  auto eventually = [](const std::function<bool()>& f) {
    for (int i = 0; i < 500; ++i) {
      if (f()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return f();
  };
  for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    HttpResult r = client_->Get(std::string("/api/v1/namespaces/") + ns);
    EXPECT_EQ(r.status, 200) << ns;
    EXPECT_EQ(r.body["status"]["phase"], "Active");
  }
  HttpResult missing = client_->Post("/api/v1/namespaces/nope/configmaps", ConfigMap("x"));
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body["message"], "namespaces \"nope\" not found");
  EXPECT_EQ(missing.body["details"]["kind"], "namespaces");

  HttpResult ns = MustCreate("/api/v1/namespaces", {{"metadata", {{"name", "team"}}}});
  EXPECT_EQ(ns.body["metadata"]["labels"]["kubernetes.io/metadata.name"], "team");
  MustCreate("/api/v1/namespaces/team/configmaps", ConfigMap("plain"));
  Json held = ConfigMap("held");
  held["metadata"]["finalizers"] = {"example.com/hold"};
  MustCreate("/api/v1/namespaces/team/configmaps", held);

  HttpResult del = client_->Delete("/api/v1/namespaces/team");
  ASSERT_EQ(del.status, 200) << del.raw;
  EXPECT_EQ(del.body["status"]["phase"], "Terminating");
  EXPECT_TRUE(eventually(
      [&] { return client_->Get("/api/v1/namespaces/team/configmaps/plain").status == 404; }));
  EXPECT_TRUE(eventually([&] {
    HttpResult h = client_->Get("/api/v1/namespaces/team/configmaps/held");
    return h.status == 200 && h.body["metadata"].contains("deletionTimestamp");
  }));
  HttpResult forbidden = client_->Post("/api/v1/namespaces/team/configmaps", ConfigMap("new"));
  EXPECT_EQ(forbidden.status, 403);
  EXPECT_EQ(forbidden.body["reason"], "Forbidden");
  EXPECT_THAT(forbidden.body["message"].get<std::string>(),
              HasSubstr("unable to create new content in namespace team because it is being "
                        "terminated"));
  // The held object keeps the namespace; releasing it lets the namespace go.
  EXPECT_EQ(client_->Get("/api/v1/namespaces/team").status, 200);
  ASSERT_EQ(client_->Patch("/api/v1/namespaces/team/configmaps/held",
                           {{"metadata", {{"finalizers", nullptr}}}})
                .status,
            200);
  EXPECT_TRUE(eventually([&] { return client_->Get("/api/v1/namespaces/team").status == 404; }));
  EXPECT_EQ(client_->Delete("/api/v1/namespaces/default").status, 403);
}

// ---- fault injection ----

TEST_F(ApiServerTest, FailNextWithRetryAfter) {
  server_->FailNext(2, 429, {.verb = "list", .resource = "pods"}, 3);
  EXPECT_EQ(client_->Get(kCmPath).status, 200) << "other resources unaffected";
  HttpResult r = client_->Get("/api/v1/namespaces/default/pods");
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.Header("Retry-After"), "3");
  EXPECT_EQ(r.body["reason"], "TooManyRequests");
  EXPECT_EQ(r.body["details"]["retryAfterSeconds"], 3);
  EXPECT_EQ(client_->Get("/api/v1/pods").status, 429);
  EXPECT_EQ(client_->Get("/api/v1/pods").status, 200);
}

TEST_F(ApiServerTest, FailNextCodes) {
  server_->FailNext(1, 500, {.verb = "create"});
  HttpResult r = client_->Post(kCmPath, ConfigMap("f"));
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body["reason"], "InternalError");
  EXPECT_EQ(client_->Get(std::string(kCmPath) + "/f").status, 404) << "nothing was created";
  MustCreate(kCmPath, ConfigMap("f"));
  server_->FailNext(1, 409, {.verb = "update", .name = "f"});
  HttpResult c = client_->Get(std::string(kCmPath) + "/f");
  HttpResult u = client_->Put(std::string(kCmPath) + "/f", c.body);
  EXPECT_EQ(u.status, 409);
  EXPECT_EQ(u.body["reason"], "Conflict");
  server_->FailNext(1, 503, {});
  EXPECT_EQ(client_->Get("/version").status, 503);
  server_->FailNext(5, 500, {.resource = "secrets"});
  server_->ClearFaults();
  EXPECT_EQ(client_->Get("/api/v1/namespaces/default/secrets").status, 200);
}

// A lower bound shows the delay; that it is gone again shows against a delay far above what
// a request costs on a loaded machine (a 300 ms bound failed under the sanitizers at 303 ms).
TEST_F(ApiServerTest, InjectDelay) {
  const absl::Duration delay = absl::Seconds(3);
  server_->InjectDelay(delay, {.verb = "get"});
  absl::Time start = absl::Now();
  EXPECT_EQ(client_->Get("/api/v1/namespaces/default").status, 200);
  EXPECT_GE(absl::Now() - start, delay);
  server_->InjectDelay(absl::ZeroDuration(), {.verb = "get"});
  start = absl::Now();
  EXPECT_EQ(client_->Get("/api/v1/namespaces/default").status, 200);
  EXPECT_LT(absl::Now() - start, delay);
}

TEST_F(ApiServerTest, RandomFaultsSeededCountedAndOnlyOverHttp) {
  MustCreate(kCmPath, ConfigMap("r"));
  // 409 only on update/patch.
  server_->SetRandomFaults({.seed = 7, .conflict_rate = 1.0});
  EXPECT_EQ(client_->Get(std::string(kCmPath) + "/r").status, 200) << "no 409 on reads";
  HttpResult c = client_->Get(std::string(kCmPath) + "/r");
  HttpResult u = client_->Put(std::string(kCmPath) + "/r", c.body);
  EXPECT_EQ(u.status, 409);
  EXPECT_EQ(u.body["reason"], "Conflict");
  EXPECT_EQ(server_->Call("GET", std::string(kCmPath) + "/r").code, 200) << "Call is exempt";

  server_->SetRandomFaults({.seed = 7, .too_many_requests_rate = 1.0, .retry_after_seconds = 2});
  HttpResult t = client_->Get(kCmPath);
  EXPECT_EQ(t.status, 429);
  EXPECT_EQ(t.Header("Retry-After"), "2");
  server_->SetRandomFaults({.seed = 7, .internal_error_rate = 1.0});
  EXPECT_EQ(client_->Post(kCmPath, ConfigMap("not-created")).status, 500);
  server_->SetRandomFaults({});
  EXPECT_EQ(client_->Get(std::string(kCmPath) + "/not-created").status, 404);

  // A timeout is performed, then answered 504 after the hold.
  server_->SetRandomFaults(
      {.seed = 7, .timeout_rate = 1.0, .timeout_delay = absl::Milliseconds(200)});
  const absl::Time start = absl::Now();
  HttpResult to = client_->Post(kCmPath, ConfigMap("created-anyway"));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(200));
  EXPECT_EQ(to.status, 504);
  EXPECT_EQ(to.body["reason"], "Timeout");
  server_->SetRandomFaults({});
  EXPECT_EQ(client_->Get(std::string(kCmPath) + "/created-anyway").status, 200);

  FaultCounts n = server_->fault_counts();
  EXPECT_EQ(n.conflicts, 1);
  EXPECT_EQ(n.too_many_requests, 1);
  EXPECT_EQ(n.internal_errors, 1);
  EXPECT_EQ(n.timeouts, 1);

  // The same seed draws the same sequence.
  auto draws = [&] {
    server_->SetRandomFaults({.seed = 42, .internal_error_rate = 0.5});
    std::string out;
    for (int i = 0; i < 12; ++i) out += client_->Get(kCmPath).status == 500 ? 'x' : '.';
    return out;
  };
  const std::string first = draws();
  EXPECT_EQ(draws(), first);
  EXPECT_NE(first.find('x'), std::string::npos);
  EXPECT_NE(first.find('.'), std::string::npos);
}

TEST_F(ApiServerTest, CutConnectionsEndsWatchesAndKeepAlives) {
  WatchReader w(*client_, std::string(kCmPath) + "?watch=true");
  ASSERT_TRUE(server_->WaitForWatches(1));
  auto keep_alive = client_->NewClient();
  keep_alive->set_keep_alive(true);
  ASSERT_TRUE(keep_alive->Get("/version"));
  const int cut = server_->CutConnections();
  EXPECT_GE(cut, 2);  // the watch and the keep-alive connection
  EXPECT_TRUE(w.WaitEnded());
  EXPECT_EQ(server_->fault_counts().connection_cuts, 1);
  EXPECT_EQ(server_->fault_counts().connections_cut, cut);
  // The listener stays: new connections work, the store is kept.
  MustCreate(kCmPath, ConfigMap("after-cut"));
  server_->CloseWatches();
  EXPECT_EQ(server_->fault_counts().watch_closes, 1);
}

TEST_F(ApiServerTest, ListObjectsAtOnce) {
  MustCreate(kCmPath, ConfigMap("one"));
  auto lists = server_->ListObjectsAtOnce(
      {{"", "v1", "configmaps", "default"}, {"", "v1", "namespaces", ""}, {"", "v1", "nope", ""}});
  ASSERT_EQ(lists.size(), 3u);
  std::vector<std::string> cms;
  for (const Json& cm : lists[0]) cms.push_back(cm["metadata"]["name"].get<std::string>());
  EXPECT_THAT(cms, ::testing::Contains("one"));
  EXPECT_FALSE(lists[1].empty());
  EXPECT_TRUE(lists[2].empty());
}

// ---- admission seam ----

class TestAdmission : public Admission {
 public:
  std::optional<ApiStatus> Mutate(const AdmissionAttributes& a, Json* obj) override {
    std::lock_guard<std::mutex> l(mu);
    seen.push_back(std::string(AdmissionOperationName(a.operation)) + " " + a.resource.plural +
                   (a.subresource.empty() ? "" : "/" + a.subresource) + " " + a.namespace_name +
                   "/" + a.name + " " + a.user.username);
    if (a.operation == AdmissionOperation::kDelete) {
      EXPECT_TRUE(obj->is_null());
      EXPECT_EQ(a.old_object["metadata"]["name"], a.name);
    }
    if (a.operation == AdmissionOperation::kUpdate) {
      EXPECT_TRUE(a.old_object.is_object());
    }
    if (obj->is_object()) (*obj)["metadata"]["labels"]["mutated"] = "yes";
    return std::nullopt;
  }
  std::optional<ApiStatus> Validate(const AdmissionAttributes& a, const Json& obj) override {
    if (a.name.rfind("deny", 0) == 0) {
      ApiStatus s;
      s.code = 403;
      s.reason = "Forbidden";
      s.message = "admission webhook \"test\" denied the request: no";
      return s;
    }
    return std::nullopt;
  }
  std::mutex mu;
  std::vector<std::string> seen;
};

TEST_F(ApiServerTest, AdmissionSeam) {
  auto adm = std::make_shared<TestAdmission>();
  server_->SetAdmission(adm);
  HttpResult c = MustCreate(kCmPath, ConfigMap("adm"));
  EXPECT_EQ(c.body["metadata"]["labels"]["mutated"], "yes");
  HttpResult d = client_->Post(kCmPath, ConfigMap("deny-me"));
  EXPECT_EQ(d.status, 403);
  EXPECT_EQ(d.body["message"], "admission webhook \"test\" denied the request: no");
  EXPECT_EQ(client_->Get(std::string(kCmPath) + "/deny-me").status, 404);
  ASSERT_EQ(client_->Patch(std::string(kCmPath) + "/adm", {{"data", {{"a", "b"}}}}).status, 200);
  ASSERT_EQ(client_->Delete(std::string(kCmPath) + "/adm").status, 200);
  const std::string path = "/apis/apps/v1/namespaces/default/deployments";
  MustCreate(path, {{"metadata", {{"name", "d"}}}, {"spec", DeploymentSpec()}});
  ASSERT_EQ(client_->Patch(path + "/d/status", {{"status", {{"replicas", 1}}}}).status, 200);
  std::lock_guard<std::mutex> l(adm->mu);
  EXPECT_EQ(adm->seen,
            (std::vector<std::string>{
                "CREATE configmaps default/adm loopback-admin",
                "CREATE configmaps default/deny-me loopback-admin",
                "UPDATE configmaps default/adm loopback-admin",
                "DELETE configmaps default/adm loopback-admin",
                "CREATE deployments default/d loopback-admin",
                "UPDATE deployments/status default/d loopback-admin",
            }));
}

// ---- kubeconfig and in-process calls ----

TEST_F(ApiServerTest, KubeconfigAndCall) {
  std::string yaml = server_->KubeconfigYaml();
  EXPECT_THAT(yaml, HasSubstr("server: " + server_->url()));
  EXPECT_THAT(yaml, HasSubstr("token: " + server_->token()));
  EXPECT_THAT(yaml, HasSubstr("current-context: loopback"));
  EXPECT_THAT(yaml, HasSubstr("certificate-authority-data: "));
  EXPECT_EQ(server_->url(), "https://127.0.0.1:" + std::to_string(server_->port()));

  auto r = server_->Call("POST", kCmPath, ConfigMap("via-call"));
  EXPECT_EQ(r.code, 201);
  auto g = server_->Call("GET", std::string(kCmPath) + "?labelSelector=");
  EXPECT_EQ(g.code, 200);
  EXPECT_EQ(Names(g.body), std::vector<std::string>{"via-call"});
  EXPECT_EQ(server_->Call("GET", std::string(kCmPath) + "?watch=true").code, 400);
  // Escapes as Go's net/url reads them: %2D is '-', an invalid escape is a 400.
  EXPECT_EQ(server_->Call("GET", std::string(kCmPath) + "/via%2Dcall").code, 200);
  EXPECT_EQ(server_->Call("GET", std::string(kCmPath) + "/via%zzcall").code, 400);
  EXPECT_EQ(server_->Call("GET", std::string(kCmPath) + "?labelSelector=%zz").code, 400);
  auto objs = server_->ListObjects("", "v1", "configmaps", "default");
  ASSERT_EQ(objs.size(), 1u);
  EXPECT_EQ(objs[0]["metadata"]["name"], "via-call");
  EXPECT_TRUE(server_->ListObjects("", "v1", "configmaps", "kube-system").empty());
}

}  // namespace
}  // namespace spiderpool::kube::testing
