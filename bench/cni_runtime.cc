#include "bench/cni_runtime.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <thread>

#include "absl/time/time.h"
#include "base/json.h"
#include "base/strings.h"

namespace spiderpool::bench {
namespace {

absl::StatusOr<sockaddr_un> Address(const std::string& path) {
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(base::StrCat("socket path too long: ", path));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

bool WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool ReadAll(int fd, std::string* out) {
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out->append(buf, static_cast<size_t>(n));
  }
}

std::string Errno(std::string_view what) { return base::StrCat(what, ": ", std::strerror(errno)); }

// Typed members of a JSON object, `def` when absent or of another type (nothing throws).
std::string Str(const base::Json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}
int64_t Int(const base::Json& o, const char* key, int64_t def) {
  auto it = o.find(key);
  return it != o.end() && it->is_number_integer() ? it->get<int64_t>() : def;
}
bool Bool(const base::Json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_boolean() && it->get<bool>();
}

base::Json Run(const std::string& request) {
  absl::StatusOr<base::Json> req = base::ParseJson(request);
  if (!req.ok() || !req->is_object()) return {{"error", "request is not a JSON object"}};
  base::ProcessOptions options;
  if (auto argv = req->find("argv"); argv != req->end() && argv->is_array()) {
    for (const base::Json& a : *argv) {
      if (a.is_string()) options.argv.push_back(a.get<std::string>());
    }
  }
  if (auto env = req->find("env"); env != req->end() && env->is_object()) {
    for (const auto& [k, v] : env->items()) {
      if (v.is_string()) options.env[k] = v.get<std::string>();
    }
  }
  options.stdin_data = Str(*req, "stdin");
  options.timeout = absl::Milliseconds(Int(*req, "timeout_ms", 60000));
  if (options.argv.empty()) return {{"error", "argv is empty"}};
  absl::StatusOr<base::ProcessResult> r = base::RunProcess(options);
  if (!r.ok()) return {{"error", r.status().ToString()}};
  return {{"exit_code", r->exit_code}, {"signal", r->signal}, {"timed_out", r->timed_out},
          {"stdout", r->stdout_data}, {"stderr", r->stderr_data}};
}

void Serve(int fd) {
  std::string request;
  if (ReadAll(fd, &request)) WriteAll(fd, base::DumpJson(Run(request)));
  ::close(fd);
}

}  // namespace

absl::StatusOr<base::ProcessResult> RunThroughRuntime(const std::string& socket,
                                                      const base::ProcessOptions& options) {
  absl::StatusOr<sockaddr_un> addr = Address(socket);
  if (!addr.ok()) return addr.status();
  base::Json env = base::Json::object();
  for (const auto& [k, v] : options.env) env[k] = v;
  const std::string request = base::DumpJson(
      {{"argv", options.argv}, {"env", env}, {"stdin", options.stdin_data},
       {"timeout_ms", absl::ToInt64Milliseconds(options.timeout)}});
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(Errno("socket"));
  std::string answer;
  absl::Status s = absl::OkStatus();
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr)) != 0) {
    s = absl::UnavailableError(Errno(base::StrCat("connecting to the CNI runtime ", socket)));
  } else if (!WriteAll(fd, request) || ::shutdown(fd, SHUT_WR) != 0 || !ReadAll(fd, &answer)) {
    s = absl::UnavailableError(Errno(base::StrCat("talking to the CNI runtime ", socket)));
  }
  ::close(fd);
  if (!s.ok()) return s;
  absl::StatusOr<base::Json> res = base::ParseJson(answer);
  if (!res.ok() || !res->is_object()) {
    return absl::InternalError(base::StrCat("the CNI runtime ", socket, " answered: ", answer));
  }
  if (res->contains("error")) {
    return absl::InternalError(base::StrCat("the CNI runtime ", socket, ": ", Str(*res, "error")));
  }
  base::ProcessResult out;
  out.exit_code = static_cast<int>(Int(*res, "exit_code", -1));
  out.signal = static_cast<int>(Int(*res, "signal", 0));
  out.timed_out = Bool(*res, "timed_out");
  out.stdout_data = Str(*res, "stdout");
  out.stderr_data = Str(*res, "stderr");
  return out;
}

absl::Status ServeCniRuntime(const std::string& socket) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) return absl::FailedPreconditionError("the parent is gone");
  absl::StatusOr<sockaddr_un> addr = Address(socket);
  if (!addr.ok()) return addr.status();
  const int lfd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0) return absl::InternalError(Errno("socket"));
  ::unlink(socket.c_str());
  if (::bind(lfd, reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr)) != 0 ||
      ::listen(lfd, SOMAXCONN) != 0) {
    const std::string err = Errno(base::StrCat("listening on ", socket));
    ::close(lfd);
    return absl::InternalError(err);
  }
  while (true) {
    const int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) {  // wait for connections in flight to finish
        ::usleep(10000);
        continue;
      }
      const std::string err = Errno("accept");
      ::close(lfd);
      return absl::InternalError(err);
    }
    std::thread([fd] { Serve(fd); }).detach();
  }
}

}  // namespace spiderpool::bench
