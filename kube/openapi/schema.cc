#include "kube/openapi/schema.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/cord.h"
#include "base/strings.h"
#include "kube/openapi/formats.h"
#include "kube/openapi/go_format.h"

namespace spiderpool::kube::openapi {

using base::Json;
using base::StrCat;

// ---- field.Error constructors (k8s.io/apimachinery/pkg/util/validation/field) ----------------
namespace {

std::string WithDetail(std::string body, std::string_view detail) {
  if (!detail.empty()) {
    body += ": ";
    body += detail;
  }
  return body;
}

FieldError Required(std::string field, std::string_view detail = "") {
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

const Json kIntOrStringAnyOf = Json::array({{{"type", "integer"}}, {{"type", "string"}}});

}  // namespace

std::string FieldError::ToString() const { return StrCat(field, ": ", message); }

const SchemaNode* SchemaNode::Child(std::string_view field) const {
  auto it = properties.find(std::string(field));
  if (it != properties.end()) return it->second.get();
  if (additional_properties_kind == Additional::kSchema) return additional_properties.get();
  return nullptr;
}

// ---- Pruning (pruning/algorithm.go) ---------------------------------------------------------
namespace {

bool IsMetaField(const std::string& k) {
  return k == "apiVersion" || k == "kind" || k == "metadata";
}

class Pruner {
 public:
  explicit Pruner(std::vector<std::string>* out) : out_(out) {}

  // `embedded` marks the resource root / x-kubernetes-embedded-resource objects.
  void Prune(Json* x, const SchemaNode* s, bool embedded, const std::string& path) {
    if (s != nullptr && s->preserve_unknown_fields) {
      SkipPrune(x, s, embedded || s->embedded_resource, path);
      return;
    }
    if (x->is_object()) {
      if (s == nullptr) {
        for (auto it = x->begin(); it != x->end(); ++it) Record(Child(path, it.key()));
        *x = Json::object();
        return;
      }
      bool emb = embedded || s->embedded_resource;
      for (auto it = x->begin(); it != x->end();) {
        const std::string& k = it.key();
        if (emb && IsMetaField(k)) {
          ++it;
          continue;
        }
        auto prop = s->properties.find(k);
        if (prop != s->properties.end()) {
          Prune(&it.value(), prop->second.get(), false, Child(path, k));
          ++it;
        } else if (s->additional_properties_kind != SchemaNode::Additional::kUnset) {
          Prune(&it.value(), s->additional_properties.get(), false, Child(path, k));
          ++it;
        } else {
          if (!IsMetaField(k) || !path.empty()) Record(Child(path, k));
          it = x->erase(it);
        }
      }
    } else if (x->is_array()) {
      const SchemaNode* items = s == nullptr ? nullptr : s->items.get();
      for (size_t i = 0; i < x->size(); ++i) Prune(&(*x)[i], items, false, Index(path, i));
    }
  }

 private:
  void SkipPrune(Json* x, const SchemaNode* s, bool embedded, const std::string& path) {
    if (s == nullptr) return;
    if (x->is_object()) {
      for (auto it = x->begin(); it != x->end(); ++it) {
        const std::string& k = it.key();
        if (embedded && IsMetaField(k)) continue;
        auto prop = s->properties.find(k);
        if (prop != s->properties.end()) {
          Prune(&it.value(), prop->second.get(), false, Child(path, k));
        } else if (s->additional_properties_kind != SchemaNode::Additional::kUnset) {
          Prune(&it.value(), s->additional_properties.get(), false, Child(path, k));
        }
      }
    } else if (x->is_array()) {
      for (size_t i = 0; i < x->size(); ++i) {
        SkipPrune(&(*x)[i], s->items.get(), false, Index(path, i));
      }
    }
  }

  void Record(std::string path) {
    if (out_ != nullptr) out_->push_back(std::move(path));
  }

  std::vector<std::string>* out_;
};

// ---- Defaulting (defaulting/prunenulls.go + algorithm.go) ------------------------------------

const SchemaNode* FieldSchema(const SchemaNode* s, const std::string& k) {
  if (s == nullptr) return nullptr;
  auto it = s->properties.find(k);
  if (it != s->properties.end()) return it->second.get();
  if (s->additional_properties_kind == SchemaNode::Additional::kSchema) {
    return s->additional_properties.get();
  }
  return nullptr;
}

void PruneNonNullableNullsWithoutDefaults(Json* x, const SchemaNode* s) {
  if (x->is_object()) {
    for (auto it = x->begin(); it != x->end();) {
      const SchemaNode* fs = FieldSchema(s, it.key());
      if (it.value().is_null() && fs != nullptr && !fs->nullable && !fs->default_value) {
        it = x->erase(it);
      } else {
        PruneNonNullableNullsWithoutDefaults(&it.value(), fs);
        ++it;
      }
    }
  } else if (x->is_array()) {
    const SchemaNode* items = s == nullptr ? nullptr : s->items.get();
    for (auto& e : *x) PruneNonNullableNullsWithoutDefaults(&e, items);
  }
}

bool IsNonNullableNull(const Json& x, const SchemaNode* s) {
  return x.is_null() && s != nullptr && !s->nullable;
}

void ApplyDefaults(Json* x, const SchemaNode* s) {
  if (s == nullptr) return;
  if (x->is_object()) {
    for (const auto& [k, prop] : s->properties) {
      if (!prop->default_value) continue;
      auto it = x->find(k);
      if (it == x->end() || IsNonNullableNull(*it, prop.get())) (*x)[k] = *prop->default_value;
    }
    for (auto it = x->begin(); it != x->end(); ++it) {
      auto prop = s->properties.find(it.key());
      if (prop != s->properties.end()) {
        ApplyDefaults(&it.value(), prop->second.get());
      } else if (s->additional_properties_kind == SchemaNode::Additional::kSchema) {
        const SchemaNode* ap = s->additional_properties.get();
        if (IsNonNullableNull(it.value(), ap)) {
          it.value() = ap->default_value ? *ap->default_value : Json(nullptr);
        }
        ApplyDefaults(&it.value(), ap);
      }
    }
  } else if (x->is_array()) {
    const SchemaNode* items = s->items.get();
    for (auto& e : *x) {
      if (IsNonNullableNull(e, items))
        e = items->default_value ? *items->default_value : Json(nullptr);
      ApplyDefaults(&e, items);
    }
  }
}

// ---- Validation (kube-openapi validate + listtype) -------------------------------------------

class Validator {
 public:
  explicit Validator(std::vector<FieldError>* out) : out_(out) {}

