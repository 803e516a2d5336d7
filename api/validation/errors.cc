#include "api/validation/errors.h"

#include <set>
#include <utility>

#include "base/strings.h"

namespace spiderpool::api::validation {

using base::StrCat;

std::string_view ErrorTypeText(ErrorType t) {
  switch (t) {
    case ErrorType::kNotFound: return "Not found";
    case ErrorType::kRequired: return "Required value";
    case ErrorType::kDuplicate: return "Duplicate value";
    case ErrorType::kInvalid: return "Invalid value";
    case ErrorType::kNotSupported: return "Unsupported value";
    case ErrorType::kForbidden: return "Forbidden";
    case ErrorType::kTooLong: return "Too long";
    case ErrorType::kTooMany: return "Too many";
    case ErrorType::kInternal: return "Internal error";
  }
  return "Invalid value";
}

std::string_view ErrorTypeReason(ErrorType t) {
  switch (t) {
    case ErrorType::kNotFound: return "FieldValueNotFound";
    case ErrorType::kRequired: return "FieldValueRequired";
    case ErrorType::kDuplicate: return "FieldValueDuplicate";
    case ErrorType::kInvalid: return "FieldValueInvalid";
    case ErrorType::kNotSupported: return "FieldValueNotSupported";
    case ErrorType::kForbidden: return "FieldValueForbidden";
    case ErrorType::kTooLong: return "FieldValueTooLong";
    case ErrorType::kTooMany: return "FieldValueTooMany";
    case ErrorType::kInternal: return "InternalError";
  }
  return "FieldValueInvalid";
}

// ---- Go renderings ------------------------------------------------------------------------

namespace {

constexpr char kHex[] = "0123456789abcdef";

void AppendHexByte(std::string* out, unsigned char c) {
  out->append("\\x");
  out->push_back(kHex[c >> 4]);
  out->push_back(kHex[c & 0xf]);
}

// Decodes one UTF-8 sequence at s[i]; returns its length (0 = invalid) and the rune.
size_t DecodeRune(std::string_view s, size_t i, uint32_t* rune) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  uint32_t r = 0;
  uint32_t min = 0;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2, r = c & 0x1f, min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3, r = c & 0x0f, min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4, r = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    unsigned char cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xc0) != 0x80) return 0;
    r = (r << 6) | (cc & 0x3f);
  }
  if (r < min || r > 0x10ffff || (r >= 0xd800 && r <= 0xdfff)) return 0;
  *rune = r;
  return n;
}

// The non-ASCII runes strconv.IsPrint rejects that realistic input carries (C1 controls, the
// no-break space, line/paragraph separators, the byte-order mark).
bool IsNonPrintableRune(uint32_t r) {
  return (r >= 0x80 && r <= 0xa0) || r == 0xad || r == 0x2028 || r == 0x2029 || r == 0xfeff;
}

}  // namespace

std::string GoQuote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '\a': out += "\\a"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\v': out += "\\v"; break;
        case '\\': out += "\\\\"; break;
        case '"': out += "\\\""; break;
        default:
          if (c < 0x20 || c == 0x7f) {
            AppendHexByte(&out, c);
          } else {
            out.push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    uint32_t rune = 0;
    size_t n = DecodeRune(s, i, &rune);
    if (n == 0) {
      AppendHexByte(&out, c);
      ++i;
      continue;
    }
    if (IsNonPrintableRune(rune)) {
      out += "\\u";
      for (int shift = 12; shift >= 0; shift -= 4) out.push_back(kHex[(rune >> shift) & 0xf]);
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  out += "\"";
  return out;
}

std::string GoStringSlice(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += " ";
    out += v[i];
  }
  out += "]";
  return out;
}

BadValue BadValue::String(std::string_view s) { return BadValue(GoQuote(s)); }
BadValue BadValue::Int(int64_t v) { return BadValue(StrCat(v)); }
BadValue BadValue::Bool(bool v) { return BadValue(v ? "true" : "false"); }
BadValue BadValue::Null() { return BadValue("\"null\""); }
BadValue BadValue::Raw(std::string rendered) { return BadValue(std::move(rendered)); }
BadValue BadValue::Strings(const std::vector<std::string>& v) {
  // %#v of a []string: nil for an empty slice, as decoded JSON omits it.
  if (v.empty()) return BadValue("[]string(nil)");
  std::string out = "[]string{";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ", ";
    out += GoQuote(v[i]);
  }
  out += "}";
  return BadValue(std::move(out));
}

// ---- FieldError ---------------------------------------------------------------------------

std::string FieldError::Body() const {
  std::string s(ErrorTypeText(type));
  if (bad_value.has_value()) s += StrCat(": ", *bad_value);
  if (!detail.empty()) s += StrCat(": ", detail);
  return s;
}

std::string FieldError::ToString() const {
  return field.empty() ? Body() : StrCat(field, ": ", Body());
}

