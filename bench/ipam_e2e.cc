// IPAM end to end at kubelet concurrency (issue 17 point 4): N simulated nodes (each a real
// spiderpool-agent process) x M pods into ONE SpiderIPPool of exactly N*M IPs (upstream's "IPs =
// pods" case; above --pool-max-ips, default 5000, consecutive nodes share pools of at most that
// many), every ADD and DEL through the real `spiderpool` CNI plugin binary (exec'd, as the
// main CNI does) and the agent's unix socket, 8 at a time per node (what a kubelet does when a
// Deployment lands), against the loopback API server slowed down to a real kube-apiserver + etcd
// by its latency model (kube/testing LatencyModel, CalibratedLatencyModel()), with one
// spiderpool-controller process beside the agents. Prints one JSON line:
//
//   {"nodes":10,"pods":1000,"add":{"wave_s":..,"p50_ms":..,"p90_ms":..,"p99_ms":..,
//    "max_ms":..,"failures":0},"add_inside_agents":{"within_50ms":..,"p50_under_ms":..,
//    "p99_under_ms":..} (the agents' own ADD duration histograms: time inside the agent, without
//    the exec and the CPU queue of 80 plugins on this machine),"all_pods_have_ip_s":..,
//    "del":{...},"del_inside_agents":{...},"left_allocated":0,
//    "left_allocated_after_s":..,"api_requests_per_pod_add"/"_del":..,
//    "api_requests_add"/"_del":{"get","post","put",...} (the wave's requests by method),
//    "agent_peak_rss_mb":..,
//    "cpu_add_s"/"cpu_del_s":{"bench_and_api_server","agents","controller","plugins",
//    "cni_runtimes"},
//    "controller_peak_rss_mb":..,"slice_writes":{...},...}
//
//   bazel run -c opt //bench:ipam_e2e -- [--nodes=10] [--pods-per-node=100] [--workers-per-node=8]
//       [--pool-max-ips=N (IPs per pool at most; default 5000, maxAllocatedIPsPerPool)]
//       [--block-size=N (nodeIPBlockSize; 0 = reservations off)]
//       [--standing=N (nodeIPBlockStanding; 0 = no standing blocks)]
//       [--default-pool=1 (the pool is a cluster default pool, spec.default, as the chart
//        installs it; the agents then reserve their standing blocks before any pod)]
//       [--multus=0 (no NetworkAttachmentDefinition: the agents learn their pods' pools only
//        from their first ADD, so none prewarms; default 1: each pool's CNI config is also a
//        NAD, the agents' Multus cluster network, as in a Spiderpool install with Multus)]
//       [--watch-min-timeout-s=N (the server ends a watch after N to 2N s; default 20, the
//        loopback's; kube-apiserver's --min-request-timeout is 1800)]
//       [--server-threads=N (the loopback server's connection threads; default
//        max(1024, 40 x nodes): one per open watch and per idle keep-alive connection)]
//       [--keep-alive-s=N (the server closes idle keep-alive connections after N s; default 2)]
//       [--cni-runtime=0 (exec the plugins from this process, which holds the API server's
//        sockets, instead of from one small runtime process per node, bench/cni_runtime.h)]
//       [--start-delay-ms=N (wait N ms after the agents answer before the first ADD: agents
//        that have been running a while)]
//       [--pod-lead-ms=N (each pod created N ms before its ADD; default -1: all created before
//        the agents start)]
//       [--latency-model=on|off] [--latency-per-request-us=N] [--latency-per-write-us=N]
//       [--latency-per-object-write-us=N] [--latency-watch-delay-us=N] [--latency-jitter=X]
//       [--agent-binary=PATH] [--plugin-binary=PATH] [--controller-binary=PATH]
//       [--controller=0 (no controller process)] [--dra=1 (agents publish ResourceSlices; root)]
//       [--keep-logs=1 (keep the agents' logs; the path goes to stderr)]
//
// Not a test: numbers go to bench/README.md.

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "absl/strings/str_join.h"
#include "api/core.h"
#include "api/nad.h"
#include "api/spider.h"
#include "base/json.h"
#include "base/sigpipe.h"
#include "base/strings.h"
#include "base/subprocess.h"
#include "bench/cni_runtime.h"
#include "bench/measure.h"
#include "kube/rest/client.h"
#include "kube/testing/test_client.h"
#include "kube/testing/test_cluster.h"

namespace {

using namespace spiderpool;
using bench::Buckets;
using bench::Percentile;
using bench::PeakRssKb;
using bench::ProcChildrenCpuSeconds;
using bench::ProcCpuSeconds;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Runfile(const std::string& path) {
  return base::StrCat(std::filesystem::current_path().string(), "/", path);
}

std::string StrFlag(int argc, char** argv, const std::string& name, const std::string& def) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--" + name + "=", 0) == 0) return a.substr(name.size() + 3);
  }
  return def;
}

int Flag(int argc, char** argv, const std::string& name, int def) {
  const std::string v = StrFlag(argc, argv, name, "");
  return v.empty() ? def : std::stoi(v);
}

double DoubleFlag(int argc, char** argv, const std::string& name, double def) {
  const std::string v = StrFlag(argc, argv, name, "");
  return v.empty() ? def : std::stod(v);
}

