// Drives the decode fuzz target without libFuzzer: the seed corpus (every YAML in api/testdata,
// converted to JSON) plus kIterations deterministic mutations of it: byte flips, truncation,
// splicing, byte insertion/deletion, and JSON-structure mutations (replace, delete or duplicate
// a random node, graft a subtree from another seed) that get past the parser and into the
// decoders. Nothing may crash (run it under --config=asan), and every cleanly decoded object
// must re-encode stably (see decode_fuzz.h).

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
#include "base/yaml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace spiderpool::api::fuzz {
namespace {

namespace fs = std::filesystem;
using base::Json;

constexpr int kIterations = 20000;
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

class Mutator {
 public:
  Mutator(std::vector<Json> seeds) : seeds_(std::move(seeds)), rng_(kSeed) {
    for (const Json& s : seeds_) texts_.push_back(base::DumpJson(s));
  }

  // Returns the next input and whether it came from a structural mutation.
  std::string Next(bool* structural) {
    *structural = false;
    const std::string& text = texts_[Pick(texts_.size())];
    switch (Pick(8)) {  // half byte-level, half structural
      case 0: return FlipBits(text);
      case 1: return text.substr(0, Pick(text.size() + 1));
      case 2: {
        const std::string& other = texts_[Pick(texts_.size())];
        return text.substr(0, Pick(text.size() + 1)) + other.substr(Pick(other.size() + 1));
      }
      case 3: return InsertOrDelete(text);
      default: {
        *structural = true;
        Json j = seeds_[Pick(seeds_.size())];
        int n = 1 + static_cast<int>(Pick(4));
        for (int i = 0; i < n; ++i) MutateTree(&j);
        return base::DumpJson(j);
      }
    }
  }

 private:
  size_t Pick(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  std::string FlipBits(std::string s) {
    if (s.empty()) return s;
    int n = 1 + static_cast<int>(Pick(8));
    for (int i = 0; i < n; ++i) s[Pick(s.size())] ^= static_cast<char>(1u << Pick(8));
    return s;
  }

  std::string InsertOrDelete(std::string s) {
    static const std::string kTokens[] = {"{", "}", "[", "]", ",", ":", "\"", "null", "-1",
                                          "1e309", "\\u0000", "\xff", "true", "0.5"};
    size_t pos = Pick(s.size() + 1);
    if (Pick(2) == 0) {
      s.insert(pos, kTokens[Pick(std::size(kTokens))]);
    } else {
      s.erase(pos, Pick(16));
    }
    return s;
  }

  Json RandomValue() {
    static const char* kStrings[] = {"",
                                     "10.0.0.1",
                                     "10.0.0.300",
                                     "10.0.0.0/24",
                                     "10.0.0.1-10.0.0.9",
                                     "fd00::1-fd00::ff",
                                     "::/0",
                                     "2024-01-02T03:04:05Z",
                                     "2024-01-02T03:04:05.123456Z",
                                     "9999-12-31T23:59:59Z",
                                     "0000-01-01T00:00:00Z",
                                     "4",
                                     "macvlan",
                                     "custom",
                                     "{\"10.0.0.1\":{\"pod\":\"a/b\",\"podUid\":\"u\"}}",
                                     "{\"p\":{\"ips\":[\"10.0.0.1\"]}}",
                                     "{not json",
                                     "\xc3\xa9t\xc3\xa9"};
    switch (Pick(10)) {
      case 0: return nullptr;
      case 1: return Pick(2) == 0;
      case 2: return static_cast<int64_t>(Pick(10000)) - 5000;
      case 3: return Pick(2) ? Json(INT64_MAX) : Json(UINT64_MAX);
      case 4: return 1.5;
      case 5: return kStrings[Pick(std::size(kStrings))];
      case 6: return Json::object();
      case 7: return Json::array({RandomScalar()});
      case 8: return Json::object({{"key", RandomScalar()}});
      default: {
        // A subtree of another seed (right shape, wrong place).
        Json j = seeds_[Pick(seeds_.size())];
        Json* node = RandomNode(&j);
        return *node;
      }
    }
  }

  Json RandomScalar() {
    switch (Pick(3)) {
      case 0: return "10.0.0." + std::to_string(Pick(300));
      case 1: return static_cast<int64_t>(Pick(5000));
      default: return nullptr;
    }
  }

  // A random node of `j` (possibly j itself), reached by walking down at random.
  Json* RandomNode(Json* j, Json** parent = nullptr, std::string* key = nullptr,
                   size_t* index = nullptr) {
    Json* cur = j;
    if (parent) *parent = nullptr;
    while ((cur->is_object() || cur->is_array()) && !cur->empty() && Pick(4) != 0) {
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
    switch (Pick(4)) {
      case 0:  // delete
        if (parent != nullptr && parent->is_object()) {
          parent->erase(key);
          return;
        }
        if (parent != nullptr && parent->is_array()) {
          parent->erase(index);
          return;
        }
        *node = RandomValue();
        return;
      case 1:  // duplicate an array element / add an unknown key
        if (node->is_array() && !node->empty()) {
          Json copy = (*node)[Pick(node->size())];
          node->push_back(std::move(copy));
          return;
        }
        if (node->is_object()) {
          (*node)["x-unknown-" + std::to_string(Pick(3))] = RandomValue();
          return;
        }
        *node = RandomValue();
        return;
      default:  // replace
        *node = RandomValue();
        return;
    }
  }

  std::vector<Json> seeds_;
  std::vector<std::string> texts_;
  std::mt19937_64 rng_;
};

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
  Mutator m(SeedCorpus());
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
