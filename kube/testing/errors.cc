#include "kube/testing/errors.h"

#include <algorithm>

#include "base/strings.h"

namespace spiderpool::kube::testing {

using base::Json;
using base::StrCat;

std::string_view AdmissionOperationName(AdmissionOperation op) {
  switch (op) {
    case AdmissionOperation::kCreate: return "CREATE";
    case AdmissionOperation::kUpdate: return "UPDATE";
    case AdmissionOperation::kDelete: return "DELETE";
  }
  return "UNKNOWN";
}

Json ApiStatus::ToJson() const {
  Json j = {{"kind", "Status"},
            {"apiVersion", "v1"},
            {"metadata", Json::object()},
            {"status", "Failure"},
            {"message", message},
            {"reason", reason},
            {"code", code}};
  if (message.empty()) j.erase("message");
  if (reason.empty()) j.erase("reason");
  Json details = Json::object();
  if (!name.empty()) details["name"] = name;
  if (!group.empty()) details["group"] = group;
  if (!kind.empty()) details["kind"] = kind;
  if (!causes.empty()) {
    Json cs = Json::array();
    for (const StatusCause& c : causes) {
      Json cj = Json::object();
      if (!c.reason.empty()) cj["reason"] = c.reason;
      if (!c.message.empty()) cj["message"] = c.message;
      if (!c.field.empty()) cj["field"] = c.field;
      cs.push_back(std::move(cj));
    }
    details["causes"] = std::move(cs);
  }
  if (retry_after_seconds > 0) details["retryAfterSeconds"] = retry_after_seconds;
  if (!details.empty()) j["details"] = std::move(details);
  return j;
}

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
  return out;
}

FieldError FieldInvalid(std::string_view field, std::string_view value_repr,
                        std::string_view detail) {
  std::string body = StrCat("Invalid value: ", value_repr);
  if (!detail.empty()) body += StrCat(": ", detail);
  return {"FieldValueInvalid", std::string(field), body};
}

FieldError FieldRequired(std::string_view field, std::string_view detail) {
  std::string body = "Required value";
  if (!detail.empty()) body += StrCat(": ", detail);
  return {"FieldValueRequired", std::string(field), body};
}

FieldError FieldForbidden(std::string_view field, std::string_view detail) {
  return {"FieldValueForbidden", std::string(field), StrCat("Forbidden: ", detail)};
}

FieldError FieldNotSupported(std::string_view field, std::string_view value_repr,
                             const std::vector<std::string>& supported) {
  std::string list;
  for (const std::string& s : supported) {
    if (!list.empty()) list += ", ";
    list += Quote(s);
  }
  return {"FieldValueNotSupported", std::string(field),
          StrCat("Unsupported value: ", value_repr, ": supported values: ", list)};
}

namespace {
std::string GroupResource(std::string_view group, std::string_view plural) {
  return group.empty() ? std::string(plural) : StrCat(plural, ".", group);
}
}  // namespace

ApiStatus NotFoundStatus(std::string_view group, std::string_view plural, std::string_view name) {
  ApiStatus s;
  s.code = 404;
  s.reason = "NotFound";
  s.message = StrCat(GroupResource(group, plural), " ", Quote(name), " not found");
  s.name = name;
  s.group = group;
  s.kind = plural;
  return s;
}

ApiStatus AlreadyExistsStatus(std::string_view group, std::string_view plural,
                              std::string_view name) {
  ApiStatus s;
  s.code = 409;
  s.reason = "AlreadyExists";
  s.message = StrCat(GroupResource(group, plural), " ", Quote(name), " already exists");
  s.name = name;
  s.group = group;
  s.kind = plural;
  return s;
}

ApiStatus ConflictStatus(std::string_view group, std::string_view plural, std::string_view name,
                         std::string_view cause) {
  ApiStatus s;
  s.code = 409;
  s.reason = "Conflict";
  s.message = StrCat("Operation cannot be fulfilled on ", GroupResource(group, plural), " ",
                     Quote(name), ": ", cause);
  s.name = name;
  s.group = group;
  s.kind = plural;
  return s;
}

ApiStatus InvalidStatus(std::string_view group, std::string_view kind, std::string_view name,
                        const std::vector<FieldError>& errors) {
  ApiStatus s;
  s.code = 422;
  s.reason = "Invalid";
  std::string qualified = group.empty() ? std::string(kind) : StrCat(kind, ".", group);
  // field.ErrorList.ToAggregate: the message lists each distinct error once (causes keep all).
  std::string agg;
  std::vector<std::string> seen;
  for (const FieldError& e : errors) {
    std::string msg = e.field.empty() ? e.body : StrCat(e.field, ": ", e.body);
    if (std::find(seen.begin(), seen.end(), msg) != seen.end()) continue;
    if (!seen.empty()) agg += ", ";
    agg += msg;
    seen.push_back(std::move(msg));
  }
  if (seen.size() > 1) agg = StrCat("[", agg, "]");
  s.message = StrCat(qualified, " ", Quote(name), " is invalid: ", agg);
  s.name = name;
  s.group = group;
  s.kind = kind;
  for (const FieldError& e : errors) s.causes.push_back({e.reason, e.body, e.field});
  return s;
}

