// Fuzz target for the watch stream decoder and API error bodies (untrusted: bytes from the
// network). libFuzzer-compatible; in `bazel test` it runs under testing/fuzz_driver.cc with
// the seed corpus in testdata/watch_corpus.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "kube/rest/errors.h"
#include "kube/rest/watch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spiderpool::kube;
  if (size == 0) return 0;
  // The first byte picks the chunking: the same stream must decode the same way however it
  // is cut.
  size_t chunk = static_cast<size_t>(data[0] % 17) + 1;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);

  WatchStreamDecoder whole;
  std::vector<WatchEvent> all;
  absl::Status whole_status = whole.Feed(input, &all);

  WatchStreamDecoder pieces;
  std::vector<WatchEvent> events;
  absl::Status piece_status;
  for (size_t i = 0; i < input.size() && piece_status.ok(); i += chunk) {
    piece_status = pieces.Feed(input.substr(i, chunk), &events);
  }
  if (whole_status.ok() != piece_status.ok() || (whole_status.ok() && all.size() != events.size())) {
    __builtin_trap();  // chunking changed the result
  }
  for (const WatchEvent& e : events) {
    if (e.type == WatchEventType::kError) {
      absl::Status s = StatusFromStatusJson(e.object);
      (void)IsGone(s);
      (void)StatusCauses(s);
    }
  }
  absl::Status err = StatusFromResponse(500 + data[0] % 100, input, input.substr(0, 4));
  (void)RetryAfter(err);
  (void)StatusCauses(err);
  (void)spiderpool::kube::IsNotFound(err);
  return 0;
}
