// The default SchemaValidatorFactory: kube/testing/openapi's structural schema (prune, default,
// validate in the apiserver's order, apiserver-worded field errors).

#include "kube/testing/openapi/schema.h"
#include "kube/testing/apiserver.h"

namespace spiderpool::kube::testing {

SchemaValidatorFactory DefaultSchemaValidatorFactory() {
  return [](const base::Json& open_api_v3_schema) -> absl::StatusOr<SchemaValidator> {
    auto schema = openapi::Schema::Parse(open_api_v3_schema);
    if (!schema.ok()) return schema.status();
    return SchemaValidator([schema = *std::move(schema)](base::Json* object) {
      std::vector<openapi::FieldError> errors;
      std::vector<StatusCause> causes;
      if (!openapi::ValidateObject(schema, object, &errors).ok()) {
        for (const openapi::FieldError& e : errors) causes.push_back({e.type, e.message, e.field});
        if (causes.empty()) causes.push_back({"FieldValueInvalid", "invalid object", ""});
      }
      return causes;
    });
  };
}

}  // namespace spiderpool::kube::testing
