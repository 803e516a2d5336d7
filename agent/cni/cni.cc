#include "agent/cni/cni.h"

#include <cctype>
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "agent/ipamapi/ipamapi.h"
#include "base/ip.h"
#include "base/strings.h"

namespace spiderpool::agent::cni {

namespace {

bool ValidNameChars(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (std::isalnum(c)) continue;
    if (i > 0 && (c == '_' || c == '.' || c == '-')) continue;
    return false;
  }
  return true;
}

std::optional<int64_t> ParseUint(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string JoinQuoted(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ' ';
    out += base::DumpJson(Json(v[i]));
  }
  return out + "]";
}

}  // namespace

std::string FormatError(const CniError& e, std::string_view cni_version) {
  Json j = Json::object();
  j["cniVersion"] = std::string(cni_version.empty() ? kLatestVersion : cni_version);
  j["code"] = e.code;
  j["msg"] = e.msg;
  if (!e.details.empty()) j["details"] = e.details;
  return base::DumpJson(j);
}

bool IsSupportedVersion(std::string_view v) {
  for (std::string_view s : kSupportedVersions) {
    if (s == v) return true;
  }
  return false;
}

std::optional<int> CompareVersions(std::string_view a, std::string_view b) {
  auto split = [](std::string_view v) -> std::optional<std::array<int64_t, 3>> {
    std::array<int64_t, 3> parts{};
    for (int i = 0; i < 3; ++i) {
      size_t dot = v.find('.');
      std::string_view part = i < 2 ? v.substr(0, dot) : v;
      if (i < 2 && dot == std::string_view::npos) return std::nullopt;
      auto n = ParseUint(part);
      if (!n) return std::nullopt;
      parts[i] = *n;
      if (i < 2) v.remove_prefix(dot + 1);
    }
    return parts;
  };
  auto pa = split(a), pb = split(b);
  if (!pa || !pb) return std::nullopt;
  for (int i = 0; i < 3; ++i) {
    if ((*pa)[i] != (*pb)[i]) return (*pa)[i] < (*pb)[i] ? -1 : 1;
  }
  return 0;
}

std::string VersionInfoJson() {
  Json j = Json::object();
  j["cniVersion"] = std::string(kLatestVersion);
  Json list = Json::array();
  for (std::string_view v : kSupportedVersions) list.push_back(std::string(v));
  j["supportedVersions"] = list;
  return base::DumpJson(j);
}

std::optional<CniError> ValidateContainerID(std::string_view id) {
  if (id.empty()) return CniError{kErrUnknownContainer, "missing containerID", ""};
  if (!ValidNameChars(id)) {
    return CniError{kErrInvalidEnv, "invalid characters in containerID", std::string(id)};
  }
  return std::nullopt;
}

std::optional<CniError> ValidateInterfaceName(std::string_view name) {
  if (name.empty()) return CniError{kErrInvalidEnv, "interface name is empty", ""};
  if (name.size() > 15) {
    return CniError{kErrInvalidEnv, "interface name is too long", "interface name should be less than 16 characters"};
  }
  if (name == "." || name == "..") {
    return CniError{kErrInvalidEnv, "interface name is . or ..", ""};
  }
  for (char c : name) {
    if (c == '/' || c == ':' || std::isspace(static_cast<unsigned char>(c))) {
      return CniError{kErrInvalidEnv,
                      "interface name contains / or : or whitespace characters", ""};
    }
  }
  return std::nullopt;
}

std::optional<CniError> ValidateNetworkName(std::string_view name) {
  if (name.empty()) return CniError{kErrInvalidNetworkConfig, "missing network name", ""};
  if (!ValidNameChars(name)) {
    return CniError{kErrInvalidNetworkConfig, "invalid characters found in network name",
                    std::string(name)};
  }
  return std::nullopt;
}

std::optional<CniError> ParseStdin(std::string_view text, Json* json, std::string* version,
                                   std::string* name) {
  auto parsed = base::ParseJson(text);
  if (!parsed.ok()) {
    return CniError{kErrDecoding,
                    base::StrCat("error unmarshalling network config: ",
                                 base::FromAbsl(parsed.status().message())),
                    ""};
  }
  if (!parsed->is_object()) {
    return CniError{kErrDecoding,
                    base::StrCat("error unmarshalling network config: expected a JSON object, got ",
                                 parsed->type_name()),
                    ""};
  }
  *json = std::move(*parsed);
  version->clear();
  name->clear();
  auto v = json->find("cniVersion");
  if (v != json->end() && !v->is_null()) {
    if (!v->is_string()) {
      return CniError{kErrDecoding,
                      base::StrCat("error unmarshalling network config: cniVersion: expected "
                                   "string, got ",
                                   v->type_name()),
                      ""};
    }
    *version = v->get<std::string>();
  }
  if (version->empty()) *version = "0.1.0";
  auto n = json->find("name");
  if (n != json->end() && !n->is_null()) {
    if (!n->is_string()) {
      return CniError{kErrDecoding,
                      base::StrCat("error unmarshalling network config: name: expected string, "
                                   "got ",
                                   n->type_name()),
                      ""};
    }
    *name = n->get<std::string>();
  }
  return ValidateNetworkName(*name);
}

