// Admission webhooks called by the loopback API server: real HTTPS webhook servers
// (cpp-httplib SSLServer, certificates from base/certs.h) registered through
// Mutating/ValidatingWebhookConfiguration objects, driven through the server's HTTPS API.

#include "kube/testing/webhook_admission.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/strings/escaping.h"
#include "api/admissionregistration.h"
#include "api/codec.h"
#include "base/certs.h"
#include "base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "kube/testing/test_client.h"

namespace spiderpool::kube::testing {
namespace {

using base::Json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kCmPath[] = "/api/v1/namespaces/default/configmaps";
constexpr char kValidatingPath[] =
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
constexpr char kMutatingPath[] =
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";

std::string B64(std::string_view s) {
  std::string out;
  absl::Base64Escape(base::ToAbsl(s), &out);
  return out;
}

Json ConfigMap(const std::string& name, Json labels = Json::object()) {
  Json j = {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}}},
            {"data", {{"k", "v"}}}};
  if (!labels.empty()) j["metadata"]["labels"] = labels;
  return j;
}

// An HTTPS admission webhook: answers every POST with handler(request) as the review
// response (uid filled in unless the handler sets one). Counts calls; can hold requests.
class FakeWebhook {
 public:
  // Returns the "response" object; {"__raw": "..."} sends that body verbatim.
  using Handler = std::function<Json(const Json& review)>;

  explicit FakeWebhook(const base::CertAndKey& serving) {
    BIO* cb = BIO_new_mem_buf(serving.cert_pem.data(), static_cast<int>(serving.cert_pem.size()));
    BIO* kb = BIO_new_mem_buf(serving.key_pem.data(), static_cast<int>(serving.key_pem.size()));
    X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
    EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
    server_ = std::make_unique<httplib::SSLServer>(cert, key);
    X509_free(cert);
    EVP_PKEY_free(key);
    BIO_free(cb);
    BIO_free(kb);
    server_->Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      Handler handler;
      auto parsed = base::ParseJson(req.body);
      Json review = parsed.ok() ? *parsed : Json(req.body);
      {
        std::unique_lock<std::mutex> l(mu_);
        ++calls_;
        paths_.push_back(req.target);
        last_ = review;
        requests_.push_back(review);
        handler = handler_;
        cv_.wait(l, [this] { return !blocked_; });
      }
      Json resp = handler ? handler(review) : Json{{"allowed", true}};
      if (resp.contains("__raw")) {
        res.set_content(resp["__raw"].get<std::string>(), "application/json");
        return;
      }
      if (!resp.contains("uid")) resp["uid"] = review["request"]["uid"];
      Json out = {{"apiVersion", review.value("apiVersion", "admission.k8s.io/v1")},
                  {"kind", "AdmissionReview"},
                  {"response", resp}};
      res.set_content(base::DumpJson(out), "application/json");
    });
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    for (int i = 0; i < 10000 && !server_->is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ~FakeWebhook() {
    Release();
    server_->stop();
    thread_.join();
  }

  int port() const { return port_; }
  void set_handler(Handler h) {
    std::lock_guard<std::mutex> l(mu_);
    handler_ = std::move(h);
  }
  int calls() const {
    std::lock_guard<std::mutex> l(mu_);
    return calls_;
  }
  Json last() const {
    std::lock_guard<std::mutex> l(mu_);
    return last_;
  }
  std::vector<Json> requests() const {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }
  std::vector<std::string> paths() const {
    std::lock_guard<std::mutex> l(mu_);
    return paths_;
  }
  // Holds every request until Release().
  void Block() {
    std::lock_guard<std::mutex> l(mu_);
    blocked_ = true;
  }
  void Release() {
    std::lock_guard<std::mutex> l(mu_);
    blocked_ = false;
    cv_.notify_all();
  }

 private:
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Handler handler_;
  int calls_ = 0;
  bool blocked_ = false;
  Json last_;
  std::vector<Json> requests_;
  std::vector<std::string> paths_;
};

api::RuleWithOperations TypedRule(std::vector<std::string> ops, std::vector<std::string> groups,
                                  std::vector<std::string> versions,
                                  std::vector<std::string> resources, std::string scope = "*") {
  return {.operations = std::move(ops),
          .api_groups = std::move(groups),
          .api_versions = std::move(versions),
          .resources = std::move(resources),
          .scope = std::move(scope)};
}

// As sent in a configuration (the same type the controller writes).
Json Rule(std::vector<std::string> ops, std::vector<std::string> groups,
          std::vector<std::string> versions, std::vector<std::string> resources,
          std::string scope = "*") {
  return api::Encode(TypedRule(std::move(ops), std::move(groups), std::move(versions),
                               std::move(resources), std::move(scope)));
}

Json ConfigMapRule(std::vector<std::string> ops = {"CREATE", "UPDATE", "DELETE"}) {
  return Rule(std::move(ops), {""}, {"v1"}, {"configmaps"});
}

class WebhookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ca = base::GenerateCA("webhook-ca", absl::Hours(1));
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *ca;
    auto other = base::GenerateCA("other-ca", absl::Hours(1));
    ASSERT_TRUE(other.ok()) << other.status();
    other_ca_ = *other;
    auto serving = base::GenerateServingCert(ca_, "hook", {"hook.webhooks.svc"}, {"127.0.0.1"},
                                             absl::Hours(1));
    ASSERT_TRUE(serving.ok()) << serving.status();
    hook_ = std::make_unique<FakeWebhook>(*serving);
    ASSERT_GT(hook_->port(), 0);
    Start({});
  }

  void Start(LoopbackOptions options) {
    // No controllers: their own writes (kube-root-ca.crt in each namespace) would be admitted
    // too and show up in the webhook's call counts.
    options.run_controllers = false;
    client_.reset();
    server_.reset();
    auto s = LoopbackApiServer::Start(std::move(options));
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    client_ = std::make_unique<TestClient>(*server_);
    // The webhook's Service: routed to 127.0.0.1:<port> through its clusterIP and port.
    ASSERT_EQ(server_->Call("POST", "/api/v1/namespaces",
                            {{"metadata", {{"name", "webhooks"}}}}).code, 201);
    Json svc = {{"metadata", {{"name", "hook"}}},
                {"spec",
                 {{"clusterIP", "127.0.0.1"},
                  {"ports", {{{"port", hook_->port()}, {"protocol", "TCP"}}}}}}};
    ASSERT_EQ(server_->Call("POST", "/api/v1/namespaces/webhooks/services", svc).code, 201);
  }

  // clientConfig through the Service, trusting `ca` (default: the webhook's CA).
  Json ServiceConfig(const std::string& path, const std::string* ca_pem = nullptr,
                     const std::string& service = "hook") {
    return {{"service",
             {{"namespace", "webhooks"},
              {"name", service},
              {"path", path},
              {"port", hook_->port()}}},
            {"caBundle", B64(ca_pem ? *ca_pem : ca_.cert_pem)}};
  }

  Json Webhook(const std::string& name, Json client_config, std::vector<Json> rules,
               Json extra = {}) {
    Json h = {{"name", name},
              {"clientConfig", std::move(client_config)},
              {"rules", Json(std::move(rules))},
              {"sideEffects", "None"},
              {"admissionReviewVersions", {"v1"}}};
    if (extra.is_object()) {
      for (auto& [k, v] : extra.items()) h[k] = v;
    }
    return h;
  }

  // Lists as vectors, not Json: `Json x = {one_object}` is an array for one compiler and a copy
  // of the object for another (CWG 1467); Json(vector) is always an array.
  void Register(const char* path, const std::string& config_name, std::vector<Json> webhooks) {
    Json cfg = {{"metadata", {{"name", config_name}}}, {"webhooks", Json(std::move(webhooks))}};
    auto r = server_->Call("POST", path, cfg);
    ASSERT_EQ(r.code, 201) << base::DumpJson(r.body);
  }

  base::CertAndKey ca_, other_ca_;
  std::unique_ptr<FakeWebhook> hook_;
  std::unique_ptr<LoopbackApiServer> server_;
  std::unique_ptr<TestClient> client_;
};

Json Deny(int code, const std::string& reason, const std::string& message) {
  Json status = {{"status", "Failure"}, {"message", message}};
  if (code) status["code"] = code;
  if (!reason.empty()) status["reason"] = reason;
  return {{"allowed", false}, {"status", status}};
}

// ---- the acceptance case: a rejecting validating webhook ----

