#include "base/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/sigpipe.h"
#include "base/strings.h"

extern char** environ;

namespace spiderpool::base {
namespace {

std::vector<std::string> BuildEnv(const ProcessOptions& options) {
  std::map<std::string, std::string> env;
  if (options.inherit_env) {
    for (char** e = environ; *e != nullptr; ++e) {
      std::string kv(*e);
      const size_t eq = kv.find('=');
      if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  for (const auto& [k, v] : options.env) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

absl::Status Errno(std::string_view what) {
  return absl::InternalError(StrCat(what, ": ", std::strerror(errno)));
}

int DecodeWait(int status, int* signal) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) *signal = WTERMSIG(status);
  return -1;
}

}  // namespace

absl::StatusOr<ProcessResult> RunProcess(const ProcessOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("RunProcess: empty argv");
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    return Errno("pipe");
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  std::vector<std::string> argv_s = options.argv;
  std::vector<std::string> env_s = BuildEnv(options);
  std::vector<char*> argv = Pointers(argv_s);
  std::vector<char*> envp = Pointers(env_s);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(in[1]);
    ::close(out[0]);
    ::close(err[0]);
    return absl::NotFoundError(StrCat("spawning ", options.argv[0], ": ", std::strerror(rc)));
  }
  ::fcntl(in[1], F_SETFL, O_NONBLOCK);
  ProcessResult result;
  size_t written = 0;
  if (options.stdin_data.empty()) {
    ::close(in[1]);
    in[1] = -1;
  }
  const absl::Time deadline = absl::Now() + options.timeout;
  int open_outputs = 2;
  while (open_outputs > 0 || in[1] >= 0) {
    pollfd fds[3];
    int n = 0;
    int out_idx = -1, err_idx = -1, in_idx = -1;
    if (out[0] >= 0) { out_idx = n; fds[n++] = {out[0], POLLIN, 0}; }
    if (err[0] >= 0) { err_idx = n; fds[n++] = {err[0], POLLIN, 0}; }
    if (in[1] >= 0) { in_idx = n; fds[n++] = {in[1], POLLOUT, 0}; }
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      ::kill(pid, SIGKILL);
      result.timed_out = true;
      break;
    }
    const int ready = ::poll(fds, n, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready < 0 && errno != EINTR) break;
    char buf[65536];
    auto drain = [&](int idx, int& fd, std::string& sink) {
      if (idx < 0 || !(fds[idx].revents & (POLLIN | POLLHUP | POLLERR))) return;
      const ssize_t got = ::read(fd, buf, sizeof buf);
      if (got > 0) {
        sink.append(buf, static_cast<size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        ::close(fd);
        fd = -1;
        --open_outputs;
      }
    };
    drain(out_idx, out[0], result.stdout_data);
    drain(err_idx, err[0], result.stderr_data);
    if (in_idx >= 0 && (fds[in_idx].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w;
      {
        ScopedSigpipeBlock no_sigpipe;  // a child that exits without reading is EPIPE here
        w = ::write(in[1], options.stdin_data.data() + written,
                    options.stdin_data.size() - written);
      }
      if (w > 0) written += static_cast<size_t>(w);
      if (w < 0 && errno != EAGAIN && errno != EINTR) written = options.stdin_data.size();
      if (written >= options.stdin_data.size()) {
        ::close(in[1]);
        in[1] = -1;
      }
    }
  }
  for (int fd : {in[1], out[0], err[0]}) {
    if (fd >= 0) ::close(fd);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = DecodeWait(status, &result.signal);
  return result;
}

absl::StatusOr<std::unique_ptr<Process>> Process::Start(const ProcessOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("Process::Start: empty argv");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  const std::string out = options.output_file.empty() ? "/dev/null" : options.output_file;
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<std::string> argv_s = options.argv;
  std::vector<std::string> env_s = BuildEnv(options);
  std::vector<char*> argv = Pointers(argv_s);
  std::vector<char*> envp = Pointers(env_s);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    return absl::NotFoundError(StrCat("spawning ", options.argv[0], ": ", std::strerror(rc)));
  }
  return std::unique_ptr<Process>(new Process(pid));
}

Process::~Process() {
  if (!reaped_) {
    Signal(SIGKILL);
    Wait();
  }
}

void Process::Signal(int sig) {
  if (!reaped_) ::kill(pid_, sig);
}

int Process::Wait() {
  if (!reaped_) {
    while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
  int sig = 0;
  return DecodeWait(status_, &sig);
}

bool Process::Running() {
  if (reaped_) return false;
  const pid_t r = ::waitpid(pid_, &status_, WNOHANG);
  if (r == pid_) reaped_ = true;
  return !reaped_;
}

}  // namespace spiderpool::base