FieldError NotFound(std::string field, const BadValue& value, std::string detail) {
  return {ErrorType::kNotFound, std::move(field), value.rendered(), std::move(detail)};
}
FieldError Required(std::string field, std::string detail) {
  return {ErrorType::kRequired, std::move(field), std::nullopt, std::move(detail)};
}
FieldError Duplicate(std::string field, const BadValue& value, std::string detail) {
  return {ErrorType::kDuplicate, std::move(field), value.rendered(), std::move(detail)};
}
FieldError Invalid(std::string field, const BadValue& value, std::string detail) {
  return {ErrorType::kInvalid, std::move(field), value.rendered(), std::move(detail)};
}
FieldError NotSupported(std::string field, const BadValue& value,
                        const std::vector<std::string>& supported) {
  std::string detail;
  if (!supported.empty()) {
    detail = "supported values: ";
    for (size_t i = 0; i < supported.size(); ++i) {
      if (i > 0) detail += ", ";
      detail += GoQuote(supported[i]);
    }
  }
  return {ErrorType::kNotSupported, std::move(field), value.rendered(), std::move(detail)};
}
FieldError Forbidden(std::string field, std::string detail) {
  return {ErrorType::kForbidden, std::move(field), std::nullopt, std::move(detail)};
}
FieldError TooLong(std::string field, int64_t max_length) {
  return {ErrorType::kTooLong, std::move(field), std::nullopt,
          max_length >= 0 ? StrCat("may not be more than ", max_length, " bytes")
                          : std::string("value is too long")};
}
FieldError TooMany(std::string field, int64_t actual, int64_t max) {
  std::optional<std::string> value;
  if (actual >= 0) value = StrCat(actual);
  return {ErrorType::kTooMany, std::move(field), std::move(value),
          max >= 0 ? StrCat("must have at most ", max, " items") : std::string("has too many items")};
}
FieldError Internal(std::string field, std::string detail) {
  return {ErrorType::kInternal, std::move(field), std::nullopt, std::move(detail)};
}

// ---- Aggregation and statuses -------------------------------------------------------------

std::string AggregateMessage(const ErrorList& errors) {
  std::vector<std::string> msgs;
  std::set<std::string> seen;
  for (const FieldError& e : errors) {
    std::string m = e.ToString();
    if (seen.insert(m).second) msgs.push_back(std::move(m));
  }
  if (msgs.empty()) return "";
  if (msgs.size() == 1) return msgs[0];
  std::string out = "[";
  for (size_t i = 0; i < msgs.size(); ++i) {
    if (i > 0) out += ", ";
    out += msgs[i];
  }
  out += "]";
  return out;
}

namespace {

std::string Qualified(std::string_view first, std::string_view group) {
  return group.empty() ? std::string(first) : StrCat(first, ".", group);
}

api::Status FailureStatus(int32_t code, std::string reason, std::string message) {
  api::Status s;
  s.status = "Failure";
  s.code = code;
  s.reason = std::move(reason);
  s.message = std::move(message);
  return s;
}

}  // namespace

std::string InvalidMessage(std::string_view group, std::string_view kind, std::string_view name,
                           const ErrorList& errors) {
  std::string out = StrCat(Qualified(kind, group), " ", GoQuote(name), " is invalid");
  std::string agg = AggregateMessage(errors);
  if (!agg.empty()) out += StrCat(": ", agg);
  return out;
}

api::Status InvalidStatus(std::string_view group, std::string_view kind, std::string_view name,
                          const ErrorList& errors) {
  api::Status s = FailureStatus(422, "Invalid", InvalidMessage(group, kind, name, errors));
  api::StatusDetails d;
  d.name = std::string(name);
  d.group = std::string(group);
  d.kind = std::string(kind);
  for (const FieldError& e : errors) {
    d.causes.push_back({std::string(ErrorTypeReason(e.type)), e.Body(), e.field});
  }
  s.details = std::move(d);
  return s;
}

api::Status ForbiddenStatus(std::string_view group, std::string_view resource,
                            std::string_view name, std::string_view text) {
  std::string message;
  if (group.empty() && resource.empty()) {
    message = StrCat("forbidden: ", text);
  } else if (name.empty()) {
    message = StrCat(Qualified(resource, group), " is forbidden: ", text);
  } else {
    message = StrCat(Qualified(resource, group), " ", GoQuote(name), " is forbidden: ", text);
  }
  api::Status s = FailureStatus(403, "Forbidden", std::move(message));
  api::StatusDetails d;
  d.name = std::string(name);
  d.group = std::string(group);
  d.kind = std::string(resource);
  s.details = std::move(d);
  return s;
}

api::Status AlreadyExistsStatus(std::string_view group, std::string_view resource,
                                std::string_view name) {
  api::Status s = FailureStatus(
      409, "AlreadyExists", StrCat(Qualified(resource, group), " ", GoQuote(name), " already exists"));
  api::StatusDetails d;
  d.name = std::string(name);
  d.group = std::string(group);
  d.kind = std::string(resource);
  s.details = std::move(d);
  return s;
}

std::string Result::Message() const {
  if (denied.has_value()) return denied->message;
  if (errors.empty()) return "";
  return InvalidMessage(group, kind, name, errors);
}

api::Status Result::ToStatus() const {
  if (denied.has_value()) return *denied;
  if (!errors.empty()) return InvalidStatus(group, kind, name, errors);
  api::Status s;
  s.status = "Success";
  s.code = 200;
  return s;
}

absl::Status Result::ToAbslStatus() const {
  if (ok()) return absl::OkStatus();
  std::string msg = Message();
  if (denied.has_value()) {
    if (denied->code == 409) return absl::AlreadyExistsError(msg);
    if (denied->code == 403) return absl::PermissionDeniedError(msg);
    return absl::FailedPreconditionError(msg);
  }
  return absl::InvalidArgumentError(msg);
}

}  // namespace spiderpool::api::validation
