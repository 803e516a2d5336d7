// The `coordinator` chained CNI plugin's ADD and DEL time on a "node" (issue 14: p99 <= 20 ms
// for 100 pods without detection). Root only.
//
// A node network namespace whose eth0 (one end of a veth pair, e2e/node's Network) carries
// 10.77.0.2/16; a stand-in agent answers GET /v1/coordinator/config on a unix socket (mode auto,
// a serviceCIDR and an overlayPodCIDR). For every pod: a pod network namespace, the REAL
// macvlan plugin from /usr/lib/cni (IPAM `static`, one IP per pod) run in the node namespace,
// then the coordinator binary with macvlan's result as prevResult. Only the coordinator's exec
// is timed (spawn to exit, stdin/stdout included), as a runtime pays it.
//
// The plugins are spawned from a thread that entered the node namespace with setns(2)
// (posix_spawn children inherit the thread's namespace): what a runtime does from the host
// namespace, without the fork/exec, mount namespace and sysfs remount that `ip netns exec`
// (e2e/node RunCni) adds; that overhead is reported as a baseline instead.
//
// Scenarios:
//   add_seq    ADD of pods 0..N-1, one at a time
//   del_seq    coordinator DEL of those pods one at a time (then macvlan DEL, not timed)
//   add_conc   ADD of pods N..2N-1 from C threads at once (what a kubelet does; default 8)
//   del_conc   coordinator DEL of those from C threads
// and baselines: /bin/true spawned in the node namespace, the coordinator's VERSION, and
// `ip netns exec <node> /bin/true`. Prints one JSON line (milliseconds).
//
//   bazel run -c opt --symlink_prefix=/ //bench:coordinator_add -- [--pods=100] [--concurrency=8]
//       [--coordinator=/abs/path (another build of the plugin, e.g. linked differently)]
//
// Not a test: numbers go to bench/README.md.

#include <fcntl.h>
#include <httplib.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/ipamapi/ipamapi.h"
#include "base/json.h"
#include "base/sigpipe.h"
#include "base/strings.h"
#include "base/subprocess.h"
#include "e2e/node/node_env.h"

namespace spiderpool {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kNodeIP[] = "10.77.0.2";
constexpr char kMacvlan[] = "/usr/lib/cni/macvlan";

// Answers GET /v1/coordinator/config with a fixed cluster configuration.
class StandInAgent {
 public:
  static absl::StatusOr<std::unique_ptr<StandInAgent>> Start(const std::string& socket,
                                                             std::string body) {
    std::unique_ptr<StandInAgent> a(new StandInAgent(socket, std::move(body)));
    a->server_.Get(std::string(agent::ipamapi::kCoordinatorConfigPath),
                   [p = a.get()](const httplib::Request&, httplib::Response& res) {
                     p->requests_.fetch_add(1);
                     res.set_content(p->body_, "application/json");
                   });
    a->server_.set_address_family(AF_UNIX);
    // httplib listens with a backlog of 5; the real agent (agent/ipam/server.cc) raises it to
    // SOMAXCONN, or 8 concurrent plugins see ENOBUFS/EAGAIN on connect.
    int listen_fd = -1;
    a->server_.set_socket_options([&listen_fd](int sock) { listen_fd = sock; });
    ::unlink(socket.c_str());
    if (!a->server_.bind_to_port(socket.c_str(), 80) || listen_fd < 0 ||
        ::listen(listen_fd, SOMAXCONN) != 0) {
      return absl::InternalError(base::StrCat("cannot listen on ", socket));
    }
    a->thread_ = std::thread([p = a.get()] { p->server_.listen_after_bind(); });
    while (!a->server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return a;
  }
  ~StandInAgent() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
    ::unlink(socket_.c_str());
  }
  int requests() const { return requests_.load(); }

