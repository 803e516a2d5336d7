#pragma once
// Child processes for tests, benchmarks and tools (never for the product's request paths):
//
//   auto r = base::RunProcess({.argv = {"/usr/lib/cni/macvlan"}, .env = {...},
//                              .stdin_data = conf, .timeout = absl::Seconds(30)});
//   // r->exit_code, r->stdout_data, r->stderr_data
//
//   auto agent = base::Process::Start({.argv = {agent_bin, "--node-name=n1"}});
//   (*agent)->Signal(SIGKILL); (*agent)->Wait();
//
// posix_spawn, no shell: arguments are passed as they are.

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace spiderpool::base {

struct ProcessOptions {
  std::vector<std::string> argv;  // argv[0] is the path of the program
  // The whole environment of the child ("K=V" semantics); empty map and inherit_env=false
  // means an empty environment.
  std::map<std::string, std::string> env;
  bool inherit_env = false;  // start from this process's environment, then apply `env`
  std::string stdin_data;
  absl::Duration timeout = absl::Seconds(60);  // RunProcess: SIGKILL after this
  // Start(): where the child's stdout/stderr go ("" = /dev/null).
  std::string output_file;
};

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  bool timed_out = false;
  std::string stdout_data;
  std::string stderr_data;
};

// Runs to completion, feeding stdin and collecting both outputs.
absl::StatusOr<ProcessResult> RunProcess(const ProcessOptions& options);

// A long-running child.
class Process {
 public:
  static absl::StatusOr<std::unique_ptr<Process>> Start(const ProcessOptions& options);
  ~Process();  // SIGKILL + reap if still running
  pid_t pid() const { return pid_; }
  void Signal(int sig);
  // Reaps the child; returns its exit code (-1 when killed by a signal).
  int Wait();
  bool Running();

 private:
  explicit Process(pid_t pid) : pid_(pid) {}
  pid_t pid_;
  bool reaped_ = false;
  int status_ = 0;
};

}  // namespace spiderpool::base