  void Validate(const SchemaNode& s, const Json& data, const std::string& path) {
    if (data.is_null()) {
      TypeNull(s, path);
      Enum(s, data, path);
      return;
    }
    std::string_view kind = KindOf(data);
    Type(s, data, kind, path);
    Junctors(s, data, path);
    if (kind == "string") {
      String(s, data.get_ref<const std::string&>(), path);
    } else if (kind == "integer" || kind == "number") {
      Number(s, data, path);
    } else if (kind == "array") {
      Array(s, data, path);
    }
    Enum(s, data, path);
    if (kind == "object") Object(s, data, path);
  }

  // x-kubernetes-list-type uniqueness (listtype/validation.go), run after Validate.
  void ListTypes(const SchemaNode& s, const Json& obj, const std::string& path) {
    if (obj.is_object()) {
      if (s.additional_properties_kind == SchemaNode::Additional::kSchema) {
        for (auto it = obj.begin(); it != obj.end(); ++it) {
          ListTypes(*s.additional_properties, it.value(), Key(path, it.key()));
        }
      }
      for (auto it = obj.begin(); it != obj.end(); ++it) {
        auto prop = s.properties.find(it.key());
        if (prop != s.properties.end()) {
          ListTypes(*prop->second, it.value(), Child(path, it.key()));
        }
      }
    } else if (obj.is_array()) {
      if (s.list_type == "set") {
        for (size_t i : NonUnique(obj)) out_->push_back(Duplicate(Index(path, i), obj[i]));
      } else if (s.list_type == "map") {
        ListMap(s, obj, path);
      }
      if (s.items) {
        for (size_t i = 0; i < obj.size(); ++i) ListTypes(*s.items, obj[i], Index(path, i));
      }
    }
  }

 private:
  static std::vector<std::string_view> Types(const SchemaNode& s) {
    if (s.int_or_string) return {"integer", "string"};
    if (!s.type.empty()) return {s.type};
    return {};
  }

  static bool Contains(const std::vector<std::string_view>& types, std::string_view t) {
    return std::find(types.begin(), types.end(), t) != types.end();
  }

  static std::string Join(const std::vector<std::string_view>& types) {
    std::string out;
    for (size_t i = 0; i < types.size(); ++i) {
      if (i > 0) out += ',';
      out += types[i];
    }
    return out;
  }

  void TypeNull(const SchemaNode& s, const std::string& path) {
    auto types = Types(s);
    if (!types.empty() && !s.nullable) {
      out_->push_back(TypeInvalid(
          path, "null", InBody(path, StrCat("must be of type ", Join(types), ": \"null\""))));
    }
  }

  void Type(const SchemaNode& s, const Json& data, std::string_view kind, const std::string& path) {
    auto types = Types(s);
    const std::string& fmt = s.effective_format;
    if (types.empty() && fmt.empty()) return;
    std::string_view data_format =
        kind == "integer" ? "int64" : (kind == "number" ? "float64" : "");
    bool float_int =
        kind == "number" && Contains(types, "integer") && IsFloat64AJsonInteger(AsDouble(data));
    bool int_float = kind == "integer" && Contains(types, "number");
    if (kind != "string" && kind != "array" && !fmt.empty() &&
        !(Contains(types, kind) || fmt == data_format || float_int || int_float)) {
      out_->push_back(
          TypeInvalid(path, std::string(data_format),
                      InBody(path, StrCat("must be of type ", fmt, ": ", GoQuote(data_format)))));
      return;
    }
    if (!(Contains(types, "number") || Contains(types, "integer")) && !fmt.empty() &&
        (kind == "string" || kind == "array")) {
      return;
    }
    if (!(Contains(types, kind) || float_int || int_float)) {
      out_->push_back(
          TypeInvalid(path, std::string(kind),
                      InBody(path, StrCat("must be of type ", Join(types), ": ", GoQuote(kind)))));
    }
  }

