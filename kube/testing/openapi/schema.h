#pragma once
// Structural openAPIV3Schema handling for CustomResourceDefinitions, as kube-apiserver does it
// (k8s.io/apiextensions-apiserver pkg/apiserver/schema/{pruning,defaulting,listtype} and the
// kube-openapi validator): parse + structural checks, defaulting, pruning, validation with the
// apiserver's error types, field paths and message wording. Pure: JSON in, errors out.
//
// The order the apiserver applies on every create/update/patch of a custom resource, and what
// ValidateObject() does:  Prune -> Default (drop non-nullable nulls, apply defaults) -> Validate
// (schema keywords, then x-kubernetes-list-type uniqueness).
//
// NOT supported: x-kubernetes-validations (CEL rules) are accepted by Parse and ignored.
// See README.md for the full keyword list and every known difference from the apiserver.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/json.h"
#include "kube/testing/openapi/regex.h"

namespace spiderpool::kube::testing::openapi {

// One field.Error of k8s.io/apimachinery, as it travels in a 422 Status's details.causes.
struct FieldError {
  // field.ErrorType == metav1.StatusCause.reason: "FieldValueRequired", "FieldValueInvalid",
  // "FieldValueNotSupported", "FieldValueTypeInvalid", "FieldValueTooLong",
  // "FieldValueTooMany", "FieldValueDuplicate", "FieldValueForbidden".
  std::string type;
  // Field path: "spec.ips[2]", "spec.routes[0].dst" ("" for errors about no single field).
  std::string field;
  // ErrorBody(), the StatusCause message: `Unsupported value: 5: supported values: "4", "6"`.
  std::string message;

  // "<field>: <message>", the text of the Go error (what `kubectl` prints per cause).
  std::string ToString() const;
  bool operator==(const FieldError& o) const {
    return type == o.type && field == o.field && message == o.message;
  }
};

// A parsed schema node. Read-only view for callers that introspect a schema (e.g. tests
// comparing C++ API types with the CRDs); the validator uses the same tree.
struct SchemaNode {
  enum class Additional { kUnset, kTrue, kFalse, kSchema };

  std::string type;    // "" = unset (int-or-string / preserve-unknown-fields nodes)
  std::string format;  // as written ("int64", "date-time", ...)
  std::string description;
  bool nullable = false;
  bool int_or_string = false;            // x-kubernetes-int-or-string
  bool preserve_unknown_fields = false;  // x-kubernetes-preserve-unknown-fields
  bool embedded_resource = false;        // x-kubernetes-embedded-resource
  std::optional<base::Json> default_value;
  std::map<std::string, std::unique_ptr<SchemaNode>> properties;
  std::unique_ptr<SchemaNode> items;
  Additional additional_properties_kind = Additional::kUnset;
  std::unique_ptr<SchemaNode> additional_properties;  // set for kSchema
  std::vector<std::string> required;
  std::optional<base::Json> enum_values;  // a JSON array
  std::optional<double> maximum;
  std::optional<double> minimum;
  bool exclusive_maximum = false;
  bool exclusive_minimum = false;
  std::optional<double> multiple_of;
  std::optional<int64_t> max_length, min_length;
  std::optional<int64_t> max_items, min_items;
  std::optional<int64_t> max_properties, min_properties;
  bool unique_items = false;
  std::string pattern;
  std::vector<std::unique_ptr<SchemaNode>> all_of, any_of, one_of;
  std::unique_ptr<SchemaNode> not_schema;
  std::string list_type;  // x-kubernetes-list-type: "", "atomic", "set", "map"
  std::vector<std::string> list_map_keys;
  std::string map_type;         // x-kubernetes-map-type: "", "granular", "atomic"
  size_t validation_rules = 0;  // x-kubernetes-validations entries (ignored: no CEL)

  // The named property, else the additionalProperties schema, else null.
  const SchemaNode* Child(std::string_view field) const;

