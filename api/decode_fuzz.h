#pragma once
// The decode fuzz target's property, shared by the libFuzzer entry point (decode_fuzz.cc) and
// the deterministic mutation test (decode_fuzz_test.cc).

#include <string>
#include <vector>

#include "base/json.h"

namespace spiderpool::api::fuzz {

// Decodes `j` as every kind (core, Spider, AdmissionReview, a SpiderIPPool list) and encodes
// the result, which must never crash. For each kind that decodes without errors it also checks
// that the encoding is stable: decode(encode(x)) has no errors and encodes to the same JSON;
// the status maps of pools and subnets must round-trip the same way. Returns one line per
// violated property (empty = fine).
std::vector<std::string> DecodeEveryKind(const base::Json& j);

// How many kinds DecodeEveryKind tries and, of the last call, how many decoded cleanly
// (for the mutation test's coverage checks).
int KindCount();
int LastCleanDecodes();

// Restricts DecodeEveryKind to the kind named `kind` ("SpiderIPPool", "AdmissionReview",
// "SpiderIPPoolList"; "" = every kind again): the per-CRD fuzz targets (api/fuzz) set it once
// in LLVMFuzzerInitialize.
void OnlyKind(std::string kind);

}  // namespace spiderpool::api::fuzz
