#include "api/admissionregistration.h"

#include "api/codec.h"
#include "base/json.h"
#include "gtest/gtest.h"

namespace spiderpool::api {
namespace {

using base::Json;

constexpr char kValidating[] = R"({
  "apiVersion": "admissionregistration.k8s.io/v1",
  "kind": "ValidatingWebhookConfiguration",
  "metadata": {"name": "spiderpool-controller", "resourceVersion": "7",
               "managedFields": [{"manager": "kubectl"}]},
  "webhooks": [{
    "name": "spiderippool.spiderpool.spidernet.io",
    "admissionReviewVersions": ["v1"],
    "clientConfig": {
      "service": {"name": "spiderpool-controller", "namespace": "kube-system",
                  "path": "/validate-spiderpool-spidernet-io-v2beta1-spiderippool", "port": 5722},
      "caBundle": "LS0tLS1CRUdJTg=="
    },
    "failurePolicy": "Fail",
    "matchPolicy": "Equivalent",
    "namespaceSelector": {},
    "objectSelector": {"matchLabels": {"a": "b"}},
    "rules": [{"apiGroups": ["spiderpool.spidernet.io"], "apiVersions": ["v2beta1"],
               "operations": ["CREATE", "UPDATE", "DELETE"], "resources": ["spiderippools"],
               "scope": "*"}],
    "sideEffects": "None",
    "timeoutSeconds": 10,
    "matchConditions": [{"name": "c", "expression": "true"}]
  }]
})";

TEST(AdmissionRegistrationTest, DecodeEncodeKeepsEverything) {
  Json in = *base::ParseJson(kValidating);
  auto c = api::Decode<ValidatingWebhookConfiguration>(in);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->webhooks.size(), 1u);
  const ValidatingWebhook& w = c->webhooks[0];
  EXPECT_EQ(w.name, "spiderippool.spiderpool.spidernet.io");
  EXPECT_EQ(w.client_config.service->port, 5722);
  EXPECT_EQ(*w.client_config.CABundlePEM(), "-----BEGIN");
  EXPECT_EQ(w.rules[0].operations, (std::vector<std::string>{"CREATE", "UPDATE", "DELETE"}));
  EXPECT_EQ(w.side_effects, "None");
  // matchConditions (not modelled) and managedFields survive a round trip, and an empty
  // namespaceSelector {} stays (optional => written when set).
  EXPECT_EQ(api::Encode(*c), in);
}

TEST(AdmissionRegistrationTest, MutatingRequiredFieldsAndResource) {
  MutatingWebhookConfiguration c;
  c.SetTypeMeta();
  c.metadata.name = "x";
  MutatingWebhook w;
  w.name = "a.example.com";
  w.client_config.url = "https://127.0.0.1:1/m";
  w.client_config.SetCABundlePEM("pem");
  w.side_effects = "None";
  w.admission_review_versions = {"v1"};
  w.reinvocation_policy = "Never";
  c.webhooks.push_back(w);
  Json j = api::Encode(c);
  EXPECT_EQ(j["apiVersion"], "admissionregistration.k8s.io/v1");
  EXPECT_EQ(j["kind"], "MutatingWebhookConfiguration");
  EXPECT_EQ(j["webhooks"][0]["clientConfig"]["caBundle"], "cGVt");
  EXPECT_EQ(j["webhooks"][0]["reinvocationPolicy"], "Never");
  EXPECT_EQ(MutatingWebhookConfiguration::Resource().plural, "mutatingwebhookconfigurations");
  EXPECT_EQ(ValidatingWebhookConfiguration::Resource().GroupResource(),
            "validatingwebhookconfigurations.admissionregistration.k8s.io");
  // sideEffects is required in v1.
  Json bad = j;
  bad["webhooks"][0].erase("sideEffects");
  EXPECT_FALSE(api::Decode<MutatingWebhookConfiguration>(bad).ok());
}

}  // namespace
}  // namespace spiderpool::api
