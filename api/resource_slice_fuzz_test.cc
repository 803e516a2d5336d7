// Fuzz-style test of the ResourceSlice/DeviceClass decoders (the pattern of
// api/decode_fuzz_test.cc, without libFuzzer): seed objects in the three served versions plus
// deterministic byte-level and JSON-structure mutations go through DecodeResourceSliceFrom /
// DecodeDeviceClassFrom for every version and ValidateResourceSlice. Nothing may crash (run
// under --config=asan), and every cleanly decoded slice must survive
// encode-as-version -> decode unchanged.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/resource_slice.h"
#include "base/json.h"

namespace spiderpool::api {
namespace {

using base::Json;

constexpr int kIterations = 5000;
constexpr uint64_t kSeed = 0x5e5111ce5ULL;
constexpr const char* kVersions[] = {"v1", "v1beta2", "v1beta1"};

std::vector<Json> Seeds() {
  std::vector<std::string> texts = {
      R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
          "metadata": {"name": "n-d-0", "ownerReferences": [{"apiVersion": "v1", "kind": "Node",
                       "name": "n", "uid": "u", "controller": true}]},
          "spec": {"driver": "netresources.spidernet.io",
                   "pool": {"name": "n", "generation": 2, "resourceSliceCount": 1},
                   "nodeName": "n",
                   "devices": [{"name": "eth1-0", "attributes": {
                       "ifName": {"string": "eth1"}, "mtu": {"int": 1500},
                       "sriovVf": {"bool": true}, "v": {"version": "1.0.0"},
                       "k8s.cni.cncf.io/deviceID": {"string": "0000:3b:00.0"}},
                     "capacity": {"c": {"value": "1", "requestPolicy": {"default": "1"}}},
                     "allowMultipleAllocations": true}]}})",
      R"({"spec": {"driver": "d", "pool": {"name": "p", "generation": 0, "resourceSliceCount": 1},
                   "allNodes": true, "devices": [{"name": "a", "basic": {"attributes":
                   {"x": {"ints": [1, 2]}}, "capacity": {"y": {"value": "2Gi"}}}}]}})",
      R"({"spec": {"driver": "d", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 2},
                   "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k",
                   "operator": "In", "values": ["v"]}]}]}, "sharedCounters": [{"name": "s",
                   "counters": {"mem": {"value": "1"}}}]}})",
      R"({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "c"},
          "spec": {"selectors": [{"cel": {"expression": "device.driver == \"d\""}}],
                   "config": [{"opaque": {"driver": "d", "parameters": {"a": 1}}}]}})",
      "{}", "[]", "null", R"({"spec": null})", R"({"spec": {"devices": null}})",
      R"({"spec": {"devices": [null, 1, "x", {"basic": null}, {"basic": []}]}})"};
  std::vector<Json> out;
  for (const std::string& t : texts) out.push_back(*base::ParseJson(t));
  return out;
}

class Mutator {
 public:
  explicit Mutator(std::vector<Json> seeds) : seeds_(std::move(seeds)), rng_(kSeed) {
    for (const Json& s : seeds_) texts_.push_back(base::DumpJson(s));
  }

  std::string Next() {
    const std::string& text = texts_[Pick(texts_.size())];
    switch (Pick(6)) {
      case 0: {
        std::string s = text;
        if (!s.empty()) s[Pick(s.size())] ^= static_cast<char>(1u << Pick(8));
        return s;
      }
      case 1: return text.substr(0, Pick(text.size() + 1));
      case 2: {
        std::string s = text;
        size_t at = Pick(s.size() + 1);
        if (Pick(2) == 0 && at < s.size()) {
          s.erase(at, 1 + Pick(4));
        } else {
          static constexpr char kBytes[] = "{}[]\",:0-9aZ\\/. \xff";
          s.insert(at, 1, kBytes[Pick(sizeof(kBytes) - 1)]);
        }
        return s;
      }
      default: {
        Json j = seeds_[Pick(seeds_.size())];
        int n = 1 + static_cast<int>(Pick(4));
        for (int i = 0; i < n; ++i) MutateTree(&j, 0);
        return base::DumpJson(j);
      }
    }
  }

 private:
  size_t Pick(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  Json RandomLeaf() {
    switch (Pick(9)) {
      case 0: return nullptr;
      case 1: return Pick(2) == 0;
      case 2: return static_cast<int64_t>(Pick(1000)) - 500;
      case 3: return 1e300;
      case 4: return std::string(Pick(80), 'a' + static_cast<char>(Pick(26)));
      case 5: return Json::array();
      case 6: return Json::object();
      case 7: return "Bad_Name/x/y";
      default: return seeds_[Pick(seeds_.size())];
    }
  }

  // Replaces, deletes or duplicates a random node, or renames a key.
  void MutateTree(Json* j, int depth) {
    if (depth > 12) return;
    if ((j->is_object() || j->is_array()) && !j->empty() && Pick(4) != 0) {
      size_t i = Pick(j->size());
      if (j->is_array()) {
        switch (Pick(5)) {
          case 0: j->erase(i); return;
          case 1: j->push_back((*j)[i]); return;
          default: MutateTree(&(*j)[i], depth + 1); return;
        }
      }
      auto it = j->begin();
      std::advance(it, static_cast<long>(i));
      std::string key = it.key();
      switch (Pick(6)) {
        case 0: j->erase(key); return;
        case 1: (*j)[key + "x"] = it.value(); return;
        case 2: (*j)["basic"] = it.value(); return;
        default: MutateTree(&(*j)[key], depth + 1); return;
      }
    }
    *j = RandomLeaf();
  }

  std::vector<Json> seeds_;
  std::vector<std::string> texts_;
  std::mt19937_64 rng_;
};

void CheckOne(const Json& j, int* decoded) {
  for (const char* v : kVersions) {
    auto s = DecodeResourceSliceFrom(j, v);
    (void)DecodeDeviceClassFrom(j, v);
    if (!s.ok()) continue;
    ++*decoded;
    (void)ValidateResourceSlice(*s);
    (void)ValidateResourceSliceStatus(*s);
    for (const char* out : kVersions) {
      auto enc = EncodeResourceSliceAs(*s, out);
      ASSERT_TRUE(enc.ok());
      auto again = DecodeResourceSliceFrom(*enc, out);
      ASSERT_TRUE(again.ok()) << again.status() << "\n" << base::DumpJson(*enc);
      ASSERT_EQ(Encode(*again), Encode(*s)) << v << " -> " << out << "\n" << base::DumpJson(j);
    }
  }
}

TEST(ResourceSliceFuzz, SeedsDecode) {
  int decoded = 0;
  for (const Json& s : Seeds()) CheckOne(s, &decoded);
  EXPECT_GT(decoded, 6);  // the slice seeds decode in every version
}

TEST(ResourceSliceFuzz, MutationsNeverCrashAndRoundTrip) {
  Mutator m(Seeds());
  int parsed = 0, decoded = 0;
  for (int i = 0; i < kIterations; ++i) {
    std::string text = m.Next();
    auto j = base::ParseJson(text);
    if (!j.ok()) continue;
    ++parsed;
    CheckOne(*j, &decoded);
    if (::testing::Test::HasFatalFailure()) return;
  }
  // The mutations must reach the decoders, and some must still decode.
  EXPECT_GT(parsed, kIterations / 2);
  EXPECT_GT(decoded, kIterations / 20);
}

}  // namespace
}  // namespace spiderpool::api
