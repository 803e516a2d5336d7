#include "agent/cni/ipam_conf.h"

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "base/ip.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::agent::cni {

std::optional<CniError> DecodeNetConf(const Json& json, NetConf* out) {
  api::DecodeErrors errs;
  *out = api::DecodeInto<NetConf>(json, &errs);
  if (!errs.ok()) {
    std::string details;
    for (const auto& e : errs.errors) {
      if (!details.empty()) details += "; ";
      details += e.ToString();
    }
    return CniError{kErrDecoding,
                    base::StrCat("error decoding network config: ", details), ""};
  }
  if (!out->ipam.has_value()) {
    return CniError{kErrInvalidNetworkConfig, "invalid network config: ipam is missing",
                    "the network config needs an \"ipam\" object with \"type\""};
  }
  IPAMConf& ipam = *out->ipam;
  if (ipam.type.empty()) {
    return CniError{kErrInvalidNetworkConfig, "invalid network config: ipam.type is missing", ""};
  }
  if (ipam.log_level.empty()) ipam.log_level = std::string(kDefaultLogLevel);
  base::LogLevel level;
  std::string lower;
  for (char c : ipam.log_level) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!base::ParseLogLevel(lower, &level) && lower != "fatal" && lower != "panic") {
    return CniError{kErrInvalidNetworkConfig,
                    base::StrCat("invalid network config: ipam.log_level: unsupported value \"",
                                 ipam.log_level, "\""),
                    "supported values: debug, info, warn, error, fatal, panic"};
  }
  if (ipam.log_file_path.empty()) ipam.log_file_path = std::string(kDefaultLogFilePath);
  if (ipam.ipam_unix_socket_path.empty()) {
    ipam.ipam_unix_socket_path = std::string(ipamapi::kDefaultSocketPath);
  }
  if (ipam.ipam_unix_socket_path.size() > 107) {
    return CniError{kErrInvalidNetworkConfig,
                    "invalid network config: ipam.ipam_unix_socket_path is longer than 107 bytes",
                    ipam.ipam_unix_socket_path};
  }
  out->timeout_seconds = kDefaultTimeoutSeconds;
  if (ipam.ipam_timeout_seconds.has_value()) {
    double t = *ipam.ipam_timeout_seconds;
    if (!(t > 0 && t <= kMaxTimeoutSeconds)) {
      return CniError{kErrInvalidNetworkConfig,
                      base::StrCat("invalid network config: ipam.ipam_timeout_seconds must be in "
                                   "(0, 600], got ",
                                   base::DumpJson(Json(t))),
                      ""};
    }
    out->timeout_seconds = t;
  }
  return std::nullopt;
}

absl::StatusOr<std::optional<IPAMConf>> SpiderpoolIpamOf(std::string_view config) {
  absl::StatusOr<Json> json = base::ParseJson(config);
  if (!json.ok()) return base::Annotate(json.status(), "config");
  if (!json->is_object()) return absl::InvalidArgumentError("config: not a JSON object");
  std::vector<const Json*> plugins;
  if (auto it = json->find("plugins"); it != json->end()) {
    if (!it->is_array()) return absl::InvalidArgumentError("config.plugins: not an array");
    for (const Json& p : *it) plugins.push_back(&p);
  } else {
    plugins.push_back(&*json);
  }
  for (size_t i = 0; i < plugins.size(); ++i) {
    const Json& plugin = *plugins[i];
    if (!plugin.is_object()) continue;
    auto ipam = plugin.find("ipam");
    if (ipam == plugin.end() || !ipam->is_object()) continue;
    auto type = ipam->find("type");
    if (type == ipam->end() || !type->is_string() || type->get<std::string>() != "spiderpool") {
      continue;
    }
    api::DecodeErrors errs;
    IPAMConf out = api::DecodeInto<IPAMConf>(*ipam, &errs);
    if (!errs.ok()) {
      return absl::InvalidArgumentError(base::StrCat(
          json->contains("plugins") ? base::StrCat("config.plugins[", i, "].ipam: ")
                                    : std::string("config.ipam: "),
          errs.errors.front().ToString()));
    }
    return std::optional<IPAMConf>(std::move(out));
  }
  return std::optional<IPAMConf>();
}

