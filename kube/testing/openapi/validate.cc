// Validation of an object against a structural schema (kube-openapi validate + listtype).

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/strings.h"
#include "kube/testing/openapi/formats.h"
#include "kube/testing/openapi/go_format.h"
#include "kube/testing/openapi/schema.h"
#include "kube/testing/openapi/schema_internal.h"

namespace spiderpool::kube::testing::openapi::internal {

using base::StrCat;

namespace {

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

}  // namespace

void ValidateAgainst(const SchemaNode& s, const Json& obj, std::vector<FieldError>* errs) {
  Validator v(errs);
  v.Validate(s, obj, "");
  v.ListTypes(s, obj, "");
}

}  // namespace spiderpool::kube::testing::openapi::internal
