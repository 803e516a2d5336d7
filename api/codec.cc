#include "api/codec.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_join.h"
#include "base/ip.h"
#include "base/strings.h"

namespace spiderpool::api {

absl::Status DecodeErrors::ToStatus(std::string_view what) const {
  if (errors.empty()) return absl::OkStatus();
  std::vector<std::string> parts;
  parts.reserve(errors.size());
  for (const FieldError& e : errors) parts.push_back(e.ToString());
  std::string msg = absl::StrJoin(parts, "; ");
  if (!what.empty()) msg = base::StrCat(what, ": ", msg);
  return absl::InvalidArgumentError(msg);
}

std::string FormatTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

std::string FormatMicroTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

absl::StatusOr<absl::Time> ParseTime(std::string_view text) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, base::ToAbsl(text), &t, &err)) {
    return absl::InvalidArgumentError(base::StrCat("\"", text, "\" is not an RFC 3339 time"));
  }
  return t;
}

namespace codec_internal {

std::string JoinPath(std::string_view parent, std::string_view name) {
  if (parent.empty()) return std::string(name);
  return base::StrCat(parent, ".", name);
}

std::string IndexPath(std::string_view parent, size_t i) {
  return base::StrCat(parent, "[", i, "]");
}

std::string KeyPath(std::string_view parent, std::string_view key) {
  return base::StrCat(parent, "[", key, "]");
}

std::string Describe(const Json& j) {
  std::string text = base::DumpJson(j);
  if (text.size() > 64) text = text.substr(0, 61) + "...";
  switch (j.type()) {
    case Json::value_t::string: return "string " + text;
    case Json::value_t::boolean: return "boolean " + text;
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "integer " + text;
    case Json::value_t::number_float: return "number " + text;
    case Json::value_t::array: return "array";
    case Json::value_t::object: return "object";
    case Json::value_t::null: return "null";
    default: return text;
  }
}

bool CheckFormat(const std::string& value, Format f, std::string* message) {
  switch (f) {
    case Format::kNone:
      return true;
    case Format::kIP: {
      auto r = base::IPAddress::Parse(value);
      if (!r.ok()) *message = std::string(r.status().message());
      return r.ok();
    }
    case Format::kCIDR: {
      auto r = base::IPPrefix::Parse(value);
      if (!r.ok()) *message = std::string(r.status().message());
      return r.ok();
    }
    case Format::kIPRange: {
      auto r = base::IPRange::Parse(value);
      if (!r.ok()) *message = std::string(r.status().message());
      return r.ok();
    }
    case Format::kIPOrCIDR: {
      if (base::IPAddress::Parse(value).ok() || base::IPPrefix::Parse(value).ok()) return true;
      *message = base::StrCat("\"", value, "\" is neither an IP nor a CIDR");
      return false;
    }
  }
  return true;
}

namespace {

bool InEnum(const std::string& v, const FieldOpts& o) {
  if (o.enum_values.empty()) return true;
  for (std::string_view e : o.enum_values) {
    if (e == v) return true;
  }
  return false;
}

std::string EnumList(const FieldOpts& o) {
  std::vector<std::string> q;
  for (std::string_view e : o.enum_values) q.push_back(base::StrCat("\"", e, "\""));
  return absl::StrJoin(q, ", ");
}

void CheckInt(int64_t v, const FieldOpts& o, const std::string& path, DecodeErrors* errs) {
  if (o.minimum && v < *o.minimum) {
    errs->Add(path, base::StrCat("must be greater than or equal to ", *o.minimum, ", got ", v));
  }
  if (o.maximum && v > *o.maximum) {
    errs->Add(path, base::StrCat("must be less than or equal to ", *o.maximum, ", got ", v));
  }
  if (!InEnum(std::to_string(v), o)) {
    errs->Add(path, base::StrCat("unsupported value ", v, ": supported values: ", EnumList(o)));
  }
}

bool ReadInt(const Json& j, int64_t* out) {
  if (j.is_number_integer()) {
    *out = j.get<int64_t>();
    return true;
  }
  if (j.is_number_unsigned()) {
    uint64_t u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (j.is_number_float()) {
    double d = j.get<double>();
    if (!std::isfinite(d) || std::floor(d) != d || d < -9.2e18 || d > 9.2e18) return false;
    *out = static_cast<int64_t>(d);
    return true;
  }
  return false;
}

}  // namespace

void DecodeScalar(const Json& j, std::string& out, const FieldOpts& o, const std::string& path,
                  DecodeErrors* errs) {
  if (!j.is_string()) {
    errs->Add(path, "expected string, got " + Describe(j));
    return;
  }
  out = j.get<std::string>();
  if (o.required && !o.allow_empty && out.empty()) {
    errs->Add(path, "Required value");
    return;
  }
  if (!InEnum(out, o)) {
    errs->Add(path, base::StrCat("unsupported value \"", out, "\": supported values: ",
                                 EnumList(o)));
    return;
  }
  std::string msg;
  if (!CheckFormat(out, o.format, &msg)) errs->Add(path, msg);
}

void DecodeScalar(const Json& j, bool& out, const FieldOpts&, const std::string& path,
                  DecodeErrors* errs) {
  if (!j.is_boolean()) {
    errs->Add(path, "expected boolean, got " + Describe(j));
    return;
  }
  out = j.get<bool>();
}

void DecodeScalar(const Json& j, int64_t& out, const FieldOpts& o, const std::string& path,
                  DecodeErrors* errs) {
  if (!ReadInt(j, &out)) {
    errs->Add(path, "expected integer, got " + Describe(j));
    return;
  }
  CheckInt(out, o, path, errs);
}

void DecodeScalar(const Json& j, int32_t& out, const FieldOpts& o, const std::string& path,
                  DecodeErrors* errs) {
  int64_t v = 0;
  if (!ReadInt(j, &v) || v < std::numeric_limits<int32_t>::min() ||
      v > std::numeric_limits<int32_t>::max()) {
    errs->Add(path, "expected 32-bit integer, got " + Describe(j));
    return;
  }
  out = static_cast<int32_t>(v);
  CheckInt(v, o, path, errs);
}

void DecodeScalar(const Json& j, double& out, const FieldOpts&, const std::string& path,
                  DecodeErrors* errs) {
  if (!j.is_number()) {
    errs->Add(path, "expected number, got " + Describe(j));
    return;
  }
  out = j.get<double>();
}

void DecodeScalar(const Json& j, Json& out, const FieldOpts&, const std::string&, DecodeErrors*) {
  out = j;
}

void DecodeScalar(const Json& j, Time& out, const FieldOpts&, const std::string& path,
                  DecodeErrors* errs) {
  if (!j.is_string()) {
    errs->Add(path, "expected RFC 3339 time string, got " + Describe(j));
    return;
  }
  auto t = ParseTime(j.get<std::string>());
  if (!t.ok()) {
    errs->Add(path, std::string(t.status().message()));
    return;
  }
  out.value = *t;
}

void DecodeScalar(const Json& j, MicroTime& out, const FieldOpts& o, const std::string& path,
                  DecodeErrors* errs) {
  Time t;
  DecodeScalar(j, t, o, path, errs);
  out.value = t.value;
}

void Decoder::Finish() {
  if (unknown_ == nullptr) return;
  *unknown_ = Json::object();
  for (auto it = obj_.begin(); it != obj_.end(); ++it) {
    bool known = false;
    for (std::string_view c : consumed_) {
      if (c == it.key()) {
        known = true;
        break;
      }
    }
    if (!known) (*unknown_)[it.key()] = it.value();
  }
}

bool IsZeroJson(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return true;
    case Json::value_t::boolean: return !j.get<bool>();
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return j == 0;
    case Json::value_t::string: return j.get_ref<const std::string&>().empty();
    case Json::value_t::array:
    case Json::value_t::object: return j.empty();
    default: return false;
  }
}

Json EncodeScalar(const std::string& v) { return v; }
Json EncodeScalar(bool v) { return v; }
Json EncodeScalar(int64_t v) { return v; }
Json EncodeScalar(int32_t v) { return v; }
Json EncodeScalar(double v) { return v; }
Json EncodeScalar(const Json& v) { return v; }
Json EncodeScalar(const Time& v) { return api::FormatTime(v.value); }
Json EncodeScalar(const MicroTime& v) { return api::FormatMicroTime(v.value); }

void Encoder::Finish() {
  if (unknown_ == nullptr || !unknown_->is_object()) return;
  for (auto it = unknown_->begin(); it != unknown_->end(); ++it) {
    if (!out_->contains(it.key())) (*out_)[it.key()] = it.value();
  }
}

}  // namespace codec_internal
}  // namespace spiderpool::api