 private:
  StandInAgent(std::string socket, std::string body)
      : socket_(std::move(socket)), body_(std::move(body)) {}
  std::string socket_;
  std::string body_;
  httplib::Server server_;
  std::thread thread_;
  std::atomic<int> requests_{0};
};

// Runs `fn` on a thread that first enters the network namespace at `netns_path`; every
// process that thread spawns starts in that namespace.
absl::Status OnThreadInNetns(const std::string& netns_path, const std::function<void()>& fn) {
  absl::Status status;
  std::thread t([&] {
    const int fd = ::open(netns_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) {
      status = absl::InternalError(base::StrCat("setns ", netns_path, ": ", std::strerror(errno)));
      if (fd >= 0) ::close(fd);
      return;
    }
    ::close(fd);
    fn();
  });
  t.join();
  return status;
}

// Runs `fn(i)` for i in [0, n) on `threads` threads, each inside the namespace.
absl::Status ParallelInNetns(const std::string& netns_path, int n, int threads,
                             const std::function<void(int)>& fn) {
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  std::mutex mu;
  absl::Status status;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      absl::Status s = OnThreadInNetns(netns_path, [&] {
        for (int i = next.fetch_add(1); i < n; i = next.fetch_add(1)) fn(i);
      });
      if (!s.ok()) {
        std::lock_guard<std::mutex> l(mu);
        status = s;
      }
    });
  }
  for (auto& t : pool) t.join();
  return status;
}

struct Sample {
  double ms = 0;
  double cpu_ms = -1;  // user + system CPU of the child (single-threaded phases only)
  bool ok = false;
};

// CPU time of the reaped children so far (RUSAGE_CHILDREN is per process: meaningful around
// one exec only while no other thread spawns).
double ChildrenCpuMs() {
  rusage ru{};
  ::getrusage(RUSAGE_CHILDREN, &ru);
  auto ms = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) * 1e3 + static_cast<double>(tv.tv_usec) / 1e3;
  };
  return ms(ru.ru_utime) + ms(ru.ru_stime);
}

struct Stats {
  int count = 0;
  int failures = 0;
  double p50 = 0, p99 = 0, max = 0, mean = 0;
  double cpu_mean = -1;            // CPU ms per exec, when measured
  double first10 = 0, last10 = 0;  // mean of the first / last 10 in run order
};

Stats Summarize(const std::vector<Sample>& samples) {
  Stats s;
  std::vector<double> ms;
  for (const Sample& x : samples) {
    ++s.count;
    if (!x.ok) ++s.failures;
    ms.push_back(x.ms);
  }
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  // Nearest rank: the smallest value with at least q of the samples at or below it.
  auto at = [&](double q) {
    size_t rank = static_cast<size_t>(q * static_cast<double>(ms.size()) + 0.999999);
    return ms[std::clamp<size_t>(rank, 1, ms.size()) - 1];
  };
  s.p50 = at(0.50);
  s.p99 = at(0.99);
  s.max = ms.back();
  double sum = 0;
  for (double v : ms) sum += v;
  s.mean = sum / static_cast<double>(ms.size());
  double cpu = 0;
  int cpu_n = 0;
  for (const Sample& x : samples) {
    if (x.cpu_ms >= 0) {
      cpu += x.cpu_ms;
      ++cpu_n;
    }
  }
  if (cpu_n > 0) s.cpu_mean = cpu / cpu_n;
  const size_t k = std::min<size_t>(10, samples.size());
  for (size_t i = 0; i < k; ++i) {
    s.first10 += samples[i].ms / static_cast<double>(k);
    s.last10 += samples[samples.size() - 1 - i].ms / static_cast<double>(k);
  }
  return s;
}

double Round2(double v) { return static_cast<double>(static_cast<int64_t>(v * 100 + 0.5)) / 100; }

base::Json ToJson(const Stats& s) {
  base::Json j = {{"count", s.count},     {"failures", s.failures}, {"p50", Round2(s.p50)},
                  {"p99", Round2(s.p99)}, {"max", Round2(s.max)},   {"mean", Round2(s.mean)}};
  if (s.cpu_mean >= 0) j["cpu_mean"] = Round2(s.cpu_mean);
  return j;
}

// With the first-10 / last-10 means (run order): does the time grow with the pods on the node?
base::Json ToJsonWithTrend(const Stats& s) {
  base::Json j = ToJson(s);
  j["first10_mean"] = Round2(s.first10);
  j["last10_mean"] = Round2(s.last10);
  return j;
}

class Bench {
 public:
  Bench(e2e::Network* net, std::string tmp, std::string coordinator)
      : net_(net), tmp_(std::move(tmp)), coordinator_(std::move(coordinator)) {}

