// Fuzz target for one Spider CRD kind: api/decode_fuzz.cc's entry point (bytes -> JSON ->
// decode, encode, re-decode, stable encoding, status maps round-trip) restricted to the kind
// named by FUZZ_KIND (set per target in BUILD.bazel), so each CRD's decoder gets a fuzzer of
// its own.
#include "api/decode_fuzz.h"

#define FUZZ_STR2(x) #x
#define FUZZ_STR(x) FUZZ_STR2(x)

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spiderpool::api::fuzz::OnlyKind(FUZZ_STR(FUZZ_KIND));
  return 0;
}
