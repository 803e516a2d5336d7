#include "api/admission.h"

#include "absl/strings/escaping.h"
#include "base/strings.h"

namespace spiderpool::api {

namespace {

std::string ReasonForCode(int32_t code) {
  switch (code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 500: return "InternalError";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return "";
  }
}

}  // namespace

AdmissionResponse Allow(std::string_view uid) {
  AdmissionResponse r;
  r.uid = std::string(uid);
  r.allowed = true;
  return r;
}

AdmissionResponse Deny(std::string_view uid, int32_t code, std::string_view message,
                       std::string_view reason) {
  Status s;
  s.status = "Failure";
  s.message = std::string(message);
  s.reason = reason.empty() ? ReasonForCode(code) : std::string(reason);
  s.code = code;
  return DenyWithStatus(uid, std::move(s));
}

AdmissionResponse DenyWithStatus(std::string_view uid, Status status) {
  AdmissionResponse r;
  r.uid = std::string(uid);
  r.allowed = false;
  if (status.status.empty()) status.status = "Failure";
  r.result = std::move(status);
  return r;
}

AdmissionResponse DenyInvalid(std::string_view uid, std::string_view group_kind,
                              std::string_view name, const DecodeErrors& errors) {
  Status s;
  s.status = "Failure";
  s.reason = "Invalid";
  s.code = 422;
  StatusDetails details;
  details.name = std::string(name);
  size_t dot = group_kind.find('.');
  details.kind = std::string(group_kind.substr(0, dot));
  if (dot != std::string_view::npos) details.group = std::string(group_kind.substr(dot + 1));
  std::string joined;
  for (const FieldError& e : errors.errors) {
    // metav1.CauseType names, as field.ErrorList.ToAggregate() would produce them.
    std::string reason = e.message == "Required value"                 ? "FieldValueRequired"
                         : e.message.rfind("unsupported value", 0) == 0 ? "FieldValueNotSupported"
                                                                        : "FieldValueInvalid";
    details.causes.push_back(
        StatusCause{.reason = std::move(reason), .message = e.message, .field = e.field});
    if (!joined.empty()) joined += ", ";
    joined += e.ToString();
  }
  s.message = base::StrCat(group_kind, " \"", name, "\" is invalid: ", joined);
  s.details = std::move(details);
  return DenyWithStatus(uid, std::move(s));
}

absl::StatusOr<AdmissionResponse> AllowWithPatch(std::string_view uid, const Json& json_patch) {
  if (!json_patch.is_array()) {
    return absl::InvalidArgumentError("a JSON patch must be an array of operations");
  }
  for (size_t i = 0; i < json_patch.size(); ++i) {
    const Json& op = json_patch[i];
    if (!op.is_object() || !op.contains("op") || !op["op"].is_string() || !op.contains("path") ||
        !op["path"].is_string()) {
      return absl::InvalidArgumentError(
          base::StrCat("JSON patch operation ", i, " needs string \"op\" and \"path\""));
    }
  }
  AdmissionResponse r = Allow(uid);
  if (json_patch.empty()) return r;
  std::string text = base::DumpJson(json_patch);
  r.patch = absl::Base64Escape(base::ToAbsl(text));
  r.patch_type = std::string(kPatchTypeJSONPatch);
  return r;
}

absl::StatusOr<Json> ResponsePatch(const AdmissionResponse& response) {
  if (!response.patch.has_value()) return Json(nullptr);
  std::string text;
  if (!absl::Base64Unescape(base::ToAbsl(*response.patch), &text)) {
    return absl::InvalidArgumentError("response.patch is not valid base64");
  }
  return base::ParseJson(text);
}

AdmissionReview MakeResponseReview(const AdmissionReview& request, AdmissionResponse response) {
  AdmissionReview out;
  out.api_version =
      request.api_version.empty() ? std::string(kAdmissionApiVersion) : request.api_version;
  out.kind = request.kind.empty() ? std::string(kAdmissionReviewKind) : request.kind;
  if (request.request.has_value()) response.uid = request.request->uid;
  out.response = std::move(response);
  return out;
}

absl::Status ValidateRequestReview(const AdmissionReview& review) {
  if (review.api_version != kAdmissionApiVersion) {
    return absl::InvalidArgumentError(base::StrCat("unsupported apiVersion \"",
                                                   review.api_version, "\", want \"",
                                                   kAdmissionApiVersion, "\""));
  }
  if (review.kind != kAdmissionReviewKind) {
    return absl::InvalidArgumentError(
        base::StrCat("unsupported kind \"", review.kind, "\", want \"AdmissionReview\""));
  }
  if (!review.request.has_value()) {
    return absl::InvalidArgumentError("AdmissionReview has no request");
  }
  if (review.request->uid.empty()) {
    return absl::InvalidArgumentError("request.uid: Required value");
  }
  return absl::OkStatus();
}

}  // namespace spiderpool::api
