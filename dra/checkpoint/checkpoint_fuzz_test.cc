// Fuzz-style test of the checkpoint decoder (the file is untrusted: a crash, a full disk or an
// operator may have mangled it). Deterministic mutations:
//   - byte-level (flips, truncation, insertion) of valid files: Decode must never crash, and
//     whatever it accepts must be exactly the original data (the checksum guards it);
//   - structural mutations of the "data" object with a recomputed checksum, which get past the
//     checksum into the field decoder: never a crash, and accepted data must re-encode to a
//     file that decodes to the same Data.

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "base/json.h"
#include "dra/checkpoint/checkpoint.h"
#include "gtest/gtest.h"

namespace spiderpool::dra::checkpoint {
namespace {

using base::Json;

constexpr int kIterations = 3000;

std::vector<Data> Seeds() {
  std::vector<Data> out;
  out.push_back(Data{.boot_id = "b"});
  Data d{.boot_id = "boot-1"};
  for (int i = 0; i < 3; ++i) {
    PreparedClaim c;
    c.state = i % 2 ? ClaimState::kPrepareCompleted : ClaimState::kPrepareStarted;
    c.namespace_ = "ns";
    c.name = "claim-" + std::to_string(i);
    c.devices = {{.request_names = {"r"}, .pool = "node", .device = "eth" + std::to_string(i),
                  .share_id = i == 1 ? std::optional<std::string>("s") : std::nullopt,
                  .cdi_device_ids = {"k8s.netresources.spidernet.io/claim=u" + std::to_string(i)}}};
    c.cdi_spec_path = "/var/run/cdi/x.yaml";
    c.status_devices = {{.driver = "d", .pool = "node", .device = "eth" + std::to_string(i)}};
    d.claims["u" + std::to_string(i)] = c;
  }
  out.push_back(d);
  return out;
}

std::string WithChecksum(const Json& data, Json version = 1) {
  char sum[16];
  std::snprintf(sum, sizeof(sum), "%08x", Crc32(base::DumpJson(data)));
  Json file = {{"version", version}, {"checksum", std::string("crc32:") + sum}, {"data", data}};
  return base::DumpJson(file);
}

class Fuzzer {
 public:
  explicit Fuzzer(uint64_t seed) : rng_(seed) {}
  size_t Pick(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  }

  std::string ByteMutation(std::string s) {
    switch (Pick(3)) {
      case 0:
        for (int i = 0, n = 1 + static_cast<int>(Pick(4)); i < n && !s.empty(); ++i) {
          s[Pick(s.size())] ^= static_cast<char>(1u << Pick(8));
        }
        return s;
      case 1: return s.substr(0, Pick(s.size() + 1));
      default: {
        static const char* kTokens[] = {"{", "}", "[", "]", ",", ":", "\"", "null", "1", " "};
        s.insert(Pick(s.size() + 1), kTokens[Pick(std::size(kTokens))]);
        return s;
      }
    }
  }

  Json RandomValue() {
    static const char* kStrings[] = {"", "PrepareStarted", "PrepareCompleted", "Bogus", "x",
                                     "\xc3\xa9", "/var/run/cdi/a.yaml"};
    switch (Pick(7)) {
      case 0: return nullptr;
      case 1: return Pick(2) == 0;
      case 2: return static_cast<int64_t>(Pick(100)) - 50;
      case 3: return kStrings[Pick(std::size(kStrings))];
      case 4: return Json::object();
      case 5: return Json::array({kStrings[Pick(std::size(kStrings))]});
      default: return 2.5;
    }
  }

  void MutateTree(Json* j) {
    Json* parent = nullptr;
    std::string key;
    size_t index = 0;
    Json* cur = j;
    while ((cur->is_object() || cur->is_array()) && !cur->empty() && Pick(4) != 0) {
      parent = cur;
      if (cur->is_object()) {
        auto it = cur->begin();
        std::advance(it, Pick(cur->size()));
        key = it.key();
        cur = &it.value();
      } else {
        index = Pick(cur->size());
        cur = &(*cur)[index];
      }
    }
    switch (Pick(3)) {
      case 0:
        if (parent != nullptr && parent->is_object()) {
          parent->erase(key);
          return;
        }
        if (parent != nullptr && parent->is_array()) {
          parent->erase(index);
          return;
        }
        *cur = RandomValue();
        return;
      case 1:
        if (cur->is_object()) {
          (*cur)["x" + std::to_string(Pick(3))] = RandomValue();
          return;
        }
        [[fallthrough]];
      default:
        *cur = RandomValue();
    }
  }

 private:
  std::mt19937_64 rng_;
};

TEST(CheckpointFuzz, ByteMutationsAreRejectedOrHarmless) {
  Fuzzer f(0xc0ffee);
  std::vector<Data> seeds = Seeds();
  int accepted = 0;
  for (int i = 0; i < kIterations; ++i) {
    const Data& seed = seeds[f.Pick(seeds.size())];
    std::string input = f.ByteMutation(Encode(seed));
    auto d = Decode(input);
    if (!d.ok()) continue;
    ++accepted;
    // Only changes the checksum cannot see (whitespace, the trailing newline) get through.
    ASSERT_EQ(*d, seed) << "accepted a changed file: " << input;
  }
  EXPECT_LT(accepted, kIterations / 4);
}

TEST(CheckpointFuzz, StructuralMutationsPastTheChecksum) {
  Fuzzer f(0xbadc0de);
  std::vector<Data> seeds = Seeds();
  int accepted = 0, rejected = 0;
  for (int i = 0; i < kIterations; ++i) {
    auto file = base::ParseJson(Encode(seeds[f.Pick(seeds.size())]));
    ASSERT_TRUE(file.ok());
    Json data = (*file)["data"];
    for (int k = 0, n = 1 + static_cast<int>(f.Pick(3)); k < n; ++k) f.MutateTree(&data);
    std::string input = f.Pick(20) == 0 ? WithChecksum(data, f.RandomValue()) : WithChecksum(data);
    auto d = Decode(input);
    if (!d.ok()) {
      ++rejected;
      EXPECT_EQ(d.status().code(), absl::StatusCode::kDataLoss);
      continue;
    }
    ++accepted;
    auto again = Decode(Encode(*d));
    ASSERT_TRUE(again.ok()) << again.status() << "\ninput: " << input;
    ASSERT_EQ(*again, *d) << input;
  }
  EXPECT_GT(accepted, kIterations / 20);
  EXPECT_GT(rejected, kIterations / 10);
}

}  // namespace
}  // namespace spiderpool::dra::checkpoint
