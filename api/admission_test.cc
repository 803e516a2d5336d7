#include "api/admission.h"

#include <gtest/gtest.h>

#include "api/core.h"

namespace spiderpool::api {
namespace {

constexpr const char* kReview = R"({
  "apiVersion": "admission.k8s.io/v1",
  "kind": "AdmissionReview",
  "request": {
    "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
    "kind": {"group": "", "version": "v1", "kind": "Pod"},
    "resource": {"group": "", "version": "v1", "resource": "pods"},
    "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
    "requestResource": {"group": "", "version": "v1", "resource": "pods"},
    "name": "web-1",
    "namespace": "default",
    "operation": "CREATE",
    "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller",
                 "uid": "u-1", "groups": ["system:serviceaccounts"],
                 "extra": {"scopes": ["a", "b"]}},
    "object": {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "web-1", "namespace": "default"},
               "spec": {"containers": [{"name": "web", "image": "nginx"}],
                        "dnsPolicy": "ClusterFirst"}},
    "oldObject": null,
    "dryRun": false,
    "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
  }
})";

TEST(Admission, DecodesARequest) {
  auto review = DecodeJson<AdmissionReview>(kReview);
  ASSERT_TRUE(review.ok()) << review.status();
  ASSERT_TRUE(ValidateRequestReview(*review).ok());
  const AdmissionRequest& req = *review->request;
  EXPECT_EQ(req.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_EQ(req.kind, (GroupVersionKind{"", "v1", "Pod"}));
  EXPECT_EQ(req.resource, (GroupVersionResource{"", "v1", "pods"}));
  ASSERT_TRUE(req.request_kind.has_value());
  EXPECT_EQ(req.operation, kOperationCreate);
  EXPECT_EQ(req.namespace_, "default");
  EXPECT_EQ(req.user_info.extra.at("scopes"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(req.dry_run, false);
  EXPECT_TRUE(req.old_object.is_null());
  EXPECT_EQ(req.options["kind"], "CreateOptions");
  // The object travels raw and decodes with the kind's own codec, keeping unknown fields.
  auto pod = Decode<Pod>(req.object);
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->spec.containers[0].image, "nginx");
  EXPECT_EQ(Encode(*pod)["spec"]["dnsPolicy"], "ClusterFirst");
}

TEST(Admission, MalformedRequestListsEveryError) {
  DecodeErrors errs;
  DecodeInto<AdmissionReview>(
      Json::parse(R"({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"kind": {"kind": 1}, "operation": "PATCH", "dryRun": "no",
                    "userInfo": {"groups": "x"}}})"),
      &errs);
  std::vector<std::string> got;
  for (const auto& e : errs.errors) got.push_back(e.ToString());
  EXPECT_EQ(got, (std::vector<std::string>{
                     "request.uid: Required value",
                     "request.kind.kind: expected string, got integer 1",
                     "request.resource: Required value",
                     "request.operation: unsupported value \"PATCH\": supported values: "
                     "\"CREATE\", \"UPDATE\", \"DELETE\", \"CONNECT\"",
                     "request.userInfo.groups: expected array, got string \"x\"",
                     "request.dryRun: expected boolean, got string \"no\"",
                 }));
}

TEST(Admission, ValidateRequestReview) {
  AdmissionReview r;
  EXPECT_EQ(ValidateRequestReview(r).message(),
            "unsupported apiVersion \"\", want \"admission.k8s.io/v1\"");
  r.api_version = "admission.k8s.io/v1beta1";
  EXPECT_FALSE(ValidateRequestReview(r).ok());
  r.api_version = "admission.k8s.io/v1";
  r.kind = "Other";
  EXPECT_EQ(ValidateRequestReview(r).message(),
            "unsupported kind \"Other\", want \"AdmissionReview\"");
  r.kind = "AdmissionReview";
  EXPECT_EQ(ValidateRequestReview(r).message(), "AdmissionReview has no request");
  r.request.emplace();
  EXPECT_EQ(ValidateRequestReview(r).message(), "request.uid: Required value");
  r.request->uid = "u";
  EXPECT_TRUE(ValidateRequestReview(r).ok());
}

