// Drives the decode fuzz target without libFuzzer: the seed corpus (every YAML in api/testdata,
// converted to JSON) plus kIterations deterministic mutations of it: byte flips, truncation,
// splicing, byte insertion/deletion, and JSON-structure mutations (replace, delete or duplicate
// a random node, graft a subtree from another seed) that get past the parser and into the
// decoders. Nothing may crash (tools/test.sh runs it under --config=sanitizers), and every
// cleanly decoded object must re-encode stably (see decode_fuzz.h).

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/decode_fuzz.h"
#include "base/json.h"
#include "base/testing/json_mutator.h"
#include "base/yaml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace spiderpool::api::fuzz {
namespace {

// Values the mutator puts where others were: IPs, ranges, times, enums, status maps.
std::vector<std::string> DomainStrings() {
  return {"", "10.0.0.1", "10.0.0.300",
          "10.0.0.0/24", "10.0.0.1-10.0.0.9", "fd00::1-fd00::ff",
          "::/0", "2024-01-02T03:04:05Z", "2024-01-02T03:04:05.123456Z",
          "9999-12-31T23:59:59Z", "0000-01-01T00:00:00Z", "4",
          "macvlan", "custom", "{\"10.0.0.1\":{\"pod\":\"a/b\",\"podUid\":\"u\"}}",
          "{\"p\":{\"ips\":[\"10.0.0.1\"]}}", "{not json", "\xc3\xa9t\xc3\xa9"};
}

namespace fs = std::filesystem;
using base::Json;

constexpr int kIterations = 5000;
constexpr uint64_t kSeed = 0x5b1de7b001ULL;

std::vector<Json> SeedCorpus() {
  std::vector<Json> seeds;
  for (const auto& e : fs::recursive_directory_iterator("api/testdata")) {
    if (e.path().extension() != ".yaml") continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    auto docs = base::ParseYamlDocuments(ss.str());
    if (!docs.ok()) continue;
    for (Json& d : *docs) seeds.push_back(std::move(d));
  }
  // Shapes the testdata lacks.
  for (const char* extra :
       {"{}", "[]", "null", "0", "\"\"", R"({"spec": null, "status": null, "metadata": null})",
        R"({"status": {"allocatedIPs": "{\"10.0.0.1\": {\"pod\": \"a/b\", \"podUid\": \"u\"}}"}})",
        R"({"items": [{"spec": {"subnet": "10.0.0.0/8"}}], "metadata": {}})"}) {
    seeds.push_back(*base::ParseJson(extra));
  }
  return seeds;
}


TEST(DecodeFuzz, SeedCorpusThroughTheEntryPoint) {
  std::vector<Json> seeds = SeedCorpus();
  ASSERT_GE(seeds.size(), 30u);
  int clean = 0;
  for (const Json& s : seeds) {
    std::string text = base::DumpJson(s);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(text.data()), text.size());
    std::vector<std::string> problems = DecodeEveryKind(s);
    EXPECT_TRUE(problems.empty()) << problems[0];
    clean += LastCleanDecodes();
  }
  // Every seed decodes as at least its own kind.
  EXPECT_GE(clean, static_cast<int>(seeds.size()) - 8);
}

TEST(DecodeFuzz, DeterministicMutations) {
  base::testing::JsonMutator m(
      {.seeds = SeedCorpus(), .strings = DomainStrings(), .seed = kSeed});
  int parsed = 0, structural = 0, clean_decodes = 0, failing = 0;
  std::vector<std::string> first_failures;
  for (int i = 0; i < kIterations; ++i) {
    bool is_structural = false;
    std::string input = m.Next(&is_structural);
    structural += is_structural;
    auto j = base::ParseJson(input);
    if (!j.ok()) continue;
    ++parsed;
    std::vector<std::string> problems = DecodeEveryKind(*j);
    clean_decodes += LastCleanDecodes();
    if (!problems.empty()) {
      ++failing;
      if (first_failures.size() < 5) {
        first_failures.push_back("iteration " + std::to_string(i) + ": " + problems[0]);
      }
    }
  }
  std::string report;
  for (const std::string& f : first_failures) report += "\n  " + f;
  EXPECT_EQ(failing, 0) << failing << " inputs violated the decode property:" << report;
  // The driver really reaches the decoders, with both clean and erroneous objects.
  EXPECT_GT(structural, kIterations * 2 / 5);
  EXPECT_GT(parsed, kIterations * 9 / 20);
  EXPECT_GT(clean_decodes, kIterations / 4);
  RecordProperty("parsed", parsed);
  RecordProperty("clean_decodes", clean_decodes);
  std::printf("%d mutations: %d parsed as JSON, %d clean decodes over %d kinds\n", kIterations,
              parsed, clean_decodes, KindCount());
}

}  // namespace
}  // namespace spiderpool::api::fuzz
