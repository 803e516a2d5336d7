#include "agent/ifacer/skel.h"

#include <vector>

#include "base/json.h"
#include "base/strings.h"

namespace spiderpool::agent::ifacer {

namespace {

using cni::CniError;

std::string Join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? std::string(sep) : "") + v[i];
  return out;
}

std::string SupportedList() {
  std::vector<std::string> q;
  for (std::string_view v : cni::kSupportedVersions) q.push_back(base::StrCat("\"", v, "\""));
  return "[" + Join(q, " ") + "]";
}

}  // namespace

cni::Outcome Fail(const CniError& e, std::string_view cni_version) {
  return cni::Outcome{1, cni::FormatError(e, cni_version) + "\n", ""};
}

cni::Outcome Succeed(std::string out) {
  if (!out.empty()) out += "\n";
  return cni::Outcome{0, std::move(out), ""};
}

std::optional<cni::Outcome> RunSkel(const cni::Env& env, std::string_view about,
                                    const std::function<bool(std::string*, std::string*)>& read_stdin,
                                    SkelRequest* req) {
  const std::string& cmd = env.command;
  if (cmd.empty()) {
    std::vector<std::string> versions(cni::kSupportedVersions.begin(),
                                      cni::kSupportedVersions.end());
    return cni::Outcome{0, "",
                        base::StrCat(about, "\nCNI protocol versions supported: ",
                                     Join(versions, ", "), "\n")};
  }
  bool add = cmd == "ADD", del = cmd == "DEL", check = cmd == "CHECK";
  bool gc = cmd == "GC", status = cmd == "STATUS";
  std::vector<std::string> missing;
  if ((add || del || check) && env.container_id.empty()) missing.push_back("CNI_CONTAINERID");
  if ((add || check) && env.netns.empty()) missing.push_back("CNI_NETNS");
  if ((add || del || check) && env.ifname.empty()) missing.push_back("CNI_IFNAME");
  if ((add || del || check || gc || status) && env.path.empty()) missing.push_back("CNI_PATH");
  if (!missing.empty()) {
    return Fail({cni::kErrInvalidEnv,
                 base::StrCat("required env variables [", Join(missing, ","), "] missing"), ""},
                "");
  }
  if (cmd == "VERSION") return Succeed(cni::VersionInfoJson());
  if (!(add || del || check || gc || status)) {
    return Fail({cni::kErrInvalidEnv, base::StrCat("unknown CNI_COMMAND: ", cmd), ""}, "");
  }
  std::string text, read_error;
  if (!read_stdin || !read_stdin(&text, &read_error)) {
    return Fail({cni::kErrIOFailure, base::StrCat("error reading from stdin: ", read_error), ""},
                "");
  }
  std::string version, name;
  if (auto e = cni::ParseStdin(text, &req->json, &version, &name)) {
    std::string echo;
    const cni::Json& j = req->json;
    if (j.is_object() && j.contains("cniVersion") && j["cniVersion"].is_string()) {
      echo = j["cniVersion"].get<std::string>();
    }
    return Fail(*e, echo);
  }
  req->echo = req->json.contains("cniVersion") ? version : "";
  if (add || del || check) {
    if (auto e = cni::ValidateContainerID(env.container_id)) return Fail(*e, req->echo);
    if (auto e = cni::ValidateInterfaceName(env.ifname)) return Fail(*e, req->echo);
  }
  if (check) {
    auto cmp = cni::CompareVersions(version, "0.4.0");
    if (!cmp) {
      return Fail({cni::kErrDecoding, base::StrCat("invalid cniVersion \"", version, "\""), ""},
                  req->echo);
    }
    if (*cmp < 0) {
      return Fail({cni::kErrIncompatibleVersion, "config version does not allow CHECK", ""},
                  req->echo);
    }
  }
  if ((add || del || check) && !cni::IsSupportedVersion(version)) {
    return Fail({cni::kErrIncompatibleVersion, "incompatible CNI versions",
                 base::StrCat("config is \"", version, "\", plugin supports ", SupportedList())},
                req->echo);
  }
  req->command = cmd;
  req->cni_version = req->echo.empty() ? std::string(cni::kLatestVersion) : version;
  return std::nullopt;
}

}  // namespace spiderpool::agent::ifacer