TEST(Admission, AllowResponse) {
  auto review = DecodeJson<AdmissionReview>(kReview);
  ASSERT_TRUE(review.ok());
  AdmissionReview out = MakeResponseReview(*review, Allow("ignored"));
  EXPECT_EQ(Encode(out), Json::parse(R"({"apiVersion": "admission.k8s.io/v1",
      "kind": "AdmissionReview",
      "response": {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "allowed": true}})"));
  // Defaults when the request review lacks type meta.
  AdmissionReview bare = MakeResponseReview(AdmissionReview{}, Allow("x"));
  EXPECT_EQ(bare.api_version, "admission.k8s.io/v1");
  EXPECT_EQ(bare.kind, "AdmissionReview");
  EXPECT_EQ(bare.response->uid, "x");
}

TEST(Admission, DenyResponses) {
  Json j = Encode(Deny("u1", 403, "cannot update a terminating IPPool"));
  EXPECT_EQ(j["uid"], "u1");
  EXPECT_EQ(j["allowed"], false);
  EXPECT_EQ(j["status"]["code"], 403);
  EXPECT_EQ(j["status"]["reason"], "Forbidden");
  EXPECT_EQ(j["status"]["status"], "Failure");
  EXPECT_EQ(j["status"]["message"], "cannot update a terminating IPPool");
  EXPECT_EQ(Encode(Deny("u1", 400, "bad"))["status"]["reason"], "BadRequest");
  EXPECT_EQ(Encode(Deny("u1", 500, "boom"))["status"]["reason"], "InternalError");
  EXPECT_EQ(Encode(Deny("u1", 409, "x", "AlreadyExists"))["status"]["reason"], "AlreadyExists");
  EXPECT_FALSE(Encode(Deny("u1", 299, "x"))["status"].contains("reason"));

  DecodeErrors errs;
  errs.Add("spec.ips[2]", "\"10.0.0.300\" is not an IP");
  errs.Add("spec.subnet", "Required value");
  AdmissionResponse inv = DenyInvalid("u2", "SpiderIPPool.spiderpool.spidernet.io", "pool1", errs);
  Json s = Encode(inv)["status"];
  EXPECT_EQ(s["code"], 422);
  EXPECT_EQ(s["reason"], "Invalid");
  EXPECT_EQ(s["message"],
            "SpiderIPPool.spiderpool.spidernet.io \"pool1\" is invalid: spec.ips[2]: "
            "\"10.0.0.300\" is not an IP, spec.subnet: Required value");
  EXPECT_EQ(s["details"]["kind"], "SpiderIPPool");
  EXPECT_EQ(s["details"]["group"], "spiderpool.spidernet.io");
  EXPECT_EQ(s["details"]["name"], "pool1");
  EXPECT_EQ(s["details"]["causes"][0],
            Json::parse(R"({"reason": "FieldValueInvalid",
                            "message": "\"10.0.0.300\" is not an IP", "field": "spec.ips[2]"})"));
  // The response decodes back.
  auto back = Decode<AdmissionResponse>(Encode(inv));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->result->details->causes.size(), 2u);
  EXPECT_EQ(back->result->details->causes[1].reason, "FieldValueRequired");
}

TEST(Admission, PatchResponses) {
  Json patch = Json::parse(R"([
      {"op": "add", "path": "/metadata/finalizers", "value": ["spiderpool.spidernet.io"]},
      {"op": "add", "path": "/spec/ipVersion", "value": 4}])");
  auto r = AllowWithPatch("u3", patch);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->allowed);
  EXPECT_EQ(r->patch_type, "JSONPatch");
  // base64 of the compact patch text.
  EXPECT_EQ(*r->patch, Base64Encode(base::DumpJson(patch)));
  auto back = ResponsePatch(*r);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, patch);
  Json wire = Encode(*r);
  EXPECT_EQ(wire["patchType"], "JSONPatch");
  EXPECT_TRUE(wire["patch"].is_string());

  auto empty = AllowWithPatch("u4", Json::array());
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->patch.has_value());
  EXPECT_FALSE(empty->patch_type.has_value());
  EXPECT_TRUE(ResponsePatch(*empty)->is_null());

  EXPECT_FALSE(AllowWithPatch("u5", Json::object()).ok());
  EXPECT_EQ(AllowWithPatch("u5", Json::parse(R"([{"op": "add"}])")).status().message(),
            "JSON patch operation 0 needs string \"op\" and \"path\"");
  AdmissionResponse corrupt = Allow("u6");
  corrupt.patch = "%%%";
  EXPECT_FALSE(ResponsePatch(corrupt).ok());
}

}  // namespace
}  // namespace spiderpool::api
