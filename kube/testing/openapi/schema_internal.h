#pragma once
// What the parts of the structural-schema implementation share (schema.cc: helpers and the
// Schema API; parse.cc: parsing + structural checks; validate.cc: validation; prune.cc:
// pruning and defaulting). Internal to kube/testing/openapi.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/json.h"
#include "kube/testing/openapi/schema.h"

namespace spiderpool::kube::testing::openapi::internal {

using base::Json;

// field.Error constructors (k8s.io/apimachinery/pkg/util/validation/field).
FieldError Required(std::string field, std::string_view detail = "");
FieldError Forbidden(std::string field, std::string_view detail);
FieldError Invalid(std::string field, const Json& value, std::string_view detail);
FieldError TypeInvalid(std::string field, const Json& value, std::string_view detail);
FieldError NotSupported(std::string field, const Json& value, const std::vector<std::string>& valid);
FieldError TooLong(std::string field, int64_t max);
FieldError TooMany(std::string field, int64_t actual, int64_t max);
FieldError Duplicate(std::string field, const Json& value);

// field.Path helpers.
std::string Child(std::string_view path, std::string_view name);
std::string Key(std::string_view path, std::string_view key);
std::string Index(std::string_view path, size_t i);
// "<name> in body <rest>", kube-openapi's message shape.
std::string InBody(std::string_view name, std::string_view rest);

std::vector<std::string> EnumStrings(const Json& values);
// swag.IsFloat64AJSONInteger.
bool IsFloat64AJsonInteger(double f);
bool IsInt(const Json& v);
std::string_view KindOf(const Json& v);
double AsDouble(const Json& v);
bool JsonEqual(const Json& a, const Json& b);
// anyOf [{type: integer}, {type: string}] (x-kubernetes-int-or-string).
const Json& IntOrStringAnyOf();
// field.ErrorList.ToAggregate().Error(): de-duplicated, "[a, b]" when more than one.
std::string Aggregate(const std::vector<FieldError>& errors);

// prune.cc: unknown fields (pruning/algorithm.go); `embedded` marks the resource root /
// x-kubernetes-embedded-resource objects; the pruned paths are appended to `pruned`.
void PruneUnknownFields(Json* x, const SchemaNode* s, bool embedded, std::vector<std::string>* pruned);
// prune.cc: defaulting/prunenulls.go + algorithm.go.
void PruneNonNullableNullsWithoutDefaults(Json* x, const SchemaNode* s);
void ApplyDefaults(Json* x, const SchemaNode* s);
// validate.cc: kube-openapi validation + list types of `obj` against `s`, paths relative.
void ValidateAgainst(const SchemaNode& s, const Json& obj, std::vector<FieldError>* errs);

}  // namespace spiderpool::kube::testing::openapi::internal
