#include "base/json.h"

#include "base/strings.h"

namespace spiderpool::base {

absl::StatusOr<Json> ParseJson(std::string_view text) {
  bool too_deep = false;
  Json::parser_callback_t cb = [&too_deep](int depth, Json::parse_event_t, Json&) {
    if (depth > kMaxJsonDepth) too_deep = true;
    return !too_deep;
  };
  try {
    Json j = Json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/true,
                         /*ignore_comments=*/false);
    if (too_deep) {
      return absl::InvalidArgumentError(
          StrCat("invalid JSON: nested deeper than ", kMaxJsonDepth, " levels"));
    }
    return j;
  } catch (const Json::exception& e) {
    if (too_deep) {
      return absl::InvalidArgumentError(
          StrCat("invalid JSON: nested deeper than ", kMaxJsonDepth, " levels"));
    }
    return absl::InvalidArgumentError(StrCat("invalid JSON: ", e.what()));
  }
}

std::string DumpJson(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string DumpJsonPretty(const Json& j) {
  return j.dump(2, ' ', false, Json::error_handler_t::replace);
}

absl::StatusOr<Json> ApplyJsonPatch(const Json& target, const Json& patch) {
  if (!patch.is_array()) return absl::InvalidArgumentError("JSON patch must be an array");
  try {
    return target.patch(patch);
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(StrCat("cannot apply JSON patch: ", e.what()));
  }
}

Json ApplyMergePatch(const Json& target, const Json& patch) {
  Json out = target;
  out.merge_patch(patch);
  return out;
}

}  // namespace spiderpool::base