void FillK8sArgsFromConf(const NetConf& conf, K8sArgs* out) {
  if (!conf.args.has_value() || !conf.args->is_object()) return;
  auto it = conf.args->find("cni");
  if (it == conf.args->end() || !it->is_object()) return;
  auto fill = [&](const char* key, std::string* field) {
    auto v = it->find(key);
    if (field->empty() && v != it->end() && v->is_string()) *field = v->get<std::string>();
  };
  fill("K8S_POD_NAMESPACE", &out->pod_namespace);
  fill("K8S_POD_NAME", &out->pod_name);
  fill("K8S_POD_UID", &out->pod_uid);
}

absl::StatusOr<Json> BuildResult(const ipamapi::IpamAddResponse& resp, std::string_view if_name,
                                 std::string_view cni_version) {
  bool with_version = CompareVersions(cni_version, "1.0.0").value_or(0) < 0;
  Json ips = Json::array();
  for (size_t i = 0; i < resp.ips.size(); ++i) {
    const ipamapi::IpConfig& ip = resp.ips[i];
    if (ip.nic != if_name) continue;
    auto prefix = base::IPPrefix::Parse(ip.address);
    if (!prefix.ok()) {
      return absl::InvalidArgumentError(base::StrCat(
          "ips[", i, "].address: ", base::FromAbsl(prefix.status().message())));
    }
    int family = prefix->family() == base::IPFamily::kV4 ? 4 : 6;
    if (family != ip.version) {
      return absl::InvalidArgumentError(base::StrCat("ips[", i, "]: address ", ip.address,
                                                     " is not IPv", ip.version));
    }
    Json j = Json::object();
    if (with_version) j["version"] = family == 4 ? "4" : "6";
    j["address"] = prefix->ToString();
    if (!ip.gateway.empty()) {
      auto gw = base::IPAddress::Parse(ip.gateway);
      if (!gw.ok()) {
        return absl::InvalidArgumentError(base::StrCat(
            "ips[", i, "].gateway: ", base::FromAbsl(gw.status().message())));
      }
      j["gateway"] = gw->ToString();
    }
    ips.push_back(std::move(j));
  }
  Json routes = Json::array();
  for (size_t i = 0; i < resp.routes.size(); ++i) {
    const ipamapi::Route& r = resp.routes[i];
    if (r.if_name != if_name) continue;
    auto dst = base::IPPrefix::Parse(r.dst);
    if (!dst.ok()) {
      return absl::InvalidArgumentError(
          base::StrCat("routes[", i, "].dst: ", base::FromAbsl(dst.status().message())));
    }
    Json j = Json::object();
    j["dst"] = dst->Canonical().ToString();
    if (!r.gw.empty()) {
      auto gw = base::IPAddress::Parse(r.gw);
      if (!gw.ok()) {
        return absl::InvalidArgumentError(
            base::StrCat("routes[", i, "].gw: ", base::FromAbsl(gw.status().message())));
      }
      j["gw"] = gw->ToString();
    }
    routes.push_back(std::move(j));
  }
  Json dns = Json::object();
  if (resp.dns.has_value()) {
    if (!resp.dns->nameservers.empty()) dns["nameservers"] = resp.dns->nameservers;
    if (!resp.dns->domain.empty()) dns["domain"] = resp.dns->domain;
    if (!resp.dns->search.empty()) dns["search"] = resp.dns->search;
    if (!resp.dns->options.empty()) dns["options"] = resp.dns->options;
  }
  Json out = Json::object();
  out["cniVersion"] = std::string(cni_version);
  if (!ips.empty()) out["ips"] = std::move(ips);
  if (!routes.empty()) out["routes"] = std::move(routes);
  out["dns"] = std::move(dns);
  return out;
}

}  // namespace spiderpool::agent::cni