  // allOf / anyOf / oneOf / not (schema_props.go). Their own errors are not field errors in
  // the apiserver: they surface with an empty field path.
  void Junctors(const SchemaNode& s, const Json& data, const std::string& path) {
    if (!s.any_of.empty()) {
      std::vector<FieldError> best;
      bool have_best = false, ok = false;
      for (const auto& alt : s.any_of) {
        std::vector<FieldError> errs;
        Validator(&errs).Validate(*alt, data, path);
        if (errs.empty()) {
          ok = true;
          break;
        }
        if (!have_best || errs.size() < best.size()) {
          best = std::move(errs);
          have_best = true;
        }
      }
      if (!ok) {
        out_->push_back(
            Invalid("", "", StrCat(GoQuote(path), " must validate at least one schema (anyOf)")));
        Append(best);
      }
    }
    if (!s.one_of.empty()) {
      std::vector<FieldError> best;
      bool have_best = false;
      int validated = 0;
      for (const auto& alt : s.one_of) {
        std::vector<FieldError> errs;
        Validator(&errs).Validate(*alt, data, path);
        if (errs.empty()) {
          ++validated;
        } else if (validated == 0 && (!have_best || errs.size() < best.size())) {
          best = std::move(errs);
          have_best = true;
        }
      }
      if (validated != 1) {
        std::string extra = validated == 0 ? std::string("Found none valid")
                                           : StrCat("Found ", validated, " valid alternatives");
        out_->push_back(Invalid(
            "", "",
            StrCat(GoQuote(path), " must validate one and only one schema (oneOf). ", extra)));
        if (validated == 0) Append(best);
      }
    }
    if (!s.all_of.empty()) {
      size_t validated = 0;
      for (const auto& alt : s.all_of) {
        std::vector<FieldError> errs;
        Validator(&errs).Validate(*alt, data, path);
        if (errs.empty()) ++validated;
        Append(errs);
      }
      if (validated != s.all_of.size()) {
        out_->push_back(Invalid("", "",
                                StrCat(GoQuote(path), " must validate all the schemas (allOf)",
                                       validated == 0 ? ". None validated" : "")));
      }
    }
    if (s.not_schema) {
      std::vector<FieldError> errs;
      Validator(&errs).Validate(*s.not_schema, data, path);
      if (errs.empty()) {
        out_->push_back(
            Invalid("", "", StrCat(GoQuote(path), " must not validate the schema (not)")));
      }
    }
  }

  void Append(const std::vector<FieldError>& errs) {
    out_->insert(out_->end(), errs.begin(), errs.end());
  }

  void String(const SchemaNode& s, const std::string& v, const std::string& path) {
    // stringValidator stops at the first failure.
    if (s.max_length && static_cast<int64_t>(RuneCount(v)) > *s.max_length) {
      out_->push_back(TooLong(path, *s.max_length));
    } else if (s.min_length && static_cast<int64_t>(RuneCount(v)) < *s.min_length) {
      out_->push_back(Invalid(
          path, v, InBody(path, StrCat("should be at least ", *s.min_length, " chars long"))));
    } else if (s.pattern_regex && !s.pattern_regex->Search(v)) {
      out_->push_back(Invalid(path, v, InBody(path, StrCat("should match '", s.pattern, "'"))));
    }
    if (!s.effective_format.empty() && !CheckFormat(s.effective_format, v)) {
      out_->push_back(TypeInvalid(
          path, v, InBody(path, StrCat("must be of type ", s.effective_format, ": ", GoQuote(v)))));
    }
  }

  void Number(const SchemaNode& s, const Json& v, const std::string& path) {
    bool is_int = IsInt(v);
    int64_t iv = is_int ? v.get<int64_t>() : 0;
    double dv = AsDouble(v);
    if (s.multiple_of) {
      double factor = *s.multiple_of;
      bool ok;
      std::string factor_text;
      if (is_int && factor == std::trunc(factor) && std::fabs(factor) < 9.2e18 && factor != 0) {
        auto f = static_cast<int64_t>(factor);
        ok = iv % f == 0;
        factor_text = std::to_string(f);
      } else {
        double mult = factor < 1 ? 1 / factor * dv : dv / factor;
        ok = IsFloat64AJsonInteger(mult);
        factor_text = GoFloat(factor);
      }
      if (!ok) {
        out_->push_back(
            Invalid(path, v, InBody(path, StrCat("should be a multiple of ", factor_text))));
      }
    }
    if (s.maximum) {
      bool excl = s.exclusive_maximum;
      std::string rel = excl ? "should be less than " : "should be less than or equal to ";
      if (is_int) {
        auto max = static_cast<int64_t>(
            std::clamp(*s.maximum, -9.2233720368547758e18, 9.2233720368547748e18));
        if ((!excl && iv > max) || (excl && iv >= max)) {
          out_->push_back(Invalid(path, v, InBody(path, StrCat(rel, max))));
        }
      } else if ((!excl && dv > *s.maximum) || (excl && dv >= *s.maximum)) {
        out_->push_back(Invalid(path, v, InBody(path, StrCat(rel, GoFloat(*s.maximum)))));
      }
    }
    if (s.minimum) {
      bool excl = s.exclusive_minimum;
      std::string rel = excl ? "should be greater than " : "should be greater than or equal to ";
      if (is_int) {
        auto min = static_cast<int64_t>(
            std::clamp(*s.minimum, -9.2233720368547758e18, 9.2233720368547748e18));
        if ((!excl && iv < min) || (excl && iv <= min)) {
          out_->push_back(Invalid(path, v, InBody(path, StrCat(rel, min))));
        }
      } else if ((!excl && dv < *s.minimum) || (excl && dv <= *s.minimum)) {
        out_->push_back(Invalid(path, v, InBody(path, StrCat(rel, GoFloat(*s.minimum)))));
      }
    }
    // Our addition (the apiserver strips int32/int64 formats and checks no range): a value a
    // Go client could not decode into the field's type is an error here.
    if (s.format == "int32" && (is_int || IsFloat64AJsonInteger(dv))) {
      double x = is_int ? static_cast<double>(iv) : dv;
      if (x > 2147483647.0) {
        out_->push_back(
            Invalid(path, v, InBody(path, "should be less than or equal to 2147483647")));
      } else if (x < -2147483648.0) {
        out_->push_back(
            Invalid(path, v, InBody(path, "should be greater than or equal to -2147483648")));
      }
    }
  }

