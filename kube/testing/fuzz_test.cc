// Random and garbage requests never crash the server and always get a well-formed answer.

#include <cstdio>
#include <map>
#include <random>

#include "base/strings.h"

#include "gtest/gtest.h"
#include "kube/testing/apiserver.h"
#include "kube/testing/test_client.h"

namespace spiderpool::kube::testing {
namespace {

using base::Json;

class Gen {
 public:
  explicit Gen(uint32_t seed) : rng_(seed) {}
  int Int(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) { return v[Int(static_cast<int>(v.size()))]; }

  std::string Bytes(int max_len) {
    std::string s;
    int n = Int(max_len);
    for (int i = 0; i < n; ++i) s += static_cast<char>(Int(256));
    return s;
  }
  std::string Word() {
    static const std::vector<std::string> kWords = {
        "", "a", "x-y", "A", "metadata", "name", "spec", "status", "-", "..", "a/b", "in", "notin",
        "!", "=", "==", "!=", "(", ")", ",", "é", std::string(70, 'a'), "0", "-1", "99999999999999999999",
        "null", "true", "resourceVersion", "finalizers", "labels", "kubernetes.io/x"};
    return Pick(kWords);
  }
  Json Value(int depth) {
    switch (Int(depth > 3 ? 5 : 8)) {
      case 0: return nullptr;
      case 1: return Int(2) == 0;
      case 2: return Int(1000) - 500;
      case 3: return Word();
      case 4: return 1.5;
      case 5: {
        Json a = Json::array();
        for (int i = Int(4); i > 0; --i) a.push_back(Value(depth + 1));
        return a;
      }
      default: {
        Json o = Json::object();
        for (int i = Int(5); i > 0; --i) o[Word()] = Value(depth + 1);
        return o;
      }
    }
  }
  // A plausible object with one random part replaced.
  Json Object(const std::string& kind, const std::string& api_version) {
    Json o = {{"apiVersion", api_version},
              {"kind", kind},
              {"metadata", {{"name", "obj" + std::to_string(Int(5))},
                            {"labels", {{"app", "x"}}},
                            {"finalizers", Json::array()}}},
              {"spec", {{"replicas", Int(3)}}},
              {"status", {{"phase", "P"}}}};
    static const std::vector<std::vector<std::string>> kPaths = {
        {"metadata"}, {"metadata", "name"}, {"metadata", "labels"}, {"metadata", "finalizers"},
        {"metadata", "resourceVersion"}, {"metadata", "namespace"}, {"metadata", "generateName"},
        {"metadata", "uid"}, {"metadata", "ownerReferences"}, {"metadata", "annotations"},
        {"apiVersion"}, {"kind"}, {"spec"}, {"status"}, {"spec", "replicas"},
        {"metadata", "deletionTimestamp"}, {"metadata", "generation"}};
    int mutations = Int(3);
    for (int m = 0; m < mutations; ++m) {
      const auto& path = Pick(kPaths);
      Json* cur = &o;
      for (size_t i = 0; i + 1 < path.size(); ++i) {
        if (!cur->is_object()) break;
        cur = &(*cur)[path[i]];
      }
      if (cur->is_object()) {
        if (Int(4) == 0) {
          cur->erase(path.back());
        } else {
          (*cur)[path.back()] = Value(0);
        }
      }
    }
    return o;
  }
  Json Patch() {
    if (Int(2) == 0) return Value(0);
    Json ops = Json::array();
    static const std::vector<std::string> kOps = {"add", "remove", "replace", "test", "move",
                                                  "copy", "bogus"};
    static const std::vector<std::string> kPaths = {"/metadata/labels/a", "/spec", "", "/",
                                                    "/metadata/resourceVersion", "/x/y/z",
                                                    "/metadata/finalizers/-", "/status"};
    for (int i = Int(3); i >= 0; --i) {
      Json op = {{"op", Pick(kOps)}, {"path", Pick(kPaths)}, {"value", Value(1)}};
      if (Int(3) == 0) op["from"] = Pick(kPaths);
      if (Int(5) == 0) op.erase("path");
      ops.push_back(op);
    }
    return ops;
  }
  std::string Query() {
    static const std::vector<std::string> kKeys = {
        "labelSelector", "fieldSelector", "limit", "continue", "resourceVersion", "dryRun",
        "propagationPolicy", "timeoutSeconds", "gracePeriodSeconds", "allowWatchBookmarks"};
    std::string q;
    for (int i = Int(3); i > 0; --i) {
      q += (q.empty() ? "?" : "&") + Pick(kKeys) + "=";
      std::string v = Int(2) ? Word() : Bytes(8);
      for (unsigned char c : v) {
        char buf[4];
        std::snprintf(buf, sizeof(buf), "%%%02X", c);
        q += buf;
      }
    }
    return q;
  }

