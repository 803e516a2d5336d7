#include "kube/rest/errors.h"

#include <charconv>

#include "absl/strings/cord.h"
#include "base/strings.h"

namespace spiderpool::kube {
namespace {

std::string_view ReasonForCode(int code) {
  switch (code) {
    case 400: return reason::kBadRequest;
    case 401: return reason::kUnauthorized;
    case 403: return reason::kForbidden;
    case 404: return reason::kNotFound;
    case 405: return reason::kMethodNotAllowed;
    case 406: return reason::kNotAcceptable;
    case 409: return reason::kConflict;
    case 410: return reason::kGone;
    case 413: return reason::kRequestEntityTooLarge;
    case 415: return reason::kUnsupportedMediaType;
    case 422: return reason::kInvalid;
    case 429: return reason::kTooManyRequests;
    case 500: return reason::kInternalError;
    case 503: return reason::kServiceUnavailable;
    case 504: return reason::kTimeout;
    default: break;
  }
  if (code >= 500) return reason::kInternalError;
  return reason::kUnknown;
}

std::string_view PhraseForCode(int code) {
  switch (code) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "Request Entity Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Error";
  }
}

std::optional<std::string> Payload(const absl::Status& s, std::string_view url) {
  auto c = s.GetPayload(base::ToAbsl(url));
  if (!c.has_value()) return std::nullopt;
  return std::string(*c);
}

int ParseInt(std::string_view text, int fallback) {
  int v = 0;
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return fallback;
  return v;
}

// Reason and code of `s` for the predicates; has_http is false for statuses without payloads.
struct ReasonAndCode {
  bool has_http = false;
  int code = 0;
  std::string reason;
};

ReasonAndCode Classify(const absl::Status& s) {
  ReasonAndCode rc;
  if (s.ok()) return rc;
  std::optional<std::string> code = Payload(s, kHttpCodePayload);
  if (!code.has_value()) return rc;
  rc.has_http = true;
  rc.code = ParseInt(*code, 0);
  rc.reason = Payload(s, kReasonPayload).value_or("");
  return rc;
}

bool Check(const absl::Status& s, std::initializer_list<std::string_view> reasons, int code,
           absl::StatusCode fallback) {
  if (s.ok()) return false;
  ReasonAndCode rc = Classify(s);
  if (!rc.has_http) {
    return fallback != absl::StatusCode::kOk && s.code() == fallback;
  }
  for (std::string_view r : reasons) {
    if (rc.reason == r) return true;
  }
  // Like apimachinery: the code only counts when the reason is unknown.
  return code != 0 && rc.reason.empty() && rc.code == code;
}

absl::Status Build(int http_code, const api::Status& st, const base::Json& status_json,
                   std::optional<int> retry_after) {
  std::string reason_text = st.reason.empty() ? std::string(ReasonForCode(http_code)) : st.reason;
  std::string message = st.message;
  if (message.empty()) {
    message = base::StrCat("the server responded with ", http_code, " ", PhraseForCode(http_code));
  }
  absl::Status out(CodeForApiError(http_code, reason_text), base::ToAbsl(message));
  out.SetPayload(base::ToAbsl(kHttpCodePayload), absl::Cord(std::to_string(http_code)));
  out.SetPayload(base::ToAbsl(kReasonPayload), absl::Cord(reason_text));
  out.SetPayload(base::ToAbsl(kStatusPayload), absl::Cord(base::DumpJson(status_json)));
  std::optional<int> retry = retry_after;
  if (!retry.has_value() && st.details.has_value() && st.details->retry_after_seconds > 0) {
    retry = st.details->retry_after_seconds;
  }
  if (retry.has_value()) {
    out.SetPayload(base::ToAbsl(kRetryAfterPayload), absl::Cord(std::to_string(*retry)));
  }
  return out;
}

}  // namespace

