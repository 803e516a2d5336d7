#pragma once
// Fixture and object builders shared by the loopback API server's tests (apiserver_test.cc,
// apiserver_watch_test.cc, apiserver_crd_test.cc). testonly.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/apiserver.h"
#include "kube/testing/test_client.h"

namespace spiderpool::kube::testing::apiserver_test {

using base::Json;
using ::testing::HasSubstr;

inline constexpr char kCmPath[] = "/api/v1/namespaces/default/configmaps";

// A tiny pattern check (<regex> trips GCC 12 warnings under ASAN): in `pattern`, 'x' is a
// lower-case hex digit, 'd' a decimal digit, 'V' one of 89ab, 'a' a generateName character;
// anything else is literal.
inline bool Matches(std::string_view s, std::string_view pattern) {
  if (s.size() != pattern.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    std::string_view allowed;
    switch (pattern[i]) {
      case 'x': allowed = "0123456789abcdef"; break;
      case 'd': allowed = "0123456789"; break;
      case 'V': allowed = "89ab"; break;
      case 'a': allowed = "bcdfghjklmnpqrstvwxz2456789"; break;
      default:
        if (c != pattern[i]) return false;
        continue;
    }
    if (allowed.find(c) == std::string_view::npos) return false;
  }
  return true;
}

inline Json ConfigMap(const std::string& name, Json labels = Json::object(), Json data = Json::object()) {
  Json j = {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}}},
            {"data", data}};
  if (!labels.empty()) j["metadata"]["labels"] = labels;
  return j;
}

// A valid apps/v1 Deployment spec: kube-apiserver requires a selector that matches the pod
// template's labels and a template with containers.
inline Json DeploymentSpec(int replicas = 1) {
  Json labels = {{"app", "web"}};
  return {{"replicas", replicas},
          {"selector", {{"matchLabels", labels}}},
          {"template",
           {{"metadata", {{"labels", labels}}},
            {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}}}};
}

inline Json Pod(const std::string& name, const std::string& node, Json labels = Json::object()) {
  Json j = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}}},
            {"spec", {{"nodeName", node}, {"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
  if (!labels.empty()) j["metadata"]["labels"] = labels;
  return j;
}

std::string Rv(const Json& obj) { return obj["metadata"]["resourceVersion"].get<std::string>(); }

inline std::vector<std::string> Names(const Json& list) {
  std::vector<std::string> out;
  for (const Json& i : list["items"]) out.push_back(i["metadata"]["name"].get<std::string>());
  return out;
}

inline Json Crd(const std::string& group, const std::string& plural, const std::string& kind,
         const std::string& scope, bool status) {
  Json schema = {
      {"type", "object"},
      {"properties",
       {{"spec",
         {{"type", "object"},
          {"properties",
           {{"replicas", {{"type", "integer"}, {"minimum", 0}}},
            {"ips", {{"type", "array"}, {"items", {{"type", "string"}}}}}}}}},
        {"status",
         {{"type", "object"}, {"properties", {{"phase", {{"type", "string"}}}}}}}}}};
  Json version = {{"name", "v1"},
                  {"served", true},
                  {"storage", true},
                  {"schema", {{"openAPIV3Schema", schema}}}};
  if (status) version["subresources"] = {{"status", Json::object()}};
  return {{"apiVersion", "apiextensions.k8s.io/v1"},
          {"kind", "CustomResourceDefinition"},
          {"metadata", {{"name", plural + "." + group}}},
          {"spec",
           {{"group", group},
            {"scope", scope},
            {"names",
             {{"plural", plural}, {"singular", kind == "" ? plural : ""}, {"kind", kind},
              {"shortNames", {"sip"}}}},
            {"versions", {version}}}}};
}

// The server alone: its controllers (kube-root-ca.crt, namespace deletion, garbage collection)
// write objects of their own, which these tests of the API mechanics would see; they have
// their own tests (apiserver_lifecycle_test.cc). A test that needs them sets
// with_controllers_ before Start.
class ApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(LoopbackOptions{}); }
  void Start(LoopbackOptions options) {
    options.run_controllers = with_controllers_;
    client_.reset();
    server_.reset();
    auto s = LoopbackApiServer::Start(std::move(options));
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    client_ = std::make_unique<TestClient>(*server_);
  }
  bool with_controllers_ = false;
  HttpResult MustCreate(const std::string& path, const Json& obj) {
    HttpResult r = client_->Post(path, obj);
    EXPECT_EQ(r.status, 201) << r.raw;
    return r;
  }
  std::unique_ptr<LoopbackApiServer> server_;
  std::unique_ptr<TestClient> client_;
};

}  // namespace spiderpool::kube::testing::apiserver_test