TEST_F(WebhookTest, RejectingValidatingWebhook) {
  hook_->set_handler([](const Json&) { return Deny(403, "Forbidden", "no configmaps today"); });
  Register(kValidatingPath, "deny",
           {Webhook("deny.example.com", ServiceConfig("/validate"), {ConfigMapRule()})});

  HttpResult r = client_->Post(kCmPath, ConfigMap("cm1"));
  EXPECT_EQ(r.status, 403) << r.raw;
  EXPECT_EQ(r.body["kind"], "Status");
  EXPECT_EQ(r.body["status"], "Failure");
  EXPECT_EQ(r.body["reason"], "Forbidden");
  EXPECT_EQ(r.body["code"], 403);
  EXPECT_EQ(r.body["message"],
            "admission webhook \"deny.example.com\" denied the request: no configmaps today");
  EXPECT_EQ(client_->Get(std::string(kCmPath) + "/cm1").status, 404);
  ASSERT_EQ(hook_->calls(), 1);

  // What kube-apiserver sends.
  EXPECT_EQ(hook_->paths(), std::vector<std::string>{"/validate?timeout=10s"});
  Json review = hook_->last();
  EXPECT_EQ(review["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(review["kind"], "AdmissionReview");
  const Json& req = review["request"];
  EXPECT_EQ(req["uid"].get<std::string>().size(), 36u);
  EXPECT_EQ(req["kind"], (Json{{"group", ""}, {"version", "v1"}, {"kind", "ConfigMap"}}));
  EXPECT_EQ(req["resource"],
            (Json{{"group", ""}, {"version", "v1"}, {"resource", "configmaps"}}));
  EXPECT_EQ(req["requestKind"], req["kind"]);
  EXPECT_EQ(req["requestResource"], req["resource"]);
  EXPECT_FALSE(req.contains("subResource"));
  EXPECT_EQ(req["name"], "cm1");
  EXPECT_EQ(req["namespace"], "default");
  EXPECT_EQ(req["operation"], "CREATE");
  EXPECT_EQ(req["userInfo"]["username"], "loopback-admin");
  EXPECT_EQ(req["userInfo"]["groups"], (Json{"system:masters", "system:authenticated"}));
  EXPECT_EQ(req["object"]["metadata"]["name"], "cm1");
  EXPECT_EQ(req["object"]["data"]["k"], "v");
  EXPECT_TRUE(req["oldObject"].is_null());
  EXPECT_EQ(req["dryRun"], false);
  EXPECT_EQ(req["options"], (Json{{"kind", "CreateOptions"}, {"apiVersion", "meta.k8s.io/v1"}}));

  // Without a code the denial is a 400; without a message the reason is used.
  hook_->set_handler([](const Json&) { return Deny(0, "", "nope"); });
  r = client_->Post(kCmPath, ConfigMap("cm2"));
  EXPECT_EQ(r.status, 400) << r.raw;
  EXPECT_FALSE(r.body.contains("reason"));
  EXPECT_EQ(r.body["message"], "admission webhook \"deny.example.com\" denied the request: nope");
  hook_->set_handler([](const Json&) {
    return Json{{"allowed", false}, {"status", {{"code", 422}, {"reason", "Invalid"}}}};
  });
  r = client_->Post(kCmPath, ConfigMap("cm3"));
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(r.body["message"], "admission webhook \"deny.example.com\" denied the request: Invalid");
  hook_->set_handler([](const Json&) { return Json{{"allowed", false}}; });
  r = client_->Post(kCmPath, ConfigMap("cm4"));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["message"],
            "admission webhook \"deny.example.com\" denied the request without explanation");

  // Allowed: created.
  hook_->set_handler(nullptr);
  EXPECT_EQ(client_->Post(kCmPath, ConfigMap("cm5")).status, 201);
  EXPECT_EQ(hook_->calls(), 5);
}

TEST_F(WebhookTest, DenialKeepsDetails) {
  hook_->set_handler([](const Json&) {
    return Json{{"allowed", false},
                {"status",
                 {{"code", 422},
                  {"reason", "Invalid"},
                  {"message", "ConfigMap \"cm\" is invalid: data.k: bad"},
                  {"details",
                   {{"name", "cm"},
                    {"kind", "ConfigMap"},
                    {"causes",
                     {{{"reason", "FieldValueInvalid"}, {"message", "bad"}, {"field", "data.k"}}}}}}}}};
  });
  Register(kValidatingPath, "v", {Webhook("v.example.com", ServiceConfig("/v"), {ConfigMapRule()})});
  HttpResult r = client_->Post(kCmPath, ConfigMap("cm"));
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(r.body["reason"], "Invalid");
  EXPECT_EQ(r.body["details"]["name"], "cm");
  EXPECT_EQ(r.body["details"]["causes"][0]["field"], "data.k");
}

// ---- mutating ----

TEST_F(WebhookTest, MutatingWebhookPatchesTheObject) {
  hook_->set_handler([](const Json& review) {
    if (review["request"]["operation"] != "CREATE") return Json{{"allowed", true}};
    Json patch = Json::array({{{"op", "add"}, {"path", "/metadata/labels"},
                               {"value", {{"mutated", "yes"}}}}});
    return Json{{"allowed", true}, {"patchType", "JSONPatch"}, {"patch", B64(base::DumpJson(patch))}};
  });
  Register(kMutatingPath, "label",
           {Webhook("label.example.com", ServiceConfig("/mutate"), {ConfigMapRule({"CREATE"})})});
  // A validating webhook (a second server would do; the same one answers) sees the result.
  auto serving2 = base::GenerateServingCert(ca_, "hook2", {"hook2.webhooks.svc"}, {},
                                            absl::Hours(1));
  ASSERT_TRUE(serving2.ok());
  FakeWebhook validator(*serving2);
  Json svc = {{"metadata",
               {{"name", "hook2"},
                {"annotations",
                 {{std::string(kServiceDialAddressAnnotation),
                   "127.0.0.1:" + std::to_string(validator.port())}}}}},
              {"spec", {{"ports", {{{"port", 443}}}}}}};
  ASSERT_EQ(server_->Call("POST", "/api/v1/namespaces/webhooks/services", svc).code, 201);
  Json vcc = {{"service", {{"namespace", "webhooks"}, {"name", "hook2"}, {"path", "/v"}}},
              {"caBundle", B64(ca_.cert_pem)}};
  Register(kValidatingPath, "check", {Webhook("check.example.com", vcc, {ConfigMapRule()})});

  HttpResult r = client_->Post(kCmPath, ConfigMap("cm1"));
  ASSERT_EQ(r.status, 201) << r.raw;
  EXPECT_EQ(r.body["metadata"]["labels"]["mutated"], "yes");
  HttpResult g = client_->Get(std::string(kCmPath) + "/cm1");
  EXPECT_EQ(g.body["metadata"]["labels"]["mutated"], "yes");
  ASSERT_EQ(validator.calls(), 1);
  EXPECT_EQ(validator.last()["request"]["object"]["metadata"]["labels"]["mutated"], "yes");
  // System fields are filled between the phases, as in the registry's BeforeCreate.
  EXPECT_EQ(validator.last()["request"]["object"]["metadata"]["uid"], r.body["metadata"]["uid"]);
  EXPECT_TRUE(validator.last()["request"]["object"]["metadata"].contains("creationTimestamp"));
  EXPECT_FALSE(hook_->last()["request"]["object"]["metadata"].contains("uid"));
  EXPECT_EQ(validator.paths(), std::vector<std::string>{"/v?timeout=10s"});
  EXPECT_EQ(hook_->calls(), 1);
}

TEST_F(WebhookTest, MutatingWebhooksRunInOrderOfConfigurationName) {
  // Two configurations; "a-..." runs first, its patch is visible to "b-...".
  std::vector<std::string> order;
  std::mutex mu;
  hook_->set_handler([&](const Json& review) {
    std::string path_label = review["request"]["object"]["metadata"].value(
        "labels", Json::object()).value("step", "");
    std::lock_guard<std::mutex> l(mu);
    order.push_back(path_label);
    Json patch = Json::array({{{"op", "add"}, {"path", "/metadata/labels"},
                               {"value", {{"step", path_label + "x"}}}}});
    return Json{{"allowed", true}, {"patchType", "JSONPatch"}, {"patch", B64(base::DumpJson(patch))}};
  });
  Register(kMutatingPath, "b-second",
           {Webhook("b.example.com", ServiceConfig("/b"), {ConfigMapRule({"CREATE"})})});
  Register(kMutatingPath, "a-first",
           {Webhook("a1.example.com", ServiceConfig("/a1"), {ConfigMapRule({"CREATE"})}),
            Webhook("a2.example.com", ServiceConfig("/a2"), {ConfigMapRule({"CREATE"})})});
  HttpResult r = client_->Post(kCmPath, ConfigMap("cm1"));
  ASSERT_EQ(r.status, 201) << r.raw;
  EXPECT_EQ(r.body["metadata"]["labels"]["step"], "xxx");
  EXPECT_EQ(order, (std::vector<std::string>{"", "x", "xx"}));
  std::vector<std::string> paths = hook_->paths();
  EXPECT_EQ(paths, (std::vector<std::string>{"/a1?timeout=10s", "/a2?timeout=10s",
                                             "/b?timeout=10s"}));
}

TEST_F(WebhookTest, PatchOnDeleteIsAnInternalError) {
  hook_->set_handler([](const Json&) {
    Json patch = Json::array({{{"op", "add"}, {"path", "/x"}, {"value", 1}}});
    return Json{{"allowed", true}, {"patchType", "JSONPatch"}, {"patch", B64(base::DumpJson(patch))}};
  });
  ASSERT_EQ(client_->Post(kCmPath, ConfigMap("cm1")).status, 201);
  Register(kMutatingPath, "m", {Webhook("m.example.com", ServiceConfig("/m"),
                                        {ConfigMapRule({"DELETE"})})});
  HttpResult r = client_->Delete(std::string(kCmPath) + "/cm1");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body["message"],
            "Internal error occurred: admission webhook \"m.example.com\" attempted to modify the "
            "object, which is not supported for this operation");
}