  // Compiled state (private to the implementation).
  std::optional<Regex> pattern_regex;
  std::string effective_format;  // format the apiserver checks ("" when stripped)
};

struct ParseOptions {
  // kube-apiserver rejects `uniqueItems: true` in CRDs (quadratic cost). Allow it for schemas
  // that are not CRDs (the validator implements the keyword).
  bool allow_unique_items = false;
};

class Schema {
 public:
  // Parses one CRD version's openAPIV3Schema and checks it is structural (type set on every
  // node except where x-kubernetes-int-or-string / x-kubernetes-preserve-unknown-fields allow,
  // items on arrays, metadata restrictions, value validations under allOf/anyOf/oneOf/not only,
  // valid patterns, list types, defaults that validate and need no pruning). Unknown keywords
  // are errors (the apiserver silently drops them; we want typos in our CRDs to fail).
  // Errors name the schema path: `properties[spec].properties[ips].type: Required value: ...`.
  static absl::StatusOr<Schema> Parse(const base::Json& openapi_v3_schema,
                                      const ParseOptions& options = {});

  // The apiserver's defaulting: removes null values of non-nullable fields that have no
  // default, then applies `default`s to absent (or null non-nullable) fields of objects that
  // exist — nested defaults apply only when the parent object exists (or was just defaulted).
  void Default(base::Json* obj) const;

  // Drops fields the schema does not know, except under x-kubernetes-preserve-unknown-fields
  // and except apiVersion/kind/metadata at the root (and in x-kubernetes-embedded-resource
  // objects), which are left untouched. Appends the dropped paths, sorted
  // ("spec.foo", "spec.routes[0].bar"), to `pruned_paths` when not null.
  void Prune(base::Json* obj, std::vector<std::string>* pruned_paths) const;

  // Validates `obj` (the whole resource) and returns every error, apiserver-worded.
  std::vector<FieldError> Validate(const base::Json& obj) const;

  const SchemaNode& root() const { return *root_; }
  // Finds the node for a path like "spec.routes[].dst" or "spec.ips[0]" ("" = root); a key
  // that is not a property follows additionalProperties. Null when the path leaves the schema.
  const SchemaNode* Find(std::string_view path) const;

 private:
  explicit Schema(std::shared_ptr<const SchemaNode> root) : root_(std::move(root)) {}
  std::shared_ptr<const SchemaNode> root_;
};

// Prune, Default and Validate `obj` in place, in the apiserver's order. On errors returns
// InvalidArgument whose message is the aggregate ("spec.x: ..." or "[a, b]") and whose payload
// (kFieldErrorsPayloadUrl) carries the causes; also stores them in `errors` when not null.
// `pruned_paths` (optional) receives the dropped unknown fields (for "unknown field" warnings).
absl::Status ValidateObject(const Schema& schema, base::Json* obj,
                            std::vector<FieldError>* errors = nullptr,
                            std::vector<std::string>* pruned_paths = nullptr);

inline constexpr char kFieldErrorsPayloadUrl[] = "type.spiderpool.io/kube.openapi.FieldErrors";

// The causes carried by a status from ValidateObject (empty for any other status).
std::vector<FieldError> FieldErrorsFromStatus(const absl::Status& status);

// utilerrors.NewAggregate(errs).Error(): one message, or "[a, b]" (duplicates removed).
std::string AggregateMessage(const std::vector<FieldError>& errors);

// The message of apierrors.NewInvalid: `SpiderIPPool.spiderpool.spidernet.io "p1" is invalid: ...`.
std::string InvalidMessage(std::string_view group, std::string_view kind, std::string_view name,
                           const std::vector<FieldError>& errors);

// A complete metav1.Status for a 422 Invalid answer (kind/apiVersion Status, reason Invalid,
// details {name, group, kind, causes[{reason, message, field}]}).
base::Json InvalidStatusJson(std::string_view group, std::string_view kind, std::string_view name,
                             const std::vector<FieldError>& errors);

}  // namespace spiderpool::kube::testing::openapi