absl::StatusCode CodeForApiError(int http_code, std::string_view r) {
  if (r == reason::kAlreadyExists) return absl::StatusCode::kAlreadyExists;
  if (r == reason::kNotFound) return absl::StatusCode::kNotFound;
  if (r == reason::kConflict) return absl::StatusCode::kAborted;
  if (r == reason::kGone || r == reason::kExpired) return absl::StatusCode::kOutOfRange;
  if (r == reason::kInvalid || r == reason::kBadRequest || r == reason::kNotAcceptable ||
      r == reason::kUnsupportedMediaType || r == reason::kRequestEntityTooLarge) {
    return absl::StatusCode::kInvalidArgument;
  }
  if (r == reason::kUnauthorized) return absl::StatusCode::kUnauthenticated;
  if (r == reason::kForbidden) return absl::StatusCode::kPermissionDenied;
  if (r == reason::kMethodNotAllowed) return absl::StatusCode::kUnimplemented;
  if (r == reason::kTooManyRequests) return absl::StatusCode::kResourceExhausted;
  if (r == reason::kTimeout || r == reason::kServerTimeout) {
    return absl::StatusCode::kDeadlineExceeded;
  }
  if (r == reason::kInternalError) {
    // A bare 502/503 from a proxy also reads "InternalError": it is transient.
    return http_code > 500 ? absl::StatusCode::kUnavailable : absl::StatusCode::kInternal;
  }
  if (r == reason::kServiceUnavailable) return absl::StatusCode::kUnavailable;
  // Unknown reason: by code.
  switch (http_code) {
    case 400: case 406: case 413: case 415: case 422: return absl::StatusCode::kInvalidArgument;
    case 401: return absl::StatusCode::kUnauthenticated;
    case 403: return absl::StatusCode::kPermissionDenied;
    case 404: return absl::StatusCode::kNotFound;
    case 405: return absl::StatusCode::kUnimplemented;
    case 409: return absl::StatusCode::kAborted;
    case 410: return absl::StatusCode::kOutOfRange;
    case 429: return absl::StatusCode::kResourceExhausted;
    case 500: return absl::StatusCode::kInternal;
    case 504: return absl::StatusCode::kDeadlineExceeded;
    default: break;
  }
  if (http_code >= 500) return absl::StatusCode::kUnavailable;
  return absl::StatusCode::kUnknown;
}

absl::Status StatusFromResponse(int http_code, std::string_view body,
                                std::string_view retry_after_header) {
  std::optional<int> retry_after;
  if (!retry_after_header.empty()) {
    int v = ParseInt(retry_after_header, -1);
    if (v >= 0) retry_after = v;
  }
  // A metav1.Status body?
  absl::StatusOr<base::Json> j = base::ParseJson(body);
  if (j.ok() && j->is_object() && j->value("kind", base::Json()) == "Status") {
    absl::StatusOr<api::Status> st = api::Decode<api::Status>(*j);
    if (st.ok()) {
      int code = http_code != 0 ? http_code : st->code;
      return Build(code, *st, *j, retry_after);
    }
  }
  // Anything else (a proxy's HTML, plain text, empty): synthesize a Status like client-go's
  // newUnstructuredResponseError.
  api::Status st;
  st.status = "Failure";
  st.code = http_code;
  st.reason = std::string(ReasonForCode(http_code));
  std::string snippet(body.substr(0, 512));
  for (char& c : snippet) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n') c = ' ';
  }
  st.message = snippet.empty()
                   ? base::StrCat("the server responded with ", http_code, " ",
                                  PhraseForCode(http_code))
                   : base::StrCat("the server responded with ", http_code, " ",
                                  PhraseForCode(http_code), ": ", snippet);
  return Build(http_code, st, api::Encode(st), retry_after);
}

absl::Status StatusFromApiStatus(const api::Status& status, int http_code) {
  int code = http_code != 0 ? http_code : status.code;
  if (code == 0) code = 500;
  return Build(code, status, api::Encode(status), std::nullopt);
}

absl::Status StatusFromStatusJson(const base::Json& status_json, int http_code) {
  absl::StatusOr<api::Status> st = api::Decode<api::Status>(status_json);
  if (!st.ok()) {
    return absl::InternalError(base::StrCat("malformed Status object: ",
                                            base::FromAbsl(st.status().message())));
  }
  int code = http_code != 0 ? http_code : st->code;
  if (code == 0) code = 500;
  return Build(code, *st, status_json, std::nullopt);
}

