#include "base/json.h"

#include "base/strings.h"

namespace spiderpool::base {

namespace {

// nlohmann's DOM builder behind a depth check. (The parser-callback form of Json::parse,
// used before, rescans the parent object at the end of every child object: quadratic on
// objects with many object members, e.g. 100 ms for a 5000-record status.allocatedIPs.)
class DepthLimitedDom {
 public:
  explicit DepthLimitedDom(Json& result) : dom_(result, /*allow_exceptions_=*/true) {}
  bool too_deep() const { return too_deep_; }

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(Json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(Json::number_float_t v, const Json::string_t& s) {
    return dom_.number_float(v, s);
  }
  bool string(Json::string_t& v) { return dom_.string(v); }
  bool binary(Json::binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) { return Enter() && dom_.start_object(n); }
  bool key(Json::string_t& v) { return dom_.key(v); }
  bool end_object() {
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) { return Enter() && dom_.start_array(n); }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  template <typename Exception>
  bool parse_error(std::size_t pos, const std::string& token, const Exception& ex) {
    return dom_.parse_error(pos, token, ex);  // throws ex (allow_exceptions)
  }

 private:
  bool Enter() {
    if (++depth_ > kMaxJsonDepth) too_deep_ = true;
    return !too_deep_;
  }
  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  int depth_ = 0;
  bool too_deep_ = false;
};

}  // namespace

absl::StatusOr<Json> ParseJson(std::string_view text) {
  Json j;
  DepthLimitedDom sax(j);
  try {
    Json::sax_parse(text.begin(), text.end(), &sax, nlohmann::detail::input_format_t::json,
                    /*strict=*/true, /*ignore_comments=*/false);
  } catch (const Json::exception& e) {
    if (sax.too_deep()) {
      return absl::InvalidArgumentError(
          StrCat("invalid JSON: nested deeper than ", kMaxJsonDepth, " levels"));
    }
    return absl::InvalidArgumentError(StrCat("invalid JSON: ", e.what()));
  }
  if (sax.too_deep()) {
    return absl::InvalidArgumentError(
        StrCat("invalid JSON: nested deeper than ", kMaxJsonDepth, " levels"));
  }
  return j;
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
