#pragma once
// The single boundary to nlohmann/json's throwing calls: parse and dump never throw here.

#include <functional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace spiderpool::base {

using Json = nlohmann::json;

// Deepest nesting accepted from untrusted input (Kubernetes objects stay far below it).
inline constexpr int kMaxJsonDepth = 128;

// Parses one JSON document. Errors carry the byte position; nesting deeper than
// kMaxJsonDepth is rejected (a stack-exhaustion guard for untrusted input).
absl::StatusOr<Json> ParseJson(std::string_view text);
// Streams the members of a top-level JSON object to `fn(key, value)`, in document order,
// holding one member's DOM at a time (a status map of thousands of records costs one record,
// not the whole tree). `null` has no members. Errors as ParseJson; any other top-level type
// is InvalidArgument ("expected a JSON object, got <type>").
absl::Status ForEachJsonMember(std::string_view text,
                               const std::function<void(std::string key, Json value)>& fn);
// Compact serialization; invalid UTF-8 in strings is replaced instead of throwing.
std::string DumpJson(const Json& j);
std::string DumpJsonPretty(const Json& j);

// Applies an RFC 6902 JSON patch / RFC 7386 merge patch to `target`.
absl::StatusOr<Json> ApplyJsonPatch(const Json& target, const Json& patch);
Json ApplyMergePatch(const Json& target, const Json& patch);

}  // namespace spiderpool::base