// ---- matching ----

TEST_F(WebhookTest, RulesThatDoNotMatchAreNotCalled) {
  Register(kValidatingPath, "rules",
           {Webhook("pods.example.com", ServiceConfig("/pods"),
                    {Rule({"*"}, {""}, {"v1"}, {"pods"})}),
            Webhook("update.example.com", ServiceConfig("/update"), {ConfigMapRule({"UPDATE"})}),
            Webhook("cluster.example.com", ServiceConfig("/cluster"),
                    {Rule({"*"}, {"*"}, {"*"}, {"*"}, "Cluster")}),
            Webhook("group.example.com", ServiceConfig("/group"),
                    {Rule({"*"}, {"apps"}, {"*"}, {"configmaps"})}),
            Webhook("version.example.com", ServiceConfig("/version"),
                    {Rule({"*"}, {""}, {"v2"}, {"configmaps"})}),
            Webhook("status.example.com", ServiceConfig("/status"),
                    {Rule({"*"}, {"apps"}, {"v1"}, {"deployments/status"})})});
  ASSERT_EQ(client_->Post(kCmPath, ConfigMap("cm1")).status, 201);
  EXPECT_EQ(hook_->calls(), 0);
  ASSERT_EQ(client_->Patch(std::string(kCmPath) + "/cm1", {{"data", {{"a", "b"}}}}).status, 200);
  EXPECT_EQ(hook_->paths(), std::vector<std::string>{"/update?timeout=10s"});
  EXPECT_EQ(hook_->last()["request"]["operation"], "UPDATE");
  EXPECT_EQ(hook_->last()["request"]["oldObject"]["data"], (Json{{"k", "v"}}));
  EXPECT_EQ(hook_->last()["request"]["object"]["data"]["a"], "b");
  EXPECT_EQ(hook_->last()["request"]["options"]["kind"], "UpdateOptions");

  // The main resource does not match "deployments/status"; the subresource does.
  const std::string deploys = "/apis/apps/v1/namespaces/default/deployments";
  Json labels = {{"app", "d"}};
  Json spec = {{"selector", {{"matchLabels", labels}}},
               {"template",
                {{"metadata", {{"labels", labels}}},
                 {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}}}};
  ASSERT_EQ(client_->Post(deploys, {{"metadata", {{"name", "d"}}}, {"spec", spec}}).status, 201);
  EXPECT_EQ(hook_->calls(), 1);
  ASSERT_EQ(client_->Patch(deploys + "/d/status", {{"status", {{"replicas", 1}}}}).status, 200);
  ASSERT_EQ(hook_->calls(), 2);
  EXPECT_EQ(hook_->paths().back(), "/status?timeout=10s");
  EXPECT_EQ(hook_->last()["request"]["subResource"], "status");
  EXPECT_EQ(hook_->last()["request"]["requestSubResource"], "status");
  EXPECT_EQ(hook_->last()["request"]["kind"]["kind"], "Deployment");

  // A cluster-scoped object matches the Cluster scope rule.
  ASSERT_EQ(client_->Post("/api/v1/nodes", {{"metadata", {{"name", "n1"}}}}).status, 201);
  EXPECT_EQ(hook_->paths().back(), "/cluster?timeout=10s");
  EXPECT_EQ(hook_->calls(), 3);
}

TEST(WebhookRuleTest, Matching) {
  AdmissionAttributes a;
  a.operation = AdmissionOperation::kUpdate;
  a.resource = {"", "v1", "Pod", "pods", "pod", true};
  a.namespace_name = "default";
  a.name = "p";
  auto rule = [](std::vector<std::string> res, std::string scope = "*") {
    return TypedRule({"UPDATE"}, {""}, {"v1"}, std::move(res), std::move(scope));
  };
  EXPECT_TRUE(WebhookRuleMatches(rule({"pods"}), a));
  EXPECT_TRUE(WebhookRuleMatches(rule({"*"}), a));
  EXPECT_TRUE(WebhookRuleMatches(rule({"*/*"}), a));
  EXPECT_FALSE(WebhookRuleMatches(rule({"pods/status"}), a));
  EXPECT_TRUE(WebhookRuleMatches(rule({"pods"}, "Namespaced"), a));
  EXPECT_FALSE(WebhookRuleMatches(rule({"pods"}, "Cluster"), a));
  EXPECT_FALSE(WebhookRuleMatches(rule({"pods"}, "Bogus"), a));
  a.subresource = "status";
  EXPECT_FALSE(WebhookRuleMatches(rule({"pods"}), a));
  EXPECT_FALSE(WebhookRuleMatches(rule({"*"}), a));
  EXPECT_TRUE(WebhookRuleMatches(rule({"pods/status"}), a));
  EXPECT_TRUE(WebhookRuleMatches(rule({"*/status"}), a));
  EXPECT_TRUE(WebhookRuleMatches(rule({"pods/*"}), a));
  EXPECT_TRUE(WebhookRuleMatches(rule({"*/*"}), a));
  EXPECT_FALSE(WebhookRuleMatches(rule({"pods/log"}), a));
  EXPECT_FALSE(WebhookRuleMatches(TypedRule({"CREATE"}, {""}, {"v1"}, {"*/*"}), a));
  EXPECT_TRUE(WebhookRuleMatches(TypedRule({"*"}, {"*"}, {"*"}, {"*/*"}), a));
  EXPECT_FALSE(WebhookRuleMatches(api::RuleWithOperations{}, a));  // no operations/resources

  // Namespace objects are cluster-scoped, and carry their own name as namespace.
  AdmissionAttributes ns;
  ns.operation = AdmissionOperation::kDelete;
  ns.resource = {"", "v1", "Namespace", "namespaces", "namespace", false};
  ns.name = "team-a";
  EXPECT_EQ(AdmissionNamespace(ns), "team-a");
  EXPECT_TRUE(WebhookRuleMatches(TypedRule({"DELETE"}, {""}, {"v1"}, {"namespaces"}, "Cluster"), ns));
  EXPECT_FALSE(
      WebhookRuleMatches(TypedRule({"DELETE"}, {""}, {"v1"}, {"namespaces"}, "Namespaced"), ns));
  ns.operation = AdmissionOperation::kCreate;
  EXPECT_EQ(AdmissionNamespace(ns), "");

  EXPECT_TRUE(IsExemptAdmissionConfigurationResource(
      {"admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
       "validatingwebhookconfigurations"}));
  EXPECT_FALSE(IsExemptAdmissionConfigurationResource(a.resource));
}

