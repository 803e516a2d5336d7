// Fuzz-style test of the ResourceClaim / ResourceClaimTemplate decoders (untrusted input: the
// API server's answers, any served version): deterministic byte-level and JSON-structure
// mutations of realistic v1 / v1beta2 / v1beta1 objects. Nothing may crash (run under
// --config=asan), and every cleanly decoded object must re-encode stably and keep decoding.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "api/resource_claim.h"
#include "base/json.h"
#include "base/testing/json_mutator.h"
#include "gtest/gtest.h"

namespace spiderpool::api::resource_v1 {
namespace {

constexpr int kIterations = 8000;
constexpr uint64_t kSeed = 0xc1a1dULL;

const char* const kSeeds[] = {
    R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",
        "metadata":{"name":"c","namespace":"n","uid":"u-1","resourceVersion":"3"},
        "spec":{"devices":{"requests":[{"name":"nic","exactly":{"deviceClassName":"netresources.spidernet.io",
          "selectors":[{"cel":{"expression":"true"}}],"count":1,"tolerations":[{"key":"k","operator":"Exists"}],
          "capacity":{"requests":{"bw":"10Gi"}}}},
          {"name":"alt","firstAvailable":[{"name":"a","deviceClassName":"c","allocationMode":"All"}]}],
          "constraints":[{"requests":["nic"],"distinctAttribute":"x/y"}],
          "config":[{"requests":["nic"],"opaque":{"driver":"netresources.spidernet.io",
            "parameters":{"apiVersion":"spiderpool.spidernet.io/v2beta1","kind":"SpiderClaimParameter","name":"p"}}}]}},
        "status":{"allocation":{"devices":{"results":[{"request":"nic","driver":"netresources.spidernet.io",
            "pool":"node-1","device":"eth1","shareID":"s","consumedCapacity":{"bw":"1Gi"},"adminAccess":true}],
          "config":[{"source":"FromClaim","requests":["nic"],"opaque":{"driver":"d","parameters":{"a":[1,2]}}}]},
          "nodeSelector":{"nodeSelectorTerms":[]},"allocationTimestamp":"2026-01-01T00:00:00Z"},
          "reservedFor":[{"resource":"pods","name":"p","uid":"pu"}],
          "devices":[{"driver":"d","pool":"p","device":"eth1","shareID":"s",
            "conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"R","message":"m"}],
            "data":{"k":"v"},"networkData":{"interfaceName":"net1","ips":["10.0.0.1/24"],"hardwareAddress":"aa:bb:cc:dd:ee:ff"}}]}})",
    R"({"apiVersion":"resource.k8s.io/v1beta1","kind":"ResourceClaim","metadata":{"name":"c"},
        "spec":{"devices":{"requests":[{"name":"nic","deviceClassName":"c","count":3,"adminAccess":false},
          {"name":"f","firstAvailable":[{"name":"x","deviceClassName":"c"}],"deviceClassName":""}]}}})",
    R"({"apiVersion":"resource.k8s.io/v1beta2","kind":"ResourceClaim","spec":{"devices":{"requests":[]}}})",
    R"({"apiVersion":"resource.k8s.io/v1beta1","kind":"ResourceClaimTemplate","metadata":{"name":"t"},
        "spec":{"metadata":{"annotations":{"a":"b"}},"spec":{"devices":{"requests":[{"name":"r","deviceClassName":"c"}]}}}})",
    R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate",
        "spec":{"spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"c"}}]}}}})",
    R"({"apiVersion":"resource.k8s.io/v1alpha3","kind":"ResourceClaimList","metadata":{},
        "items":[{"spec":{"devices":{"requests":[{"name":"r","deviceClassName":"c"}]}}}]})",
    "{}", "null", "[]", R"({"spec":null,"status":null})",
};

base::testing::JsonMutator NewMutator() {
  std::vector<Json> seeds;
  for (const char* s : kSeeds) seeds.push_back(*base::ParseJson(s));
  return base::testing::JsonMutator(
      {.seeds = std::move(seeds),
       .strings = {"", "resource.k8s.io/v1beta1", "resource.k8s.io/v1",
                                     "resource.k8s.io/v1beta2", "resource.k8s.io/v0",
                                     "ResourceClaimTemplate", "ResourceClaimList", "10.0.0.1/24",
                                     "10.0.0.1", "fd00::1/129", "2026-01-01T00:00:00Z", "a/b",
                                     "\xc3\xa9"},
       .seed = kSeed});
}


TEST(ResourceClaimFuzz, MutatedObjectsNeverCrashAndRoundTrip) {
  base::testing::JsonMutator m = NewMutator();
  int parsed = 0, claims = 0, templates = 0;
  for (int i = 0; i < kIterations; ++i) {
    std::string input = m.Next();
    auto j = base::ParseJson(input);
    if (!j.ok()) continue;
    ++parsed;
    auto claim = DecodeResourceClaim(*j);
    if (claim.ok()) {
      ++claims;
      Json enc = Encode(*claim);
      auto again = DecodeResourceClaim(enc);
      ASSERT_TRUE(again.ok()) << again.status() << "\ninput: " << input;
      ASSERT_EQ(Encode(*again), enc) << "input: " << input;
      for (size_t d = 0; d < claim->status.devices.size(); ++d) {
        (void)ValidateDeviceStatus(claim->status.devices[d], "status.devices");
      }
      for (const auto* r : claim->ResultsFor("netresources.spidernet.io")) {
        (void)claim->ConfigsFor("netresources.spidernet.io", r->request);
        (void)r->MainRequest();
      }
    }
    auto tmpl = DecodeResourceClaimTemplate(*j);
    if (tmpl.ok()) {
      ++templates;
      Json enc = Encode(*tmpl);
      auto again = DecodeResourceClaimTemplate(enc);
      ASSERT_TRUE(again.ok()) << again.status() << "\ninput: " << input;
      ASSERT_EQ(Encode(*again), enc) << "input: " << input;
    }
    // Conversion is idempotent on whatever it accepts.
    Json once = *j;
    if (ConvertToV1(&once).ok()) {
      Json twice = once;
      ASSERT_TRUE(ConvertToV1(&twice).ok()) << input;
      ASSERT_EQ(once, twice) << input;
    }
  }
  // The mutations must reach the decoders, and some must decode cleanly.
  EXPECT_GT(parsed, kIterations / 2);
  EXPECT_GT(claims, kIterations / 20);
  EXPECT_GT(templates, kIterations / 50);
}

}  // namespace
}  // namespace spiderpool::api::resource_v1