ApiStatus BadRequestStatus(std::string_view message) {
  ApiStatus s;
  s.code = 400;
  s.reason = "BadRequest";
  s.message = message;
  return s;
}

ApiStatus ForbiddenStatus(std::string_view group, std::string_view plural, std::string_view name,
                          std::string_view reason_text) {
  ApiStatus s;
  s.code = 403;
  s.reason = "Forbidden";
  s.message = name.empty()
                  ? StrCat(GroupResource(group, plural), " is forbidden: ", reason_text)
                  : StrCat(GroupResource(group, plural), " ", Quote(name),
                           " is forbidden: ", reason_text);
  s.name = name;
  s.group = group;
  s.kind = plural;
  return s;
}

ApiStatus MethodNotAllowedStatus(std::string_view message) {
  ApiStatus s;
  s.code = 405;
  s.reason = "MethodNotAllowed";
  s.message = message;
  return s;
}

ApiStatus UnsupportedMediaTypeStatus(std::string_view message) {
  ApiStatus s;
  s.code = 415;
  s.reason = "UnsupportedMediaType";
  s.message = message;
  return s;
}

ApiStatus GoneStatus(std::string_view message) {
  ApiStatus s;
  s.code = 410;
  s.reason = "Gone";
  s.message = message;
  return s;
}

ApiStatus ExpiredStatus(std::string_view message) {
  ApiStatus s;
  s.code = 410;
  s.reason = "Expired";
  s.message = message;
  return s;
}

ApiStatus InternalErrorStatus(std::string_view message) {
  ApiStatus s;
  s.code = 500;
  s.reason = "InternalError";
  s.message = StrCat("Internal error occurred: ", message);
  s.causes.push_back({"", std::string(message), ""});
  return s;
}

ApiStatus UnauthorizedStatus() {
  ApiStatus s;
  s.code = 401;
  s.reason = "Unauthorized";
  s.message = "Unauthorized";
  return s;
}

ApiStatus TooManyRequestsStatus(int retry_after_seconds) {
  ApiStatus s;
  s.code = 429;
  s.reason = "TooManyRequests";
  s.message = "Too many requests, please try again later.";
  s.retry_after_seconds = retry_after_seconds;
  return s;
}

ApiStatus ServiceUnavailableStatus(std::string_view message) {
  ApiStatus s;
  s.code = 503;
  s.reason = "ServiceUnavailable";
  s.message = message;
  return s;
}

ApiStatus TimeoutStatus(std::string_view message) {
  ApiStatus s;
  s.code = 504;
  s.reason = "Timeout";
  s.message = message;
  return s;
}

ApiStatus ResourceNotFoundStatus() {
  ApiStatus s;
  s.code = 404;
  s.reason = "NotFound";
  s.message = "the server could not find the requested resource";
  return s;
}

ApiStatus UnprocessableStatus(std::string_view message) {
  ApiStatus s;
  s.code = 422;
  s.reason = "Invalid";
  s.message = message;
  return s;
}

ApiStatus StatusForCode(int code, std::string_view group, std::string_view plural,
                        std::string_view name, int retry_after_seconds) {
  ApiStatus s;
  switch (code) {
    case 400: s = BadRequestStatus("injected fault: bad request"); break;
    case 401: s = UnauthorizedStatus(); break;
    case 403:
      s = ForbiddenStatus(group, plural.empty() ? "resources" : plural, name,
                          "injected fault");
      break;
    case 404:
      s = plural.empty() ? ResourceNotFoundStatus() : NotFoundStatus(group, plural, name);
      break;
    case 405: s = MethodNotAllowedStatus("injected fault: method not allowed"); break;
    case 409:
      s = ConflictStatus(group, plural.empty() ? "resources" : plural, name,
                         kOptimisticLockMessage);
      break;
    case 410: s = ExpiredStatus("injected fault: too old resource version"); break;
    case 422: s = UnprocessableStatus("injected fault: invalid"); break;
    case 429: s = TooManyRequestsStatus(retry_after_seconds); break;
    case 500: s = InternalErrorStatus("injected fault"); break;
    case 503: s = ServiceUnavailableStatus("injected fault: service unavailable"); break;
    case 504:
      s = TimeoutStatus("Timeout: request did not complete within the allotted timeout");
      break;
    default:
      s.code = code;
      s.reason = code >= 500 ? "InternalError" : "BadRequest";
      s.message = StrCat("injected fault: HTTP ", code);
      break;
  }
  s.code = code;
  if (retry_after_seconds > 0) s.retry_after_seconds = retry_after_seconds;
  return s;
}

Json SuccessStatusJson(std::string_view group, std::string_view plural, std::string_view name,
                       std::string_view uid) {
  Json details = {{"name", name}, {"kind", plural}, {"uid", uid}};
  if (!group.empty()) details["group"] = group;
  return Json{{"kind", "Status"},
              {"apiVersion", "v1"},
              {"metadata", Json::object()},
              {"status", "Success"},
              {"details", std::move(details)}};
}

}  // namespace spiderpool::kube::testing
