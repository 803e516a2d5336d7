#include "kube/testing/openapi/schema.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/cord.h"
#include "base/strings.h"
#include "kube/testing/openapi/formats.h"
#include "kube/testing/openapi/go_format.h"
#include "kube/testing/openapi/schema.h"
#include "kube/testing/openapi/schema_internal.h"

namespace spiderpool::kube::testing::openapi {

using base::Json;
using base::StrCat;

namespace internal {
namespace {


std::string WithDetail(std::string body, std::string_view detail) {
  if (!detail.empty()) {
    body += ": ";
    body += detail;
  }
  return body;
}

}  // namespace

FieldError Required(std::string field, std::string_view detail) {
  return {"FieldValueRequired", std::move(field), WithDetail("Required value", detail)};
}

FieldError Forbidden(std::string field, std::string_view detail) {
  return {"FieldValueForbidden", std::move(field), WithDetail("Forbidden", detail)};
}

FieldError Invalid(std::string field, const Json& value, std::string_view detail) {
  return {"FieldValueInvalid", std::move(field),
          WithDetail(StrCat("Invalid value: ", GoBadValue(value)), detail)};
}

FieldError TypeInvalid(std::string field, const Json& value, std::string_view detail) {
  return {"FieldValueTypeInvalid", std::move(field),
          WithDetail(StrCat("Invalid value: ", GoBadValue(value)), detail)};
}

FieldError NotSupported(std::string field, const Json& value,
                        const std::vector<std::string>& valid) {
  std::string detail;
  if (!valid.empty()) {
    detail = "supported values: ";
    for (size_t i = 0; i < valid.size(); ++i) {
      if (i > 0) detail += ", ";
      detail += GoQuote(valid[i]);
    }
  }
  return {"FieldValueNotSupported", std::move(field),
          WithDetail(StrCat("Unsupported value: ", GoBadValue(value)), detail)};
}

FieldError TooLong(std::string field, int64_t max) {
  return {"FieldValueTooLong", std::move(field),
          max >= 0 ? StrCat("Too long: may not be more than ", max, " bytes")
                   : std::string("Too long: value is too long")};
}

FieldError TooMany(std::string field, int64_t actual, int64_t max) {
  return {"FieldValueTooMany", std::move(field),
          StrCat("Too many: ", actual, ": must have at most ", max, " items")};
}

FieldError Duplicate(std::string field, const Json& value) {
  return {"FieldValueDuplicate", std::move(field), StrCat("Duplicate value: ", GoBadValue(value))};
}

// field.Path helpers.
std::string Child(std::string_view path, std::string_view name) {
  if (path.empty()) return std::string(name);
  return StrCat(path, ".", name);
}
std::string Key(std::string_view path, std::string_view key) { return StrCat(path, "[", key, "]"); }
std::string Index(std::string_view path, size_t i) { return StrCat(path, "[", i, "]"); }

// "<name> in body <rest>", kube-openapi's message shape.
std::string InBody(std::string_view name, std::string_view rest) {
  return StrCat(name, " in body ", rest);
}

std::vector<std::string> EnumStrings(const Json& values) {
  std::vector<std::string> out;
  for (const auto& v : values) out.push_back(GoEnumValue(v));
  return out;
}

constexpr double kMaxJsonFloat = 9007199254740992.0;  // 2^53

// swag.IsFloat64AJSONInteger.
bool IsFloat64AJsonInteger(double f) {
  if (std::isnan(f) || std::isinf(f) || f < -kMaxJsonFloat || f > kMaxJsonFloat) return false;
  if (f == std::trunc(f)) return true;
  if (f < 0) return false;
  double g = std::trunc(f);
  double diff = std::fabs(f - g);
  if (g == 0) return false;
  return diff / (std::fabs(f) + g) < 1e-9;
}

bool IsInt(const Json& v) {
  return v.is_number_integer() &&
         (!v.is_number_unsigned() ||
          v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
}

// The JSON type name kube-openapi infers from a decoded Go value.
std::string_view KindOf(const Json& v) {
  switch (v.type()) {
    case Json::value_t::boolean:
      return "boolean";
    case Json::value_t::string:
      return "string";
    case Json::value_t::number_integer:
      return "integer";
    case Json::value_t::number_unsigned:
      return IsInt(v) ? "integer" : "number";
    case Json::value_t::number_float:
      return "number";
    case Json::value_t::array:
      return "array";
    case Json::value_t::object:
      return "object";
    default:
      return "null";
  }
}

double AsDouble(const Json& v) {
  if (v.is_number_unsigned()) return static_cast<double>(v.get<uint64_t>());
  if (v.is_number_integer()) return static_cast<double>(v.get<int64_t>());
  return v.get<double>();
}

bool JsonEqual(const Json& a, const Json& b) {
  if (a.is_number() && b.is_number()) {
    if (IsInt(a) && IsInt(b)) return a.get<int64_t>() == b.get<int64_t>();
    return AsDouble(a) == AsDouble(b);
  }
  return a == b;
}

const Json& IntOrStringAnyOf() {
  static const Json* kAnyOf = new Json(Json::array({{{"type", "integer"}}, {{"type", "string"}}}));
  return *kAnyOf;
}

std::string Aggregate(const std::vector<FieldError>& errors) {
  std::vector<std::string> msgs;
  std::set<std::string> seen;
  for (const auto& e : errors) {
    std::string m = e.ToString();
    if (seen.insert(m).second) msgs.push_back(std::move(m));
  }
  if (msgs.size() == 1) return msgs[0];
  std::string out = "[";
  for (size_t i = 0; i < msgs.size(); ++i) {
    if (i > 0) out += ", ";
    out += msgs[i];
  }
  return out + "]";
}


}  // namespace internal

using namespace internal;  // NOLINT(build/namespaces)

std::string FieldError::ToString() const { return StrCat(field, ": ", message); }

const SchemaNode* SchemaNode::Child(std::string_view field) const {
  auto it = properties.find(std::string(field));
  if (it != properties.end()) return it->second.get();
  if (additional_properties_kind == Additional::kSchema) return additional_properties.get();
  return nullptr;
}

void Schema::Default(Json* obj) const {
  PruneNonNullableNullsWithoutDefaults(obj, root_.get());
  ApplyDefaults(obj, root_.get());
}

void Schema::Prune(Json* obj, std::vector<std::string>* pruned_paths) const {
  size_t first = pruned_paths == nullptr ? 0 : pruned_paths->size();
  PruneUnknownFields(obj, root_.get(), /*embedded=*/true, pruned_paths);
  if (pruned_paths != nullptr) std::sort(pruned_paths->begin() + first, pruned_paths->end());
}

std::vector<FieldError> Schema::Validate(const Json& obj) const {
  std::vector<FieldError> errs;
  ValidateAgainst(*root_, obj, &errs);
  return errs;
}

const SchemaNode* Schema::Find(std::string_view path) const {
  const SchemaNode* n = root_.get();
  if (!path.empty() && path[0] == '.') path.remove_prefix(1);
  while (!path.empty() && n != nullptr) {
    size_t end = path.find_first_of(".[");
    std::string_view name = path.substr(0, end);
    if (!name.empty()) n = n->Child(name);
    path.remove_prefix(end == std::string_view::npos ? path.size() : end);
    while (!path.empty() && path[0] == '[' && n != nullptr) {
      size_t close = path.find(']');
      if (close == std::string_view::npos) return nullptr;
      n = n->items.get();
      path.remove_prefix(close + 1);
    }
    if (!path.empty() && path[0] == '.') path.remove_prefix(1);
  }
  return n;
}

// ---- ValidateObject & Status helpers ---------------------------------------------------------

absl::Status ValidateObject(const Schema& schema, Json* obj, std::vector<FieldError>* errors,
                            std::vector<std::string>* pruned_paths) {
  schema.Prune(obj, pruned_paths);
  schema.Default(obj);
  std::vector<FieldError> errs = schema.Validate(*obj);
  if (errors != nullptr) *errors = errs;
  if (errs.empty()) return absl::OkStatus();
  absl::Status status = absl::InvalidArgumentError(Aggregate(errs));
  Json causes = Json::array();
  for (const auto& e : errs) {
    causes.push_back({{"reason", e.type}, {"message", e.message}, {"field", e.field}});
  }
  status.SetPayload(kFieldErrorsPayloadUrl, absl::Cord(base::DumpJson(causes)));
  return status;
}

std::vector<FieldError> FieldErrorsFromStatus(const absl::Status& status) {
  std::vector<FieldError> out;
  auto payload = status.GetPayload(kFieldErrorsPayloadUrl);
  if (!payload.has_value()) return out;
  auto parsed = base::ParseJson(std::string(*payload));
  if (!parsed.ok() || !parsed->is_array()) return out;
  for (const auto& c : *parsed) {
    if (!c.is_object()) continue;
    out.push_back({c.value("reason", ""), c.value("field", ""), c.value("message", "")});
  }
  return out;
}

std::string AggregateMessage(const std::vector<FieldError>& errors) { return Aggregate(errors); }

std::string InvalidMessage(std::string_view group, std::string_view kind, std::string_view name,
                           const std::vector<FieldError>& errors) {
  std::string gk = group.empty() ? std::string(kind) : StrCat(kind, ".", group);
  std::string out = StrCat(gk, " ", GoQuote(name), " is invalid");
  if (!errors.empty()) out += StrCat(": ", Aggregate(errors));
  return out;
}

Json InvalidStatusJson(std::string_view group, std::string_view kind, std::string_view name,
                       const std::vector<FieldError>& errors) {
  Json details = Json::object();
  if (!name.empty()) details["name"] = std::string(name);
  if (!group.empty()) details["group"] = std::string(group);
  if (!kind.empty()) details["kind"] = std::string(kind);
  Json causes = Json::array();
  for (const auto& e : errors) {
    Json c = {{"reason", e.type}};
    if (!e.message.empty()) c["message"] = e.message;
    if (!e.field.empty()) c["field"] = e.field;
    causes.push_back(std::move(c));
  }
  if (!causes.empty()) details["causes"] = std::move(causes);
  return Json{{"kind", "Status"},
              {"apiVersion", "v1"},
              {"metadata", Json::object()},
              {"status", "Failure"},
              {"message", InvalidMessage(group, kind, name, errors)},
              {"reason", "Invalid"},
              {"details", std::move(details)},
              {"code", 422}};
}

}  // namespace spiderpool::kube::testing::openapi
