// CustomResourceDefinitions in the loopback API server: registration, status subresource,
// scope, schema validation, deletion, multiple versions.

#include "kube/testing/apiserver.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/apiserver_test_fixture.h"
#include "kube/testing/test_client.h"

namespace spiderpool::kube::testing {
namespace {

using base::Json;
using ::testing::HasSubstr;
using namespace apiserver_test;  // NOLINT(build/namespaces)

// ---- CRDs ----

TEST_F(ApiServerTest, CrdRegistrationWithStatusSubresource) {
  const std::string crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  HttpResult c =
      MustCreate(crds, Crd("spiderpool.spidernet.io", "spiderippools", "SpiderIPPool",
                           "Namespaced", true));
  const Json& status = c.body["status"];
  ASSERT_TRUE(status.is_object()) << c.raw;
  std::map<std::string, std::string> conds;
  for (const Json& cond : status["conditions"]) conds[cond["type"]] = cond["status"];
  EXPECT_EQ(conds["Established"], "True");
  EXPECT_EQ(conds["NamesAccepted"], "True");
  EXPECT_EQ(status["acceptedNames"]["kind"], "SpiderIPPool");
  EXPECT_EQ(status["acceptedNames"]["listKind"], "SpiderIPPoolList");
  EXPECT_EQ(status["storedVersions"], Json({"v1"}));

  HttpResult d = client_->Get("/apis/spiderpool.spidernet.io/v1");
  ASSERT_EQ(d.status, 200) << d.raw;
  std::set<std::string> names;
  for (const Json& r : d.body["resources"]) names.insert(r["name"]);
  EXPECT_EQ(names, (std::set<std::string>{"spiderippools", "spiderippools/status"}));
  EXPECT_EQ(d.body["resources"][0]["shortNames"], Json({"sip"}));

  const std::string path = "/apis/spiderpool.spidernet.io/v1/namespaces/default/spiderippools";
  HttpResult cr = MustCreate(path, {{"apiVersion", "spiderpool.spidernet.io/v1"},
                                    {"kind", "SpiderIPPool"},
                                    {"metadata", {{"name", "pool1"}}},
                                    {"spec", {{"replicas", 1}, {"unknownField", true}}},
                                    {"status", {{"phase", "x"}}}});
  EXPECT_FALSE(cr.body["spec"].contains("unknownField")) << "pruned";
  EXPECT_FALSE(cr.body.contains("status"));
  HttpResult st = client_->Patch(path + "/pool1/status", {{"status", {{"phase", "Ready"}}}});
  ASSERT_EQ(st.status, 200) << st.raw;
  EXPECT_EQ(st.body["status"]["phase"], "Ready");
  EXPECT_EQ(st.body["metadata"]["generation"], 1);

  // Schema validation: 422 with causes.
  HttpResult invalid = client_->Post(path, {{"apiVersion", "spiderpool.spidernet.io/v1"},
                                            {"kind", "SpiderIPPool"},
                                            {"metadata", {{"name", "bad"}}},
                                            {"spec", {{"replicas", -1}}}});
  EXPECT_EQ(invalid.status, 422) << invalid.raw;
  EXPECT_EQ(invalid.body["reason"], "Invalid");
  EXPECT_EQ(invalid.body["details"]["group"], "spiderpool.spidernet.io");
  EXPECT_EQ(invalid.body["details"]["kind"], "SpiderIPPool");
  ASSERT_TRUE(invalid.body["details"]["causes"].is_array());
  EXPECT_EQ(invalid.body["details"]["causes"][0]["field"], "spec.replicas");
  EXPECT_THAT(invalid.body["message"].get<std::string>(),
              HasSubstr("SpiderIPPool.spiderpool.spidernet.io \"bad\" is invalid: spec.replicas"));

  // Custom resources: strategic merge patch is 415, PUT needs a resourceVersion.
  EXPECT_EQ(client_->Patch(path + "/pool1", {{"spec", {{"replicas", 2}}}},
                           "application/strategic-merge-patch+json")
                .status,
            415);
  Json no_rv = st.body;
  no_rv["metadata"].erase("resourceVersion");
  HttpResult put = client_->Put(path + "/pool1", no_rv);
  EXPECT_EQ(put.status, 422) << put.raw;
  EXPECT_THAT(put.body["message"].get<std::string>(), HasSubstr("must be specified for an update"));
  // Custom resources return the deleted object.
  HttpResult del = client_->Delete(path + "/pool1");
  EXPECT_EQ(del.status, 200);
  EXPECT_EQ(del.body["kind"], "SpiderIPPool");

  // Unknown apiVersion of a known group.
  EXPECT_EQ(client_->Get("/apis/spiderpool.spidernet.io/v2/namespaces/default/spiderippools")
                .status,
            404);
}

TEST_F(ApiServerTest, CrdWithoutStatusSubresourceAndClusterScope) {
  const std::string crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  MustCreate(crds, Crd("example.com", "widgets", "Widget", "Cluster", false));
  HttpResult d = client_->Get("/apis/example.com/v1");
  ASSERT_EQ(d.status, 200);
  ASSERT_EQ(d.body["resources"].size(), 1u);
  EXPECT_EQ(d.body["resources"][0]["namespaced"], false);
  HttpResult w = MustCreate("/apis/example.com/v1/widgets",
                            {{"metadata", {{"name", "w1"}}}, {"status", {{"phase", "kept"}}}});
  EXPECT_EQ(w.body["status"]["phase"], "kept") << "status is a plain field here";
  EXPECT_EQ(client_->Get("/apis/example.com/v1/widgets/w1/status").status, 404);
  EXPECT_EQ(client_->Get("/apis/example.com/v1/namespaces/default/widgets").status, 404);
  // Spec+status changes both bump generation without a status subresource.
  HttpResult p = client_->Patch("/apis/example.com/v1/widgets/w1", {{"status", {{"phase", "x"}}}});
  EXPECT_EQ(p.body["metadata"]["generation"], 2);
}

TEST_F(ApiServerTest, CrdValidation) {
  const std::string crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  Json bad_name = Crd("example.com", "gadgets", "Gadget", "Namespaced", false);
  bad_name["metadata"]["name"] = "wrong.example.com";
  HttpResult r = client_->Post(crds, bad_name);
  EXPECT_EQ(r.status, 422) << r.raw;
  EXPECT_THAT(r.raw, HasSubstr("must be spec.names.plural+\\\".\\\"+spec.group"));
  Json bad_scope = Crd("example.com", "gadgets", "Gadget", "Galaxy", false);
  EXPECT_EQ(client_->Post(crds, bad_scope).status, 422);
  Json no_storage = Crd("example.com", "gadgets", "Gadget", "Namespaced", false);
  no_storage["spec"]["versions"][0]["storage"] = false;
  EXPECT_EQ(client_->Post(crds, no_storage).status, 422);
  Json bad_schema = Crd("example.com", "gadgets", "Gadget", "Namespaced", false);
  bad_schema["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["type"] =
      "banana";
  HttpResult bs = client_->Post(crds, bad_schema);
  EXPECT_EQ(bs.status, 422) << bs.raw;
  EXPECT_EQ(client_->Get("/apis/example.com/v1").status, 404);
}

// KEP-4358: a CRD version's selectableFields may be named in field selectors of LIST and
// WATCH; an absent field reads as ""; any other field is refused, as on a server (or a CRD)
// without them.
TEST_F(ApiServerTest, CrdSelectableFields) {
  const std::string crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  Json crd = Crd("example.com", "gadgets", "Gadget", "Namespaced", false);
  crd["spec"]["versions"][0]["selectableFields"] = Json::array({{{"jsonPath", ".status.phase"}}});
  MustCreate(crds, crd);
  const std::string path = "/apis/example.com/v1/namespaces/default/gadgets";
  auto gadget = [](const std::string& name, const std::string& phase) {
    Json g = {{"metadata", {{"name", name}}}};
    if (!phase.empty()) g["status"] = {{"phase", phase}};
    return g;
  };
  MustCreate(path, gadget("a", "on"));
  MustCreate(path, gadget("b", "off"));
  MustCreate(path, gadget("c", ""));
  auto names = [&](const std::string& selector) {
    HttpResult r = client_->Get(path + "?fieldSelector=" + selector);
    EXPECT_EQ(r.status, 200) << r.raw;
    std::vector<std::string> out;
    for (const Json& i : r.body.value("items", Json::array())) out.push_back(i["metadata"]["name"]);
    return out;
  };
  EXPECT_THAT(names("status.phase%3Don"), ::testing::ElementsAre("a"));
  EXPECT_THAT(names("status.phase!%3Don"), ::testing::ElementsAre("b", "c"));
  EXPECT_THAT(names("status.phase%3D"), ::testing::ElementsAre("c"));
  EXPECT_THAT(names("status.phase%3Don,metadata.name%3Da"), ::testing::ElementsAre("a"));
  HttpResult refused = client_->Get(path + "?fieldSelector=spec.replicas%3D1");
  EXPECT_EQ(refused.status, 400) << refused.raw;
  EXPECT_EQ(refused.body["message"], "field label not supported: spec.replicas");

  // A watch sees an object come in and go out of the selection.
  WatchReader w(*client_, path + "?watch=1&fieldSelector=status.phase%3Don");
  auto initial = w.Next();
  ASSERT_TRUE(initial);
  EXPECT_EQ((*initial)["object"]["metadata"]["name"], "a");
  ASSERT_TRUE(server_->WaitForWatches(1));
  ASSERT_EQ(client_->Patch(path + "/b", {{"status", {{"phase", "on"}}}}).status, 200);
  auto in = w.NextNonBookmark();
  ASSERT_TRUE(in);
  EXPECT_EQ((*in)["type"], "ADDED");
  EXPECT_EQ((*in)["object"]["metadata"]["name"], "b");
  ASSERT_EQ(client_->Patch(path + "/a", {{"status", {{"phase", "off"}}}}).status, 200);
  auto out = w.NextNonBookmark();
  ASSERT_TRUE(out);
  EXPECT_EQ((*out)["type"], "DELETED");
  EXPECT_EQ((*out)["object"]["metadata"]["name"], "a");

  // Without selectableFields only metadata.name and metadata.namespace.
  MustCreate(crds, Crd("example.com", "widgets", "Widget", "Namespaced", false));
  HttpResult plain = client_->Get(
      "/apis/example.com/v1/namespaces/default/widgets?fieldSelector=status.phase%3Don");
  EXPECT_EQ(plain.status, 400) << plain.raw;
  EXPECT_EQ(plain.body["message"], "field label not supported: status.phase");
}

TEST_F(ApiServerTest, CrdSelectableFieldsValidation) {
  const std::string crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  auto rejected = [&](Json fields) {
    Json crd = Crd("example.com", "gadgets", "Gadget", "Namespaced", false);
    crd["spec"]["versions"][0]["selectableFields"] = std::move(fields);
    HttpResult r = client_->Post(crds, crd);
    EXPECT_EQ(r.status, 422) << r.raw;
    return r.body["details"]["causes"][0].value("message", "") + " @ " +
           r.body["details"]["causes"][0].value("field", "");
  };
  EXPECT_EQ(rejected(Json::array({{{"jsonPath", ".status.nope"}}})),
            "Invalid value: \".status.nope\": is an invalid path @ "
            "spec.versions[0].selectableFields[0].jsonPath");
  EXPECT_THAT(rejected(Json::array({{{"jsonPath", ".spec.ips[0]"}}})), HasSubstr("is an invalid path"));
  EXPECT_THAT(rejected(Json::array({{{"jsonPath", "status.phase"}}})), HasSubstr("is an invalid path"));
  EXPECT_THAT(rejected(Json::array({{{"jsonPath", ".spec.ips"}}})),
              HasSubstr("must point to a field of type string, boolean or integer"));
  EXPECT_THAT(rejected(Json::array({{{"jsonPath", ".spec"}}})),
              HasSubstr("must point to a field of type string, boolean or integer"));
  EXPECT_THAT(rejected(Json::array({{{"jsonPath", ".metadata.name"}}})),
              HasSubstr("must not point to fields in metadata"));
  EXPECT_THAT(rejected(Json::array({Json::object()})), HasSubstr("Required value"));
  EXPECT_THAT(rejected(Json::array({{{"jsonPath", ".status.phase"}}, {{"jsonPath", ".status.phase"}}})),
              HasSubstr("Duplicate value: \".status.phase\""));
  Json nine = Json::array();
  for (int i = 0; i < 9; ++i) nine.push_back({{"jsonPath", ".spec.replicas"}});
  EXPECT_THAT(rejected(nine), HasSubstr("Too many: 9: must have at most 8 items"));
  EXPECT_EQ(client_->Get("/apis/example.com/v1").status, 404);
}

TEST_F(ApiServerTest, CrdDeleteRemovesObjectsAndEndpoint) {
  const std::string crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  MustCreate(crds, Crd("example.com", "widgets", "Widget", "Namespaced", false));
  const std::string path = "/apis/example.com/v1/namespaces/default/widgets";
  MustCreate(path, {{"metadata", {{"name", "w1"}}}});
  WatchReader w(*client_, path + "?watch=true");
  auto added = w.Next();
  ASSERT_TRUE(added);
  ASSERT_TRUE(server_->WaitForWatches(1));
  ASSERT_EQ(client_->Delete(crds + "/widgets.example.com").status, 200);
  auto deleted = w.Next();
  ASSERT_TRUE(deleted);
  EXPECT_EQ((*deleted)["type"], "DELETED");
  EXPECT_TRUE(w.WaitEnded());
  EXPECT_EQ(client_->Get(path).status, 404);
  EXPECT_EQ(client_->Get("/apis/example.com/v1").status, 404);
  // Re-creating it starts empty.
  MustCreate(crds, Crd("example.com", "widgets", "Widget", "Namespaced", false));
  HttpResult l = client_->Get(path);
  ASSERT_EQ(l.status, 200);
  EXPECT_TRUE(l.body["items"].empty());
}

TEST_F(ApiServerTest, CrdMultipleVersions) {
  const std::string crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  Json crd = Crd("example.com", "widgets", "Widget", "Namespaced", true);
  Json v2 = crd["spec"]["versions"][0];
  v2["name"] = "v2beta1";
  v2["storage"] = false;
  crd["spec"]["versions"].push_back(v2);
  MustCreate(crds, crd);
  HttpResult g = client_->Get("/apis/example.com");
  EXPECT_EQ(g.body["preferredVersion"]["version"], "v1");
  EXPECT_EQ(g.body["versions"].size(), 2u);
  MustCreate("/apis/example.com/v1/namespaces/default/widgets", {{"metadata", {{"name", "w"}}}});
  HttpResult other = client_->Get("/apis/example.com/v2beta1/namespaces/default/widgets/w");
  ASSERT_EQ(other.status, 200);
  EXPECT_EQ(other.body["apiVersion"], "example.com/v2beta1");
}

}  // namespace
}  // namespace spiderpool::kube::testing