  void Array(const SchemaNode& s, const Json& v, const std::string& path) {
    if (s.items) {
      for (size_t i = 0; i < v.size(); ++i) Validate(*s.items, v[i], Index(path, i));
    }
    auto size = static_cast<int64_t>(v.size());
    if (s.min_items && size < *s.min_items) {
      out_->push_back(Invalid(
          path, size, InBody(path, StrCat("should have at least ", *s.min_items, " items"))));
    }
    if (s.max_items && size > *s.max_items) out_->push_back(TooMany(path, size, *s.max_items));
    if (s.unique_items) {
      bool dup = false;
      for (size_t i = 0; i < v.size() && !dup; ++i) {
        for (size_t j = i + 1; j < v.size() && !dup; ++j) dup = JsonEqual(v[i], v[j]);
      }
      if (dup) out_->push_back(Invalid(path, "", InBody(path, "shouldn't contain duplicates")));
    }
  }

  void Enum(const SchemaNode& s, const Json& v, const std::string& path) {
    if (!s.enum_values || s.enum_values->empty()) return;
    for (const auto& e : *s.enum_values) {
      if (JsonEqual(v, e)) return;
    }
    out_->push_back(NotSupported(path, v, EnumStrings(*s.enum_values)));
  }

  void Object(const SchemaNode& s, const Json& v, const std::string& path) {
    auto n = static_cast<int64_t>(v.size());
    if (s.min_properties && n < *s.min_properties) {
      out_->push_back(
          Invalid(path, n,
                  InBody(path, StrCat("should have at least ", *s.min_properties, " properties"))));
      return;
    }
    if (s.max_properties && n > *s.max_properties) {
      out_->push_back(TooMany(path, n, *s.max_properties));
      return;
    }
    if (s.additional_properties_kind == SchemaNode::Additional::kFalse) {
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (s.properties.count(it.key()) == 0) {
          out_->push_back(Invalid(path, it.key(),
                                  StrCat(path, ".", it.key(), " in body is a forbidden property")));
        }
      }
    } else if (s.additional_properties_kind == SchemaNode::Additional::kSchema) {
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (s.properties.count(it.key()) == 0) {
          Validate(*s.additional_properties, it.value(), StrCat(path, ".", it.key()));
        }
      }
    }
    for (const auto& [name, prop] : s.properties) {
      auto it = v.find(name);
      if (it != v.end()) Validate(*prop, *it, Child(path, name));
    }
    for (const auto& r : s.required) {
      if (!v.contains(r)) out_->push_back(Required(Child(path, r)));
    }
  }

  // validateListSet: indices of the second occurrence of each duplicated element.
  static std::vector<size_t> NonUnique(const Json& items) {
    std::vector<size_t> out;
    std::vector<std::pair<const Json*, int>> seen;
    for (size_t i = 0; i < items.size(); ++i) {
      bool found = false;
      for (auto& [val, times] : seen) {
        if (JsonEqual(*val, items[i])) {
          if (times == 1) out.push_back(i);
          ++times;
          found = true;
          break;
        }
      }
      if (!found) seen.emplace_back(&items[i], 1);
    }
    return out;
  }

  void ListMap(const SchemaNode& s, const Json& obj, const std::string& path) {
    for (size_t i = 0; i < obj.size(); ++i) {
      if (!obj[i].is_null() && !obj[i].is_object()) {
        out_->push_back(
            Invalid(Index(path, i), obj[i], "must be an object for an array of list-type map"));
        return;
      }
    }
    if (obj.size() <= 1) return;
    Json keys = Json::array();
    for (const auto& x : obj) {
      Json key = Json::object();
      if (x.is_object()) {
        for (const auto& k : s.list_map_keys) {
          auto it = x.find(k);
          if (it != x.end()) key[k] = *it;
        }
      }
      keys.push_back(std::move(key));
    }
    for (size_t i : NonUnique(keys)) out_->push_back(Duplicate(Index(path, i), keys[i]));
  }

  std::vector<FieldError>* out_;
};

// ---- Parsing + structural checks --------------------------------------------------------------

enum class Level { kRoot, kItem, kField };

bool IsScalarType(std::string_view t) {
  return t == "string" || t == "integer" || t == "number" || t == "boolean";
}

class Parser {
 public:
  explicit Parser(const ParseOptions& opts) : opts_(opts) {}

  std::unique_ptr<SchemaNode> Parse(const Json& j, const std::string& path, Level lvl,
                                    bool nested) {
    auto n = std::make_unique<SchemaNode>();
    if (!j.is_object()) {
      Err(Invalid(path.empty() ? "openAPIV3Schema" : path, j, "must be a schema object"));
      return n;
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
      Keyword(n.get(), it.key(), it.value(), path, lvl, nested);
    }
    n->effective_format = EffectiveFormat(n->format);
    if (!n->pattern.empty()) {
      auto re = Regex::Compile(n->pattern);
      if (re.ok()) {
        n->pattern_regex = std::move(*re);
      } else {
        Err(Invalid(Child(path, "pattern"), n->pattern,
                    StrCat("must be a valid regular expression, but isn't: ",
                           base::FromAbsl(re.status().message()))));
      }
    }
    Generic(*n, j, path);
    if (!nested) {
      Structural(*n, j, path, lvl);
      bool skip_any_of = j.contains("anyOf") && j["anyOf"] == kIntOrStringAnyOf;
      bool skip_first_all_of_any_of = j.contains("allOf") && j["allOf"].is_array() &&
                                      !j["allOf"].empty() && j["allOf"][0].is_object() &&
                                      j["allOf"][0].contains("anyOf") &&
                                      j["allOf"][0]["anyOf"] == kIntOrStringAnyOf;
      ValueValidation(j, skip_any_of, skip_first_all_of_any_of, path);
      Completeness(*n, j, path);
    }
    return n;
  }