TEST_F(WebhookTest, NamespaceSelector) {
  Json selector = {{"matchLabels", {{"webhook", "enabled"}}}};
  Register(kValidatingPath, "ns",
           {Webhook("ns.example.com", ServiceConfig("/ns"),
                    {Rule({"CREATE"}, {""}, {"v1"}, {"configmaps", "namespaces"})},
                    {{"namespaceSelector", selector}})});
  ASSERT_EQ(server_->Call("POST", "/api/v1/namespaces",
                          {{"metadata", {{"name", "off"}}}}).code, 201);
  EXPECT_EQ(hook_->calls(), 0);
  // A Namespace object is matched against its own labels on CREATE.
  ASSERT_EQ(client_->Post("/api/v1/namespaces",
                          {{"metadata", {{"name", "on"}, {"labels", {{"webhook", "enabled"}}}}}})
                .status,
            201);
  ASSERT_EQ(hook_->calls(), 1);
  EXPECT_EQ(hook_->last()["request"]["resource"]["resource"], "namespaces");
  EXPECT_FALSE(hook_->last()["request"].contains("namespace"));

  ASSERT_EQ(client_->Post("/api/v1/namespaces/off/configmaps", ConfigMap("a")).status, 201);
  EXPECT_EQ(hook_->calls(), 1);
  ASSERT_EQ(client_->Post("/api/v1/namespaces/on/configmaps", ConfigMap("a")).status, 201);
  ASSERT_EQ(hook_->calls(), 2);
  EXPECT_EQ(hook_->last()["request"]["namespace"], "on");
  // Cluster-scoped objects (not namespaces) are never exempted by the selector... but they
  // must match the rules first: nodes do not.
  ASSERT_EQ(client_->Post("/api/v1/nodes", {{"metadata", {{"name", "n"}}}}).status, 201);
  EXPECT_EQ(hook_->calls(), 2);
}

TEST_F(WebhookTest, NamespaceSelectorDoesNotApplyToClusterScopedObjects) {
  Register(kValidatingPath, "nodes",
           {Webhook("nodes.example.com", ServiceConfig("/nodes"),
                    {Rule({"CREATE"}, {""}, {"v1"}, {"nodes"})},
                    {{"namespaceSelector", {{"matchLabels", {{"never", "true"}}}}}})});
  ASSERT_EQ(client_->Post("/api/v1/nodes", {{"metadata", {{"name", "n"}}}}).status, 201);
  EXPECT_EQ(hook_->calls(), 1);
}

TEST_F(WebhookTest, ObjectSelector) {
  Register(kValidatingPath, "obj",
           {Webhook("obj.example.com", ServiceConfig("/obj"), {ConfigMapRule()},
                    {{"objectSelector", {{"matchExpressions",
                                          {{{"key", "watched"}, {"operator", "Exists"}}}}}}})});
  ASSERT_EQ(client_->Post(kCmPath, ConfigMap("plain")).status, 201);
  EXPECT_EQ(hook_->calls(), 0);
  ASSERT_EQ(client_->Post(kCmPath, ConfigMap("w", {{"watched", "1"}})).status, 201);
  EXPECT_EQ(hook_->calls(), 1);
  // The old object's labels count too: removing the label still calls the webhook.
  ASSERT_EQ(client_->Patch(std::string(kCmPath) + "/w",
                           {{"metadata", {{"labels", {{"watched", nullptr}}}}}})
                .status,
            200);
  EXPECT_EQ(hook_->calls(), 2);
  ASSERT_EQ(client_->Delete(std::string(kCmPath) + "/plain").status, 200);
  EXPECT_EQ(hook_->calls(), 2);
}

TEST_F(WebhookTest, WebhookConfigurationsAreExempt) {
  hook_->set_handler([](const Json&) { return Deny(403, "Forbidden", "everything denied"); });
  Register(kValidatingPath, "all",
           {Webhook("all.example.com", ServiceConfig("/all"), {Rule({"*"}, {"*"}, {"*"}, {"*/*"})})});
  // The configuration objects themselves can still be changed and deleted.
  Register(kMutatingPath, "another", {});
  EXPECT_EQ(server_->Call("DELETE", std::string(kValidatingPath) + "/all").code, 200);
  EXPECT_EQ(hook_->calls(), 0);
  EXPECT_EQ(client_->Post(kCmPath, ConfigMap("cm")).status, 201);
}

// ---- DELETE ----