std::optional<CniError> ParseCniArgs(std::string_view text, K8sArgs* out) {
  *out = K8sArgs{};
  if (text.empty()) return std::nullopt;
  std::vector<std::pair<std::string_view, std::string_view>> pairs;
  size_t start = 0;
  while (true) {
    size_t end = text.find(';', start);
    std::string_view pair =
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    size_t eq = pair.find('=');
    if (eq == std::string_view::npos || pair.find('=', eq + 1) != std::string_view::npos) {
      return CniError{kErrInvalidEnv,
                      base::StrCat("invalid CNI_ARGS: ARGS: invalid pair ",
                                   base::DumpJson(Json(std::string(pair)))),
                      std::string(text)};
    }
    pairs.emplace_back(pair.substr(0, eq), pair.substr(eq + 1));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  // IgnoreUnknown is looked up first, wherever it is.
  for (const auto& [k, v] : pairs) {
    if (k != "IgnoreUnknown") continue;
    if (v == "1" || v == "true" || v == "True") {
      out->ignore_unknown = true;
    } else if (v == "0" || v == "false" || v == "False") {
      out->ignore_unknown = false;
    } else {
      return CniError{kErrInvalidEnv,
                      base::StrCat("invalid CNI_ARGS: ARGS: error parsing value of pair \"",
                                   k, "=", v, "\": boolean unmarshal error: invalid input ", v),
                      std::string(text)};
    }
  }
  std::vector<std::string> unknown;
  for (const auto& [k, v] : pairs) {
    if (k == "IgnoreUnknown") continue;
    if (k == "K8S_POD_NAMESPACE") {
      out->pod_namespace = std::string(v);
    } else if (k == "K8S_POD_NAME") {
      out->pod_name = std::string(v);
    } else if (k == "K8S_POD_UID") {
      out->pod_uid = std::string(v);
    } else if (k == "K8S_POD_INFRA_CONTAINER_ID") {
      out->infra_container_id = std::string(v);
    } else if (k == "IP") {
      if (!v.empty() && !base::IPAddress::Parse(v).ok()) {
        return CniError{kErrInvalidEnv,
                        base::StrCat("invalid CNI_ARGS: ARGS: error parsing value of pair \"IP=",
                                     v, "\": invalid IP address"),
                        std::string(text)};
      }
      out->ip = std::string(v);
    } else {
      unknown.push_back(base::StrCat(k, "=", v));
    }
  }
  if (!unknown.empty() && !out->ignore_unknown) {
    return CniError{kErrInvalidEnv,
                    base::StrCat("invalid CNI_ARGS: ARGS: unknown args ", JoinQuoted(unknown)),
                    "set IgnoreUnknown=1 to ignore them"};
  }
  return std::nullopt;
}

namespace {

// Shapes of a CNI result, for CHECK's prevResult (unknown keys are ignored).
struct ResultInterface {
  std::string name;
  std::string mac;
  std::string sandbox;
  template <typename V>
  void Visit(V& v) {
    v.Field("name", name, {.required = true});
    v.Field("mac", mac);
    v.Field("sandbox", sandbox);
  }
};
struct ResultIP {
  std::optional<std::string> version;
  std::string address;
  std::optional<std::string> gateway;
  std::optional<int64_t> interface_;
  template <typename V>
  void Visit(V& v) {
    v.Field("version", version, {.enum_values = {"4", "6"}});
    v.Field("address", address, {.required = true, .format = api::Format::kCIDR});
    v.Field("gateway", gateway, {.format = api::Format::kIP});
    v.Field("interface", interface_, {.minimum = 0});
  }
};
struct ResultRoute {
  std::string dst;
  std::optional<std::string> gw;
  template <typename V>
  void Visit(V& v) {
    v.Field("dst", dst, {.required = true, .format = api::Format::kCIDR});
    v.Field("gw", gw, {.format = api::Format::kIP});
  }
};
struct Result {
  std::string cni_version;
  std::vector<ResultInterface> interfaces;
  std::vector<ResultIP> ips;
  std::vector<ResultRoute> routes;
  std::optional<ipamapi::DNS> dns;  // the agent's wire DNS is CNI's types.DNS
  template <typename V>
  void Visit(V& v) {
    v.Field("cniVersion", cni_version);
    v.Field("interfaces", interfaces);
    v.Field("ips", ips);
    v.Field("routes", routes);
    v.Field("dns", dns);
  }
};

}  // namespace

std::optional<CniError> ValidatePrevResult(const Json& prev, std::string_view cni_version) {
  api::DecodeErrors errs;
  Result r = api::DecodeInto<Result>(prev, &errs, "prevResult");
  bool pre_1_0 = CompareVersions(cni_version, "1.0.0").value_or(0) < 0;
  if (errs.ok()) {
    for (size_t i = 0; i < r.ips.size(); ++i) {
      std::string path = base::StrCat("prevResult.ips[", i, "]");
      if (pre_1_0 && !r.ips[i].version.has_value()) {
        errs.Add(path + ".version", "Required value");
      }
      if (r.ips[i].interface_.has_value() &&
          *r.ips[i].interface_ >= static_cast<int64_t>(r.interfaces.size())) {
        errs.Add(path + ".interface",
                 base::StrCat("index ", *r.ips[i].interface_, " is out of range of interfaces (",
                              r.interfaces.size(), ")"));
      }
    }
  }
  if (errs.ok()) return std::nullopt;
  std::string details;
  for (const auto& e : errs.errors) {
    if (!details.empty()) details += "; ";
    details += e.ToString();
  }
  return CniError{kErrDecoding, base::StrCat("failed to decode prevResult: ", details), ""};
}

}  // namespace spiderpool::agent::cni
