#include "agent/ipamapi/ipamapi.h"

#include <string>
#include <string_view>

#include "absl/strings/ascii.h"

namespace spiderpool::agent::ipamapi {

namespace {
constexpr size_t kMaxRawMessage = 1024;
}  // namespace

int HttpStatusFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return kStatusOK;
    case absl::StatusCode::kInvalidArgument:
      return kStatusBadRequest;
    case absl::StatusCode::kNotFound:
      return kStatusNotFound;
    case absl::StatusCode::kUnavailable:
      return kStatusServiceUnavailable;
    default:
      return kStatusInternalError;
  }
}

std::string ErrorJson(std::string_view message) {
  base::Json j = base::Json::object();
  j["message"] = std::string(message);
  return base::DumpJson(j);
}

std::string ErrorMessageFromBody(std::string_view body) {
  auto j = base::ParseJson(body);
  if (j.ok()) {
    if (j->is_string()) return j->get<std::string>();
    if (j->is_object()) {
      auto it = j->find("message");
      if (it != j->end() && it->is_string()) return it->get<std::string>();
    }
  }
  std::string raw(absl::StripAsciiWhitespace(
      absl::string_view(body.data(), body.size())));
  if (raw.size() > kMaxRawMessage) {
    raw.resize(kMaxRawMessage);
    raw += "...";
  }
  return raw;
}

}  // namespace spiderpool::agent::ipamapi