TEST_F(WebhookTest, DeleteSendsTheOldObject) {
  ASSERT_EQ(client_->Post(kCmPath, ConfigMap("cm1")).status, 201);
  hook_->set_handler([](const Json&) { return Deny(403, "Forbidden", "keep it"); });
  Register(kValidatingPath, "del",
           {Webhook("del.example.com", ServiceConfig("/del"), {ConfigMapRule({"DELETE"})})});
  HttpResult r = client_->Delete(std::string(kCmPath) + "/cm1",
                                 {{"propagationPolicy", "Background"}});
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.body["message"], "admission webhook \"del.example.com\" denied the request: keep it");
  EXPECT_EQ(client_->Get(std::string(kCmPath) + "/cm1").status, 200);
  const Json req = hook_->last()["request"];
  EXPECT_EQ(req["operation"], "DELETE");
  EXPECT_EQ(req["name"], "cm1");
  EXPECT_TRUE(req["object"].is_null());
  EXPECT_EQ(req["oldObject"]["metadata"]["name"], "cm1");
  EXPECT_EQ(req["oldObject"]["data"]["k"], "v");
  EXPECT_EQ(req["options"]["kind"], "DeleteOptions");
  EXPECT_EQ(req["options"]["propagationPolicy"], "Background");

  hook_->set_handler(nullptr);
  EXPECT_EQ(client_->Delete(std::string(kCmPath) + "/cm1").status, 200);
  EXPECT_EQ(client_->Get(std::string(kCmPath) + "/cm1").status, 404);
}

// ---- failures talking to the webhook ----

