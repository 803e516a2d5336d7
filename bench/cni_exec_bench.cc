// Exec cost of the `spiderpool` CNI plugin as a runtime pays it: fork+exec with the CNI
// environment and stdin, read stdout, wait. Three workloads, each run N times (argument,
// default 300): /bin/true (the floor of posix_spawn here), CNI_COMMAND=VERSION, and a full
// ADD (GET /v1/ipam/healthy + POST /v1/ipam/ip) against an in-process fake agent on a unix
// socket that answers a fixed dual-stack result. Prints one JSON line: wall-clock percentiles
// (milliseconds), and per run the child's CPU (user + system, milliseconds: where a page fault
// costs a hypervisor exit it shows here, not in the wall time of a quiet machine) and its minor
// page faults (wait4's rusage).
// Run: bazel run -c opt //bench:cni_exec_bench

#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "agent/ipamapi/ipamapi.h"
#include "base/sigpipe.h"
#include "httplib.h"

namespace {

namespace ipamapi = spiderpool::agent::ipamapi;

std::string PluginPath(const char* argv0) {
  for (const char* var : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    if (const char* d = std::getenv(var)) return std::string(d) + "/spiderpool/agent/cni/spiderpool";
  }
  return std::string(argv0) + ".runfiles/spiderpool/agent/cni/spiderpool";
}

struct Run {
  double wall_ms = 0;
  double cpu_ms = 0;  // the child's user + system time
  long minflt = 0;    // the child's minor page faults
  int rc = 0;
};

double Ms(const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; }

// One exec, as a runtime does it.
Run ExecOnce(const std::string& path, const std::vector<std::string>& env,
             const std::string& stdin_text) {
  auto t0 = std::chrono::steady_clock::now();
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0) std::abort();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addclose(&fa, in[1]);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  std::vector<std::string> envs = env;
  std::vector<char*> envp;
  for (auto& s : envs) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string p = path;
  char* argv[] = {p.data(), nullptr};
  pid_t pid;
  if (posix_spawn(&pid, p.c_str(), &fa, nullptr, argv, envp.data()) != 0) std::abort();
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  if (!stdin_text.empty()) {
    ssize_t n = write(in[1], stdin_text.data(), stdin_text.size());
    (void)n;
  }
  close(in[1]);
  char buf[4096];
  while (read(out[0], buf, sizeof(buf)) > 0) {
  }
  close(out[0]);
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  Run r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  r.cpu_ms = Ms(ru.ru_utime) + Ms(ru.ru_stime);
  r.minflt = ru.ru_minflt;
  return r;
}

struct Stats {
  double p50, p90, p99;
  double cpu_ms;  // mean per run
  double minflt;  // mean per run
};

Stats Measure(int n, const std::string& path, const std::vector<std::string>& env,
              const std::string& stdin_text) {
  std::vector<double> ms;
  double cpu = 0, minflt = 0;
  for (int i = 0; i < n; ++i) {
    Run r = ExecOnce(path, env, stdin_text);
    if (r.rc != 0) {
      std::fprintf(stderr, "%s exited %d\n", path.c_str(), r.rc);
      std::exit(1);
    }
    ms.push_back(r.wall_ms);
    cpu += r.cpu_ms;
    minflt += static_cast<double>(r.minflt);
  }
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return ms[static_cast<size_t>(q * (ms.size() - 1))]; };
  return {at(0.5), at(0.9), at(0.99), cpu / n, minflt / n};
}

}  // namespace

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
  int n = argc > 1 ? std::atoi(argv[1]) : 300;
  std::string plugin = PluginPath(argv[0]);

  char tmpl[] = "/tmp/sp-bench-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  std::string sock = std::string(tmpl) + "/agent.sock";
  ipamapi::IpamAddResponse resp;
  resp.ips = {{.version = 4, .address = "10.6.0.10/16", .ip_pool = "p4", .gateway = "10.6.0.1",
               .nic = "eth0"},
              {.version = 6, .address = "fd00::a/64", .ip_pool = "p6", .gateway = "fd00::1",
               .nic = "eth0"}};
  std::string body = ipamapi::ToJson(resp);
  httplib::Server svr;
  svr.set_address_family(AF_UNIX);
  svr.Get("/v1/ipam/healthy", [](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
  });
  svr.Post("/v1/ipam/ip", [&body](const httplib::Request&, httplib::Response& res) {
    res.set_content(body, "application/json");
  });
  if (!svr.bind_to_port(sock.c_str(), 80)) return 1;
  std::thread t([&] { svr.listen_after_bind(); });
  while (!svr.is_running()) std::this_thread::yield();

  std::vector<std::string> base_env = {"CNI_COMMAND=ADD",       "CNI_CONTAINERID=a51debf7e1eb",
                                       "CNI_NETNS=/var/run/netns/x", "CNI_IFNAME=eth0",
                                       "CNI_PATH=/opt/cni/bin",
                                       "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=default;"
                                       "K8S_POD_NAME=web-0;K8S_POD_UID=u1"};
  std::string conf = std::string(R"({"cniVersion":"1.0.0","name":"macvlan-net","type":"macvlan",)") +
                     R"("ipam":{"type":"spiderpool","log_file_path":")" + tmpl +
                     R"(/spiderpool.log","ipam_unix_socket_path":")" + sock + R"("}})";

  Stats floor = Measure(n, "/bin/true", {}, "");
  Stats version = Measure(n, plugin, {"CNI_COMMAND=VERSION"}, "");
  Stats add = Measure(n, plugin, base_env, conf);

  svr.stop();
  t.join();
  unlink(sock.c_str());
  std::string log = std::string(tmpl) + "/spiderpool.log";
  unlink(log.c_str());
  rmdir(tmpl);
  auto json = [](const Stats& s) {
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "{\"p50\":%.2f,\"p90\":%.2f,\"p99\":%.2f,\"cpu_ms\":%.2f,\"minflt\":%.0f}",
                  s.p50, s.p90, s.p99, s.cpu_ms, s.minflt);
    return std::string(buf);
  };
  std::printf("{\"runs\":%d,\"bin_true_ms\":%s,\"version_ms\":%s,\"add_ms\":%s}\n", n,
              json(floor).c_str(), json(version).c_str(), json(add).c_str());
  return 0;
}
