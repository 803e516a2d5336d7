#include "agent/cni/plugin_main.h"

#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <string>

#include "base/sigpipe.h"

namespace spiderpool::agent::cni {

namespace {

constexpr size_t kMaxStdin = 16 << 20;
// The watchdog fires this long after the deadline the plugin's own timeouts aim for.
constexpr auto kWatchdogGrace = std::chrono::milliseconds(500);

// Whoever sets it first (the watchdog or the normal path) prints and exits.
std::atomic<bool> g_output_claimed{false};

void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

bool ReadStdin(std::string* out, std::string* error) {
  char buf[64 * 1024];
  while (true) {
    ssize_t n = read(0, buf, sizeof(buf));
    if (n == 0) return true;
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = "read failed";
      return false;
    }
    out->append(buf, static_cast<size_t>(n));
    if (out->size() > kMaxStdin) {
      *error = "network config larger than 16 MiB";
      return false;
    }
  }
}

// The watchdog: a one-shot ITIMER_REAL whose SIGALRM handler prints the outcome it was armed
// with and exits. No thread: one made every plugin process multi-threaded (a stack mapped and
// unmapped, a clone, an exit that shoots down the other CPU's TLB) for a timer that almost never
// fires (bench/README.md "cni_exec_bench"). The handler calls only write(2) and _exit(2), and
// reads what was stored before the timer was armed: async-signal-safe. Armed once per process.
std::string g_timeout_stdout;
int g_timeout_exit_code = 0;
bool g_watchdog_armed = false;

void OnWatchdog(int) {
  if (g_output_claimed.exchange(true)) return;  // the normal path is printing: it exits
  WriteAll(1, g_timeout_stdout);
  _exit(g_timeout_exit_code);
}

void ArmWatchdog(std::chrono::steady_clock::time_point deadline, const Outcome& on_timeout) {
  if (g_watchdog_armed) return;
  g_watchdog_armed = true;
  g_timeout_stdout = on_timeout.stdout_text;
  g_timeout_exit_code = on_timeout.exit_code;
  struct sigaction sa {};
  sa.sa_handler = OnWatchdog;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (sigaction(SIGALRM, &sa, nullptr) != 0) return;  // no watchdog; the client's deadline stays
  const auto left = std::max<std::chrono::microseconds>(
      std::chrono::duration_cast<std::chrono::microseconds>(
          deadline + kWatchdogGrace - std::chrono::steady_clock::now()),
      std::chrono::microseconds(1));
  itimerval timer{};
  timer.it_value.tv_sec = static_cast<time_t>(left.count() / 1000000);
  timer.it_value.tv_usec = static_cast<suseconds_t>(left.count() % 1000000);
  setitimer(ITIMER_REAL, &timer, nullptr);
}

}  // namespace

void PluginMain(Outcome (*run)(const Env& env, const ProcessHooks& hooks)) {
  base::IgnoreSigpipe();
  ProcessHooks hooks;
  hooks.read_stdin = ReadStdin;
  hooks.deadline_known = ArmWatchdog;
  Outcome out = run(Env::FromProcess(), hooks);
  if (g_output_claimed.exchange(true)) {
    // The watchdog's handler runs on another thread of the plugin and is printing its outcome.
    while (true) pause();
  }
  WriteAll(2, out.stderr_text);
  WriteAll(1, out.stdout_text);
  _exit(out.exit_code);  // skip static destructors
}

}  // namespace spiderpool::agent::cni