  // Checks defaults once the whole tree exists (validation needs complete subtrees).
  void CheckDefaults(const SchemaNode& n, const std::string& path) {
    if (n.default_value) {
      Json d = *n.default_value;
      std::vector<std::string> pruned;
      Pruner(&pruned).Prune(&d, &n, n.embedded_resource, "");
      if (!pruned.empty()) {
        std::string list;
        for (const auto& p : pruned) list += (list.empty() ? "" : ", ") + p;
        Err(Invalid(Child(path, "default"), *n.default_value,
                    StrCat("must not have unknown fields, got: ", list)));
      }
      ApplyDefaults(&d, &n);
      std::vector<FieldError> errs;
      Validator v(&errs);
      v.Validate(n, d, "");
      v.ListTypes(n, d, "");
      for (auto& e : errs) {
        std::string field = Child(path, "default");
        if (!e.field.empty()) field = StrCat(field, ".", e.field);
        e.field = std::move(field);
        Err(std::move(e));
      }
    }
    for (const auto& [k, p] : n.properties) {
      CheckDefaults(*p, Key(Child(path, "properties"), k));
    }
    if (n.items) CheckDefaults(*n.items, Child(path, "items"));
    if (n.additional_properties) {
      CheckDefaults(*n.additional_properties, Child(path, "additionalProperties"));
    }
  }

  std::vector<FieldError> errors;

 private:
  void Err(FieldError e) { errors.push_back(std::move(e)); }

  bool WantString(const Json& v, const std::string& p) {
    if (v.is_string()) return true;
    Err(Invalid(p, v, "must be a string"));
    return false;
  }
  bool WantBool(const Json& v, const std::string& p) {
    if (v.is_boolean()) return true;
    Err(Invalid(p, v, "must be a boolean"));
    return false;
  }
  std::optional<double> WantNumber(const Json& v, const std::string& p) {
    if (v.is_number()) return AsDouble(v);
    Err(Invalid(p, v, "must be a number"));
    return std::nullopt;
  }
  std::optional<int64_t> WantCount(const Json& v, const std::string& p) {
    if (IsInt(v) && v.get<int64_t>() >= 0) return v.get<int64_t>();
    Err(Invalid(p, v, "must be a non-negative integer"));
    return std::nullopt;
  }

  void Keyword(SchemaNode* n, const std::string& k, const Json& v, const std::string& path,
               Level lvl, bool nested) {
    std::string kp = Child(path, k);
    if (k == "type") {
      if (WantString(v, kp)) {
        static const std::vector<std::string> kTypes = {"array",  "boolean", "integer",
                                                        "number", "object",  "string"};
        n->type = v.get<std::string>();
        if (std::find(kTypes.begin(), kTypes.end(), n->type) == kTypes.end()) {
          Err(NotSupported(kp, v, kTypes));
        }
      }
    } else if (k == "format") {
      if (WantString(v, kp)) n->format = v.get<std::string>();
    } else if (k == "description") {
      if (WantString(v, kp)) n->description = v.get<std::string>();
    } else if (k == "title") {
      WantString(v, kp);
    } else if (k == "nullable") {
      if (WantBool(v, kp)) n->nullable = v.get<bool>();
    } else if (k == "default") {
      n->default_value = v;
    } else if (k == "example" || k == "externalDocs") {
      // documentation only
    } else if (k == "enum") {
      if (v.is_array()) {
        n->enum_values = v;
      } else {
        Err(Invalid(kp, v, "must be an array"));
      }
    } else if (k == "maximum") {
      n->maximum = WantNumber(v, kp);
    } else if (k == "minimum") {
      n->minimum = WantNumber(v, kp);
    } else if (k == "exclusiveMaximum") {
      if (WantBool(v, kp)) n->exclusive_maximum = v.get<bool>();
    } else if (k == "exclusiveMinimum") {
      if (WantBool(v, kp)) n->exclusive_minimum = v.get<bool>();
    } else if (k == "multipleOf") {
      n->multiple_of = WantNumber(v, kp);
      if (n->multiple_of && *n->multiple_of <= 0) {
        Err(Invalid(kp, v, "must be greater than zero"));
        n->multiple_of.reset();
      }
    } else if (k == "maxLength") {
      n->max_length = WantCount(v, kp);
    } else if (k == "minLength") {
      n->min_length = WantCount(v, kp);
    } else if (k == "maxItems") {
      n->max_items = WantCount(v, kp);
    } else if (k == "minItems") {
      n->min_items = WantCount(v, kp);
    } else if (k == "maxProperties") {
      n->max_properties = WantCount(v, kp);
    } else if (k == "minProperties") {
      n->min_properties = WantCount(v, kp);
    } else if (k == "uniqueItems") {
      if (WantBool(v, kp)) {
        n->unique_items = v.get<bool>();
        if (n->unique_items && !opts_.allow_unique_items) {
          Err(Forbidden(
              kp,
              "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"));
        }
      }
    } else if (k == "pattern") {
      if (WantString(v, kp)) n->pattern = v.get<std::string>();
    } else if (k == "required") {
      if (v.is_array() &&
          std::all_of(v.begin(), v.end(), [](const Json& e) { return e.is_string(); })) {
        for (const auto& e : v) n->required.push_back(e.get<std::string>());
      } else {
        Err(Invalid(kp, v, "must be an array of strings"));
      }
    } else if (k == "properties") {
      if (!v.is_object()) {
        Err(Invalid(kp, v, "must be an object"));
        return;
      }
      for (auto it = v.begin(); it != v.end(); ++it) {
        n->properties[it.key()] = Parse(it.value(), Key(kp, it.key()), Level::kField, nested);
      }
    } else if (k == "items") {
      if (v.is_array()) {
        Err(Forbidden(kp, "items must be a schema object and not an array"));
      } else {
        n->items = Parse(v, kp, Level::kItem, nested);
      }
    } else if (k == "additionalProperties") {
      if (v.is_boolean()) {
        n->additional_properties_kind =
            v.get<bool>() ? SchemaNode::Additional::kTrue : SchemaNode::Additional::kFalse;
      } else {
        n->additional_properties_kind = SchemaNode::Additional::kSchema;
        n->additional_properties = Parse(v, kp, Level::kField, nested);
      }
    } else if (k == "allOf" || k == "anyOf" || k == "oneOf") {
      if (!v.is_array()) {
        Err(Invalid(kp, v, "must be an array"));
        return;
      }
      auto& list = k == "allOf" ? n->all_of : (k == "anyOf" ? n->any_of : n->one_of);
      for (size_t i = 0; i < v.size(); ++i) list.push_back(Parse(v[i], Index(kp, i), lvl, true));
    } else if (k == "not") {
      n->not_schema = Parse(v, kp, lvl, true);
    } else if (k == "x-kubernetes-preserve-unknown-fields") {
      if (WantBool(v, kp)) {
        n->preserve_unknown_fields = v.get<bool>();
        if (!n->preserve_unknown_fields) Err(Invalid(kp, v, "must be true or undefined"));
      }
    } else if (k == "x-kubernetes-int-or-string") {
      if (WantBool(v, kp)) n->int_or_string = v.get<bool>();
    } else if (k == "x-kubernetes-embedded-resource") {
      if (WantBool(v, kp)) n->embedded_resource = v.get<bool>();
    } else if (k == "x-kubernetes-list-type") {
      if (WantString(v, kp)) n->list_type = v.get<std::string>();
    } else if (k == "x-kubernetes-list-map-keys") {
      if (v.is_array() &&
          std::all_of(v.begin(), v.end(), [](const Json& e) { return e.is_string(); })) {
        for (const auto& e : v) n->list_map_keys.push_back(e.get<std::string>());
      } else {
        Err(Invalid(kp, v, "must be an array of strings"));
      }
    } else if (k == "x-kubernetes-map-type") {
      if (WantString(v, kp)) n->map_type = v.get<std::string>();
    } else if (k == "x-kubernetes-validations") {
      // CEL rules: accepted, not evaluated (see README.md).
      if (v.is_array()) {
        n->validation_rules = v.size();
      } else {
        Err(Invalid(kp, v, "must be an array"));
      }
    } else if (k == "$ref" || k == "definitions" || k == "dependencies" || k == "additionalItems" ||
               k == "patternProperties" || k == "id" || k == "$schema") {
      Err(Forbidden(kp, StrCat(k, " is not supported")));
    } else {
      Err(Forbidden(kp, "unknown schema keyword"));
    }
  }

