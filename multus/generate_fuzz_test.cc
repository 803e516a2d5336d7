// Fuzz-style test of everything in multus/ that reads untrusted input: SpiderMultusConfigs
// (user objects, with JSON inside chainCNIJsonData and customCNI) and the spec.config of NADs
// read back from the API server. Seeds are multus/testdata/*.yaml; kIterations deterministic
// mutations (byte-level on the JSON text, and structural: replace/delete/duplicate nodes, graft
// subtrees, plant hostile strings). Nothing may crash (run under --config=asan/ubsan) and:
//   - defaults are idempotent;
//   - a generated config is "" or valid JSON, and a custom one is customCNI verbatim;
//   - NADNeedsUpdate(d, d) is false; after ApplyDesiredNAD(d, &a) on a damaged copy `a`,
//     NADNeedsUpdate(d, a) is false and a second Apply changes nothing.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/codec.h"
#include "api/spider.h"
#include "base/json.h"
#include "base/testing/json_mutator.h"
#include "base/yaml.h"
#include "multus/defaults.h"
#include "multus/generate.h"

namespace spiderpool::multus {
namespace {

namespace fs = std::filesystem;
using api::NetworkAttachmentDefinition;
using api::SpiderMultusConfig;
using base::Json;

constexpr int kIterations = 2000;
constexpr uint64_t kSeed = 0x6d756c747573ULL;

std::vector<Json> Seeds() {
  std::vector<Json> seeds;
  for (const auto& e : fs::directory_iterator("multus/testdata")) {
    if (e.path().extension() != ".yaml") continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    auto j = base::ParseYaml(ss.str());
    if (j.ok()) seeds.push_back(*j);
  }
  return seeds;
}

// Structural mutations of the seed SMCs (with SMC field names as the keys it adds and CNI
// words / hostile config texts as values), a quarter of them damaged at the byte level too.
class Mutator {
 public:
  explicit Mutator(std::vector<Json> seeds)
      : m_({.seeds = std::move(seeds),
            .strings = {"", "{", "{}", "[]", "null", "7", R"({"type":"x","<&>":"\u2028"})",
        R"({"cniVersion":"1.0.0","plugins":[{"type":"bridge"}]})", "{\"a\":1e309}",
        "macvlan", "ipvlan", "vlan", "sriov", "ib-sriov", "ipoib", "ovs", "custom", "auto",
        "manual", "eth0", "bond0", "\xc3\xa9", "\xff\xfe", "0.3.1", "1.0.0",
        std::string(300, 'a')},
            .keys = {"chainCNIJsonData", "customCNI", "cniType", "bond",
                                        "vlanID", "master", "coordinator", "ippools",
                                        "enableCoordinator", "disableIPAM", "vlanMode"},
            .seed = kSeed}) {}

  std::string Next() {
    std::string text = base::DumpJson(m_.NextTree());
    if (m_.Pick(4) == 0) text = m_.MutateBytes(std::move(text));
    return text;
  }
  size_t Pick(size_t n) { return m_.Pick(n); }

 private:
  base::testing::JsonMutator m_;
};

// Damages `nad` the way another writer might.
void Damage(Mutator* m, NetworkAttachmentDefinition* nad) {
  switch (m->Pick(5)) {
    case 0: nad->spec.config = nad->spec.config.substr(0, m->Pick(nad->spec.config.size() + 1));
      break;
    case 1: nad->metadata.annotations.clear(); break;
    case 2:
      nad->metadata.annotations[std::string(api::kMultusResourceName)] = "x/y";
      nad->metadata.annotations["other.io/keep"] = "1";
      break;
    case 3: nad->metadata.owner_references.clear(); break;
    default:
      nad->metadata.owner_references.push_back(
          {.api_version = "v1", .kind = "X", .name = "x", .uid = "other", .controller = true});
      std::swap(nad->metadata.owner_references.front(), nad->metadata.owner_references.back());
  }
}

TEST(GenerateFuzz, MutatedObjects) {
  std::vector<Json> seeds = Seeds();
  ASSERT_GE(seeds.size(), 10u);
  Mutator m(seeds);
  int generated = 0, rejected = 0, unparsable = 0;
  for (int i = 0; i < kIterations; ++i) {
    std::string text = m.Next();
    auto j = base::ParseJson(text);
    if (!j.ok()) {
      ++unparsable;
      continue;
    }
    // Keep what decodes, even with field errors, to reach the generator with odd shapes.
    api::DecodeErrors errs;
    SpiderMultusConfig smc = api::DecodeInto<SpiderMultusConfig>(*j, &errs);
    if (smc.metadata.name.empty()) smc.metadata.name = "n" + std::to_string(i);
    smc.metadata.uid = "uid-" + std::to_string(i);

    SpiderMultusConfig once = smc;
    DefaultSpiderMultusConfig(&once);
    SpiderMultusConfig twice = once;
    DefaultSpiderMultusConfig(&twice);
    ASSERT_EQ(api::Encode(twice), api::Encode(once)) << text;

    for (bool defaults : {true, false}) {
      auto nad = BuildDesiredNAD(smc, Options{.apply_defaults = defaults});
      if (!nad.ok()) {
        ++rejected;
        ASSERT_EQ(nad.status().code(), absl::StatusCode::kInvalidArgument) << nad.status();
        continue;
      }
      ++generated;
      const std::string& config = nad->spec.config;
      const SpiderMultusConfig& used = defaults ? once : smc;
      if (used.spec.cni_type.value_or("custom") == "custom") {
        ASSERT_EQ(config, used.spec.custom_cni.value_or("")) << text;
      } else {
        auto parsed = base::ParseJson(config);
        ASSERT_TRUE(parsed.ok()) << config;
        ASSERT_TRUE((*parsed)["plugins"].is_array()) << config;
      }
      ASSERT_FALSE(NADNeedsUpdate(*nad, *nad));
      NADNeedsUpdate(*nad, NetworkAttachmentDefinition{});
      NetworkAttachmentDefinition actual = *nad;
      Damage(&m, &actual);
      ApplyDesiredNAD(*nad, &actual);
      ASSERT_FALSE(NADNeedsUpdate(*nad, actual)) << text;
      ASSERT_FALSE(ApplyDesiredNAD(*nad, &actual)) << text;
    }
  }
  // The mutations must reach both outcomes often enough to mean something.
  EXPECT_GT(generated, kIterations / 4);
  EXPECT_GT(rejected, kIterations / 50);
  EXPECT_GT(unparsable, 0);
  std::cout << "generated " << generated << ", rejected " << rejected << ", unparsable "
            << unparsable << "\n";
}

}  // namespace
}  // namespace spiderpool::multus