  std::string NodeNetnsPath() const { return "/var/run/netns/" + net_->NodeNetns("a"); }
  static std::string Pod(int i) { return base::StrCat("p", i); }
  // The host veth is named after the first 11 characters: unique per pod there.
  static std::string ContainerId(int i) {
    return base::StrCat("ctr", 1000 + i, "0123456789abcdef");
  }
  static std::string PodIP(int i) { return base::StrCat("10.77.", 1 + i / 250, ".", 1 + i % 250); }

  base::Json MacvlanConf(int i) const {
    return base::Json{
        {"cniVersion", "1.0.0"},
        {"name", "macvlan-conf"},
        {"type", "macvlan"},
        {"master", "eth0"},
        {"mode", "bridge"},
        {"ipam",
         {{"type", "static"},
          {"addresses",
           base::Json(std::vector<base::Json>{
               {{"address", base::StrCat(PodIP(i), "/16")}, {"gateway", "10.77.0.1"}}})},
          {"routes", base::Json(std::vector<base::Json>{{{"dst", "0.0.0.0/0"}}})}}}};
  }
  base::Json CoordinatorConf() const {
    return base::Json{{"cniVersion", "1.0.0"},
                      {"name", "macvlan-conf"},
                      {"type", "coordinator"},
                      {"ipam_unix_socket_path", tmp_ + "/agent.sock"},
                      {"logOptions", {{"logFile", tmp_ + "/coordinator.log"}}}};
  }

