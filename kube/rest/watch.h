#pragma once
// Watch events and the decoder of a watch stream. The API server answers a watch with a
// chunked stream of JSON objects {"type": "...", "object": {...}}, one after another
// (newline-separated in practice). Chunk boundaries mean nothing: an object may span many
// chunks and one chunk may hold several objects, so the decoder frames objects itself by
// tracking nesting and strings. The stream is untrusted input (see watch_fuzz.cc).

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/json.h"

namespace spiderpool::kube {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };
std::string_view WatchEventTypeName(WatchEventType type);  // "ADDED", ...

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  // The object (for kError: a metav1.Status; for kBookmark: an object carrying only
  // metadata.resourceVersion).
  base::Json object;
};

// Receives each event; return false to end the watch (Watch then returns OK).
using WatchCallback = std::function<bool(WatchEvent event)>;

// Options of a watch request (metav1.ListOptions with watch=true).
struct WatchOptions {
  std::string resource_version;  // "" = start with the current state (synthetic ADDEDs)
  std::string label_selector;
  std::string field_selector;
  bool allow_watch_bookmarks = false;
  int64_t timeout_seconds = 0;  // server-side timeout; 0 = server default
  // Events carry only the objects' metadata (Accept as=PartialObjectMetadata, as client-go's
  // metadata informers watch).
  bool metadata_only = false;
};

// Splits a byte stream into top-level JSON object texts.
class JsonObjectFramer {
 public:
  explicit JsonObjectFramer(size_t max_object_bytes = 64u << 20)
      : max_object_bytes_(max_object_bytes) {}
  // Appends every completed object text to `objects`. An error (bytes outside an object that
  // are not whitespace, an object over the size limit) is permanent.
  absl::Status Feed(std::string_view data, std::vector<std::string>* objects);
  // True when no partial object is buffered.
  bool Idle() const { return !in_object_; }

 private:
  size_t max_object_bytes_;
  std::string buffer_;  // bytes of the current partial object (starts at '{')
  bool in_object_ = false;
  int depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
  absl::Status error_;
};

// Decodes one event object. Unknown event types and events without an object are errors.
absl::StatusOr<WatchEvent> DecodeWatchEvent(const base::Json& event);
absl::StatusOr<WatchEvent> DecodeWatchEvent(base::Json&& event);  // moves the object out
absl::StatusOr<WatchEvent> DecodeWatchEvent(std::string_view text);

// Framer + DecodeWatchEvent.
class WatchStreamDecoder {
 public:
  absl::Status Feed(std::string_view data, std::vector<WatchEvent>* events);
  bool Idle() const { return framer_.Idle(); }

 private:
  JsonObjectFramer framer_;
};

}  // namespace spiderpool::kube