  // Checks that apply to every node (CRD API validation of JSONSchemaProps).
  void Generic(const SchemaNode& n, const Json& j, const std::string& path) {
    if (!n.properties.empty() &&
        (n.additional_properties_kind == SchemaNode::Additional::kFalse ||
         n.additional_properties_kind == SchemaNode::Additional::kSchema)) {
      Err(Forbidden(Child(path, "additionalProperties"),
                    "additionalProperties and properties are mutual exclusive"));
    }
    if (!n.list_type.empty()) {
      std::string lp = Child(path, "x-kubernetes-list-type");
      if (n.list_type != "atomic" && n.list_type != "set" && n.list_type != "map") {
        Err(NotSupported(lp, n.list_type, {"atomic", "set", "map"}));
      }
      if (!n.type.empty() && n.type != "array") {
        Err(Invalid(Child(path, "type"), n.type,
                    "must be array if x-kubernetes-list-type is specified"));
      }
    }
    if (n.list_type == "set" && n.items && n.items->type == "object" &&
        n.items->map_type != "atomic") {
      Err(Invalid(Child(Child(path, "items"), "x-kubernetes-map-type"), n.items->map_type,
                  "must be atomic as item of a list with x-kubernetes-list-type=set"));
    }
    if (n.list_type == "map") {
      std::string kp = Child(path, "x-kubernetes-list-map-keys");
      if (n.list_map_keys.empty()) {
        Err(Required(kp, "must not be empty if x-kubernetes-list-type is map"));
      }
      if (n.items && n.items->type != "object") {
        Err(Invalid(Child(Child(path, "items"), "type"), n.items->type,
                    "must be object for an array of list-type map"));
      } else if (n.items) {
        std::set<std::string> required(n.items->required.begin(), n.items->required.end());
        for (const auto& key : n.list_map_keys) {
          auto it = n.items->properties.find(key);
          if (it == n.items->properties.end()) {
            Err(Invalid(kp, j.value("x-kubernetes-list-map-keys", Json()),
                        "entries must all be names of item properties"));
            break;
          }
          if (!IsScalarType(it->second->type) && !it->second->int_or_string) {
            Err(Invalid(Child(Key(Child(Child(path, "items"), "properties"), key), "type"),
                        it->second->type, "must be a scalar type if used as a map key"));
          }
          if (required.count(key) == 0 && !it->second->default_value) {
            Err(Required(
                Key(Child(Child(path, "items"), "properties"), key),
                "this property is in x-kubernetes-list-map-keys, so it must have a default "
                "or be a required property"));
          }
        }
      }
    } else if (!n.list_map_keys.empty()) {
      Err(Forbidden(Child(path, "x-kubernetes-list-map-keys"),
                    "must be empty if x-kubernetes-list-type is not map"));
    }
    if (!n.map_type.empty()) {
      if (n.map_type != "granular" && n.map_type != "atomic") {
        Err(NotSupported(Child(path, "x-kubernetes-map-type"), n.map_type, {"granular", "atomic"}));
      }
      if (!n.type.empty() && n.type != "object") {
        Err(Invalid(Child(path, "type"), n.type,
                    "must be object if x-kubernetes-map-type is specified"));
      }
    }
    if (n.min_length && n.max_length && *n.min_length > *n.max_length) {
      Err(Invalid(Child(path, "minLength"), *n.min_length, "must not be greater than maxLength"));
    }
    if (n.min_items && n.max_items && *n.min_items > *n.max_items) {
      Err(Invalid(Child(path, "minItems"), *n.min_items, "must not be greater than maxItems"));
    }
  }

