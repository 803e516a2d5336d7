#pragma once
// Builders for the metav1.Status failures kube-apiserver returns, with the same codes, reasons,
// messages and details (k8s.io/apimachinery/pkg/api/errors).

#include <string>
#include <string_view>
#include <vector>

#include "kube/testing/apiserver.h"

namespace spiderpool::kube::testing {

// One field error in the shape of k8s.io/apimachinery/pkg/util/validation/field.Error.
struct FieldError {
  std::string reason;  // "FieldValueInvalid", ...
  std::string field;   // "metadata.name"
  std::string body;    // "Invalid value: \"X\": detail"
};
FieldError FieldInvalid(std::string_view field, std::string_view value_repr,
                        std::string_view detail);
FieldError FieldRequired(std::string_view field, std::string_view detail);
FieldError FieldForbidden(std::string_view field, std::string_view detail);
FieldError FieldNotSupported(std::string_view field, std::string_view value_repr,
                             const std::vector<std::string>& supported);
// `"value"` the way Go's %q prints plain ASCII (quotes, backslashes, newlines escaped).
std::string Quote(std::string_view s);

// `group_resource`: "pods" / "spiderippools.spiderpool.spidernet.io".
ApiStatus NotFoundStatus(std::string_view group, std::string_view plural, std::string_view name);
ApiStatus AlreadyExistsStatus(std::string_view group, std::string_view plural,
                              std::string_view name);
// Conflict with a cause, e.g. kOptimisticLockMessage.
ApiStatus ConflictStatus(std::string_view group, std::string_view plural, std::string_view name,
                         std::string_view cause);
inline constexpr std::string_view kOptimisticLockMessage =
    "the object has been modified; please apply your changes to the latest version and try again";
// `kind` is the qualified kind's Kind (or the plural for store-level errors).
ApiStatus InvalidStatus(std::string_view group, std::string_view kind, std::string_view name,
                        const std::vector<FieldError>& errors);
ApiStatus BadRequestStatus(std::string_view message);
ApiStatus ForbiddenStatus(std::string_view group, std::string_view plural, std::string_view name,
                          std::string_view reason_text);
ApiStatus MethodNotAllowedStatus(std::string_view message);
ApiStatus UnsupportedMediaTypeStatus(std::string_view message);
ApiStatus GoneStatus(std::string_view message);     // reason Gone
ApiStatus ExpiredStatus(std::string_view message);  // reason Expired (410)
ApiStatus InternalErrorStatus(std::string_view message);
ApiStatus UnauthorizedStatus();
ApiStatus TooManyRequestsStatus(int retry_after_seconds);
ApiStatus ServiceUnavailableStatus(std::string_view message);
ApiStatus TimeoutStatus(std::string_view message);
ApiStatus ResourceNotFoundStatus();  // unknown path / resource
ApiStatus UnprocessableStatus(std::string_view message);  // 422 without details
// A generic failure for an arbitrary HTTP code (used by fault injection).
ApiStatus StatusForCode(int code, std::string_view group, std::string_view plural,
                        std::string_view name, int retry_after_seconds);

// The Status answered on a successful delete of a built-in object.
base::Json SuccessStatusJson(std::string_view group, std::string_view plural,
                             std::string_view name, std::string_view uid);

}  // namespace spiderpool::kube::testing