// A TCP port nothing listens on (bound, not listening: connections are refused).
class RefusingPort {
 public:
  RefusingPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~RefusingPort() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST_F(WebhookTest, FailurePolicyWithAnUnreachableWebhook) {
  RefusingPort closed;
  const std::string url = "https://127.0.0.1:" + std::to_string(closed.port()) + "/down";
  Json cc = {{"url", url}, {"caBundle", B64(ca_.cert_pem)}};
  Register(kValidatingPath, "down", {Webhook("down.example.com", cc, {ConfigMapRule()})});
  HttpResult r = client_->Post(kCmPath, ConfigMap("cm1"));
  EXPECT_EQ(r.status, 500) << r.raw;
  EXPECT_EQ(r.body["reason"], "InternalError");
  const std::string want = "failed calling webhook \"down.example.com\": failed to call webhook: Post \"" +
                           url + "?timeout=10s\": dial tcp 127.0.0.1:" +
                           std::to_string(closed.port()) + ": connect: connection refused";
  EXPECT_EQ(r.body["message"], "Internal error occurred: " + want);
  EXPECT_EQ(r.body["details"]["causes"][0]["message"], want);
  EXPECT_EQ(client_->Get(std::string(kCmPath) + "/cm1").status, 404);

  // failurePolicy Ignore lets the request through.
  auto cfg = server_->Call("GET", std::string(kValidatingPath) + "/down");
  Json updated = cfg.body;
  updated["webhooks"][0]["failurePolicy"] = "Ignore";
  ASSERT_EQ(server_->Call("PUT", std::string(kValidatingPath) + "/down", updated).code, 200);
  EXPECT_EQ(client_->Post(kCmPath, ConfigMap("cm1")).status, 201);
}

TEST_F(WebhookTest, WrongCaBundleIsATlsFailure) {
  Register(kValidatingPath, "tls",
           {Webhook("tls.example.com", ServiceConfig("/tls", &other_ca_.cert_pem),
                    {ConfigMapRule()})});
  HttpResult r = client_->Post(kCmPath, ConfigMap("cm1"));
  EXPECT_EQ(r.status, 500) << r.raw;
  EXPECT_EQ(r.body["message"],
            "Internal error occurred: failed calling webhook \"tls.example.com\": failed to call "
            "webhook: Post \"https://hook.webhooks.svc:" + std::to_string(hook_->port()) +
                "/tls?timeout=10s\": tls: failed to verify certificate: x509: certificate "
                "signed by unknown authority");
  EXPECT_EQ(hook_->calls(), 0);  // the handshake failed before any request was sent
  EXPECT_EQ(client_->Get(std::string(kCmPath) + "/cm1").status, 404);
}

TEST_F(WebhookTest, ServiceNameMustMatchTheCertificate) {
  // Same address, but the certificate is for hook.webhooks.svc, not alias.webhooks.svc.
  Json svc = {{"metadata", {{"name", "alias"}}},
              {"spec", {{"type", "ExternalName"}, {"externalName", "127.0.0.1"}}}};
  ASSERT_EQ(server_->Call("POST", "/api/v1/namespaces/webhooks/services", svc).code, 201);
  Register(kValidatingPath, "alias",
           {Webhook("alias.example.com", ServiceConfig("/alias", nullptr, "alias"),
                    {ConfigMapRule()})});
  HttpResult r = client_->Post(kCmPath, ConfigMap("cm1"));
  EXPECT_EQ(r.status, 500);
  EXPECT_THAT(r.body["message"].get<std::string>(),
              HasSubstr("tls: failed to verify certificate: x509: certificate is valid for "
                        "hook.webhooks.svc, not alias.webhooks.svc"));
  // A missing service.
  Register(kValidatingPath, "ghost",
           {Webhook("ghost.example.com", ServiceConfig("/g", nullptr, "ghost"), {ConfigMapRule()},
                    {{"failurePolicy", "Fail"}})});
  ASSERT_EQ(server_->Call("DELETE", std::string(kValidatingPath) + "/alias").code, 200);
  r = client_->Post(kCmPath, ConfigMap("cm1"));
  EXPECT_EQ(r.status, 500);
  EXPECT_THAT(r.body["message"].get<std::string>(),
              HasSubstr("failed calling webhook \"ghost.example.com\": failed to call webhook: "
                        "Post \"https://ghost.webhooks.svc:" + std::to_string(hook_->port()) +
                        "/g?timeout=10s\": service \"ghost\" not found"));
}

TEST_F(WebhookTest, UrlClientConfigVerifiesTheIp) {
  Json cc = {{"url", "https://127.0.0.1:" + std::to_string(hook_->port()) + "/by-url"},
             {"caBundle", B64(ca_.cert_pem)}};
  Register(kValidatingPath, "url", {Webhook("url.example.com", cc, {ConfigMapRule()})});
  EXPECT_EQ(client_->Post(kCmPath, ConfigMap("cm1")).status, 201);
  EXPECT_EQ(hook_->paths(), std::vector<std::string>{"/by-url?timeout=10s"});
}

TEST_F(WebhookTest, Timeout) {
  hook_->Block();
  Register(kValidatingPath, "slow",
           {Webhook("slow.example.com", ServiceConfig("/slow"), {ConfigMapRule()},
                    {{"timeoutSeconds", 1}})});
  absl::Time start = absl::Now();
  HttpResult r = client_->Post(kCmPath, ConfigMap("cm1"));
  absl::Duration took = absl::Now() - start;
  hook_->Release();
  EXPECT_EQ(r.status, 500) << r.raw;
  EXPECT_EQ(r.body["message"],
            "Internal error occurred: failed calling webhook \"slow.example.com\": failed to call "
            "webhook: Post \"https://hook.webhooks.svc:" + std::to_string(hook_->port()) +
                "/slow?timeout=1s\": context deadline exceeded");
  EXPECT_GE(took, absl::Seconds(1));
  EXPECT_LT(took, absl::Seconds(8));
  EXPECT_EQ(hook_->paths(), std::vector<std::string>{"/slow?timeout=1s"});
}

TEST_F(WebhookTest, InvalidResponses) {
  Register(kValidatingPath, "bad", {Webhook("bad.example.com", ServiceConfig("/bad"), {ConfigMapRule()})});
  auto expect_call_error = [&](const std::string& detail) {
    HttpResult r = client_->Post(kCmPath, ConfigMap("cm"));
    EXPECT_EQ(r.status, 500) << r.raw;
    EXPECT_EQ(r.body["message"],
              "Internal error occurred: failed calling webhook \"bad.example.com\": " + detail);
  };
  hook_->set_handler([](const Json&) { return Json{{"allowed", true}, {"uid", "other"}}; });
  {
    HttpResult r = client_->Post(kCmPath, ConfigMap("cm"));
    EXPECT_EQ(r.status, 500);
    std::string uid = hook_->last()["request"]["uid"];
    EXPECT_EQ(r.body["message"],
              "Internal error occurred: failed calling webhook \"bad.example.com\": received "
              "invalid webhook response: expected response.uid=\"" + uid + "\", got \"other\"");
  }
  hook_->set_handler([](const Json& review) {
    return Json{{"__raw", base::DumpJson({{"response",
                                           {{"uid", review["request"]["uid"]}, {"allowed", true}}}})}};
  });
  expect_call_error(
      "received invalid webhook response: expected webhook response of admission.k8s.io/v1, "
      "Kind=AdmissionReview, got /, Kind=");
  hook_->set_handler([](const Json&) { return Json{{"__raw", "{}"}}; });
  expect_call_error("received invalid webhook response: webhook response was absent");
  hook_->set_handler([](const Json&) {
    return Json{{"allowed", true}, {"patchType", "JSONPatch"}, {"patch", B64("[]")}};
  });
  expect_call_error(
      "received invalid webhook response: validating webhook may not return response.patch");
  // admissionReviewVersions without v1/v1beta1 cannot be stored (kube-apiserver's validation;
  // configurations from before that rule fail at call time, failurePolicy applies).
  hook_->set_handler(nullptr);
  auto cfg = server_->Call("GET", std::string(kValidatingPath) + "/bad").body;
  cfg["webhooks"][0]["admissionReviewVersions"] = {"v2"};
  auto rejected = server_->Call("PUT", std::string(kValidatingPath) + "/bad", cfg);
  EXPECT_EQ(rejected.code, 422);
  EXPECT_EQ(rejected.body["message"],
            "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"bad\" is invalid: "
            "webhooks[0].admissionReviewVersions: Invalid value: [\"v2\"]: must include at least "
            "one of v1, v1beta1");
  // v1beta1 reviews are sent when that is the only version offered.
  cfg = server_->Call("GET", std::string(kValidatingPath) + "/bad").body;
  cfg["webhooks"][0]["admissionReviewVersions"] = {"v1beta1"};
  ASSERT_EQ(server_->Call("PUT", std::string(kValidatingPath) + "/bad", cfg).code, 200);
  EXPECT_EQ(client_->Post(kCmPath, ConfigMap("cm")).status, 201);
  EXPECT_EQ(hook_->last()["apiVersion"], "admission.k8s.io/v1beta1");
}

TEST_F(WebhookTest, DryRunAndSideEffects) {
  // admissionregistration.k8s.io/v1 only accepts webhooks without side effects (the ones that
  // would refuse a dry run, Some/Unknown, date from v1beta1).
  Json cfg = {{"metadata", {{"name", "se"}}},
              {"webhooks",
               {Webhook("se.example.com", ServiceConfig("/se"), {ConfigMapRule()},
                        {{"sideEffects", "Some"}})}}};
  auto refused = server_->Call("POST", kValidatingPath, cfg);
  EXPECT_EQ(refused.code, 422);
  EXPECT_EQ(refused.body["message"],
            "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"se\" is invalid: "
            "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", "
            "\"NoneOnDryRun\"");
  Register(kValidatingPath, "se",
           {Webhook("se.example.com", ServiceConfig("/se"), {ConfigMapRule()},
                    {{"sideEffects", "NoneOnDryRun"}})});
  // A dry run calls the webhook with dryRun=true and stores nothing.
  HttpResult r = client_->Post(std::string(kCmPath) + "?dryRun=All", ConfigMap("cm"));
  EXPECT_EQ(r.status, 201) << r.raw;
  EXPECT_EQ(hook_->calls(), 1);
  EXPECT_EQ(hook_->last()["request"]["dryRun"], true);
  EXPECT_EQ(client_->Get(std::string(kCmPath) + "/cm").status, 404);
  // Without dryRun the webhook is called as usual.
  EXPECT_EQ(client_->Post(kCmPath, ConfigMap("cm")).status, 201);
  EXPECT_EQ(hook_->calls(), 2);
  EXPECT_EQ(hook_->last()["request"]["dryRun"], false);
}

TEST_F(WebhookTest, ValidatingWebhooksAreAllCalledFirstFailureWins) {
  hook_->set_handler([](const Json&) { return Deny(403, "Forbidden", "denied"); });
  Register(kValidatingPath, "many",
           {Webhook("first.example.com", ServiceConfig("/1"), {ConfigMapRule()}),
            Webhook("second.example.com", ServiceConfig("/2"), {ConfigMapRule()}),
            Webhook("third.example.com", ServiceConfig("/3"), {ConfigMapRule()})});
  HttpResult r = client_->Post(kCmPath, ConfigMap("cm"));
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.body["message"], "admission webhook \"first.example.com\" denied the request: denied");
  EXPECT_EQ(hook_->calls(), 3);
}

