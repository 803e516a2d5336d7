// Fuzz target: the DRA driver's checkpoint file (dra/checkpoint), read back at every agent
// start from the node's disk. Input: the first byte picks the mode, the rest is the file:
//   even: the bytes as they are (the checksum gate: almost everything is DataLoss);
//   odd:  when the rest is a JSON object with "data", its checksum is recomputed first (the
//         file format's rule: crc32 of data's compact JSON), so the fuzzer reaches the decoder
//         of the prepared claims behind the checksum.
// Property: nothing crashes, and a file that decodes re-encodes to a file that decodes to the
// same value.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "base/json.h"
#include "dra/checkpoint/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spiderpool;
  if (size == 0) return 0;
  std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 1) {
    auto j = base::ParseJson(file);
    if (j.ok() && j->is_object() && j->contains("data")) {
      char sum[16];
      std::snprintf(sum, sizeof(sum), "%08x",
                    dra::checkpoint::Crc32(base::DumpJson((*j)["data"])));
      (*j)["checksum"] = std::string("crc32:") + sum;
      file = base::DumpJson(*j);
    }
  }
  auto decoded = dra::checkpoint::Decode(file);
  if (!decoded.ok()) return 0;
  auto again = dra::checkpoint::Decode(dra::checkpoint::Encode(*decoded));
  if (!again.ok() || !(*again == *decoded)) __builtin_trap();
  return 0;
}