  // One CNI exec from the calling thread (so in its namespace); wall time of the exec.
  absl::StatusOr<base::ProcessResult> Exec(const std::string& plugin, const std::string& command,
                                           int i, const base::Json& conf, double* ms) const {
    const auto t0 = Clock::now();
    absl::StatusOr<base::ProcessResult> r = base::RunProcess(
        {.argv = {plugin},
         .env = {{"CNI_COMMAND", command},
                 {"CNI_CONTAINERID", ContainerId(i)},
                 {"CNI_NETNS", net_->PodNetnsPath(Pod(i))},
                 {"CNI_IFNAME", "eth0"},
                 {"CNI_ARGS",
                  base::StrCat("IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=", Pod(i),
                               ";K8S_POD_UID=uid-", i)},
                 {"CNI_PATH", "/usr/lib/cni"},
                 {"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}},
         .stdin_data = base::DumpJson(conf),
         .timeout = absl::Seconds(60)});
    if (ms != nullptr) *ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return r;
  }

  void Fail(std::string_view what, int i, const absl::StatusOr<base::ProcessResult>& r) {
    std::lock_guard<std::mutex> l(mu_);
    if (++reported_ > 5) return;
    if (!r.ok()) {
      std::fprintf(stderr, "%s pod %d: %s\n", std::string(what).c_str(), i,
                   r.status().ToString().c_str());
    } else {
      std::fprintf(stderr, "%s pod %d: exit %d stdout=%s stderr=%s\n", std::string(what).c_str(), i,
                   r->exit_code, r->stdout_data.c_str(), r->stderr_data.c_str());
    }
  }

  // Pod namespaces + macvlan ADD for pods [from, to) (not timed); keeps each result.
  absl::Status PreparePods(int from, int to) {
    for (int i = from; i < to; ++i) {
      if (auto s = net_->AddPodNetns(Pod(i)); !s.ok()) return s.status();
    }
    prev_.resize(static_cast<size_t>(to));
    absl::Status status;
    absl::Status s = OnThreadInNetns(NodeNetnsPath(), [&] {
      for (int i = from; i < to && status.ok(); ++i) {
        auto r = Exec(kMacvlan, "ADD", i, MacvlanConf(i), nullptr);
        if (!r.ok() || r->exit_code != 0) {
          Fail("macvlan ADD", i, r);
          status = absl::InternalError(base::StrCat("macvlan ADD of pod ", i, " failed"));
          return;
        }
        absl::StatusOr<base::Json> j = base::ParseJson(r->stdout_data);
        if (!j.ok()) {
          status = j.status();
          return;
        }
        prev_[static_cast<size_t>(i)] = *std::move(j);
      }
    });
    return s.ok() ? status : s;
  }

  // Coordinator ADD (or DEL) of pods [from, to) on `threads` threads; DEL is followed by the
  // macvlan DEL (not timed) and the pod namespace's removal.
  absl::StatusOr<std::vector<Sample>> RunCoordinator(const std::string& command, int from, int to,
                                                     int threads) {
    std::vector<Sample> samples(static_cast<size_t>(to - from));
    absl::Status s = ParallelInNetns(NodeNetnsPath(), to - from, threads, [&](int k) {
      const int i = from + k;
      base::Json conf = CoordinatorConf();
      conf["prevResult"] = prev_[static_cast<size_t>(i)];
      Sample& out = samples[static_cast<size_t>(k)];
      const double cpu0 = threads == 1 ? ChildrenCpuMs() : 0;
      auto r = Exec(coordinator_, command, i, conf, &out.ms);
      if (threads == 1) out.cpu_ms = ChildrenCpuMs() - cpu0;
      out.ok = r.ok() && r->exit_code == 0;
      if (out.ok && command == "ADD") {
        absl::StatusOr<base::Json> j = base::ParseJson(r->stdout_data);
        out.ok = j.ok() && *j == prev_[static_cast<size_t>(i)];  // a chained plugin passes it on
      }
      if (!out.ok) Fail(base::StrCat("coordinator ", command), i, r);
      if (command == "DEL") {
        base::Json mconf = MacvlanConf(i);
        mconf["prevResult"] = prev_[static_cast<size_t>(i)];
        auto m = Exec(kMacvlan, "DEL", i, mconf, nullptr);
        if (!m.ok() || m->exit_code != 0) Fail("macvlan DEL", i, m);
      }
    });
    if (!s.ok()) return s;
    if (command == "DEL") {
      for (int i = from; i < to; ++i) (void)net_->DeletePodNetns(Pod(i));
    }
    return samples;
  }

  // Spawns `argv` n times from the node namespace (no stdin): a floor to compare with.
  absl::StatusOr<std::vector<Sample>> Baseline(std::vector<std::string> argv,
                                               std::map<std::string, std::string> env, int n) {
    std::vector<Sample> samples(static_cast<size_t>(n));
    absl::Status s = OnThreadInNetns(NodeNetnsPath(), [&] {
      for (Sample& x : samples) {
        const double cpu0 = ChildrenCpuMs();
        const auto t0 = Clock::now();
        auto r = base::RunProcess({.argv = argv, .env = env, .timeout = absl::Seconds(30)});
        x.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        x.cpu_ms = ChildrenCpuMs() - cpu0;
        x.ok = r.ok() && r->exit_code == 0;
      }
    });
    if (!s.ok()) return s;
    return samples;
  }

  // How many host veths and node rules the coordinator left in the node namespace.
  int NodeLeftovers() {
    int n = 0;
    auto links = e2e::Ip({"-n", net_->NodeNetns("a"), "-o", "link", "show"});
    if (links.ok()) {
      for (std::string_view rest = *links; !rest.empty();) {
        size_t nl = rest.find('\n');
        std::string_view line = rest.substr(0, nl);
        if (line.find(": vethctr") != std::string_view::npos) ++n;
        rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
      }
    }
    auto rules = e2e::Ip({"-n", net_->NodeNetns("a"), "rule", "show"});
    if (rules.ok()) {
      for (size_t p = rules->find("lookup 500"); p != std::string::npos;
           p = rules->find("lookup 500", p + 1))
        ++n;
    }
    return n;
  }

 private:
  e2e::Network* net_;
  std::string tmp_;
  std::string coordinator_;
  std::vector<base::Json> prev_;
  std::mutex mu_;
  int reported_ = 0;
};

// The 1-minute load average (the machine is shared: read the numbers with it).
double LoadAvg() {
  double l = -1;
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &l) != 1) l = -1;
    std::fclose(f);
  }
  return l;
}

std::string StringFlag(int argc, char** argv, std::string_view name, std::string def) {
  const std::string prefix = base::StrCat("--", name, "=");
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.substr(0, prefix.size()) == prefix) return std::string(a.substr(prefix.size()));
  }
  return def;
}

int IntFlag(int argc, char** argv, std::string_view name, int def) {
  const std::string v = StringFlag(argc, argv, name, "");
  return v.empty() ? def : std::atoi(v.c_str());
}