 private:
  std::mt19937 rng_;
};

const std::vector<std::string> kPaths = {
    "/", "/api", "/apis", "/version", "/api/v1", "/apis/apps/v1", "/apis/x", "/api/v1/pods",
    "/api/v1/namespaces", "/api/v1/namespaces/default", "/api/v1/namespaces/nope",
    "/api/v1/namespaces/default/configmaps", "/api/v1/namespaces/default/configmaps/obj1",
    "/api/v1/namespaces/default/pods/obj2/status", "/api/v1/nodes/obj3",
    "/api/v1/nodes/obj3/status", "/apis/apps/v1/namespaces/default/deployments/obj1/status",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
    "/apis/example.com/v1/namespaces/default/widgets",
    "/apis/example.com/v1/namespaces/default/widgets/obj1",
    "/apis/example.com/v1/namespaces/default/widgets/obj1/status",
    "/api/v1/namespaces/default/configmaps/obj1/extra/more", "/api/v1/watch/pods",
    "//api//v1", "/api/v1/namespaces/%2F/configmaps"};

Json WidgetCrd() {
  return Json::parse(R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
    "metadata":{"name":"widgets.example.com"},
    "spec":{"group":"example.com","scope":"Namespaced",
      "names":{"plural":"widgets","kind":"Widget"},
      "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
        "schema":{"openAPIV3Schema":{"type":"object","properties":{
          "spec":{"type":"object","properties":{"replicas":{"type":"integer","maximum":2}}},
          "status":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}}]}})");
}

void CheckAnswer(int code, const Json& body, const std::string& what) {
  ASSERT_GE(code, 200) << what;
  ASSERT_LT(code, 600) << what;
  if (code >= 400) {
    ASSERT_TRUE(body.is_object()) << what << " " << body;
    EXPECT_EQ(body.value("kind", ""), "Status") << what << " " << body;
    EXPECT_EQ(body.value("code", 0), code) << what << " " << body;
  }
}

TEST(Fuzz, InProcessRequests) {
  auto server = LoopbackApiServer::Start({.watch_history_size = 50, .list_snapshots = 4});
  ASSERT_TRUE(server.ok()) << server.status();
  LoopbackApiServer& s = **server;
  ASSERT_EQ(s.Call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", WidgetCrd())
                .code,
            201);
  Gen g(20240601);
  std::map<int, int> codes;
  const std::vector<std::string> methods = {"GET", "POST", "POST", "POST", "PUT",
                                            "PATCH", "PATCH", "DELETE", "OPTIONS"};
  const std::vector<std::string> collections = {
      "/api/v1/namespaces/default/configmaps", "/api/v1/namespaces/default/pods",
      "/apis/apps/v1/namespaces/default/deployments", "/api/v1/namespaces", "/api/v1/nodes",
      "/apis/example.com/v1/namespaces/default/widgets", "/api/v1/namespaces/nope/configmaps"};
  const std::vector<std::string> types = {"application/json", "application/merge-patch+json",
                                          "application/json-patch+json",
                                          "application/strategic-merge-patch+json",
                                          "application/apply-patch+yaml", "", "text/plain; x=y"};
  const std::vector<std::pair<std::string, std::string>> kinds = {
      {"ConfigMap", "v1"}, {"Widget", "example.com/v1"}, {"Pod", "v1"},
      {"Deployment", "apps/v1"}, {"Namespace", "v1"}, {"Node", "v1"}};
  for (int i = 0; i < 3000; ++i) {
    std::string method = g.Pick(methods);
    std::string path = g.Pick(kPaths);
    if (method == "POST" && g.Int(4) != 0) path = g.Pick(collections);
    if (method != "POST" && g.Int(2) == 0) {
      path = g.Pick(collections) + "/obj" + std::to_string(g.Int(5)) +
             (g.Int(3) == 0 ? "/status" : "");
    }
    path += g.Query();
    Json body;
    std::string type = g.Pick(types);
    if (method == "PATCH") {
      body = g.Patch();
    } else if (method != "GET") {
      const auto& [k, av] = g.Pick(kinds);
      body = g.Int(4) == 0 ? g.Value(0) : g.Object(k, av);
    }
    auto r = s.Call(method, path, body, type);
    ++codes[r.code];
    CheckAnswer(r.code, r.body, method + " " + path + " " + base::DumpJson(body));
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(s.Call("GET", "/api/v1/namespaces/default").code, 200);
  EXPECT_EQ(s.Call("GET", "/apis").code, 200);
  // The generator reaches the interesting paths: successes and the main failure classes.
  for (int code : {200, 201, 400, 404, 405, 409, 415, 422}) {
    EXPECT_GT(codes[code], 0) << "no answer with HTTP " << code;
  }
  std::string summary;
  for (auto [code, n] : codes) summary += base::StrCat(code, ":", n, " ");
  std::printf("answers: %s\n", summary.c_str());
}

TEST(Fuzz, GarbageOverHttps) {
  auto server = LoopbackApiServer::Start({});
  ASSERT_TRUE(server.ok()) << server.status();
  TestClient client(**server);
  Gen g(7);
  const std::vector<std::string> methods = {"POST", "PUT", "PATCH", "DELETE"};
  const std::vector<std::string> types = {"application/json", "application/merge-patch+json",
                                          "application/json-patch+json", "application/x-garbage"};
  for (int i = 0; i < 150; ++i) {
    std::string body = g.Int(3) == 0 ? base::DumpJson(g.Value(0)) : g.Bytes(200);
    if (g.Int(10) == 0) body = std::string(200, '[');  // deep nesting
    HttpResult r = client.Request(g.Pick(methods), g.Pick(kPaths), body, g.Pick(types));
    ASSERT_NE(r.status, 0) << r.error;
    CheckAnswer(r.status, r.body, r.raw);
    if (HasFatalFailure()) return;
  }
  // A deeply nested document is refused, not a stack overflow.
  std::string deep(100000, '[');
  HttpResult r = client.Request("POST", "/api/v1/namespaces/default/configmaps", deep,
                                "application/json");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(client.Get("/healthz").status, 200);
}

}  // namespace
}  // namespace spiderpool::kube::testing