absl::Duration UsFlag(int argc, char** argv, const std::string& name, absl::Duration def) {
  const std::string v = StrFlag(argc, argv, name, "");
  return v.empty() ? def : absl::Microseconds(std::stoll(v));
}

base::Json Stats(const std::vector<double>& ms, double wave_s, int failures) {
  return {{"wave_s", wave_s},
          {"p50_ms", Percentile(ms, 0.50)},
          {"p90_ms", Percentile(ms, 0.90)},
          {"p99_ms", Percentile(ms, 0.99)},
          {"max_ms", Percentile(ms, 1.0)},
          {"failures", failures}};
}

// The agents and the controller die with this process: a SIGTERM/SIGINT/SIGHUP (`timeout`, ^C)
// kills them before it exits, so an interrupted run leaves no orphans behind. Only
// async-signal-safe calls in the handler.
constexpr int kMaxChildren = 4096;
std::atomic<pid_t> g_children[kMaxChildren];
std::atomic<int> g_child_count{0};

void KillChildrenAndExit(int sig) {
  const int n = std::min(g_child_count.load(), kMaxChildren);
  for (int i = 0; i < n; ++i) {
    if (const pid_t pid = g_children[i].load(); pid > 0) ::kill(pid, SIGKILL);
  }
  ::_exit(128 + sig);
}

void DieWithThisProcess(pid_t pid) {
  const int i = g_child_count.fetch_add(1);
  if (i < kMaxChildren) g_children[i].store(pid);
}