int Run(int argc, char** argv) {
  const int pods = std::clamp(IntFlag(argc, argv, "pods", 100), 1, 5000);
  const int concurrency = std::clamp(IntFlag(argc, argv, "concurrency", 8), 1, 64);
  if (std::string why = e2e::NodeTestSkipReason(); !why.empty()) {
    std::fprintf(stderr, "coordinator_add: %s\n", why.c_str());
    return 2;
  }
  std::string coordinator = StringFlag(argc, argv, "coordinator", "");
  if (coordinator.empty()) coordinator = e2e::Runfile("agent/coordinator/coordinator");
  if (::access(coordinator.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "coordinator_add: %s not found (run with bazel run)\n",
                 coordinator.c_str());
    return 2;
  }
  char dir[] = "/tmp/sp-coordbench-XXXXXX";
  if (::mkdtemp(dir) == nullptr) return 1;
  const std::string tmp = dir;
  int rc = 0;
  {
    auto agent = StandInAgent::Start(
        tmp + "/agent.sock",
        R"({"mode":"auto","overlayPodCIDR":["10.244.0.0/16"],"serviceCIDR":["10.96.0.0/12"],)"
        R"("tunePodRoutes":true,"hostRuleTable":500})");
    auto net = e2e::Network::Create();
    if (!agent.ok() || !net.ok()) {
      std::fprintf(stderr, "setup: %s %s\n", agent.status().ToString().c_str(),
                   net.status().ToString().c_str());
      std::filesystem::remove_all(tmp);
      return 1;
    }
    absl::Status s = (*net)->AddNode("a").status();
    if (s.ok()) {
      s = e2e::Ip({"-n", (*net)->NodeNetns("a"), "addr", "add", base::StrCat(kNodeIP, "/16"), "dev",
                   "eth0"})
              .status();
    }
    Bench bench(net->get(), tmp, coordinator);
    base::Json report = {
        {"pods", pods}, {"concurrency", concurrency}, {"loadavg_start", LoadAvg()}};
    auto step = [&](std::string_view key, absl::StatusOr<std::vector<Sample>> samples) {
      if (!s.ok()) return;
      if (!samples.ok()) {
        s = samples.status();
        return;
      }
      const Stats st = Summarize(*samples);
      report[std::string(key)] =
          key.substr(0, 3) == "add" || key.substr(0, 3) == "del" ? ToJsonWithTrend(st) : ToJson(st);
    };
    const int baseline_runs = 100;
    if (s.ok()) step("bin_true_ms", bench.Baseline({"/bin/true"}, {}, baseline_runs));
    if (s.ok()) {
      step("version_ms",
           bench.Baseline({coordinator}, {{"CNI_COMMAND", "VERSION"}}, baseline_runs));
    }
    if (s.ok()) {
      step("ip_netns_exec_true_ms",
           bench.Baseline({"/usr/sbin/ip", "netns", "exec", (*net)->NodeNetns("a"), "/bin/true"},
                          {}, baseline_runs / 2));
    }
    const auto t_seq = Clock::now();
    if (s.ok()) s = bench.PreparePods(0, pods);
    if (s.ok()) step("add_seq_ms", bench.RunCoordinator("ADD", 0, pods, 1));
    if (s.ok()) report["node_rules_and_veths_after_add"] = bench.NodeLeftovers();
    if (s.ok()) step("del_seq_ms", bench.RunCoordinator("DEL", 0, pods, 1));
    const double seq_s = std::chrono::duration<double>(Clock::now() - t_seq).count();
    if (s.ok()) s = bench.PreparePods(pods, 2 * pods);
    if (s.ok()) {
      const auto t0 = Clock::now();
      step("add_conc_ms", bench.RunCoordinator("ADD", pods, 2 * pods, concurrency));
      report["add_conc_wall_s"] = Round2(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    if (s.ok()) step("del_conc_ms", bench.RunCoordinator("DEL", pods, 2 * pods, concurrency));
    if (s.ok()) {
      report["node_leftovers_after_del"] = bench.NodeLeftovers();
      report["agent_requests"] = (*agent)->requests();
      report["seq_phase_s"] = Round2(seq_s);
      report["loadavg_end"] = LoadAvg();
      std::printf("%s\n", base::DumpJson(report).c_str());
      std::fflush(stdout);
    } else {
      std::fprintf(stderr, "coordinator_add: %s\n", s.ToString().c_str());
      rc = 1;
    }
  }  // the network (all namespaces) and the agent go here
  std::filesystem::remove_all(tmp);
  return rc;
}

}  // namespace
}  // namespace spiderpool

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
  return spiderpool::Run(argc, argv);
}