absl::Status WithContext(const absl::Status& s, std::string_view context) {
  if (s.ok()) return s;
  absl::Status out(s.code(), base::ToAbsl(base::StrCat(context, ": ", base::FromAbsl(s.message()))));
  s.ForEachPayload([&out](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

absl::Status MakeApiError(int http_code, std::string_view reason_text, std::string_view message,
                          int retry_after_seconds) {
  api::Status st;
  st.status = "Failure";
  st.code = http_code;
  st.reason = std::string(reason_text);
  st.message = std::string(message);
  if (retry_after_seconds > 0) {
    st.details.emplace();
    st.details->retry_after_seconds = retry_after_seconds;
  }
  return Build(http_code, st, api::Encode(st), std::nullopt);
}

int HttpCode(const absl::Status& s) {
  std::optional<std::string> code = Payload(s, kHttpCodePayload);
  return code.has_value() ? ParseInt(*code, 0) : 0;
}

std::string Reason(const absl::Status& s) { return Payload(s, kReasonPayload).value_or(""); }

std::optional<api::Status> ApiStatus(const absl::Status& s) {
  std::optional<std::string> text = Payload(s, kStatusPayload);
  if (!text.has_value()) return std::nullopt;
  absl::StatusOr<api::Status> st = api::DecodeJson<api::Status>(*text);
  if (!st.ok()) return std::nullopt;
  return *std::move(st);
}

std::vector<api::StatusCause> StatusCauses(const absl::Status& s) {
  std::optional<api::Status> st = ApiStatus(s);
  if (!st.has_value() || !st->details.has_value()) return {};
  return st->details->causes;
}

std::optional<absl::Duration> RetryAfter(const absl::Status& s) {
  std::optional<std::string> v = Payload(s, kRetryAfterPayload);
  if (!v.has_value()) return std::nullopt;
  int secs = ParseInt(*v, -1);
  if (secs < 0) return std::nullopt;
  return absl::Seconds(secs);
}

bool IsNotFound(const absl::Status& s) {
  return Check(s, {reason::kNotFound}, 404, absl::StatusCode::kNotFound);
}
bool IsAlreadyExists(const absl::Status& s) {
  return Check(s, {reason::kAlreadyExists}, 0, absl::StatusCode::kAlreadyExists);
}
bool IsConflict(const absl::Status& s) {
  return Check(s, {reason::kConflict}, 409, absl::StatusCode::kAborted);
}
bool IsInvalid(const absl::Status& s) {
  return Check(s, {reason::kInvalid}, 422, absl::StatusCode::kOk);
}
bool IsBadRequest(const absl::Status& s) {
  return Check(s, {reason::kBadRequest}, 400, absl::StatusCode::kOk);
}
bool IsGone(const absl::Status& s) {
  return Check(s, {reason::kGone, reason::kExpired}, 410, absl::StatusCode::kOutOfRange);
}
bool IsTooManyRequests(const absl::Status& s) {
  return Check(s, {reason::kTooManyRequests}, 429, absl::StatusCode::kResourceExhausted);
}
bool IsServerError(const absl::Status& s) {
  if (s.ok()) return false;
  ReasonAndCode rc = Classify(s);
  if (!rc.has_http) return false;
  return rc.code >= 500 || rc.reason == reason::kInternalError ||
         rc.reason == reason::kServiceUnavailable || rc.reason == reason::kServerTimeout ||
         rc.reason == reason::kTimeout;
}
bool IsTimeout(const absl::Status& s) {
  if (s.ok()) return false;
  if (Payload(s, kClientTimeoutPayload).has_value()) return true;
  return Check(s, {reason::kTimeout, reason::kServerTimeout}, 504,
               absl::StatusCode::kDeadlineExceeded);
}
bool IsUnauthorized(const absl::Status& s) {
  return Check(s, {reason::kUnauthorized}, 401, absl::StatusCode::kUnauthenticated);
}
bool IsForbidden(const absl::Status& s) {
  return Check(s, {reason::kForbidden}, 403, absl::StatusCode::kPermissionDenied);
}
bool IsMethodNotAllowed(const absl::Status& s) {
  return Check(s, {reason::kMethodNotAllowed}, 405, absl::StatusCode::kOk);
}

}  // namespace spiderpool::kube
