#pragma once
// Kubernetes API errors as absl::Status values.
//
// Every non-2xx answer of the API server becomes an absl::Status whose code follows the table
// in kube/rest/README.md, and which carries payloads (absl::Status::SetPayload):
//   kHttpCodePayload   "404"                       the HTTP status code
//   kReasonPayload     "NotFound"                  metav1.Status.reason (or derived from the code)
//   kStatusPayload     {"kind":"Status",...}       the full metav1.Status JSON (synthesized when
//                                                  the body was not a Status, e.g. from a proxy)
//   kRetryAfterPayload "3"                         seconds, from Retry-After or
//                                                  details.retryAfterSeconds
// The predicates below mirror k8s.io/apimachinery/pkg/api/errors: they look at the reason first
// and fall back to the HTTP code, so they work on statuses built here and survive
// base::Annotate (which keeps the code but drops payloads). A status WITHOUT the HTTP-code
// payload (a plain absl::NotFoundError from a fake, or an annotated copy) is judged by its absl
// code: kNotFound, kAlreadyExists, kAborted (conflict), kOutOfRange (gone),
// kResourceExhausted (too many requests), kUnauthenticated, kPermissionDenied and
// kDeadlineExceeded (timeout) map back to their predicate; IsInvalid/IsServerError need the
// payload.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "api/meta.h"
#include "base/json.h"

namespace spiderpool::kube {

inline constexpr std::string_view kHttpCodePayload = "spiderpool.io/kube/http-code";
inline constexpr std::string_view kReasonPayload = "spiderpool.io/kube/reason";
inline constexpr std::string_view kStatusPayload = "spiderpool.io/kube/status";
inline constexpr std::string_view kRetryAfterPayload = "spiderpool.io/kube/retry-after";
// Set (value "1") on client-side timeouts (no answer within the configured timeout).
inline constexpr std::string_view kClientTimeoutPayload = "spiderpool.io/kube/client-timeout";

// metav1.StatusReason values.
namespace reason {
inline constexpr std::string_view kUnauthorized = "Unauthorized";
inline constexpr std::string_view kForbidden = "Forbidden";
inline constexpr std::string_view kNotFound = "NotFound";
inline constexpr std::string_view kAlreadyExists = "AlreadyExists";
inline constexpr std::string_view kConflict = "Conflict";
inline constexpr std::string_view kGone = "Gone";
inline constexpr std::string_view kExpired = "Expired";
inline constexpr std::string_view kInvalid = "Invalid";
inline constexpr std::string_view kServerTimeout = "ServerTimeout";
inline constexpr std::string_view kTimeout = "Timeout";
inline constexpr std::string_view kTooManyRequests = "TooManyRequests";
inline constexpr std::string_view kBadRequest = "BadRequest";
inline constexpr std::string_view kMethodNotAllowed = "MethodNotAllowed";
inline constexpr std::string_view kNotAcceptable = "NotAcceptable";
inline constexpr std::string_view kRequestEntityTooLarge = "RequestEntityTooLarge";
inline constexpr std::string_view kUnsupportedMediaType = "UnsupportedMediaType";
inline constexpr std::string_view kInternalError = "InternalError";
inline constexpr std::string_view kServiceUnavailable = "ServiceUnavailable";
inline constexpr std::string_view kUnknown = "";
}  // namespace reason

// The absl code for an API error (see README.md for the table).
absl::StatusCode CodeForApiError(int http_code, std::string_view reason);

// Builds the error for an HTTP answer. `body` may be a metav1.Status JSON or anything else
// (HTML from a proxy, empty). `retry_after_header` is the raw Retry-After header ("" if none).
absl::Status StatusFromResponse(int http_code, std::string_view body,
                                std::string_view retry_after_header = "");

// Builds the error for a decoded metav1.Status (e.g. the object of a watch ERROR event).
// `http_code` 0 = take status.code.
absl::Status StatusFromApiStatus(const api::Status& status, int http_code = 0);
// The same from raw JSON (an object that is not a valid Status yields an Internal error).
absl::Status StatusFromStatusJson(const base::Json& status_json, int http_code = 0);

// Prefixes the message with context like base::Annotate, but keeps the payloads (base::Annotate
// drops them; the predicates then fall back to the absl code, see below).
absl::Status WithContext(const absl::Status& s, std::string_view context);

// Convenience constructor for tests and fakes: a proper error with a synthesized Status.
absl::Status MakeApiError(int http_code, std::string_view reason, std::string_view message,
                          int retry_after_seconds = 0);

// ---- accessors ----
// The HTTP code of an API error, 0 if `s` did not come from an HTTP answer.
int HttpCode(const absl::Status& s);
// metav1.Status.reason ("" if none).
std::string Reason(const absl::Status& s);
// The full metav1.Status, if the error carries one.
std::optional<api::Status> ApiStatus(const absl::Status& s);
// Invalid causes (field paths in `field`), empty when none.
std::vector<api::StatusCause> StatusCauses(const absl::Status& s);
// Retry-After the server asked for (nullopt if none).
std::optional<absl::Duration> RetryAfter(const absl::Status& s);

// ---- predicates (apimachinery's errors.IsXxx) ----
// NOTE: absl has its own IsNotFound/IsAlreadyExists(const Status&), found by argument-dependent
// lookup: an unqualified `IsNotFound(s)` is ambiguous. Always qualify: `kube::IsNotFound(s)`.
bool IsNotFound(const absl::Status& s);
bool IsAlreadyExists(const absl::Status& s);
bool IsConflict(const absl::Status& s);
bool IsInvalid(const absl::Status& s);
bool IsBadRequest(const absl::Status& s);
// 410 Gone or reason Expired/Gone (a too old resourceVersion, an expired continue token).
bool IsGone(const absl::Status& s);
bool IsTooManyRequests(const absl::Status& s);
// Any 5xx (reason InternalError / ServiceUnavailable / Timeout included).
bool IsServerError(const absl::Status& s);
// Server-side Timeout (504 / reason Timeout), ServerTimeout, or a client-side timeout.
bool IsTimeout(const absl::Status& s);
bool IsUnauthorized(const absl::Status& s);
bool IsForbidden(const absl::Status& s);
bool IsMethodNotAllowed(const absl::Status& s);

}  // namespace spiderpool::kube