  // validateStructuralInvariants (structural/validation.go).
  void Structural(const SchemaNode& n, const Json& j, const std::string& path, Level lvl) {
    if (n.type == "array" && !n.items) Err(Required(Child(path, "items"), "must be specified"));
    bool check_metadata = lvl == Level::kRoot || n.embedded_resource;
    if (n.embedded_resource && n.type != "object") {
      if (n.type.empty()) {
        Err(Required(Child(path, "type"),
                     "must be object if x-kubernetes-embedded-resource is true"));
      } else {
        Err(Invalid(Child(path, "type"), n.type,
                    "must be object if x-kubernetes-embedded-resource is true"));
      }
    } else if (n.type.empty() && !n.int_or_string && !n.preserve_unknown_fields) {
      switch (lvl) {
        case Level::kRoot:
          Err(Required(Child(path, "type"), "must not be empty at the root"));
          break;
        case Level::kItem:
          Err(Required(Child(path, "type"), "must not be empty for specified array items"));
          break;
        case Level::kField:
          Err(Required(Child(path, "type"), "must not be empty for specified object fields"));
          break;
      }
    }
    if (n.embedded_resource && n.additional_properties_kind != SchemaNode::Additional::kUnset) {
      Err(Forbidden(Child(path, "additionalProperties"),
                    "must not be used if x-kubernetes-embedded-resource is set"));
    }
    if (lvl == Level::kRoot && !n.type.empty() && n.type != "object") {
      Err(Invalid(Child(path, "type"), n.type, "must be object at the root"));
    }
    if (lvl == Level::kRoot && n.additional_properties_kind != SchemaNode::Additional::kUnset) {
      Err(Forbidden(Child(path, "additionalProperties"), "must not be used at the root"));
    }
    if (check_metadata) {
      auto kind = n.properties.find("kind");
      if (kind != n.properties.end() && kind->second->type != "string") {
        Err(Invalid(Child(Key(Child(path, "properties"), "kind"), "type"), kind->second->type,
                    "must be string"));
      }
      auto api = n.properties.find("apiVersion");
      if (api != n.properties.end() && api->second->type != "string") {
        Err(Invalid(Child(Key(Child(path, "properties"), "apiVersion"), "type"), api->second->type,
                    "must be string"));
      }
      auto meta = n.properties.find("metadata");
      if (meta != n.properties.end() && meta->second->type != "object") {
        Err(Invalid(Child(Key(Child(path, "properties"), "metadata"), "type"), meta->second->type,
                    "must be object"));
      }
    }
    if (lvl == Level::kRoot && j.contains("properties") && j["properties"].is_object() &&
        j["properties"].contains("metadata")) {
      Json meta = j["properties"]["metadata"];
      if (meta.is_object()) {
        meta.erase("type");
        meta.erase("default");  // reported by CheckDefaults / below
        if (meta.contains("properties") && meta["properties"].is_object()) {
          const Json& p = meta["properties"];
          bool name = p.contains("name"), gen = p.contains("generateName");
          if ((name && gen && p.size() == 2) || ((name || gen) && p.size() == 1)) {
            meta.erase("properties");
          }
        }
        if (!meta.empty()) {
          Err(Forbidden(Key(Child(path, "properties"), "metadata"),
                        "must not specify anything other than name and generateName, but metadata "
                        "is implicitly specified"));
        }
        if (j["properties"]["metadata"].contains("default")) {
          Err(Forbidden(Child(Key(Child(path, "properties"), "metadata"), "default"),
                        "must not be set for metadata"));
        }
      }
    }
    if (n.embedded_resource && !n.preserve_unknown_fields && n.properties.empty()) {
      Err(Required(Child(path, "properties"),
                   "must not be empty if x-kubernetes-embedded-resource is true without "
                   "x-kubernetes-preserve-unknown-fields"));
    }
    if (n.int_or_string && n.preserve_unknown_fields) {
      Err(Invalid(Child(path, "x-kubernetes-preserve-unknown-fields"), true,
                  "must be false if x-kubernetes-int-or-string is true"));
    }
    if (n.int_or_string && n.embedded_resource) {
      Err(Invalid(Child(path, "x-kubernetes-embedded-resource"), true,
                  "must be false if x-kubernetes-int-or-string is true"));
    }
  }

  // validateValueValidation / validateNestedValueValidation on the raw JSON.
  void ValueValidation(const Json& j, bool skip_any_of, bool skip_first_all_of_any_of,
                       const std::string& path) {
    if (!skip_any_of && j.contains("anyOf") && j["anyOf"].is_array()) {
      for (size_t i = 0; i < j["anyOf"].size(); ++i) {
        Nested(j["anyOf"][i], false, false, Index(Child(path, "anyOf"), i));
      }
    }
    if (j.contains("allOf") && j["allOf"].is_array()) {
      for (size_t i = 0; i < j["allOf"].size(); ++i) {
        Nested(j["allOf"][i], skip_first_all_of_any_of && i == 0, false,
               Index(Child(path, "allOf"), i));
      }
    }
    if (j.contains("oneOf") && j["oneOf"].is_array()) {
      for (size_t i = 0; i < j["oneOf"].size(); ++i) {
        Nested(j["oneOf"][i], false, false, Index(Child(path, "oneOf"), i));
      }
    }
    if (j.contains("not")) Nested(j["not"], false, false, Child(path, "not"));
  }

