#pragma once
// Field errors as k8s.io/apimachinery/pkg/util/validation/field has them, and the verdict of one
// admission check (Result) with the renderings kube-apiserver uses for a rejected object:
//
//   SpiderIPPool.spiderpool.spidernet.io "pool1" is invalid: [spec.gateway: Invalid value:
//   "10.0.1.1": not pertains to the 'spec.subnet' 10.0.0.0/24 of IPPool, spec.ips: Forbidden: ...]
//
// (apierrors.NewInvalid: 422, reason Invalid, details.causes one per error), plus the two
// non-field answers upstream's webhooks give: 403 Forbidden (apierrors.NewForbidden, e.g.
// "cannot update a terminating IPPool") and 409 AlreadyExists.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "api/meta.h"

namespace spiderpool::api::validation {

// field.ErrorType. The text of each is what ErrorBody() prints ("Invalid value", ...), the
// reason is metav1.CauseType ("FieldValueInvalid", ...).
enum class ErrorType {
  kNotFound,
  kRequired,
  kDuplicate,
  kInvalid,
  kNotSupported,
  kForbidden,
  kTooLong,
  kTooMany,
  kInternal,
};
std::string_view ErrorTypeText(ErrorType t);    // "Invalid value"
std::string_view ErrorTypeReason(ErrorType t);  // "FieldValueInvalid"

// A bad value, already rendered the way field.Error.ErrorBody prints it: strings quoted with
// Go's %q, numbers and bools with %v, nil as "null" (quoted, as the apiserver does), anything
// else with Go's %#v.
class BadValue {
 public:
  static BadValue String(std::string_view s);  // "10.0.0.1" -> "\"10.0.0.1\""
  static BadValue Int(int64_t v);               // 5 -> "5"
  static BadValue Bool(bool v);                 // "true"
  static BadValue Null();                       // a nil pointer -> "\"null\""
  static BadValue Strings(const std::vector<std::string>& v);  // []string{"a", "b"}
  static BadValue Raw(std::string rendered);    // already rendered
  const std::string& rendered() const { return rendered_; }

 private:
  explicit BadValue(std::string r) : rendered_(std::move(r)) {}
  std::string rendered_;
};

struct FieldError {
  ErrorType type = ErrorType::kInvalid;
  std::string field;                     // "spec.ips[2]" ("" = not about one field)
  std::optional<std::string> bad_value;  // rendered; nullopt = omitted (Required, Forbidden, ...)
  std::string detail;

  // field.Error.ErrorBody(): `Invalid value: "x": detail`, `Forbidden: detail`.
  std::string Body() const;
  // field.Error.Error(): "<field>: <body>" (just the body when field is empty).
  std::string ToString() const;
  friend bool operator==(const FieldError&, const FieldError&) = default;
};
using ErrorList = std::vector<FieldError>;

// The field.* constructors.
FieldError NotFound(std::string field, const BadValue& value, std::string detail = "");
FieldError Required(std::string field, std::string detail);
FieldError Duplicate(std::string field, const BadValue& value, std::string detail = "");
FieldError Invalid(std::string field, const BadValue& value, std::string detail);
// detail = `supported values: "4", "6"` (each quoted, as field.NotSupported does).
FieldError NotSupported(std::string field, const BadValue& value,
                        const std::vector<std::string>& supported);
FieldError Forbidden(std::string field, std::string detail);
FieldError TooLong(std::string field, int64_t max_length);
FieldError TooMany(std::string field, int64_t actual, int64_t max);
FieldError Internal(std::string field, std::string detail);

// Go's strconv.Quote (the %q of a bad value).
std::string GoQuote(std::string_view s);
// Go's %v of a []string: "[a b c]".
std::string GoStringSlice(const std::vector<std::string>& v);

// utilerrors.NewAggregate(list.ToAggregate()).Error(): the one message, or "[a, b]" with
// duplicate messages dropped. "" for an empty list.
std::string AggregateMessage(const ErrorList& errors);

// apierrors.NewInvalid(GroupKind{group, kind}, name, errors): message
// `<Kind>.<group> "<name>" is invalid: <aggregate>`, code 422, reason Invalid, details
// {name, group, kind, causes[{reason, message (the body), field}]}.
std::string InvalidMessage(std::string_view group, std::string_view kind, std::string_view name,
                           const ErrorList& errors);
api::Status InvalidStatus(std::string_view group, std::string_view kind, std::string_view name,
                          const ErrorList& errors);
// apierrors.NewForbidden(GroupResource{group, resource}, name, err): 403. An empty resource
// gives upstream's unqualified form "forbidden: <text>" (used for "cannot update a terminating
// IPPool").
api::Status ForbiddenStatus(std::string_view group, std::string_view resource,
                            std::string_view name, std::string_view text);
// apierrors.NewAlreadyExists(GroupResource{group, resource}, name): 409
// `<resource>.<group> "<name>" already exists`.
api::Status AlreadyExistsStatus(std::string_view group, std::string_view resource,
                                std::string_view name);

// The verdict of one Validate* call.
struct Result {
  // Who the verdict is about (filled in by every Validate* function).
  std::string group;  // "spiderpool.spidernet.io"
  std::string kind;   // "SpiderIPPool"
  std::string name;
  // Every field error, in check order -> 422 Invalid.
  ErrorList errors;
  // A rejection that is not about fields (403 Forbidden / 409 AlreadyExists), fully formed.
  // Upstream returns these alone, so when set `errors` is empty.
  std::optional<api::Status> denied;

  bool ok() const { return errors.empty() && !denied.has_value(); }
  // "" when ok; else the apiserver's message (InvalidMessage, or the denial's message).
  std::string Message() const;
  // The Status to put in an AdmissionResponse (code 422/403/409); a Success status when ok.
  api::Status ToStatus() const;
  // For callers outside the webhook: OK, InvalidArgument (422), PermissionDenied (403) or
  // AlreadyExists (409), with Message() as the text.
  absl::Status ToAbslStatus() const;
};

}  // namespace spiderpool::api::validation
