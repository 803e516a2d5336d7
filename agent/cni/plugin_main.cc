#include "agent/cni/plugin_main.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

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

class Watchdog {
 public:
  ~Watchdog() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> l(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Arm(std::chrono::steady_clock::time_point deadline, const Outcome& on_timeout) {
    if (thread_.joinable()) return;
    on_timeout_ = on_timeout;
    thread_ = std::thread([this, deadline] {
      std::unique_lock<std::mutex> l(mu_);
      if (cv_.wait_until(l, deadline + kWatchdogGrace, [this] { return done_; })) return;
      if (g_output_claimed.exchange(true)) return;
      WriteAll(1, on_timeout_.stdout_text);
      _exit(on_timeout_.exit_code);
    });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  Outcome on_timeout_;
  std::thread thread_;
};

}  // namespace

void PluginMain(Outcome (*run)(const Env& env, const ProcessHooks& hooks)) {
  base::IgnoreSigpipe();
  Watchdog watchdog;
  ProcessHooks hooks;
  hooks.read_stdin = ReadStdin;
  hooks.deadline_known = [&watchdog](std::chrono::steady_clock::time_point deadline,
                                     const Outcome& on_timeout) {
    watchdog.Arm(deadline, on_timeout);
  };
  Outcome out = run(Env::FromProcess(), hooks);
  if (g_output_claimed.exchange(true)) {
    // The watchdog is printing its outcome and exiting.
    while (true) pause();
  }
  WriteAll(2, out.stderr_text);
  WriteAll(1, out.stdout_text);
  _exit(out.exit_code);  // skip static destructors and the watchdog join
}

}  // namespace spiderpool::agent::cni
