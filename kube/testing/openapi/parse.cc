// Parsing of an openAPIV3Schema into SchemaNodes with apiextensions' structural checks
// (and the defaults validated against their schema).

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/strings.h"
#include "kube/testing/openapi/formats.h"
#include "kube/testing/openapi/go_format.h"
#include "kube/testing/openapi/schema.h"
#include "kube/testing/openapi/schema_internal.h"

namespace spiderpool::kube::testing::openapi {

using base::StrCat;
using namespace internal;  // NOLINT(build/namespaces)

namespace {

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
      bool skip_any_of = j.contains("anyOf") && j["anyOf"] == IntOrStringAnyOf();
      bool skip_first_all_of_any_of = j.contains("allOf") && j["allOf"].is_array() &&
                                      !j["allOf"].empty() && j["allOf"][0].is_object() &&
                                      j["allOf"][0].contains("anyOf") &&
                                      j["allOf"][0]["anyOf"] == IntOrStringAnyOf();
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
      PruneUnknownFields(&d, &n, n.embedded_resource, &pruned);
      if (!pruned.empty()) {
        std::string list;
        for (const auto& p : pruned) list += (list.empty() ? "" : ", ") + p;
        Err(Invalid(Child(path, "default"), *n.default_value,
                    StrCat("must not have unknown fields, got: ", list)));
      }
      ApplyDefaults(&d, &n);
      std::vector<FieldError> errs;
      ValidateAgainst(n, d, &errs);
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

}  // namespace

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

}  // namespace spiderpool::kube::testing::openapi
