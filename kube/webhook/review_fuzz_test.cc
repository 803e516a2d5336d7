// AdmissionReview decoding fuzzed through AdmissionServer::Handle (no TLS, so it is fast and
// runs under asan/ubsan): valid reviews for a validating and a mutating path, then
// kIterations deterministic mutations of them — byte flips, truncation, splicing, insertion /
// deletion of bytes, and JSON-structure mutations (replace / delete / duplicate a node, graft
// a subtree of another seed, wrong types) that get past the parser into the decoder and the
// handlers; plus deep nesting and huge numbers. Every answer must be 200 (a well-formed
// AdmissionReview response whose uid is the request's) or a 4xx with a metav1.Status body;
// never a crash, never a 5xx.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "api/admission.h"
#include "base/json.h"
#include "base/testing/json_mutator.h"
#include "gtest/gtest.h"
#include "kube/webhook/server.h"

namespace spiderpool::kube::webhook {
namespace {

using base::Json;

constexpr int kIterations = 3000;
constexpr uint64_t kSeed = 0xad15510aULL;

std::vector<Json> Seeds() {
  std::vector<Json> seeds;
  Json pool = {{"apiVersion", "spiderpool.spidernet.io/v2beta1"},
               {"kind", "SpiderIPPool"},
               {"metadata", {{"name", "p1"}, {"labels", {{"a", "b"}}}}},
               {"spec", {{"subnet", "10.0.0.0/24"}, {"ips", {"10.0.0.1-10.0.0.9"}}}}};
  for (const char* op : {"CREATE", "UPDATE", "DELETE", "CONNECT"}) {
    Json req = {{"uid", std::string("uid-") + op},
                {"kind", {{"group", "spiderpool.spidernet.io"}, {"version", "v2beta1"},
                          {"kind", "SpiderIPPool"}}},
                {"resource", {{"group", "spiderpool.spidernet.io"}, {"version", "v2beta1"},
                              {"resource", "spiderippools"}}},
                {"requestKind", {{"group", "g"}, {"version", "v"}, {"kind", "K"}}},
                {"name", "p1"},
                {"operation", op},
                {"userInfo", {{"username", "u"}, {"groups", {"g1"}},
                              {"extra", {{"k", {"v"}}}}}},
                {"dryRun", false},
                {"options", {{"kind", "CreateOptions"}}}};
    if (std::string(op) != "DELETE") req["object"] = pool;
    if (std::string(op) != "CREATE") req["oldObject"] = pool;
    seeds.push_back(
        {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", req}});
  }
  seeds.push_back({{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"},
                   {"response", {{"uid", "x"}, {"allowed", true}}}});
  return seeds;
}

void CheckReply(const HttpRequest& req, const HttpReply& r) {
  ASSERT_TRUE(r.status == 200 || (r.status >= 400 && r.status < 500))
      << r.status << " for " << req.body.substr(0, 300) << "\n" << r.body;
  absl::StatusOr<Json> body = base::ParseJson(r.body);
  ASSERT_TRUE(body.ok()) << r.body;
  if (r.status != 200) {
    EXPECT_EQ(body->value("kind", ""), "Status");
    EXPECT_FALSE(body->value("message", "").empty());
    return;
  }
  auto review = api::Decode<api::AdmissionReview>(*body);
  ASSERT_TRUE(review.ok()) << review.status();
  ASSERT_TRUE(review->response.has_value());
  auto in = api::Decode<api::AdmissionReview>(*base::ParseJson(req.body));
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(review->response->uid, in->request->uid);
  if (review->response->patch.has_value()) {
    auto patch = api::ResponsePatch(*review->response);
    ASSERT_TRUE(patch.ok()) << patch.status();
    auto applied = base::ApplyJsonPatch(in->request->object, *patch);
    EXPECT_TRUE(applied.ok()) << applied.status();
  }
}

TEST(ReviewFuzzTest, NeverCrashesAlways200Or4xx) {
  AdmissionServer s(ServerOptions{.max_request_bytes = 1 << 16});
  s.Validating("/validate", [](const api::AdmissionRequest& req) {
    if (req.name == "p1") return Decision::Allow();
    return Decision::Deny(422, "no");
  });
  // A handler that edits whatever object arrives, so random objects go through the diff.
  s.Mutating("/mutate", [](const api::AdmissionRequest& req) {
    if (!req.object.is_object()) return Mutation::Unchanged();
    Json obj = req.object;
    obj["metadata"] = Json::object({{"finalizers", {"f"}}});
    if (obj.contains("spec") && obj["spec"].is_object()) obj["spec"]["ipVersion"] = 4;
    return Mutation::Patched(std::move(obj), req.object);
  });
  // Values of the AdmissionReview vocabulary, invalid UTF-8, a long string.
  base::testing::JsonMutator f({.seeds = Seeds(),
                                .strings = {"CREATE", "UPDATE", "DELETE", "CONNECT",
                                            "admission.k8s.io/v1", "AdmissionReview",
                                            std::string(40, '\xff')},
                                .seed = kSeed,
                                // enough well-formed reviews must reach the handlers (see below)
                                .structural_percent = 75,
                                .max_tree_edits = 1});
  int ok = 0;
  for (int i = 0; i < kIterations; ++i) {
    HttpRequest req{.method = "POST", .path = (i % 2 == 0) ? "/validate" : "/mutate",
                    .content_type = "application/json", .body = f.Next()};
    HttpReply r = s.Handle(req);
    CheckReply(req, r);
    if (HasFatalFailure() || HasFailure()) return;
    if (r.status == 200) ++ok;
  }
  // The structural half reaches the handlers often enough to mean something.
  EXPECT_GT(ok, kIterations / 10);
}

TEST(ReviewFuzzTest, DeepNestingAndOddInputs) {
  AdmissionServer s(ServerOptions{});
  s.Validating("/v", [](const api::AdmissionRequest&) { return Decision::Allow(); });
  std::vector<std::string> inputs = {
      std::string(100000, '['),
      std::string(50000, '[') + std::string(50000, ']'),
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":)" +
          std::string(10000, '{'),
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",)"
      R"("kind":{},"resource":{},"operation":"CREATE","userInfo":{},"object":)" +
          std::string(200, '[') + std::string(200, ']') + "}}",
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":1e999}})",
      "\xef\xbb\xbf{}",
      std::string("{\"apiVersion\":\"admission.k8s.io/v1\",\0\"kind\":1}", 40),
  };
  for (const std::string& body : inputs) {
    HttpRequest req{.path = "/v", .body = body};
    HttpReply r = s.Handle(req);
    EXPECT_TRUE(r.status == 200 || (r.status >= 400 && r.status < 500)) << r.status;
  }
}

}  // namespace
}  // namespace spiderpool::kube::webhook
