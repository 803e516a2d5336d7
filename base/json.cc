#include "base/json.h"

#include <optional>

#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::base {

namespace {

// What both SAX handlers below do with a syntax error: keep its text and stop the parse
// (RunSax turns it into a Status).
class SaxErrorSink {
 public:
  template <typename Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& ex) {
    error_ = ex.what();
    return false;
  }
  const std::string& error() const { return error_; }

 protected:
  std::string error_;
};

// nlohmann's DOM builder behind a depth check. (The parser-callback form of Json::parse,
// used before, rescans the parent object at the end of every child object: quadratic on
// objects with many object members, e.g. 100 ms for a 5000-record status.allocatedIPs.)
class DepthLimitedDom : public SaxErrorSink {
 public:
  explicit DepthLimitedDom(Json& result) : dom_(result, /*allow_exceptions_=*/false) {}
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

 private:
  bool Enter() {
    if (++depth_ > kMaxJsonDepth) too_deep_ = true;
    return !too_deep_;
  }
  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  int depth_ = 0;
  bool too_deep_ = false;
};

// The members of a top-level object, one at a time: scalars at depth 1 go straight to the
// callback, objects/arrays are built by a DOM builder of their own and handed over when they
// close.
class MemberStream : public SaxErrorSink {
 public:
  explicit MemberStream(const std::function<void(std::string, Json)>& fn) : fn_(fn) {}
  bool too_deep() const { return too_deep_; }
  const char* top_type() const { return top_type_; }

  bool null() { return Scalar(Json(nullptr), "null"); }
  bool boolean(bool v) { return Scalar(Json(v), "boolean"); }
  bool number_integer(Json::number_integer_t v) { return Scalar(Json(v), "number"); }
  bool number_unsigned(Json::number_unsigned_t v) { return Scalar(Json(v), "number"); }
  bool number_float(Json::number_float_t v, const Json::string_t& s) {
    if (depth_ >= 2) return member_dom_->number_float(v, s);
    return Scalar(Json(v), "number");
  }
  bool string(Json::string_t& v) {
    if (depth_ >= 2) return member_dom_->string(v);
    return Scalar(Json(std::move(v)), "string");
  }
  bool binary(Json::binary_t& v) {
    if (depth_ >= 2) return member_dom_->binary(v);
    return Scalar(Json(v), "binary");
  }
  bool start_object(std::size_t n) { return Start(n, /*object=*/true); }
  bool key(Json::string_t& v) {
    if (depth_ >= 2) return member_dom_->key(v);
    key_ = std::move(v);
    return true;
  }
  bool end_object() { return End(/*object=*/true); }
  bool start_array(std::size_t n) { return Start(n, /*object=*/false); }
  bool end_array() { return End(/*object=*/false); }

 private:
  bool Scalar(Json v, const char* type) {
    if (depth_ == 0) {  // a top-level scalar: only null is allowed (no members)
      if (!v.is_null()) top_type_ = type;
      return v.is_null();
    }
    if (depth_ >= 2) {
      if (v.is_null()) return member_dom_->null();
      if (v.is_boolean()) return member_dom_->boolean(v.get<bool>());
      if (v.is_number_unsigned()) {
        return member_dom_->number_unsigned(v.get<Json::number_unsigned_t>());
      }
      return member_dom_->number_integer(v.get<Json::number_integer_t>());
    }
    fn_(std::move(key_), std::move(v));
    return true;
  }
  bool Start(std::size_t n, bool object) {
    if (++depth_ > kMaxJsonDepth) {
      too_deep_ = true;
      return false;
    }
    if (depth_ == 1) {
      if (!object) top_type_ = "array";
      return object;
    }
    if (depth_ == 2) {
      member_ = Json();
      member_dom_.emplace(member_, /*allow_exceptions_=*/false);
    }
    return object ? member_dom_->start_object(n) : member_dom_->start_array(n);
  }
  bool End(bool object) {
    const int depth = depth_--;
    if (depth == 1) return true;  // the top-level object closed
    const bool ok = object ? member_dom_->end_object() : member_dom_->end_array();
    if (depth == 2) {
      member_dom_.reset();
      fn_(std::move(key_), std::move(member_));
    }
    return ok;
  }

  const std::function<void(std::string, Json)>& fn_;
  int depth_ = 0;
  bool too_deep_ = false;
  const char* top_type_ = nullptr;
  std::string key_;
  Json member_;
  std::optional<nlohmann::detail::json_sax_dom_parser<Json>> member_dom_;
};

// Runs a SAX parse (strict, no comments). The handlers report syntax errors by stopping the
// parse (nothing of ours throws); the catch is the boundary for whatever nlohmann itself may
// still throw. `*complete` is false when a handler stopped the parse.
template <typename Sax>
absl::Status RunSax(std::string_view text, Sax& sax, bool* complete) {
  std::string library_error;
  try {
    *complete = Json::sax_parse(text.begin(), text.end(), &sax,
                                nlohmann::detail::input_format_t::json,
                                /*strict=*/true, /*ignore_comments=*/false);
  } catch (const Json::exception& e) {
    library_error = e.what();
  }
  if (sax.too_deep()) {
    return absl::InvalidArgumentError(
        StrCat("invalid JSON: nested deeper than ", kMaxJsonDepth, " levels"));
  }
  const std::string& error = !sax.error().empty() ? sax.error() : library_error;
  if (!error.empty()) return absl::InvalidArgumentError(StrCat("invalid JSON: ", error));
  return absl::OkStatus();
}

}  // namespace

absl::Status ForEachJsonMember(std::string_view text,
                               const std::function<void(std::string key, Json value)>& fn) {
  MemberStream sax(fn);
  bool complete = false;
  SP_RETURN_IF_ERROR(RunSax(text, sax, &complete));
  if (sax.top_type() != nullptr) {
    return absl::InvalidArgumentError(StrCat("expected a JSON object, got ", sax.top_type()));
  }
  if (!complete) return absl::InvalidArgumentError("invalid JSON");
  return absl::OkStatus();
}

absl::StatusOr<Json> ParseJson(std::string_view text) {
  Json j;
  DepthLimitedDom sax(j);
  bool complete = false;
  SP_RETURN_IF_ERROR(RunSax(text, sax, &complete));
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