void KillChildrenOnSignals() {
  struct sigaction sa = {};
  sa.sa_handler = KillChildrenAndExit;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

struct Agent {
  std::unique_ptr<base::Process> process;
  std::string socket;
  int health_port = 0;
};

// ResourceSlice writes (ADDED/MODIFIED events) per node, from a watch on the loopback server.
class SliceWriteCounter {
 public:
  SliceWriteCounter(const kube::testing::LoopbackApiServer& server, absl::Time epoch)
      : client_(server), epoch_(epoch) {
    thread_ = std::jthread([this](std::stop_token stop) {
      kube::testing::WatchReader w(client_,
                                   "/apis/resource.k8s.io/v1/resourceslices?watch=true&"
                                   "timeoutSeconds=36000");
      while (!stop.stop_requested()) {
        auto e = w.Next(absl::Milliseconds(200));
        if (!e) continue;
        const std::string type = e->value("type", "");
        if (type != "ADDED" && type != "MODIFIED") continue;
        const base::Json& spec = (*e)["object"]["spec"];
        const std::string node = spec.is_object() ? spec.value("nodeName", "") : "";
        std::lock_guard<std::mutex> l(mu_);
        writes_[node].push_back(absl::ToDoubleSeconds(absl::Now() - epoch_));
      }
    });
  }
  // Per node: writes in [from_s, to_s] (seconds since the epoch).
  std::map<std::string, std::vector<double>> Writes() const {
    std::lock_guard<std::mutex> l(mu_);
    return writes_;
  }

 private:
  kube::testing::TestClient client_;
  absl::Time epoch_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<double>> writes_;  // guarded by mu_
  std::jthread thread_;  // last: stopped and joined first
};

// Slice writes of the busiest node within [from_s, to_s], and the most any node wrote inside
// one window of `window_s` seconds.
base::Json SliceStats(const std::map<std::string, std::vector<double>>& writes, int nodes,
                      double from_s, double to_s, double window_s) {
  int max_writes = 0, total = 0, max_in_window = 0;
  for (const auto& [node, times] : writes) {
    std::vector<double> in;
    for (double t : times) {
      if (t >= from_s && t <= to_s) in.push_back(t);
    }
    total += static_cast<int>(in.size());
    max_writes = std::max(max_writes, static_cast<int>(in.size()));
    for (size_t i = 0, j = 0; i < in.size(); ++i) {
      while (in[i] - in[j] > window_s) ++j;
      max_in_window = std::max(max_in_window, static_cast<int>(i - j + 1));
    }
  }
  const double span = std::max(to_s - from_s, 1e-9);
  return {{"nodes_writing", writes.size()},
          {"total", total},
          {"max_per_node", max_writes},
          {"mean_per_node", nodes > 0 ? static_cast<double>(total) / nodes : 0},
          {"max_per_node_per_s", max_writes / span},
          {"max_per_node_in_any_2s", max_in_window}};
}

// The label of a node's rack: the nodes of one rack share a pool.
constexpr char kRackLabel[] = "bench.spiderpool.io/rack";

}  // namespace

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
  KillChildrenOnSignals();
  const int nodes = Flag(argc, argv, "nodes", 10);
  const int per_node = Flag(argc, argv, "pods-per-node", 100);
  // ADDs (and DELs) each simulated node runs at once: 8, what a kubelet does when a Deployment
  // lands (the real-cluster harness of issue 17 used the same).
  const int workers = Flag(argc, argv, "workers-per-node", 8);
  // nodeIPBlockSize of the agents' conf.yml (-1: the built-in default; 0: node reservations off).
  const int block_size = Flag(argc, argv, "block-size", -1);
  // When pods are created: -1 = all of them before the agents start (a node whose pods were
  // scheduled while its agent restarted, or a burst that the kubelets work through); N >= 0 =
  // each pod N ms before its own ADD (the agent learns of it only just before).
  const int pod_lead_ms = Flag(argc, argv, "pod-lead-ms", -1);
  // nodeIPBlockStanding (-1: the built-in default).
  const int standing = Flag(argc, argv, "standing", -1);
  const bool default_pool = Flag(argc, argv, "default-pool", 0) != 0;
  const int start_delay_ms = Flag(argc, argv, "start-delay-ms", 0);
  const bool multus = Flag(argc, argv, "multus", 1) != 0;
  const int watch_min_timeout_s = Flag(argc, argv, "watch-min-timeout-s", 20);
  // The server closes an idle keep-alive connection after this many seconds (see below).
  const int keep_alive_s = Flag(argc, argv, "keep-alive-s", 2);
  const int server_threads = Flag(argc, argv, "server-threads", std::max(1024, nodes * 40));
  const bool with_controller = Flag(argc, argv, "controller", 1) != 0;
  // Off by default: the DRA binary adds ~13 MB of agent RSS and ~2 API requests per ADD, which
  // would blur the IPAM numbers; --dra=1 measures the ResourceSlice writes (issue 15).
  const bool dra = Flag(argc, argv, "dra", 0) != 0;
  const std::string agent_bin = StrFlag(argc, argv, "agent-binary", Runfile("agent/spiderpool-agent"));
  const std::string plugin = StrFlag(argc, argv, "plugin-binary", Runfile("agent/cni/spiderpool"));
  // Each node's plugin execs come from its own small runtime process (bench/cni_runtime.h), as
  // on a node; 0: from this process, which holds the API server's sockets.
  const bool cni_runtime = Flag(argc, argv, "cni-runtime", 1) != 0;
  const std::string controller_bin =
      StrFlag(argc, argv, "controller-binary", Runfile("operator/spiderpool-controller"));
  const int pods = nodes * per_node;

  // The latency model: on by default with the calibrated values; each can be overridden.
  kube::testing::LatencyModel latency;
  const std::string latency_mode = StrFlag(argc, argv, "latency-model", "on");
  if (latency_mode != "on" && latency_mode != "off") {
    std::cerr << "--latency-model: want on or off, got " << latency_mode << "\n";
    return 2;
  }
  if (latency_mode == "on") {
    const kube::testing::LatencyModel cal = kube::testing::CalibratedLatencyModel();
    latency.per_request = UsFlag(argc, argv, "latency-per-request-us", cal.per_request);
    latency.per_write = UsFlag(argc, argv, "latency-per-write-us", cal.per_write);
    latency.per_object_write =
        UsFlag(argc, argv, "latency-per-object-write-us", cal.per_object_write);
    latency.watch_delay = UsFlag(argc, argv, "latency-watch-delay-us", cal.watch_delay);
    latency.jitter = DoubleFlag(argc, argv, "latency-jitter", cal.jitter);
    latency.seed = cal.seed;
  }

  // Each open watch and each idle keep-alive connection holds a server thread: every agent
  // needs a few dozen. Bookmarks every minute, as kube-apiserver's watch cache sends them (the
  // loopback's default of 1 s, for tests, made 100 agents' ~700 watches take the server's lock
  // 700 times a second). Idle keep-alive connections stay the loopback's 2 s, not
  // kube-apiserver's 90 s: cpp-httplib's server polls every idle keep-alive connection every
  // ~10 ms: with 90 s the server used 17.5 s of CPU in 10 idle seconds of 100 agents (2 s:
  // 6.3 s). Watches end after the loopback's 20 to 40 s unless
  // --watch-min-timeout-s says otherwise (kube-apiserver: --min-request-timeout=1800; see
  // bench/README.md "session 17" for what 1800 did at 100 nodes).
  auto cluster = kube::testing::TestCluster::Start(
      {.bookmark_interval = absl::Minutes(1),
       .worker_threads = server_threads,
       .keep_alive_idle_timeout = absl::Seconds(keep_alive_s),
       .watch_min_request_timeout = absl::Seconds(watch_min_timeout_s)});
  if (!cluster.ok()) {
    std::cerr << cluster.status() << "\n";
    return 1;
  }
  auto& c = **cluster;
  if (absl::Status s = c.ApplyCRDs("charts/spiderpool/crds"); !s.ok()) {
    std::cerr << s << "\n";
    return 1;
  }
  char dir[] = "/tmp/sp-bench-XXXXXX";
  if (::mkdtemp(dir) == nullptr) return 1;
  const std::string tmp = dir;
  const std::string kubeconfig = tmp + "/kubeconfig";
  if (c.loopback() == nullptr || !c.loopback()->WriteKubeconfig(kubeconfig).ok()) {
    std::cerr << "needs the loopback API server\n";
    return 1;
  }

  // Pools of exactly the pods' IPs: one pool ("bench-pool", 10.100.0.1 and up) unless the
  // pods are more than `pool-max-ips` (default 5000: the agents' maxAllocatedIPsPerPool, which
  // is upstream's ipamMaxAllocatedIPs, counts node reservations too, so a bigger pool could
  // never be filled; a 10,000-record pool would also near etcd's 1.5 MiB object limit). Then
  // consecutive nodes share a pool ("bench-pool-<k>", 10.<100+k>.0.1 and up) of at most that
  // many IPs, as pools per rack do: the nodes are labelled with their rack (kRackLabel) and each
  // pool's nodeAffinity admits its rack's nodes.
  const int pool_max_ips = Flag(argc, argv, "pool-max-ips", 5000);
  const int nodes_per_pool = std::max(1, pool_max_ips / std::max(1, per_node));
  const int pool_count = (nodes + nodes_per_pool - 1) / nodes_per_pool;
  std::vector<std::string> pool_names;
  auto pool_of_node = [&](int node) -> const std::string& {
    return pool_names[node / nodes_per_pool];
  };
  const std::string pool_subnet = "10.100.0.0/16";  // the first pool's (DRA's declared subnet)
  for (int k = 0; k < pool_count; ++k) {
    api::SpiderIPPool pool;
    pool.metadata.name = pool_count == 1 ? "bench-pool" : base::StrCat("bench-pool-", k);
    pool.spec.subnet = base::StrCat("10.", 100 + k, ".0.0/16");
    const int last = per_node * (std::min(nodes, (k + 1) * nodes_per_pool) - k * nodes_per_pool);
    pool.spec.ips = {base::StrCat("10.", 100 + k, ".0.1-10.", 100 + k, ".", last / 256, ".",
                                  last % 256)};
    pool.spec.gateway = base::StrCat("10.", 100 + k, ".255.254");
    if (default_pool) pool.spec.default_ = true;
    // A rack's pool admits the rack's nodes only (and their agents follow only its status).
    if (pool_count > 1) {
      pool.spec.node_affinity =
          api::LabelSelector{.match_labels = {{kRackLabel, std::to_string(k)}}};
    }
    auto created = kube::Client<api::SpiderIPPool>(c.rest()).Create(pool);
    if (!created.ok()) {
      std::cerr << created.status() << "\n";
      return 1;
    }
    pool_names.push_back(pool.metadata.name);
  }
  // The CNI config of the pods of a pool's nodes (the agent's socket is added per node).
  auto netconf_of = [&](const std::string& pool) {
    return base::Json{{"cniVersion", "1.0.0"},
                      {"name", "macvlan-conf"},
                      {"type", "macvlan"},
                      {"ipam", {{"type", "spiderpool"},
                                {"default_ipv4_ippool", base::Json::array({pool})}}}};
  };
  // With Multus, that config is a NAD, the nodes' cluster network: the agents read their
  // waiting pods' pools from it before the first ADD (the prewarm).
  auto nad_of = [&](const std::string& pool) { return "macvlan-" + pool; };
  if (multus) {
    for (const std::string& pool : pool_names) {
      api::NetworkAttachmentDefinition nad;
      nad.metadata.name = nad_of(pool);
      nad.metadata.namespace_ = c.ns();
      nad.spec.config = base::DumpJson(netconf_of(pool));
      if (absl::Status s = kube::Client<api::NetworkAttachmentDefinition>(c.rest()).Create(nad).status();
          !s.ok()) {
        std::cerr << "NAD " << nad.metadata.name << ": " << s << "\n";
        return 1;
      }
    }
  }
  struct PodRef {
    std::string name, uid;
    int node;
  };
  std::vector<PodRef> pod_refs;
  auto create_pod = [&](PodRef& ref) -> absl::Status {
    api::Pod pod;
    pod.metadata.name = ref.name;
    pod.metadata.namespace_ = c.ns();
    pod.spec.node_name = base::StrCat("node-", ref.node);
    pod.spec.containers.push_back({.name = "c", .image = "busybox"});
    auto created = kube::Client<api::Pod>(c.rest()).Create(pod);
    if (!created.ok()) return created.status();
    ref.uid = created->metadata.uid;
    return absl::OkStatus();
  };
  for (int n = 0; n < nodes; ++n) {
    api::Node node;
    node.metadata.name = base::StrCat("node-", n);
    node.metadata.labels[kRackLabel] = std::to_string(n / nodes_per_pool);
    if (!kube::Client<api::Node>(c.rest()).Create(node).ok()) return 1;
    for (int i = 0; i < per_node; ++i) {
      pod_refs.push_back({base::StrCat("pod-", n, "-", i), "", n});
      if (pod_lead_ms >= 0) continue;
      if (absl::Status s = create_pod(pod_refs.back()); !s.ok()) {
        std::cerr << s << "\n";
        return 1;
      }
    }
  }

  // From here on the server answers as slowly as a real one: the agents' and the
  // controller's start-up (lists, watches, first reservations) included.
  c.loopback()->SetLatencyModel(latency);
  const absl::Time epoch = absl::Now();
  std::unique_ptr<SliceWriteCounter> slices;
  if (dra) slices = std::make_unique<SliceWriteCounter>(*c.loopback(), epoch);

  std::unique_ptr<base::Process> controller;
  if (with_controller) {
    auto p = base::Process::Start(
        {.argv = {controller_bin, "--kubeconfig=" + kubeconfig, "--namespace=" + c.ns(),
                  "--identity=bench-controller", "--health-port=0", "--webhook-port=-1",
                  "--qps=1000", "--burst=2000"},
         .inherit_env = true,
         .output_file = tmp + "/controller.log"});
    if (!p.ok()) {
      std::cerr << "controller: " << p.status() << "\n";
      return 1;
    }
    controller = *std::move(p);
    DieWithThisProcess(controller->pid());
  }

  std::vector<std::string> agent_flags = {"--kubeconfig=" + kubeconfig, "--health-port=0",
                                           "--agent-namespace=" + c.ns(), "--qps=1000",
                                           "--burst=2000"};
  if (block_size >= 0 || standing >= 0) {
    const std::string conf = tmp + "/conf.yml";
    std::ofstream out(conf);
    if (block_size >= 0) out << "nodeIPBlockSize: " << block_size << "\n";
    if (standing >= 0) out << "nodeIPBlockStanding: " << standing << "\n";
    agent_flags.push_back("--config=" + conf);
  }
  // DRA: every agent discovers its NICs in one scratch network namespace holding an
  // address-less veth "eth1" (a dedicated underlay NIC: the pool's subnet is declared for it)
  // and publishes its node's ResourceSlice for the pool. No kubelet: the plugin's sockets go to
  // a scratch directory. Needs root (ip netns); without it the run goes on without DRA.
  std::string dra_netns, dra_unavailable;
  if (dra) {
    dra_netns = base::StrCat("sp-bench-", ::getpid());
    for (const std::vector<std::string>& cmd :
         std::vector<std::vector<std::string>>{
             {"ip", "netns", "add", dra_netns},
             {"ip", "-n", dra_netns, "link", "add", "eth1", "type", "veth", "peer", "name", "eth1p"},
             {"ip", "-n", dra_netns, "link", "set", "eth1", "up"},
             {"ip", "-n", dra_netns, "link", "set", "eth1p", "up"}}) {
      std::vector<std::string> argv = {"/usr/bin/env"};
      argv.insert(argv.end(), cmd.begin(), cmd.end());
      auto r = base::RunProcess({.argv = argv, .inherit_env = true});
      if (!r.ok() || r->exit_code != 0) {
        dra_unavailable = base::StrCat(absl::StrJoin(cmd, " "), ": ",
                                       r.ok() ? r->stderr_data : r.status().ToString());
        break;
      }
    }
    if (dra_unavailable.empty()) {
      agent_flags.insert(agent_flags.end(),
                         {"--dra-enabled", "--nic-netns=/var/run/netns/" + dra_netns,
                          "--nic-include=eth1", "--dra-declared-subnets=eth1=" + pool_subnet,
                          "--dra-health-port=-1"});
    } else {
      std::cerr << "DRA off: " << dra_unavailable << "\n";
      slices.reset();
    }
  }
  struct NetnsCleanup {
    std::string name;
    ~NetnsCleanup() {
      if (!name.empty()) (void)base::RunProcess({.argv = {"/usr/bin/env", "ip", "netns", "del", name}, .inherit_env = true});
    }
  } netns_cleanup{dra_netns};
  std::vector<Agent> agents(nodes);
  for (int n = 0; n < nodes; ++n) {
    agents[n].socket = base::StrCat(tmp, "/agent-", n, ".sock");
    std::vector<std::string> argv = {agent_bin, base::StrCat("--node-name=node-", n),
                                     "--socket=" + agents[n].socket};
    if (multus) {
      argv.push_back(base::StrCat("--multus-cluster-network=", c.ns(), "/", nad_of(pool_of_node(n))));
    }
    argv.insert(argv.end(), agent_flags.begin(), agent_flags.end());
    if (dra && dra_unavailable.empty()) {
      const std::string d = base::StrCat(tmp, "/n", n);
      for (const char* sub : {"/registry", "/plugins", "/cdi"}) {
        std::filesystem::create_directories(d + sub);
      }
      argv.insert(argv.end(), {"--kubelet-registry-dir=" + d + "/registry",
                               "--kubelet-plugins-dir=" + d + "/plugins",
                               "--dra-cdi-dir=" + d + "/cdi"});
    }
    auto p = base::Process::Start(
        {.argv = argv,
         .inherit_env = true,
         .output_file = base::StrCat(tmp, "/agent-", n, ".log")});
    if (!p.ok()) {
      std::cerr << p.status() << "\n";
      return 1;
    }
    agents[n].process = std::move(*p);
    DieWithThisProcess(agents[n].process->pid());
  }
  // One CNI runtime per node (--cni-runtime=1).
  std::vector<std::unique_ptr<base::Process>> runtimes;
  std::vector<std::string> runtime_sockets;
  for (int n = 0; cni_runtime && n < nodes; ++n) {
    runtime_sockets.push_back(base::StrCat(tmp, "/runtime-", n, ".sock"));
    auto p = base::Process::Start({.argv = {Runfile("bench/cni_runtime"), runtime_sockets[n]},
                                   .output_file = base::StrCat(tmp, "/runtime-", n, ".log")});
    if (!p.ok()) {
      std::cerr << p.status() << "\n";
      return 1;
    }
    runtimes.push_back(std::move(*p));
    DieWithThisProcess(runtimes[n]->pid());
  }
  for (int n = 0; n < static_cast<int>(runtimes.size()); ++n) {
    for (int i = 0; !std::filesystem::exists(runtime_sockets[n]); ++i) {
      if (i > 2400 || !runtimes[n]->Running()) {
        std::cerr << "CNI runtime " << n << " not ready: "
                  << ReadFile(base::StrCat(tmp, "/runtime-", n, ".log")) << "\n";
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  for (int n = 0; n < nodes; ++n) {
    for (int i = 0;; ++i) {
      httplib::Client client(agents[n].socket);
      client.set_address_family(AF_UNIX);
      auto res = client.Get("/v1/ipam/healthy");
      if (res && res->status == 200) break;
      if (i > 2400 || !agents[n].process->Running()) {
        std::cerr << "agent " << n << " not ready: " << ReadFile(base::StrCat(tmp, "/agent-", n, ".log")) << "\n";
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    const std::string log = ReadFile(base::StrCat(tmp, "/agent-", n, ".log"));
    const size_t at = log.find("health_port=");
    if (at != std::string::npos) agents[n].health_port = std::stoi(log.substr(at + 12));
  }
  const double agents_ready_s = absl::ToDoubleSeconds(absl::Now() - epoch);
  absl::SleepFor(absl::Milliseconds(start_delay_ms));

  auto cni = [&](const std::string& command, const PodRef& pod) {
    base::Json netconf = netconf_of(pool_of_node(pod.node));
    netconf["ipam"]["ipam_unix_socket_path"] = agents[pod.node].socket;
    const std::string conf = base::DumpJson(netconf);
    base::ProcessOptions options{
         .argv = {plugin},
         .env = {{"CNI_COMMAND", command},
                 {"CNI_CONTAINERID", "ctr-" + pod.name},
                 {"CNI_NETNS", "/var/run/netns/" + pod.name},
                 {"CNI_IFNAME", "eth0"},
                 {"CNI_PATH", "/opt/cni/bin"},
                 {"CNI_ARGS", base::StrCat("IgnoreUnknown=1;K8S_POD_NAMESPACE=", c.ns(),
                                           ";K8S_POD_NAME=", pod.name, ";K8S_POD_UID=", pod.uid)}},
         .stdin_data = conf,
         .timeout = absl::Seconds(120)};
    return cni_runtime ? bench::RunThroughRuntime(runtime_sockets[pod.node], options)
                       : base::RunProcess(options);
  };

  std::vector<double> add_ms(pods, 0);
  std::vector<std::string> ips(pods);
  std::atomic<int> add_failures{0};
  std::string first_failure;
  std::mutex failure_mu;
  std::vector<double> started_s(pods, 0);  // when each request of the current wave started
  std::vector<double> ended_s(pods, 0);    // when it returned (successful ones only; else 0)
  auto wave = [&](const std::string& command, std::vector<double>* latencies, std::atomic<int>* failures) {
    const absl::Time start = absl::Now();
    std::vector<std::jthread> threads;
    for (int n = 0; n < nodes; ++n) {
      for (int w = 0; w < workers; ++w) {
        threads.emplace_back([&, n, w] {
          for (int i = w; i < per_node; i += workers) {
            const int idx = n * per_node + i;
            if (command == "ADD" && pod_lead_ms >= 0) {
              if (absl::Status s = create_pod(pod_refs[idx]); !s.ok()) {
                failures->fetch_add(1);
                continue;
              }
              absl::SleepFor(absl::Milliseconds(pod_lead_ms));
            }
            const absl::Time t0 = absl::Now();
            auto r = cni(command, pod_refs[idx]);
            (*latencies)[idx] = absl::ToDoubleMilliseconds(absl::Now() - t0);
            started_s[idx] = absl::ToDoubleSeconds(t0 - start);
            ended_s[idx] = 0;
            if (!r.ok() || r->exit_code != 0) {
              failures->fetch_add(1);
              std::lock_guard<std::mutex> l(failure_mu);
              if (first_failure.empty()) first_failure = r.ok() ? r->stdout_data : r.status().ToString();
              continue;
            }
            ended_s[idx] = absl::ToDoubleSeconds(absl::Now() - start);
            if (command == "ADD") {
              auto j = base::ParseJson(r->stdout_data);
              if (j.ok() && j->contains("ips")) ips[idx] = (*j)["ips"][0].value("address", "");
            }
          }
        });
      }
    }
    threads.clear();
    return absl::ToDoubleSeconds(absl::Now() - start);
  };

  // Where the CPU of a wave goes: this process (the API server, and the exec calls with
  // --cni-runtime=0), the agents, the controller, the plugin processes (reaped children: of
  // the CNI runtimes, else of this process) and the CNI runtimes themselves.
  auto cpu_now = [&] {
    double agents_s = 0, plugins_s = 0, runtimes_s = 0;
    for (const Agent& a : agents) agents_s += ProcCpuSeconds(a.process->pid());
    for (const auto& r : runtimes) {
      plugins_s += ProcChildrenCpuSeconds(r->pid());
      runtimes_s += ProcCpuSeconds(r->pid());
    }
    if (!cni_runtime) plugins_s = bench::RusageCpuSeconds(RUSAGE_CHILDREN);
    return base::Json{{"bench_and_api_server", bench::RusageCpuSeconds(RUSAGE_SELF)},
                      {"agents", agents_s},
                      {"controller", controller ? ProcCpuSeconds(controller->pid()) : 0.0},
                      {"plugins", plugins_s},
                      {"cni_runtimes", runtimes_s}};
  };
  auto cpu_since = [&](const base::Json& before) {
    base::Json now = cpu_now();
    for (auto& [k, v] : now.items()) v = v.get<double>() - before[k].get<double>();
    return now;
  };
  const auto requests_before_add = c.loopback()->request_counts();
  const base::Json cpu_at_add = cpu_now();
  const double cpu_before_add = bench::RusageCpuSeconds(RUSAGE_SELF);
  const double add_wave_from_s = absl::ToDoubleSeconds(absl::Now() - epoch);
  const double total_add_s = wave("ADD", &add_ms, &add_failures);
  const double add_wave_to_s = absl::ToDoubleSeconds(absl::Now() - epoch);
  const double bench_cpu_add_s = bench::RusageCpuSeconds(RUSAGE_SELF) - cpu_before_add;
  const base::Json cpu_add_s = cpu_since(cpu_at_add);
  const auto requests_after_add = c.loopback()->request_counts();
  // The ADDs that took longest: which pod of its node each was (the first concurrent batch of
  // each node is pods 0..workers-1).
  int slow_in_first_batch = 0, slow_total = 0;
  for (int i = 0; i < pods; ++i) {
    if (add_ms[i] <= 1000) continue;
    ++slow_total;
    if (i % per_node < workers) ++slow_in_first_batch;
  }
  double last_ip_s = 0;
  for (double t : ended_s) last_ip_s = std::max(last_ip_s, t);
  std::map<std::string, int> first_holder;  // ip -> pod index
  int duplicates = 0;
  for (int i = 0; i < pods; ++i) {
    const std::string& ip = ips[i];
    if (ip.empty()) continue;
    auto [it, fresh] = first_holder.emplace(ip, i);
    if (fresh) continue;
    ++duplicates;
    // Which pods (pod-<node>-<n>) got it: the agents' logs (--keep-logs=1) say how.
    std::cerr << "DUPLICATE " << ip << ": pod index " << it->second << " and " << i << "\n";
  }
  // Slow ADDs (> 100 ms) by the tenth of the wave they started in: where the tail comes from.
  std::vector<int> slow_by_tenth(10, 0);
  for (int i = 0; i < pods; ++i) {
    if (add_ms[i] <= 100) continue;
    ++slow_by_tenth[std::clamp(static_cast<int>(started_s[i] / total_add_s * 10), 0, 9)];
  }
  double pool_writes = 0, conflicts = 0, from_reservations = 0, stale_skipped = 0;
  for (const Agent& a : agents) {
    pool_writes += bench::ScrapeCounter(a.health_port, "spiderpool_ipam_ippool_status_writes_total");
    stale_skipped += bench::ScrapeCounter(a.health_port, "spiderpool_ipam_ippool_status_writes_skipped_total");
    conflicts += bench::ScrapeCounter(a.health_port, "spiderpool_ipam_allocation_update_ippool_conflict_counts_total");
    from_reservations += bench::ScrapeCounter(a.health_port, "spiderpool_ipam_node_reservation_handouts_total");
  }
  // Pool records (pods and node reservations) in the pools at `now`.
  auto pool_records = [&](int64_t* pod_records, int64_t* reservations) {
    *pod_records = *reservations = 0;
    for (const std::string& name : pool_names) {
      auto p = kube::Client<api::SpiderIPPool>(c.rest()).Get("", name);
      if (!p.ok()) return false;
      const api::PoolIPAllocations recs = p->AllocatedIPs().value_or(api::PoolIPAllocations{});
      for (const auto& [ip, rec] : recs) {
        ++(api::IsNodeReservation(rec) ? *reservations : *pod_records);
      }
    }
    return true;
  };
  // Pod records once the agents have written what they handed out from their reservations
  // (in the background), and the reservations left at that moment.
  int64_t records_after_add = 0, reservations_after_add = 0;
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (!pool_records(&records_after_add, &reservations_after_add)) break;
    if (records_after_add == pods - add_failures.load()) break;
    absl::SleepFor(absl::Milliseconds(100));
  }

  std::vector<double> del_ms(pods, 0);
  std::atomic<int> del_failures{0};
  const base::Json cpu_at_del = cpu_now();
  const double total_del_s = wave("DEL", &del_ms, &del_failures);
  const base::Json cpu_del_s = cpu_since(cpu_at_del);
  const auto requests_after_del = c.loopback()->request_counts();
  // Pod records left after the DEL wave: polled until none or 5 s (DEL may return before the
  // pool write; the background flush must empty the pool soon after).
  const absl::Time del_done = absl::Now();
  int64_t left = -1, reservations_left = -1;
  double left_after_s = 0;
  while (true) {
    if (!pool_records(&left, &reservations_left)) left = -1;
    left_after_s = absl::ToDoubleSeconds(absl::Now() - del_done);
    if (left == 0 || left_after_s >= 5) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  Buckets agent_add, agent_del;
  for (const Agent& a : agents) {
    bench::ScrapeBuckets(a.health_port, "spiderpool_ipam_allocation_duration_seconds", &agent_add);
    bench::ScrapeBuckets(a.health_port, "spiderpool_ipam_release_duration_seconds", &agent_del);
  }
  double peak_rss_kb = 0, sum_rss_kb = 0;
  for (const Agent& a : agents) {
    const double kb = static_cast<double>(PeakRssKb(a.process->pid()));
    peak_rss_kb = std::max(peak_rss_kb, kb);
    sum_rss_kb += kb;
  }
  const double controller_rss_kb =
      controller ? static_cast<double>(PeakRssKb(controller->pid())) : 0;
  const bool controller_alive = controller && controller->Running();
  base::Json slice_json = nullptr;
  if (slices) {
    const auto writes = slices->Writes();
    slice_json = {{"add_wave", SliceStats(writes, nodes, add_wave_from_s, add_wave_to_s, 2.0)},
                  {"whole_run", SliceStats(writes, nodes, 0,
                                           absl::ToDoubleSeconds(absl::Now() - epoch), 2.0)}};
    slices.reset();
  }
  agents.clear();
  controller.reset();
  if (Flag(argc, argv, "keep-logs", 0) != 0) {
    std::cerr << "agent logs kept in " << tmp << "\n";
  } else {
    std::filesystem::remove_all(tmp);
  }

  auto requests = [](const kube::testing::RequestCounts& a, const kube::testing::RequestCounts& b) {
    return (b.get + b.post + b.put + b.patch + b.delete_ + b.other) -
           (a.get + a.post + a.put + a.patch + a.delete_ + a.other);
  };
  const double add_requests = static_cast<double>(requests(requests_before_add, requests_after_add));
  const double del_requests = static_cast<double>(requests(requests_after_add, requests_after_del));
  // The requests of a wave by method (watches are GETs): a pool's GETs and PUTs are its size.
  auto by_method = [](const kube::testing::RequestCounts& a, const kube::testing::RequestCounts& b) {
    return base::Json{{"get", b.get - a.get},          {"post", b.post - a.post},
                      {"put", b.put - a.put},          {"patch", b.patch - a.patch},
                      {"delete", b.delete_ - a.delete_}, {"other", b.other - a.other}};
  };
  base::Json latency_json = nullptr;
  if (latency.enabled()) {
    latency_json = {{"per_request_ms", absl::ToDoubleMilliseconds(latency.per_request)},
                    {"per_write_ms", absl::ToDoubleMilliseconds(latency.per_write)},
                    {"per_object_write_ms", absl::ToDoubleMilliseconds(latency.per_object_write)},
                    {"watch_delay_ms", absl::ToDoubleMilliseconds(latency.watch_delay)},
                    {"jitter", latency.jitter}};
  }
  base::Json out{
      {"nodes", nodes},
      {"pods", pods},
      {"pool_ips", pods},
      {"pools", pool_count},
      {"workers_per_node", workers},
      {"node_ip_block_size", block_size},
      {"pod_lead_ms", pod_lead_ms},
      {"node_ip_block_standing", standing},
      {"default_pool", default_pool},
      {"start_delay_ms", start_delay_ms},
      {"multus", multus},
      {"watch_min_timeout_s", watch_min_timeout_s},
      {"server_threads", server_threads},
      {"latency_model", latency_json},
      {"agent_binary", agent_bin},
      {"agents_ready_s", agents_ready_s},
      {"add", Stats(add_ms, total_add_s, add_failures.load())},
      {"add_inside_agents", bench::HistogramSummary(agent_add)},
      {"all_pods_have_ip_s", add_failures.load() == 0 ? base::Json(last_ip_s) : base::Json(nullptr)},
      {"adds_over_1s", slow_total},
      {"adds_over_1s_in_first_batch_of_node", slow_in_first_batch},
      {"slow_adds_by_tenth_of_wave", slow_by_tenth},
      {"adds_from_node_reservations", from_reservations},
      {"reservations_after_add", reservations_after_add},
      {"duplicates", duplicates},
      {"records_after_add", records_after_add},
      {"api_requests_per_pod_add", add_requests / pods},
      {"api_requests_add", by_method(requests_before_add, requests_after_add)},
      {"api_writes_per_pod_add",
       static_cast<double>(requests_after_add.writes() - requests_before_add.writes()) / pods},
      {"bench_process_cpu_add_s", bench_cpu_add_s},
      {"cpu_add_s", cpu_add_s},
      {"cpu_del_s", cpu_del_s},
      {"wall_ms_per_add", total_add_s * 1000.0 / pods},
      {"pool_status_writes", pool_writes},
      {"conflicts", conflicts},
      // Writes the agents did not send: the pool changed while they were built.
      {"pool_status_writes_skipped", stale_skipped},
      {"del", Stats(del_ms, total_del_s, del_failures.load())},
      {"del_inside_agents", bench::HistogramSummary(agent_del)},
      {"api_requests_per_pod_del", del_requests / pods},
      {"api_requests_del", by_method(requests_after_add, requests_after_del)},
      // Requests the server gave up on over the whole run: deadline passed (504) / client left.
      {"api_requests_timed_out", requests_after_del.timed_out},
      {"api_requests_abandoned", requests_after_del.abandoned},
      {"left_allocated", left},
      {"left_allocated_after_s", left_after_s},
      {"reservations_left", reservations_left},
      {"agent_peak_rss_mb", peak_rss_kb / 1024.0},
      {"agent_mean_peak_rss_mb", sum_rss_kb / 1024.0 / nodes},
      {"controller_peak_rss_mb", controller_rss_kb / 1024.0},
      {"controller_alive_at_end", controller_alive},
      {"slice_writes", slice_json},
  };
  if (!dra_unavailable.empty()) out["dra_unavailable"] = dra_unavailable;
  if (!first_failure.empty()) out["first_failure"] = first_failure.substr(0, 300);
  std::cout << base::DumpJson(out) << std::endl;
  return add_failures.load() == 0 && duplicates == 0 ? 0 : 1;
}
