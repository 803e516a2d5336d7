// Fuzz target: arbitrary bytes -> JSON -> every API kind. //api:decode_fuzz_test drives it
// with deterministic mutations of api/testdata; //api/fuzz:api_decode (every kind) and
// //api/fuzz:crd_<kind> (one Spider kind each, OnlyKind) link it with libFuzzer:
//
//   tools/fuzz.sh api_decode 60
//   tools/fuzz.sh crd_spiderippool 60

#include "api/decode_fuzz.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "api/admission.h"
#include "api/kinds.h"
#include "base/json.h"

namespace spiderpool::api::fuzz {
namespace {

int last_clean = 0;
std::string only_kind;  // "" = every kind

template <typename T>
void CheckKind(const Json& j, std::string_view name, std::vector<std::string>* problems) {
  if (!only_kind.empty() && name != only_kind) return;
  DecodeErrors errs;
  T obj = DecodeInto<T>(j, &errs);
  // Partially decoded objects must encode (and print) too.
  Json enc = Encode(obj);
  std::string text = base::DumpJson(enc);
  if (!errs.ok()) {
    // Every error names something.
    for (const FieldError& e : errs.errors) {
      if (e.message.empty()) problems->push_back(std::string(name) + ": empty error message");
    }
    return;
  }
  ++last_clean;
  DecodeErrors errs2;
  T again = DecodeInto<T>(enc, &errs2);
  if (!errs2.ok()) {
    problems->push_back(std::string(name) + ": re-decoding its own encoding failed: " +
                        std::string(errs2.ToStatus().message()) + " in " + text);
    return;
  }
  Json enc2 = Encode(again);
  if (enc2 != enc) {
    problems->push_back(std::string(name) + ": encoding is not stable: " + text + " vs " +
                        base::DumpJson(enc2));
  }
  if constexpr (std::is_same_v<T, SpiderIPPool>) {
    auto m = obj.AllocatedIPs();
    if (m.ok()) {
      auto back = ParsePoolIPAllocations(SerializePoolIPAllocations(*m));
      if (!back.ok() || *back != *m) problems->push_back("allocatedIPs: map does not round-trip");
    }
  }
  if constexpr (std::is_same_v<T, SpiderSubnet>) {
    auto m = obj.ControlledIPPools();
    if (m.ok()) {
      auto back = ParsePoolIPPreAllocations(SerializePoolIPPreAllocations(*m));
      if (!back.ok() || *back != *m) {
        problems->push_back("controlledIPPools: map does not round-trip");
      }
    }
  }
}

}  // namespace

std::vector<std::string> DecodeEveryKind(const Json& j) {
  std::vector<std::string> problems;
  last_clean = 0;
  auto each = [&]<typename T>() { CheckKind<T>(j, T::Resource().kind, &problems); };
  CoreKinds::ForEach(each);
  SpiderKinds::ForEach(each);
  CheckKind<AdmissionReview>(j, "AdmissionReview", &problems);
  CheckKind<SpiderIPPoolList>(j, "SpiderIPPoolList", &problems);
  return problems;
}

int KindCount() { return static_cast<int>(CoreKinds::kSize + SpiderKinds::kSize + 2); }
int LastCleanDecodes() { return last_clean; }
void OnlyKind(std::string kind) { only_kind = std::move(kind); }

}  // namespace spiderpool::api::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto j = spiderpool::base::ParseJson(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!j.ok()) return 0;
  std::vector<std::string> problems = spiderpool::api::fuzz::DecodeEveryKind(*j);
  if (!problems.empty()) {
    std::fprintf(stderr, "decode_fuzz: %s\n", problems[0].c_str());
    std::abort();
  }
  return 0;
}
