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

class Mutator {
 public:
  Mutator() : rng_(kSeed) {
    for (const char* s : kSeeds) {
      seeds_.push_back(*base::ParseJson(s));
      texts_.push_back(base::DumpJson(seeds_.back()));
    }
  }

  std::string Next() {
    const std::string& text = texts_[Pick(texts_.size())];
    switch (Pick(6)) {
      case 0: {  // bit flips
        std::string s = text;
        for (int i = 0, n = 1 + static_cast<int>(Pick(6)); i < n && !s.empty(); ++i) {
          s[Pick(s.size())] ^= static_cast<char>(1u << Pick(8));
        }
        return s;
      }
      case 1: return text.substr(0, Pick(text.size() + 1));
      default: {
        Json j = seeds_[Pick(seeds_.size())];
        for (int i = 0, n = 1 + static_cast<int>(Pick(4)); i < n; ++i) MutateTree(&j);
        return base::DumpJson(j);
      }
    }
  }

 private:
  size_t Pick(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  }

  Json RandomValue() {
    static const char* kStrings[] = {"", "resource.k8s.io/v1beta1", "resource.k8s.io/v1",
                                     "resource.k8s.io/v1beta2", "resource.k8s.io/v0",
                                     "ResourceClaimTemplate", "ResourceClaimList", "10.0.0.1/24",
                                     "10.0.0.1", "fd00::1/129", "2026-01-01T00:00:00Z", "a/b",
                                     "\xc3\xa9"};
    switch (Pick(8)) {
      case 0: return nullptr;
      case 1: return Pick(2) == 0;
      case 2: return static_cast<int64_t>(Pick(100)) - 50;
      case 3: return kStrings[Pick(std::size(kStrings))];
      case 4: return Json::object();
      case 5: return Json::array({kStrings[Pick(std::size(kStrings))]});
      case 6: return 1e300;
      default: {
        Json j = seeds_[Pick(seeds_.size())];
        return *RandomNode(&j, nullptr, nullptr, nullptr);
      }
    }
  }

  Json* RandomNode(Json* j, Json** parent, std::string* key, size_t* index) {
    Json* cur = j;
    if (parent) *parent = nullptr;
    while ((cur->is_object() || cur->is_array()) && !cur->empty() && Pick(5) != 0) {
      if (parent) *parent = cur;
      if (cur->is_object()) {
        auto it = cur->begin();
        std::advance(it, Pick(cur->size()));
        if (key) *key = it.key();
        cur = &it.value();
      } else {
        size_t i = Pick(cur->size());
        if (index) *index = i;
        cur = &(*cur)[i];
      }
    }
    return cur;
  }

  void MutateTree(Json* j) {
    Json* parent = nullptr;
    std::string key;
    size_t index = 0;
    Json* node = RandomNode(j, &parent, &key, &index);
    switch (Pick(3)) {
      case 0:
        if (parent != nullptr && parent->is_object()) {
          parent->erase(key);
        } else if (parent != nullptr && parent->is_array()) {
          parent->erase(index);
        } else {
          *node = RandomValue();
        }
        return;
      case 1:
        if (node->is_object()) {
          (*node)["x-" + std::to_string(Pick(3))] = RandomValue();
          return;
        }
        [[fallthrough]];
      default:
        *node = RandomValue();
    }
  }

  std::vector<Json> seeds_;
  std::vector<std::string> texts_;
  std::mt19937_64 rng_;
};

TEST(ResourceClaimFuzz, MutatedObjectsNeverCrashAndRoundTrip) {
  Mutator m;
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
