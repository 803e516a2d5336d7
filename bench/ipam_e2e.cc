// IPAM end to end under load: N simulated nodes (each a real spiderpool-agent process) x M pods
// into ONE SpiderIPPool of exactly N*M IPs (upstream's "IPs = pods" case), every ADD and DEL
// through the real `spiderpool` CNI plugin binary (exec'd, as the main CNI does) and the agent's
// unix socket, against the loopback API server. Prints one JSON line:
//
//   {"nodes":10,"pods":1000,"total_add_s":..,"p50_add_ms":..,"p99_add_ms":..,"add_failures":0,
//    "duplicates":0,"api_writes":..,"pool_status_writes":..,"conflicts":..,"total_del_s":..,
//    "del_failures":0,"leaked_records":0,"agent_peak_rss_mb":..,...}
//
//   bazel run -c opt //bench:ipam_e2e -- [--nodes=10] [--pods-per-node=100] [--workers-per-node=1]
//                                         [--block-size=N (nodeIPBlockSize; 0 = reservations off)]
//                                         [--pod-lead-ms=N (each pod created N ms before its ADD;
//                                          default -1: all created before the agents start)]
//                                         [--keep-logs=1 (keep the agents' logs; the path goes
//                                          to stderr)]
//
// Not a test: numbers go to bench/README.md.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "api/core.h"
#include "api/spider.h"
#include "base/json.h"
#include "base/sigpipe.h"
#include "base/strings.h"
#include "base/subprocess.h"
#include "kube/rest/client.h"
#include "kube/testing/test_cluster.h"

