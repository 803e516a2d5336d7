#include "agent/cni/skel.h"

#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/str_join.h"
#include "base/json.h"
#include "base/strings.h"

namespace spiderpool::agent::cni {

namespace {

std::string Getenv(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string SupportedList() {
  std::vector<std::string> q;
  for (std::string_view v : kSupportedVersions) q.push_back(base::StrCat("\"", v, "\""));
  return "[" + absl::StrJoin(q, " ") + "]";
}

}  // namespace

Env Env::FromProcess() {
  return Env{.command = Getenv("CNI_COMMAND"),
             .container_id = Getenv("CNI_CONTAINERID"),
             .netns = Getenv("CNI_NETNS"),
             .ifname = Getenv("CNI_IFNAME"),
             .args = Getenv("CNI_ARGS"),
             .path = Getenv("CNI_PATH")};
}

Outcome Fail(const CniError& e, std::string_view cni_version) {
  return Outcome{1, FormatError(e, cni_version) + "\n", ""};
}

Outcome Succeed(std::string out) {
  if (!out.empty()) out += "\n";
  return Outcome{0, std::move(out), ""};
}

std::optional<Outcome> RunSkel(const Env& env, std::string_view about,
                               const ReadStdinFn& read_stdin, SkelRequest* req,
                               const SkelOptions& options) {
  const std::string& cmd = env.command;
  if (cmd.empty()) {
    // libcni's skel: without CNI_COMMAND, print what this is and exit 0.
    return Outcome{0, "",
                   base::StrCat(about, "\nCNI protocol versions supported: ",
                                absl::StrJoin(std::vector<std::string>(kSupportedVersions.begin(),
                                                       kSupportedVersions.end()),
                                     ", "),
                                "\n")};
  }
  bool add = cmd == "ADD", del = cmd == "DEL", check = cmd == "CHECK";
  bool gc = cmd == "GC", status = cmd == "STATUS";
  std::vector<std::string> missing;
  if ((add || del || check) && env.container_id.empty()) missing.push_back("CNI_CONTAINERID");
  if ((add || check) && env.netns.empty()) missing.push_back("CNI_NETNS");
  if ((add || del || check) && env.ifname.empty()) missing.push_back("CNI_IFNAME");
  if ((add || del || check || gc || status) && env.path.empty()) missing.push_back("CNI_PATH");
  if (!missing.empty()) {
    return Fail({kErrInvalidEnv,
                 base::StrCat("required env variables [", absl::StrJoin(missing, ","),
                              "] missing"),
                 ""},
                "");
  }
  if (cmd == "VERSION") return Succeed(VersionInfoJson());
  if (!(add || del || check || gc || status)) {
    return Fail({kErrInvalidEnv, base::StrCat("unknown CNI_COMMAND: ", cmd), ""}, "");
  }

  std::string text, read_error;
  if (!read_stdin || !read_stdin(&text, &read_error)) {
    return Fail({kErrIOFailure, base::StrCat("error reading from stdin: ", read_error), ""}, "");
  }
  std::string name;
  if (auto e = ParseStdin(text, &req->json, &req->version, &name)) {
    // Echo the config's version in the error when there is one.
    std::string echo;
    const Json& j = req->json;
    if (!options.echo_parsed_version && j.is_object() && j.contains("cniVersion") &&
        j["cniVersion"].is_string()) {
      echo = j["cniVersion"].get<std::string>();
    }
    return Fail(*e, echo);
  }
  const std::string& version = req->version;
  req->echo = options.echo_parsed_version || req->json.contains("cniVersion") ? version : "";
  const std::string& echo = req->echo;
  if (add || del || check) {
    if (auto e = ValidateContainerID(env.container_id)) return Fail(*e, echo);
    if (auto e = ValidateInterfaceName(env.ifname)) return Fail(*e, echo);
  }
  auto unsupported = [&]() -> std::optional<Outcome> {
    if (!(add || del || check) || IsSupportedVersion(version)) return std::nullopt;
    return Fail({kErrIncompatibleVersion, "incompatible CNI versions",
                 base::StrCat("config is \"", version, "\", plugin supports ", SupportedList())},
                echo);
  };
  if (options.supported_version_first) {
    if (auto done = unsupported()) return done;
  }
  if (check) {
    auto cmp = CompareVersions(version, "0.4.0");
    if (!cmp) {
      return Fail({kErrDecoding, base::StrCat("invalid cniVersion \"", version, "\""), ""}, echo);
    }
    if (*cmp < 0) {
      return Fail({kErrIncompatibleVersion, "config version does not allow CHECK", ""}, echo);
    }
  }
  if (auto done = unsupported()) return done;
  req->command = cmd;
  req->cni_version = req->echo.empty() ? std::string(kLatestVersion) : version;
  return std::nullopt;
}

}  // namespace spiderpool::agent::cni
