#include "kube/rest/watch.h"

#include <algorithm>

#include "base/strings.h"

namespace spiderpool::kube {

std::string_view WatchEventTypeName(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded: return "ADDED";
    case WatchEventType::kModified: return "MODIFIED";
    case WatchEventType::kDeleted: return "DELETED";
    case WatchEventType::kBookmark: return "BOOKMARK";
    case WatchEventType::kError: return "ERROR";
  }
  return "UNKNOWN";
}

absl::Status JsonObjectFramer::Feed(std::string_view data, std::vector<std::string>* objects) {
  if (!error_.ok()) return error_;
  size_t i = 0;
  const size_t n = data.size();
  while (i < n) {
    if (!in_object_) {
      // Between objects: skip whitespace, expect '{'.
      char c = data[i];
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
        ++i;
        continue;
      }
      if (c != '{') {
        error_ = absl::DataLossError(base::StrCat(
            "watch stream: unexpected byte 0x", absl::Hex(static_cast<unsigned char>(c)),
            " between objects"));
        return error_;
      }
      in_object_ = true;
      depth_ = 0;
      in_string_ = false;
      escaped_ = false;
    }
    size_t start = i;
    bool done = false;
    while (i < n) {
      char c = data[i++];
      if (in_string_) {
        if (escaped_) {
          escaped_ = false;
        } else if (c == '\\') {
          escaped_ = true;
        } else if (c == '"') {
          in_string_ = false;
        }
      } else if (c == '"') {
        in_string_ = true;
      } else if (c == '{' || c == '[') {
        ++depth_;
      } else if (c == '}' || c == ']') {
        if (--depth_ == 0) {
          done = true;
          break;
        }
      }
    }
    buffer_.append(data.substr(start, i - start));
    if (buffer_.size() > max_object_bytes_) {
      error_ = absl::ResourceExhaustedError(base::StrCat(
          "watch stream: object larger than ", max_object_bytes_, " bytes"));
      return error_;
    }
    if (done) {
      // The next object is likely as big as this one (the same kind, often the same object):
      // reserve that much at once instead of growing the buffer by doubling, every step a
      // copy (and, for big objects, a fresh mapping to unmap).
      const size_t hint = std::min(buffer_.size(), max_object_bytes_);
      objects->push_back(std::move(buffer_));
      buffer_ = std::string();
      buffer_.reserve(hint);
      in_object_ = false;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<WatchEvent> DecodeWatchEvent(const base::Json& event) {
  return DecodeWatchEvent(base::Json(event));
}

absl::StatusOr<WatchEvent> DecodeWatchEvent(base::Json&& event) {
  if (!event.is_object()) return absl::DataLossError("watch event: not an object");
  auto type = event.find("type");
  if (type == event.end() || !type->is_string()) {
    return absl::DataLossError("watch event: missing type");
  }
  auto object = event.find("object");
  if (object == event.end() || !object->is_object()) {
    return absl::DataLossError("watch event: missing object");
  }
  const std::string& t = type->get_ref<const std::string&>();
  WatchEvent out;
  if (t == "ADDED") {
    out.type = WatchEventType::kAdded;
  } else if (t == "MODIFIED") {
    out.type = WatchEventType::kModified;
  } else if (t == "DELETED") {
    out.type = WatchEventType::kDeleted;
  } else if (t == "BOOKMARK") {
    out.type = WatchEventType::kBookmark;
  } else if (t == "ERROR") {
    out.type = WatchEventType::kError;
  } else {
    std::string shown = t.substr(0, 32);
    return absl::DataLossError(base::StrCat("watch event: unknown type \"", shown, "\""));
  }
  out.object = std::move(*object);  // a pool's object can be hundreds of KB: no copy
  return out;
}

absl::StatusOr<WatchEvent> DecodeWatchEvent(std::string_view text) {
  absl::StatusOr<base::Json> j = base::ParseJson(text);
  if (!j.ok()) {
    return absl::DataLossError(
        base::StrCat("watch event: ", base::FromAbsl(j.status().message())));
  }
  return DecodeWatchEvent(*std::move(j));
}

absl::Status WatchStreamDecoder::Feed(std::string_view data, std::vector<WatchEvent>* events) {
  std::vector<std::string> objects;
  absl::Status s = framer_.Feed(data, &objects);
  // Objects completed before an error are still delivered.
  for (const std::string& text : objects) {
    absl::StatusOr<WatchEvent> e = DecodeWatchEvent(std::string_view(text));
    if (!e.ok()) return e.status();
    events->push_back(*std::move(e));
  }
  return s;
}

}  // namespace spiderpool::kube