namespace {

using namespace spiderpool;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Runfile(const std::string& path) {
  return base::StrCat(std::filesystem::current_path().string(), "/", path);
}

int64_t PeakRssKb(pid_t pid) {
  std::istringstream in(ReadFile(base::StrCat("/proc/", pid, "/status")));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

// The sum of a counter over an agent's /metrics.
double Scrape(int port, const std::string& name) {
  httplib::Client c("127.0.0.1", port);
  auto res = c.Get("/metrics");
  if (!res || res->status != 200) return 0;
  std::istringstream in(res->body);
  std::string line;
  double sum = 0;
  while (std::getline(in, line)) {
    if (line.rfind(name, 0) == 0 && (line.size() > name.size()) &&
        (line[name.size()] == ' ' || line[name.size()] == '{')) {
      sum += std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return sum;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

int Flag(int argc, char** argv, const std::string& name, int def) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--" + name + "=", 0) == 0) return std::stoi(a.substr(name.size() + 3));
  }
  return def;
}

struct Agent {
  std::unique_ptr<base::Process> process;
  std::string socket;
  int health_port = 0;
};

}  // namespace

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
  const int nodes = Flag(argc, argv, "nodes", 10);
  const int per_node = Flag(argc, argv, "pods-per-node", 100);
  // ADDs each simulated node runs at once. 1 (10 in flight on the machine): the targets'
  // concurrency — at 10 per node, 100 ADDs share 2 cores and queueing alone (Little's law:
  // 100 in flight at ~250 ADD/s) puts the mean near 400 ms, whatever the IPAM does.
  const int workers = Flag(argc, argv, "workers-per-node", 1);
  // nodeIPBlockSize of the agents' conf.yml (-1: the built-in default; 0: node reservations off).
  const int block_size = Flag(argc, argv, "block-size", -1);
  // When pods are created: -1 = all of them before the agents start (a node whose pods were
  // scheduled while its agent restarted, or a burst that the kubelets work through); N >= 0 =
  // each pod N ms before its own ADD (the agent learns of it only just before).
  const int pod_lead_ms = Flag(argc, argv, "pod-lead-ms", -1);
  const int pods = nodes * per_node;

  // Each open watch and each idle keep-alive connection holds a server thread: 10 agents need
  // more than the default.
  auto cluster = kube::testing::TestCluster::Start({.worker_threads = 1024});
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

  // One pool of exactly `pods` IPs: 10.100.0.1 and up.
  const std::string pool_name = "bench-pool";
  {
    api::SpiderIPPool pool;
    pool.metadata.name = pool_name;
    pool.spec.subnet = "10.100.0.0/16";
    const int last = pods;  // 10.100.0.1 .. 10.100.x.y, `pods` addresses
    pool.spec.ips = {base::StrCat("10.100.0.1-10.100.", last / 256, ".", last % 256)};
    pool.spec.gateway = "10.100.255.254";
    auto created = kube::Client<api::SpiderIPPool>(c.rest()).Create(pool);
    if (!created.ok()) {
      std::cerr << created.status() << "\n";
      return 1;
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

  std::vector<std::string> agent_flags = {"--kubeconfig=" + kubeconfig, "--health-port=0",
                                           "--qps=1000", "--burst=2000"};
  if (block_size >= 0) {
    const std::string conf = tmp + "/conf.yml";
    std::ofstream(conf) << "nodeIPBlockSize: " << block_size << "\n";
    agent_flags.push_back("--config=" + conf);
  }
  std::vector<Agent> agents(nodes);
  for (int n = 0; n < nodes; ++n) {
    agents[n].socket = base::StrCat(tmp, "/agent-", n, ".sock");
    std::vector<std::string> argv = {Runfile("agent/spiderpool-agent"),
                                     base::StrCat("--node-name=node-", n),
                                     "--socket=" + agents[n].socket};
    argv.insert(argv.end(), agent_flags.begin(), agent_flags.end());
    auto p = base::Process::Start(
        {.argv = argv,
         .inherit_env = true,
         .output_file = base::StrCat(tmp, "/agent-", n, ".log")});
    if (!p.ok()) {
      std::cerr << p.status() << "\n";
      return 1;
    }
    agents[n].process = std::move(*p);
  }
  for (int n = 0; n < nodes; ++n) {
    for (int i = 0;; ++i) {
      httplib::Client client(agents[n].socket);
      client.set_address_family(AF_UNIX);
      auto res = client.Get("/v1/ipam/healthy");
      if (res && res->status == 200) break;
      if (i > 1200 || !agents[n].process->Running()) {
        std::cerr << "agent " << n << " not ready: " << ReadFile(base::StrCat(tmp, "/agent-", n, ".log")) << "\n";
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    const std::string log = ReadFile(base::StrCat(tmp, "/agent-", n, ".log"));
    const size_t at = log.find("health_port=");
    if (at != std::string::npos) agents[n].health_port = std::stoi(log.substr(at + 12));
  }

  const std::string plugin = Runfile("agent/cni/spiderpool");
  auto cni = [&](const std::string& command, const PodRef& pod) {
    const std::string conf = base::DumpJson(base::Json{
        {"cniVersion", "1.0.0"},
        {"name", "macvlan-conf"},
        {"type", "macvlan"},
        {"ipam", {{"type", "spiderpool"},
                  {"default_ipv4_ippool", base::Json::array({pool_name})},
                  {"ipam_unix_socket_path", agents[pod.node].socket}}}});
    return base::RunProcess(
        {.argv = {plugin},
         .env = {{"CNI_COMMAND", command},
                 {"CNI_CONTAINERID", "ctr-" + pod.name},
                 {"CNI_NETNS", "/var/run/netns/" + pod.name},
                 {"CNI_IFNAME", "eth0"},
                 {"CNI_PATH", "/opt/cni/bin"},
                 {"CNI_ARGS", base::StrCat("IgnoreUnknown=1;K8S_POD_NAMESPACE=", c.ns(),
                                           ";K8S_POD_NAME=", pod.name, ";K8S_POD_UID=", pod.uid)}},
         .stdin_data = conf,
         .timeout = absl::Seconds(120)});
  };

  const auto writes_before = c.loopback()->request_counts();
  std::vector<double> add_ms(pods, 0);
  std::vector<std::string> ips(pods);
  std::atomic<int> add_failures{0};
  std::string first_failure;
  std::mutex failure_mu;
  std::vector<double> started_s(pods, 0);  // when each request of the current wave started
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
            if (!r.ok() || r->exit_code != 0) {
              failures->fetch_add(1);
              std::lock_guard<std::mutex> l(failure_mu);
              if (first_failure.empty()) first_failure = r.ok() ? r->stdout_data : r.status().ToString();
              continue;
            }
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

  const double total_add_s = wave("ADD", &add_ms, &add_failures);
  const auto writes_after_add = c.loopback()->request_counts();
  std::set<std::string> unique;
  int duplicates = 0;
  for (const std::string& ip : ips) {
    if (ip.empty()) continue;
    if (!unique.insert(ip).second) ++duplicates;
  }
  // Slow ADDs (> 100 ms) by the tenth of the wave they started in: where the tail comes from.
  std::vector<int> slow_by_tenth(10, 0);
  for (int i = 0; i < pods; ++i) {
    if (add_ms[i] <= 100) continue;
    ++slow_by_tenth[std::clamp(static_cast<int>(started_s[i] / total_add_s * 10), 0, 9)];
  }
  double pool_writes = 0, conflicts = 0, from_reservations = 0;
  for (const Agent& a : agents) {
    pool_writes += Scrape(a.health_port, "spiderpool_ipam_ippool_status_writes_total");
    conflicts += Scrape(a.health_port, "spiderpool_ipam_allocation_update_ippool_conflict_counts_total");
    from_reservations += Scrape(a.health_port, "spiderpool_ipam_node_reservation_handouts_total");
  }
  // Pod records once the agents have written what they handed out from their reservations
  // (in the background, within about a second), and the reservations left at that moment.
  int64_t records_after_add = 0, reservations_after_add = 0;
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto p = kube::Client<api::SpiderIPPool>(c.rest()).Get("", pool_name);
    if (!p.ok()) break;
    records_after_add = reservations_after_add = 0;
    const api::PoolIPAllocations recs = p->AllocatedIPs().value_or(api::PoolIPAllocations{});
    for (const auto& [ip, rec] : recs) {
      ++(api::IsNodeReservation(rec) ? reservations_after_add : records_after_add);
    }
    if (records_after_add == pods - add_failures.load()) break;
    absl::SleepFor(absl::Milliseconds(100));
  }

  std::vector<double> del_ms(pods, 0);
  std::atomic<int> del_failures{0};
  const double total_del_s = wave("DEL", &del_ms, &del_failures);
  const auto writes_after_del = c.loopback()->request_counts();
  int64_t leaked = -1;
  if (auto p = kube::Client<api::SpiderIPPool>(c.rest()).Get("", pool_name); p.ok()) {
    leaked = static_cast<int64_t>(p->AllocatedIPs()->size());
  }
  double peak_rss_kb = 0, sum_rss_kb = 0;
  for (const Agent& a : agents) {
    const double kb = static_cast<double>(PeakRssKb(a.process->pid()));
    peak_rss_kb = std::max(peak_rss_kb, kb);
    sum_rss_kb += kb;
  }
  agents.clear();
  if (Flag(argc, argv, "keep-logs", 0) != 0) {
    std::cerr << "agent logs kept in " << tmp << "\n";
  } else {
    std::filesystem::remove_all(tmp);
  }

  base::Json out{
      {"nodes", nodes},
      {"pods", pods},
      {"pool_ips", pods},
      {"workers_per_node", workers},
      {"node_ip_block_size", block_size},
      {"pod_lead_ms", pod_lead_ms},
      {"total_add_s", total_add_s},
      {"p50_add_ms", Percentile(add_ms, 0.50)},
      {"p90_add_ms", Percentile(add_ms, 0.90)},
      {"p99_add_ms", Percentile(add_ms, 0.99)},
      {"slow_adds_by_tenth_of_wave", slow_by_tenth},
      {"adds_from_node_reservations", from_reservations},
      {"reservations_after_add", reservations_after_add},
      {"max_add_ms", Percentile(add_ms, 1.0)},
      {"add_failures", add_failures.load()},
      {"duplicates", duplicates},
      {"records_after_add", records_after_add},
      {"api_writes", writes_after_add.writes() - writes_before.writes()},
      {"pool_status_writes", pool_writes},
      {"conflicts", conflicts},
      {"total_del_s", total_del_s},
      {"p50_del_ms", Percentile(del_ms, 0.50)},
      {"p99_del_ms", Percentile(del_ms, 0.99)},
      {"del_failures", del_failures.load()},
      {"del_api_writes", writes_after_del.writes() - writes_after_add.writes()},
      {"leaked_records", leaked},
      {"agent_peak_rss_mb", peak_rss_kb / 1024.0},
      {"agent_mean_peak_rss_mb", sum_rss_kb / 1024.0 / nodes},
  };
  if (!first_failure.empty()) out["first_failure"] = first_failure.substr(0, 300);
  std::cout << base::DumpJson(out) << std::endl;
  return add_failures.load() == 0 && duplicates == 0 ? 0 : 1;
}