  void Nested(const Json& v, bool skip_any_of, bool skip_all_of_any_of, const std::string& path) {
    if (!v.is_object()) return;
    ValueValidation(v, skip_any_of, skip_all_of_any_of, path);
    if (v.contains("items")) Nested(v["items"], false, false, Child(path, "items"));
    if (v.contains("properties") && v["properties"].is_object()) {
      for (auto it = v["properties"].begin(); it != v["properties"].end(); ++it) {
        Nested(it.value(), false, false, Key(Child(path, "properties"), it.key()));
      }
      if (v["properties"].contains("metadata")) {
        Err(Forbidden(Key(Child(path, "properties"), "metadata"),
                      "must not be specified in a nested context"));
      }
    }
    auto flag = [&v](const char* k) {
      return v.contains(k) && v[k].is_boolean() && v[k].get<bool>();
    };
    if (v.contains("type")) Err(Forbidden(Child(path, "type"), "must be empty to be structural"));
    if (v.contains("additionalProperties")) {
      Err(Forbidden(Child(path, "additionalProperties"), "must be undefined to be structural"));
    }
    if (v.contains("default"))
      Err(Forbidden(Child(path, "default"), "must be undefined to be structural"));
    if (v.contains("title")) Err(Forbidden(Child(path, "title"), "must be empty to be structural"));
    if (v.contains("description")) {
      Err(Forbidden(Child(path, "description"), "must be empty to be structural"));
    }
    if (flag("nullable")) Err(Forbidden(Child(path, "nullable"), "must be false to be structural"));
    for (const char* x : {"x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
                          "x-kubernetes-int-or-string"}) {
      if (flag(x)) Err(Forbidden(Child(path, x), "must be false to be structural"));
    }
    if (v.contains("x-kubernetes-list-map-keys") && !v["x-kubernetes-list-map-keys"].empty()) {
      Err(Forbidden(Child(path, "x-kubernetes-list-map-keys"), "must be empty to be structural"));
    }
    if (v.contains("x-kubernetes-list-type")) {
      Err(Forbidden(Child(path, "x-kubernetes-list-type"), "must be undefined to be structural"));
    }
  }

  // validateStructuralCompleteness: everything a value validation names must exist in the
  // structural part of the schema.
  void Completeness(const SchemaNode& n, const Json& j, const std::string& path) {
    for (const char* junctor : {"allOf", "anyOf", "oneOf"}) {
      if (!j.contains(junctor) || !j[junctor].is_array()) continue;
      for (size_t i = 0; i < j[junctor].size(); ++i) {
        NestedCompleteness(&n, j[junctor][i], path, Index(Child(path, junctor), i));
      }
    }
    if (j.contains("not")) NestedCompleteness(&n, j["not"], path, Child(path, "not"));
  }

  void NestedCompleteness(const SchemaNode* s, const Json& v, const std::string& spath,
                          const std::string& vpath) {
    if (!v.is_object()) return;
    if (s == nullptr) {
      Err(Required(spath, StrCat("because it is defined in ", vpath)));
      return;
    }
    if (v.contains("items")) {
      NestedCompleteness(s->items.get(), v["items"], Child(spath, "items"), Child(vpath, "items"));
    }
    if (v.contains("properties") && v["properties"].is_object()) {
      for (auto it = v["properties"].begin(); it != v["properties"].end(); ++it) {
        auto p = s->properties.find(it.key());
        NestedCompleteness(p == s->properties.end() ? nullptr : p->second.get(), it.value(),
                           Key(Child(spath, "properties"), it.key()),
                           Key(Child(vpath, "properties"), it.key()));
      }
    }
    for (const char* junctor : {"allOf", "anyOf", "oneOf"}) {
      if (!v.contains(junctor) || !v[junctor].is_array()) continue;
      for (size_t i = 0; i < v[junctor].size(); ++i) {
        NestedCompleteness(s, v[junctor][i], spath, Index(Child(vpath, junctor), i));
      }
    }
    if (v.contains("not")) NestedCompleteness(s, v["not"], spath, Child(vpath, "not"));
  }

  ParseOptions opts_;
};

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

}  // namespace

// ---- Schema -----------------------------------------------------------------------------------

absl::StatusOr<Schema> Schema::Parse(const Json& openapi_v3_schema, const ParseOptions& options) {
  Parser parser(options);
  std::unique_ptr<SchemaNode> root = parser.Parse(openapi_v3_schema, "", Level::kRoot, false);
  if (parser.errors.empty()) parser.CheckDefaults(*root, "");
  if (!parser.errors.empty()) {
    auto& errs = parser.errors;
    std::stable_sort(errs.begin(), errs.end(), [](const FieldError& a, const FieldError& b) {
      return a.ToString() < b.ToString();
    });
    return absl::InvalidArgumentError(StrCat("invalid openAPIV3Schema: ", Aggregate(errs)));
  }
  return Schema(std::shared_ptr<const SchemaNode>(std::move(root)));
}

void Schema::Default(Json* obj) const {
  PruneNonNullableNullsWithoutDefaults(obj, root_.get());
  ApplyDefaults(obj, root_.get());
}

void Schema::Prune(Json* obj, std::vector<std::string>* pruned_paths) const {
  size_t first = pruned_paths == nullptr ? 0 : pruned_paths->size();
  Pruner(pruned_paths).Prune(obj, root_.get(), /*embedded=*/true, "");
  if (pruned_paths != nullptr) std::sort(pruned_paths->begin() + first, pruned_paths->end());
}

std::vector<FieldError> Schema::Validate(const Json& obj) const {
  std::vector<FieldError> errs;
  Validator v(&errs);
  v.Validate(*root_, obj, "");
  v.ListTypes(*root_, obj, "");
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

}  // namespace spiderpool::kube::openapi