TEST_F(WebhookTest, CustomServiceResolver) {
  std::vector<std::string> asked;
  std::mutex mu;
  LoopbackOptions o;
  int port = hook_->port();
  o.service_resolver = [&, port](std::string_view ns, std::string_view name,
                                 int p) -> absl::StatusOr<std::string> {
    std::lock_guard<std::mutex> l(mu);
    asked.push_back(std::string(ns) + "/" + std::string(name) + ":" + std::to_string(p));
    return "127.0.0.1:" + std::to_string(port);
  };
  Start(o);
  Json cc = {{"service", {{"namespace", "webhooks"}, {"name", "hook"}, {"path", "/r"}}},
             {"caBundle", B64(ca_.cert_pem)}};
  Register(kValidatingPath, "r", {Webhook("r.example.com", cc, {ConfigMapRule()})});
  EXPECT_EQ(client_->Post(kCmPath, ConfigMap("cm")).status, 201);
  EXPECT_EQ(asked, std::vector<std::string>{"webhooks/hook:443"});
  EXPECT_EQ(hook_->calls(), 1);
}

TEST_F(WebhookTest, AdmissionCanBeReplacedOrDisabled) {
  hook_->set_handler([](const Json&) { return Deny(403, "Forbidden", "no"); });
  Register(kValidatingPath, "deny",
           {Webhook("deny.example.com", ServiceConfig("/deny"), {ConfigMapRule()})});
  ASSERT_NE(server_->DefaultAdmission(), nullptr);
  EXPECT_EQ(client_->Post(kCmPath, ConfigMap("a")).status, 403);
  std::shared_ptr<Admission> def = server_->DefaultAdmission();
  server_->SetAdmission(nullptr);
  EXPECT_EQ(client_->Post(kCmPath, ConfigMap("a")).status, 201);
  server_->SetAdmission(def);
  EXPECT_EQ(client_->Post(kCmPath, ConfigMap("b")).status, 403);
  EXPECT_EQ(static_cast<WebhookAdmission*>(def.get())->calls(), 2u);
}

// ---- pieces ----

TEST(WebhookDeniedStatusTest, FollowsToStatusErr) {
  ApiStatus s = WebhookDeniedStatus("w", nullptr);
  EXPECT_EQ(s.code, 400);
  EXPECT_EQ(s.reason, "");
  EXPECT_EQ(s.message, "admission webhook \"w\" denied the request without explanation");
  s = WebhookDeniedStatus("w", {{"code", 200}, {"message", "m"}});
  EXPECT_EQ(s.code, 400);
  EXPECT_EQ(s.message, "admission webhook \"w\" denied the request: m");
  s = WebhookDeniedStatus("w", {{"code", 409}, {"reason", "Conflict"}});
  EXPECT_EQ(s.code, 409);
  EXPECT_EQ(s.reason, "Conflict");
  EXPECT_EQ(s.message, "admission webhook \"w\" denied the request: Conflict");
}

TEST(BuildAdmissionReviewTest, PatchIsAdmittedAsUpdate) {
  AdmissionAttributes a;
  a.operation = AdmissionOperation::kUpdate;
  a.resource = {"spiderpool.spidernet.io", "v2beta1", "SpiderIPPool", "spiderippools", "", false};
  a.name = "pool";
  a.old_object = {{"metadata", {{"name", "pool"}}}};
  a.user = {"alice", "u-1", {}};
  a.options = {{"kind", "PatchOptions"}, {"apiVersion", "meta.k8s.io/v1"}};
  Json r = BuildAdmissionReview(a, {{"metadata", {{"name", "pool"}}}}, "uid-1", "v1");
  EXPECT_EQ(r["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(r["request"]["options"]["kind"], "UpdateOptions");
  EXPECT_EQ(r["request"]["userInfo"], (Json{{"username", "alice"}, {"uid", "u-1"}}));
  EXPECT_FALSE(r["request"].contains("namespace"));
  EXPECT_EQ(r["request"]["kind"]["group"], "spiderpool.spidernet.io");
  EXPECT_EQ(r["request"]["uid"], "uid-1");
}

TEST(HttpsPostTest, RefusedAndResolutionErrors) {
  RefusingPort closed;
  HttpsTarget t;
  t.dial_host = "127.0.0.1";
  t.dial_port = closed.port();
  t.server_name = "127.0.0.1";
  t.host_header = "127.0.0.1";
  auto r = HttpsPost(t, "{}", absl::Now() + absl::Seconds(5));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(std::string(r.status().message()),
            "dial tcp 127.0.0.1:" + std::to_string(closed.port()) + ": connect: connection refused");
  t.ca_pem = "not a certificate";
  r = HttpsPost(t, "{}", absl::Now() + absl::Seconds(5));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(std::string(r.status().message()),
            "unable to load root certificates: unable to parse bytes as PEM block");
}

}  // namespace
}  // namespace spiderpool::kube::testing
