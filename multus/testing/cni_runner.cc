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

// The plugin `type` in the CNI_PATH list (first directory holding an executable of that name).
absl::StatusOr<std::string> FindPlugin(const std::string& type, const CniArgs& a) {
  for (std::string_view rest = a.cni_path; !rest.empty();) {
    size_t colon = rest.find(':');
    std::string_view dir = rest.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    if (dir.empty()) continue;
    std::string path = base::StrCat(dir, "/", type);
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return absl::NotFoundError(base::ToAbsl(base::StrCat("no plugin ", type, " in ", a.cni_path)));
}

absl::StatusOr<ProcessResult> Exec(std::string_view command, const Json& conf, const CniArgs& a) {
  std::string type = StringField(conf, "type");
  if (type.empty() || type.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(base::ToAbsl(base::StrCat("bad plugin type in ",
                                                                base::DumpJson(conf))));
  }
  SP_ASSIGN_OR_RETURN(std::string plugin, FindPlugin(type, a));
  std::vector<std::string> argv;
  if (!a.run_in_netns.empty()) {
    std::string ip = IpBinary();
    if (ip.empty()) return absl::FailedPreconditionError("no `ip` binary for run_in_netns");
    argv = {ip, "netns", "exec", a.run_in_netns};
    if (!a.var_log_dir.empty()) {
      // $1 = the directory, $2 = the plugin. `ip netns exec` made / a slave mount tree in a new
      // mount namespace: the bind mount is seen by the plugin and its delegates only.
      argv.insert(argv.end(), {"/bin/sh", "-c", "mount --bind \"$1\" /var/log && exec \"$2\"",
                               "sh", a.var_log_dir});
    }
  }
  argv.push_back(plugin);
  return RunProcess(argv, CniEnv(command, a), base::DumpJson(conf));
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

std::string IpBinary() {
  for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

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

Json UseAgentSocket(Json conflist, std::string_view socket) {
  if (!CheckConflist(conflist).ok()) return conflist;
  for (Json& plugin : conflist["plugins"]) {
    std::string type = StringField(plugin, "type");
    if (type == "coordinator") {
      plugin["ipam_unix_socket_path"] = std::string(socket);
    } else if (plugin.contains("ipam") && StringField(plugin["ipam"], "type") == "spiderpool") {
      plugin["ipam"]["ipam_unix_socket_path"] = std::string(socket);
    }
  }
  return conflist;
}

}  // namespace spiderpool::multus::testing
