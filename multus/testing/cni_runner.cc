#include "multus/testing/cni_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/sigpipe.h"
#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::multus::testing {
namespace {

using base::Json;

absl::Status Errno(std::string_view what) {
  return absl::InternalError(base::StrCat(what, ": ", std::strerror(errno)));
}

std::vector<char*> CStrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const std::string& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

std::vector<std::string> CniEnv(std::string_view command, const CniArgs& a) {
  return {base::StrCat("CNI_COMMAND=", command),
          base::StrCat("CNI_CONTAINERID=", a.container_id),
          base::StrCat("CNI_NETNS=", a.netns),
          base::StrCat("CNI_IFNAME=", a.ifname),
          base::StrCat("CNI_PATH=", a.cni_path),
          base::StrCat("CNI_ARGS=", a.args),
          "PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
}

// j[key] if it is a string, else "" (Json::value would throw on other types).
std::string StringField(const Json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// One plugin of the list as libcni hands it over (plugins are checked to be objects).
Json PluginConf(const Json& conflist, const Json& plugin, const Json* prev_result) {
  Json conf = plugin;
  conf["name"] = StringField(conflist, "name");
  conf["cniVersion"] = StringField(conflist, "cniVersion");
  if (prev_result != nullptr) conf["prevResult"] = *prev_result;
  return conf;
}

absl::StatusOr<ProcessResult> Exec(std::string_view command, const Json& conf, const CniArgs& a) {
  std::string type = StringField(conf, "type");
  if (type.empty() || type.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(base::ToAbsl(base::StrCat("bad plugin type in ",
                                                                base::DumpJson(conf))));
  }
  return RunProcess({base::StrCat(a.cni_path, "/", type)}, CniEnv(command, a),
                    base::DumpJson(conf));
}

absl::Status PluginFailed(std::string_view command, const Json& conf, const ProcessResult& r) {
  return absl::InternalError(base::ToAbsl(base::StrCat(
      command, " ", StringField(conf, "type"), " exited ", r.exit_code, "; stdout: ", r.out,
      "; stderr: ", r.err, "; config: ", base::DumpJson(conf))));
}

bool VersionAtLeast040(const Json& conflist) {
  std::string v = StringField(conflist, "cniVersion");
  return !(v.empty() || v.rfind("0.1.", 0) == 0 || v.rfind("0.2.", 0) == 0 ||
           v.rfind("0.3.", 0) == 0);
}

}  // namespace

absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                         const std::vector<std::string>& env,
                                         std::string_view input) {
  if (argv.empty()) return absl::InvalidArgumentError("empty argv");
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0) return Errno("pipe");
  if (pipe2(out, O_CLOEXEC) != 0) return Errno("pipe");
  if (pipe2(err, O_CLOEXEC) != 0) return Errno("pipe");
  std::vector<char*> cargv = CStrings(argv);
  std::vector<char*> cenv = CStrings(env);
  pid_t pid = fork();
  if (pid < 0) return Errno("fork");
  if (pid == 0) {
    // Only async-signal-safe calls from here on.
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  // Write stdin and drain both outputs together, so no pipe fills up and blocks the child.
  ProcessResult result;
  size_t written = 0;
  int in_fd = in[1];
  if (input.empty()) {
    close(in_fd);
    in_fd = -1;
  }
  base::ScopedSigpipeBlock no_sigpipe;  // the child may exit without reading stdin
  bool out_open = true, err_open = true;
  while (out_open || err_open || in_fd >= 0) {
    pollfd fds[3];
    int n = 0;
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    if (out_open) fds[n++] = {out[0], POLLIN, 0};
    if (err_open) fds[n++] = {err[0], POLLIN, 0};
    if (poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in_fd) {
        ssize_t w = write(in_fd, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 || written == input.size()) {
          close(in_fd);
          in_fd = -1;
        }
        continue;
      }
      char buf[4096];
      ssize_t r = read(fds[i].fd, buf, sizeof(buf));
      bool is_out = fds[i].fd == out[0];
      if (r > 0) {
        (is_out ? result.out : result.err).append(buf, static_cast<size_t>(r));
      } else if (r == 0 || errno != EINTR) {
        (is_out ? out_open : err_open) = false;
      }
    }
  }
  if (in_fd >= 0) close(in_fd);
  close(out[0]);
  close(err[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

namespace {

// A conflist whose plugins are all objects.
absl::Status CheckConflist(const Json& conflist) {
  if (!conflist.is_object() || !conflist.contains("plugins") || !conflist["plugins"].is_array()) {
    return absl::InvalidArgumentError("not a conflist");
  }
  for (const Json& p : conflist["plugins"]) {
    if (!p.is_object()) return absl::InvalidArgumentError("a plugin is not an object");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Json> ConflistAdd(const Json& conflist, const CniArgs& args) {
  SP_RETURN_IF_ERROR(CheckConflist(conflist));
  Json prev;
  bool have_prev = false;
  for (const Json& plugin : conflist["plugins"]) {
    Json conf = PluginConf(conflist, plugin, have_prev ? &prev : nullptr);
    SP_ASSIGN_OR_RETURN(ProcessResult r, Exec("ADD", conf, args));
    if (r.exit_code != 0) return PluginFailed("ADD", conf, r);
    auto result = base::ParseJson(r.out);
    if (!result.ok()) return PluginFailed("ADD (bad result)", conf, r);
    prev = std::move(*result);
    have_prev = true;
  }
  return prev;
}

absl::Status ConflistDel(const Json& conflist, const CniArgs& args, const Json& add_result) {
  SP_RETURN_IF_ERROR(CheckConflist(conflist));
  const Json& plugins = conflist["plugins"];
  const Json* prev = VersionAtLeast040(conflist) && !add_result.is_null() ? &add_result : nullptr;
  for (size_t i = plugins.size(); i-- > 0;) {
    Json conf = PluginConf(conflist, plugins[i], prev);
    SP_ASSIGN_OR_RETURN(ProcessResult r, Exec("DEL", conf, args));
    if (r.exit_code != 0) return PluginFailed("DEL", conf, r);
  }
  return absl::OkStatus();
}

Json UseHostLocalIpamInsteadOfSpiderpool(Json conflist, std::string_view subnet,
                                         std::string_view ip, std::string_view data_dir) {
  if (!CheckConflist(conflist).ok()) return conflist;
  for (Json& plugin : conflist["plugins"]) {
    if (!plugin.contains("ipam")) continue;
    if (StringField(plugin["ipam"], "type") != "spiderpool") continue;
    plugin["ipam"] = Json{
        {"type", "host-local"},
        {"dataDir", std::string(data_dir)},
        {"ranges", Json::array({Json::array({Json{{"subnet", std::string(subnet)},
                                                  {"rangeStart", std::string(ip)},
                                                  {"rangeEnd", std::string(ip)}}})})}};
  }
  return conflist;
}

Json DropCoordinatorPlugin(Json conflist) {
  if (!CheckConflist(conflist).ok()) return conflist;
  Json kept = Json::array();
  for (Json& plugin : conflist["plugins"]) {
    if (StringField(plugin, "type") == "coordinator") continue;
    kept.push_back(std::move(plugin));
  }
  conflist["plugins"] = std::move(kept);
  return conflist;
}

}  // namespace spiderpool::multus::testing
