#include "bench/chaos_harness.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "agent/ipam/config.h"
#include "api/codec.h"
#include "api/core.h"
#include "api/spider.h"
#include "base/strings.h"
#include "kube/rest/client.h"

namespace spiderpool::bench {
namespace {

namespace fs = std::filesystem;
using base::Json;
using base::StrCat;

constexpr char kGroup[] = "spiderpool.spidernet.io";
constexpr char kVersion[] = "v2beta1";
constexpr char kLease[] = "spiderpool-controller-leases";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(s.size() - n);
}

std::string Runfile(const std::string& path) { return (fs::current_path() / path).string(); }

std::string PodsPath(const std::string& ns) { return StrCat("/api/v1/namespaces/", ns, "/pods"); }

// "10.200.0.5/16" -> "10.200.0.5"
std::string StripPrefix(const std::string& cidr) { return cidr.substr(0, cidr.find('/')); }

}  // namespace

// ---- Rig ----

absl::StatusOr<std::unique_ptr<Rig>> Rig::Start(RigOptions options) {
  // The rig injects faults into its own loopback server: never a real cluster.
  ::unsetenv(kube::testing::kTestKubeconfigEnv);
  std::unique_ptr<Rig> rig(new Rig(std::move(options)));
  const RigOptions& o = rig->options_;
  kube::testing::LoopbackOptions lo;
  // Each open watch and each idle keep-alive connection holds a server thread.
  lo.worker_threads = 1024;
  lo.keep_alive_idle_timeout = o.keep_alive_idle_timeout;
  lo.watch_min_request_timeout = o.watch_min_request_timeout;
  auto cluster = kube::testing::TestCluster::Start(lo);
  if (!cluster.ok()) return cluster.status();
  rig->cluster_ = *std::move(cluster);
  if (rig->cluster_->loopback() == nullptr) {
    return absl::FailedPreconditionError("the rig needs the loopback API server");
  }
  if (absl::Status s = rig->cluster_->ApplyCRDs("charts/spiderpool/crds"); !s.ok()) return s;
  char dir[] = "/tmp/sp-chaos-XXXXXX";
  if (::mkdtemp(dir) == nullptr) return absl::InternalError("mkdtemp failed");
  rig->dir_ = dir;
  rig->kubeconfig_ = rig->dir_ + "/kubeconfig";
  if (absl::Status s = rig->server().WriteKubeconfig(rig->kubeconfig_); !s.ok()) return s;
  // Copies: processes are restarted all through a run, and a concurrent build may replace
  // (unlink) the runfiles meanwhile.
  for (auto [from, to] : {std::pair{"agent/spiderpool-agent", &rig->agent_bin_},
                          std::pair{"agent/cni/spiderpool", &rig->plugin_bin_},
                          std::pair{"operator/spiderpool-controller", &rig->controller_bin_}}) {
    *to = StrCat(rig->dir_, "/", fs::path(from).filename().string());
    std::error_code ec;
    fs::copy_file(Runfile(from), *to, ec);
    if (ec) return absl::InternalError(StrCat("copying ", from, ": ", ec.message()));
  }

  {
    api::SpiderIPPool pool;
    pool.metadata.name = rig->pool_name_;
    pool.spec.subnet = "10.200.0.0/16";
    const int last = o.pool_ips;
    pool.spec.ips = {StrCat("10.200.0.1-10.200.", last / 256, ".", last % 256)};
    pool.spec.gateway = "10.200.255.254";
    auto created = kube::Client<api::SpiderIPPool>(rig->cluster_->rest()).Create(pool);
    if (!created.ok()) return created.status();
  }
  for (int n = 0; n < o.nodes; ++n) {
    api::Node node;
    node.metadata.name = StrCat("node-", n);
    auto created = kube::Client<api::Node>(rig->cluster_->rest()).Create(node);
    if (!created.ok()) return created.status();
  }
  for (int n = 0; n < o.nodes; ++n) {
    rig->agents_.push_back(std::make_unique<Proc>());
    rig->agents_.back()->log = StrCat(rig->dir_, "/agent-", n, ".log");
    if (absl::Status s = rig->StartAgent(n); !s.ok()) return s;
  }
  for (int i = 0; i < o.controllers; ++i) {
    rig->controllers_.push_back(std::make_unique<Proc>());
    rig->controllers_.back()->log = StrCat(rig->dir_, "/controller-", i, ".log");
    if (absl::Status s = rig->StartController(i); !s.ok()) return s;
  }
  if (absl::Status s = rig->WaitAgentsReady(absl::Seconds(120)); !s.ok()) return s;
  return rig;
}

Rig::~Rig() {
  for (auto& p : agents_) KillProc(*p);
  for (auto& p : controllers_) KillProc(*p);
  if (dir_.empty()) return;
  if (options_.keep_logs) {
    std::cerr << "chaos rig logs kept in " << dir_ << "\n";
  } else {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

absl::Status Rig::StartProc(Proc& p, std::vector<std::string> argv, const std::string& log) {
  std::lock_guard<std::mutex> l(p.mu);
  // Appends across restarts: a restarted process's log follows the killed one's.
  std::ofstream(log, std::ios::app) << "---- start " << p.generation << "\n";
  auto started = base::Process::Start(
      {.argv = std::move(argv), .inherit_env = true, .output_file = log + ".cur"});
  if (!started.ok()) return started.status();
  p.process = *std::move(started);
  p.killed = false;
  p.started_at = absl::Now();
  ++p.generation;
  return absl::OkStatus();
}

void Rig::KillProc(Proc& p) { StopProc(p, SIGKILL, absl::ZeroDuration()); }

bool Rig::StopProc(Proc& p, int sig, absl::Duration timeout) {
  std::lock_guard<std::mutex> l(p.mu);
  if (p.process == nullptr) return true;
  p.killed = true;
  p.process->Signal(sig);
  const absl::Time deadline = absl::Now() + timeout;
  while (p.process->Running() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
  const bool stopped = sig == SIGKILL || !p.process->Running();
  if (!stopped) p.process->Signal(SIGKILL);
  p.process->Wait();
  p.process.reset();
  // Keep what it wrote (output_file is truncated by the next start).
  std::ofstream(p.log, std::ios::app) << ReadFile(p.log + ".cur");
  return stopped;
}

std::vector<std::string> Rig::AgentArgv(int node) const {
  return {agent_bin_,
          StrCat("--node-name=node-", node),
          StrCat("--socket=", dir_, "/agent-", node, ".sock"),
          "--kubeconfig=" + kubeconfig_,
          "--agent-namespace=" + ns(),
          "--health-port=0",
          "--qps=1000",
          "--burst=2000"};
}

std::vector<std::string> Rig::ControllerArgv(int replica, const std::string& identity) const {
  return {controller_bin_,
          "--kubeconfig=" + kubeconfig_,
          "--namespace=" + ns(),
          "--identity=" + identity,
          "--health-port=0",
          "--webhook-port=-1",
          StrCat("--gc-interval=", absl::FormatDuration(options_.gc_interval)),
          "--qps=1000",
          "--burst=2000"};
}

absl::Status Rig::StartAgent(int node) {
  Proc& p = *agents_[node];
  return StartProc(p, AgentArgv(node), p.log);
}

void Rig::KillAgent(int node) { KillProc(*agents_[node]); }

bool Rig::StopAgent(int node, absl::Duration timeout) {
  return StopProc(*agents_[node], SIGTERM, timeout);
}

pid_t Rig::agent_pid(int node) const {
  std::lock_guard<std::mutex> l(agents_[node]->mu);
  return agents_[node]->process ? agents_[node]->process->pid() : -1;
}

int Rig::agent_starts(int node) const {
  std::lock_guard<std::mutex> l(agents_[node]->mu);
  return agents_[node]->generation;
}

absl::Time Rig::agent_started_at(int node) const {
  std::lock_guard<std::mutex> l(agents_[node]->mu);
  return agents_[node]->started_at;
}

absl::Status Rig::StartController(int replica) {
  Proc& p = *controllers_[replica];
  {
    std::lock_guard<std::mutex> l(p.mu);
    p.identity = StrCat("controller-", replica, "-", p.generation);
  }
  return StartProc(p, ControllerArgv(replica, p.identity), p.log);
}

void Rig::KillController(int replica) { KillProc(*controllers_[replica]); }

pid_t Rig::controller_pid(int replica) const {
  std::lock_guard<std::mutex> l(controllers_[replica]->mu);
  return controllers_[replica]->process ? controllers_[replica]->process->pid() : -1;
}

int Rig::LeaderReplica() const {
  auto r = server().Call("GET", StrCat("/apis/coordination.k8s.io/v1/namespaces/", ns(),
                                       "/leases/", kLease));
  if (r.code != 200) return -1;
  const std::string holder = r.body["spec"].value("holderIdentity", "");
  for (size_t i = 0; i < controllers_.size(); ++i) {
    std::lock_guard<std::mutex> l(controllers_[i]->mu);
    if (controllers_[i]->process && controllers_[i]->identity == holder) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

int Rig::ReapCrashes() {
  int found = 0;
  auto check = [&](Proc& p, const std::string& what, int index) {
    std::string tail;
    {
      std::lock_guard<std::mutex> l(p.mu);
      if (p.process == nullptr || p.killed || p.process->Running()) return;
      const int code = p.process->Wait();
      p.process.reset();
      const std::string out = ReadFile(p.log + ".cur");
      std::ofstream(p.log, std::ios::app) << out;
      tail = StrCat(what, "-", index, " exited (", code, "): ", Tail(out, 1500));
    }
    ++found;
    crashes_.fetch_add(1);
    {
      std::lock_guard<std::mutex> l(crash_mu_);
      crash_logs_.push_back(tail);
    }
    std::cerr << "chaos: " << tail << "\n";
    if (what == "agent") {
      (void)StartAgent(index);
    } else {
      (void)StartController(index);
    }
  };
  for (size_t i = 0; i < agents_.size(); ++i) check(*agents_[i], "agent", static_cast<int>(i));
  for (size_t i = 0; i < controllers_.size(); ++i) {
    check(*controllers_[i], "controller", static_cast<int>(i));
  }
  return found;
}

std::vector<std::string> Rig::crash_logs() const {
  std::lock_guard<std::mutex> l(crash_mu_);
  return crash_logs_;
}

absl::Status Rig::WaitAgentsReady(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (int n = 0; n < options_.nodes; ++n) {
    while (true) {
      httplib::Client client(StrCat(dir_, "/agent-", n, ".sock"));
      client.set_address_family(AF_UNIX);
      auto res = client.Get("/v1/ipam/healthy");
      if (res && res->status == 200) break;
      if (absl::Now() > deadline) {
        return absl::DeadlineExceededError(
            StrCat("agent ", n, " not ready: ", Tail(ReadFile(agents_[n]->log + ".cur"), 2000)));
      }
      absl::SleepFor(absl::Milliseconds(25));
    }
  }
  return absl::OkStatus();
}

absl::Status Rig::CreatePod(PodRef* pod) {
  Json obj = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", pod->name}, {"namespace", ns()}}},
              {"spec",
               {{"nodeName", StrCat("node-", pod->node)},
                {"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
  auto r = server().Call("POST", PodsPath(ns()), obj);
  if (r.code != 201) {
    return absl::InternalError(StrCat("create pod ", pod->name, ": ", base::DumpJson(r.body)));
  }
  pod->uid = r.body["metadata"].value("uid", "");
  return absl::OkStatus();
}

absl::StatusOr<base::ProcessResult> Rig::Cni(const std::string& command, const PodRef& pod,
                                              const std::string& container_id,
                                              absl::Duration timeout) {
  const std::string conf = base::DumpJson(Json{
      {"cniVersion", "1.0.0"},
      {"name", "chaos-net"},
      {"type", "macvlan"},
      {"ipam",
       {{"type", "spiderpool"},
        {"log_file_path", StrCat(dir_, "/plugin.log")},
        {"log_level", "info"},
        {"ipam_timeout_seconds", options_.plugin_timeout_seconds},
        {"default_ipv4_ippool", Json::array({pool_name_})},
        {"ipam_unix_socket_path", StrCat(dir_, "/agent-", pod.node, ".sock")}}}});
  return base::RunProcess(
      {.argv = {plugin_bin_},
       .env = {{"CNI_COMMAND", command},
               {"CNI_CONTAINERID", container_id},
               {"CNI_NETNS", "/var/run/netns/" + container_id},
               {"CNI_IFNAME", "eth0"},
               {"CNI_PATH", "/opt/cni/bin"},
               {"CNI_ARGS", StrCat("IgnoreUnknown=1;K8S_POD_NAMESPACE=", ns(),
                                   ";K8S_POD_NAME=", pod.name, ";K8S_POD_UID=", pod.uid,
                                   ";K8S_POD_INFRA_CONTAINER_ID=", container_id)}},
       .stdin_data = conf,
       .timeout = timeout});
}

namespace {
std::string ExecError(const absl::StatusOr<base::ProcessResult>& r) {
  if (!r.ok()) return r.status().ToString();
  if (r->timed_out) return "killed";
  return Tail(StrCat("exit ", r->exit_code, ": ", r->stdout_data, r->stderr_data), 400);
}
}  // namespace

PodOutcome Rig::AddLikeKubelet(const PodRef& pod, absl::Time deadline, double kill_rate,
                               std::mt19937_64* rng, int* sandbox_seq) {
  PodOutcome out;
  const absl::Duration exec_timeout = absl::Seconds(options_.plugin_timeout_seconds + 10);
  absl::Duration backoff = absl::Milliseconds(100);
  while (absl::Now() < deadline) {
    const std::string cid = StrCat("ctr-", pod.name, "-", (*sandbox_seq)++);
    const bool kill = std::uniform_real_distribution<double>(0, 1)(*rng) < kill_rate;
    const absl::Duration timeout =
        kill ? absl::Milliseconds(std::uniform_int_distribution<int>(2, 40)(*rng)) : exec_timeout;
    auto r = Cni("ADD", pod, cid, timeout);
    ++out.add_attempts;
    if (r.ok() && r->timed_out && kill) ++out.plugin_kills;
    if (r.ok() && !r->timed_out && r->exit_code == 0) {
      auto j = base::ParseJson(r->stdout_data);
      if (j.ok() && j->contains("ips") && !(*j)["ips"].empty()) {
        out.ip = StripPrefix((*j)["ips"][0].value("address", ""));
        out.addressed = true;
        out.container_id = cid;  // the sandbox DeleteLikeKubelet tears down
        out.last_error.clear();
        return out;
      }
    }
    out.last_error = ExecError(r);
    // The kubelet tears the failed sandbox down (DEL until it works), backs off, retries.
    PodOutcome teardown;
    while (absl::Now() < deadline) {
      auto d = Cni("DEL", pod, cid, exec_timeout);
      ++out.del_attempts;
      if (d.ok() && !d->timed_out && d->exit_code == 0) break;
      ++out.del_failures;
      absl::SleepFor(absl::Milliseconds(200));
    }
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Seconds(2));
  }
  return out;
}

absl::Status Rig::DeleteLikeKubelet(const PodRef& pod, const std::string& container_id,
                                    absl::Time deadline, PodOutcome* outcome) {
  const std::string path = StrCat(PodsPath(ns()), "/", pod.name);
  auto graceful = server().Call("DELETE", path);
  if (graceful.code != 200 && graceful.code != 202) {
    return absl::InternalError(StrCat("delete pod ", pod.name, ": ", base::DumpJson(graceful.body)));
  }
  const absl::Duration exec_timeout = absl::Seconds(options_.plugin_timeout_seconds + 10);
  bool done = false;
  while (!done && absl::Now() < deadline) {
    auto d = Cni("DEL", pod, container_id, exec_timeout);
    ++outcome->del_attempts;
    if (d.ok() && !d->timed_out && d->exit_code == 0) {
      done = true;
    } else {
      ++outcome->del_failures;
      outcome->last_error = ExecError(d);
      absl::SleepFor(absl::Milliseconds(200));
    }
  }
  auto final_delete = server().Call("DELETE", path + "?gracePeriodSeconds=0");
  if (final_delete.code != 200 && final_delete.code != 202 && final_delete.code != 404) {
    return absl::InternalError(
        StrCat("final delete of pod ", pod.name, ": ", base::DumpJson(final_delete.body)));
  }
  if (!done) return absl::DeadlineExceededError(StrCat("DEL of ", pod.name, " never succeeded"));
  return absl::OkStatus();
}

// ---- RunChaos ----

namespace {

struct Live {
  std::string uid;
  std::string ip;
};

// What one consistent sample of pools + endpoints shows.
struct Sample {
  // ip -> record of the chaos pool
  api::PoolIPAllocations records;
  // ip -> pod uids whose endpoint lists it
  std::map<std::string, std::set<std::string>> endpoint_ips;
  int64_t endpoints = 0;
  bool ok = false;
  std::string error;
};

Sample TakeSample(Rig& rig) {
  Sample s;
  auto lists = rig.server().ListObjectsAtOnce(
      {{kGroup, kVersion, "spiderippools", ""}, {kGroup, kVersion, "spiderendpoints", rig.ns()}});
  for (const Json& p : lists[0]) {
    if (p["metadata"].value("name", "") != rig.pool_name()) continue;
    auto pool = api::Decode<api::SpiderIPPool>(p);
    if (!pool.ok()) {
      s.error = pool.status().ToString();
      return s;
    }
    auto recs = pool->AllocatedIPs();
    if (!recs.ok()) {
      s.error = recs.status().ToString();
      return s;
    }
    s.records = *std::move(recs);
  }
  for (const Json& e : lists[1]) {
    auto ep = api::Decode<api::SpiderEndpoint>(e);
    if (!ep.ok()) {
      s.error = ep.status().ToString();
      return s;
    }
    ++s.endpoints;
    if (!ep->status) continue;
    for (const api::IPAllocationDetail& d : ep->status->current.ips) {
      if (d.ipv4) s.endpoint_ips[StripPrefix(*d.ipv4)].insert(ep->status->current.uid);
    }
  }
  s.ok = true;
  return s;
}

double Exp(std::mt19937_64& rng, absl::Duration mean) {
  return std::exponential_distribution<double>(1.0 / absl::ToDoubleSeconds(mean))(rng);
}

}  // namespace

Json RunChaos(const ChaosOptions& o) {
  const absl::Time start = absl::Now();
  auto started = Rig::Start(o.rig);
  if (!started.ok()) {
    return Json{{"ok", false}, {"error", started.status().ToString()}};
  }
  Rig& rig = **started;
  const int nodes = o.rig.nodes;
  const double setup_s = absl::ToDoubleSeconds(absl::Now() - start);

  rig.server().SetRandomFaults({.seed = o.seed,
                                .conflict_rate = o.conflict_rate,
                                .too_many_requests_rate = o.too_many_requests_rate,
                                .retry_after_seconds = 1,
                                .internal_error_rate = o.internal_error_rate,
                                .timeout_rate = o.timeout_rate,
                                .timeout_delay = o.timeout_delay});

  std::mutex mu;
  std::map<std::string, Live> live;  // pod name -> what its ADD returned; guarded by mu
  std::vector<std::string> problems;  // guarded by mu (first few kept)
  auto problem = [&](std::string what) {
    std::lock_guard<std::mutex> l(mu);
    std::cerr << "chaos: " << what << "\n";
    if (problems.size() < 10) problems.push_back(std::move(what));
  };
  std::atomic<int64_t> duplicates_at_add{0}, duplicates_sampled{0}, live_ip_missing{0};
  std::atomic<int64_t> samples{0}, sample_errors{0}, stale_endpoints{0};
  std::atomic<int64_t> addressed{0}, unaddressed{0}, add_execs{0}, pods_retried{0},
      plugin_kills{0}, del_execs{0}, del_failures{0}, del_never_succeeded{0}, pods_done{0};
  std::atomic<int> next_pod{0};
  const absl::Time run_start = absl::Now();
  std::vector<double> add_ms;
  std::mutex add_ms_mu;

  // ---- workers: the kubelets ----
  auto worker = [&](int node, int w) {
    std::mt19937_64 rng(o.seed * 1000003 + node * 101 + w);
    int sandbox_seq = 0;
    while (true) {
      const int i = next_pod.fetch_add(1);
      if (i >= o.pods && absl::Now() - run_start >= o.min_duration) break;
      PodRef pod{StrCat("p", i), "", node};
      if (absl::Status s = rig.CreatePod(&pod); !s.ok()) {
        problem(s.ToString());
        unaddressed.fetch_add(1);
        continue;
      }
      const absl::Time t0 = absl::Now();
      PodOutcome out =
          rig.AddLikeKubelet(pod, t0 + o.pod_deadline, o.plugin_kill_rate, &rng, &sandbox_seq);
      add_execs.fetch_add(out.add_attempts);
      plugin_kills.fetch_add(out.plugin_kills);
      if (out.add_attempts > 1) pods_retried.fetch_add(1);
      std::string cid;
      if (out.addressed) {
        cid = out.container_id;
        addressed.fetch_add(1);
        {
          std::lock_guard<std::mutex> l(add_ms_mu);
          add_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
        }
        std::string holder;
        {
          std::lock_guard<std::mutex> l(mu);
          for (const auto& [name, h] : live) {
            if (h.ip == out.ip) holder = name;
          }
          live[pod.name] = {pod.uid, out.ip};
        }
        if (!holder.empty()) {
          duplicates_at_add.fetch_add(1);
          problem(StrCat("duplicate at ADD: ", out.ip, " to ", pod.name, " while ", holder,
                         " holds it"));
        }
        absl::SleepFor(absl::Milliseconds(std::uniform_int_distribution<int64_t>(
            0, absl::ToInt64Milliseconds(o.max_hold))(rng)));
        std::lock_guard<std::mutex> l(mu);
        live.erase(pod.name);  // from here on the IP may be released
      } else {
        unaddressed.fetch_add(1);
        problem(StrCat("pod ", pod.name, " never addressed after ", out.add_attempts,
                       " ADDs: ", out.last_error));
        cid = StrCat("ctr-", pod.name, "-never");
      }
      PodOutcome del;
      absl::Status s = rig.DeleteLikeKubelet(pod, cid, absl::Now() + o.pod_deadline, &del);
      del_execs.fetch_add(out.del_attempts + del.del_attempts);
      del_failures.fetch_add(out.del_failures + del.del_failures);
      if (!s.ok()) {
        if (absl::IsDeadlineExceeded(s)) del_never_succeeded.fetch_add(1);
        problem(StrCat(s.ToString(), " ", del.last_error));
      }
      pods_done.fetch_add(1);
    }
  };
  std::vector<std::thread> workers;
  for (int n = 0; n < nodes; ++n) {
    for (int w = 0; w < o.workers_per_node; ++w) workers.emplace_back(worker, n, w);
  }

  // ---- checker ----
  std::atomic<bool> stop_checker{false};
  std::thread checker([&] {
    while (!stop_checker.load()) {
      std::map<std::string, Live> before, after;
      {
        std::lock_guard<std::mutex> l(mu);
        before = live;
      }
      Sample s = TakeSample(rig);
      {
        std::lock_guard<std::mutex> l(mu);
        after = live;
      }
      if (!s.ok) {
        sample_errors.fetch_add(1);
        problem("sample: " + s.error);
      } else {
        samples.fetch_add(1);
        // Pods that held their IP from before the sample to after it (ADD returned, DEL not
        // begun): at the sample, the pool must give that IP to them (or to their node's
        // reservation), and no other such pod's endpoint may name it. An endpoint of a pod
        // being torn down or gone may still name it (DEL frees the records first, then
        // deletes the endpoint; the GC removes what a failed DEL left): counted, not a fault.
        std::map<std::string, std::string> stable_uid_ip;  // uid -> ip
        for (const auto& [name, h] : before) {
          auto a = after.find(name);
          if (a != after.end() && a->second.uid == h.uid) stable_uid_ip[h.uid] = h.ip;
        }
        for (const auto& [name, h] : before) {
          auto a = after.find(name);
          if (a == after.end() || a->second.uid != h.uid) continue;
          auto rec = s.records.find(h.ip);
          if (rec == s.records.end()) {
            live_ip_missing.fetch_add(1);
            problem(StrCat("sample: ", h.ip, " of live pod ", name, " is free in the pool"));
          } else if (api::IsNodeReservation(rec->second)) {
            // Handed out from the node's block, not yet written as the pod's record.
          } else if (rec->second.pod_uid != h.uid) {
            duplicates_sampled.fetch_add(1);
            problem(StrCat("sample: ", h.ip, " of live pod ", name, " recorded for ",
                           rec->second.pod, " (", rec->second.pod_uid, ")"));
          }
          auto e = s.endpoint_ips.find(h.ip);
          if (e != s.endpoint_ips.end()) {
            for (const std::string& uid : e->second) {
              if (uid == h.uid) continue;
              if (stable_uid_ip.count(uid)) {
                duplicates_sampled.fetch_add(1);
                problem(StrCat("sample: ", h.ip, " of live pod ", name,
                               " in the endpoint of live pod ", uid));
              } else {
                stale_endpoints.fetch_add(1);
              }
            }
          }
        }
      }
      absl::SleepFor(o.check_every);
    }
  });

  // ---- chaos: agent kills, watch drops, connection cuts, leader kills ----
  std::atomic<bool> stop_chaos{false};
  std::atomic<int64_t> agent_kills{0}, leader_kills{0}, watch_drops{0}, connection_cuts{0},
      restarts{0};
  std::thread chaos([&] {
    std::mt19937_64 rng(o.seed);
    struct Restart {
      absl::Time at;
      bool agent;
      int index;
    };
    std::vector<Restart> pending;
    auto next = [&](absl::Duration mean) {
      return mean <= absl::ZeroDuration() ? absl::InfiniteFuture()
                                          : absl::Now() + absl::Seconds(Exp(rng, mean));
    };
    absl::Time next_agent_kill = next(o.agent_kill_every);
    absl::Time next_watch_drop = next(o.watch_drop_every);
    absl::Time next_cut = next(o.connection_cut_every);
    absl::Time next_leader_kill = next(o.leader_kill_every);
    std::set<int> down_agents, down_controllers;
    auto restart_after = [&](bool agent, int index) {
      pending.push_back(
          {absl::Now() + absl::Milliseconds(std::uniform_int_distribution<int>(0, 2000)(rng)),
           agent, index});
    };
    while (true) {
      const bool stopping = stop_chaos.load();
      const absl::Time now = absl::Now();
      for (auto it = pending.begin(); it != pending.end();) {
        if (it->at > now && !stopping) {
          ++it;
          continue;
        }
        absl::Status s = it->agent ? rig.StartAgent(it->index) : rig.StartController(it->index);
        if (!s.ok()) {
          problem(StrCat("restart: ", s.ToString()));
          it->at = now + absl::Seconds(1);  // again, unless stopping
          if (!stopping) {
            ++it;
            continue;
          }
        }
        (it->agent ? down_agents : down_controllers).erase(it->index);
        restarts.fetch_add(1);
        it = pending.erase(it);
      }
      if (stopping) break;
      rig.ReapCrashes();
      if (now >= next_agent_kill) {
        const int n = std::uniform_int_distribution<int>(0, nodes - 1)(rng);
        if (!down_agents.count(n)) {
          rig.KillAgent(n);
          down_agents.insert(n);
          agent_kills.fetch_add(1);
          restart_after(true, n);
        }
        next_agent_kill = next(o.agent_kill_every);
      }
      if (now >= next_watch_drop) {
        rig.server().CloseWatches();
        watch_drops.fetch_add(1);
        next_watch_drop = next(o.watch_drop_every);
      }
      if (now >= next_cut) {
        rig.server().CutConnections();
        connection_cuts.fetch_add(1);
        next_cut = next(o.connection_cut_every);
      }
      if (now >= next_leader_kill) {
        const int leader = rig.LeaderReplica();
        if (leader >= 0 && !down_controllers.count(leader)) {
          rig.KillController(leader);
          down_controllers.insert(leader);
          leader_kills.fetch_add(1);
          restart_after(false, leader);
          next_leader_kill = next(o.leader_kill_every);
        } else {
          next_leader_kill = absl::Now() + absl::Seconds(1);  // no leader yet: look again
        }
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
  });

  for (auto& t : workers) t.join();
  const double churn_s = absl::ToDoubleSeconds(absl::Now() - run_start);
  stop_chaos = true;
  chaos.join();  // restarts whatever it had killed
  rig.server().SetRandomFaults({});
  const kube::testing::FaultCounts api_faults = rig.server().fault_counts();

  // ---- settle: nothing may be left for the deleted pods once the GC has had its interval ----
  // The running agents may keep their standing blocks (agent/ipam/blocks.h point 8, the
  // default nodeIPBlockStanding): at most that many reservations per node. After the settle
  // every agent is stopped, which must give back every reservation it holds.
  const int64_t kStanding = agent::ipam::IPAMConfig{}.node_ip_block_standing;
  const absl::Time settle_start = absl::Now();
  const absl::Time settle_deadline = settle_start + o.rig.gc_interval + o.settle_margin;
  int64_t leaked_records = 0, leaked_reservations = 0, leaked_endpoints = 0;
  while (true) {
    rig.ReapCrashes();
    Sample s = TakeSample(rig);
    if (s.ok) {
      leaked_records = leaked_reservations = 0;
      std::map<std::string, int64_t> reserved_by_node;
      for (const auto& [ip, rec] : s.records) {
        if (api::IsNodeReservation(rec)) {
          ++reserved_by_node[rec.node.value_or("")];
        } else {
          ++leaked_records;
        }
      }
      for (const auto& [node, n] : reserved_by_node) {
        leaked_reservations += std::max<int64_t>(0, n - kStanding);
      }
      leaked_endpoints = s.endpoints;
      if (leaked_records + leaked_reservations + leaked_endpoints == 0) break;
    }
    if (absl::Now() > settle_deadline) break;
    absl::SleepFor(absl::Milliseconds(250));
  }
  const double settle_s = absl::ToDoubleSeconds(absl::Now() - settle_start);
  stop_checker = true;
  checker.join();
  // Stopped one at a time (no contention): each gives back what it holds.
  int64_t left_after_stop = 0;
  for (int n = 0; n < nodes; ++n) {
    if (!rig.StopAgent(n, absl::Seconds(20))) problem(StrCat("agent ", n, " ignored SIGTERM"));
  }
  if (Sample s = TakeSample(rig); s.ok) {
    for (const auto& [ip, rec] : s.records) left_after_stop += api::IsNodeReservation(rec);
  } else {
    problem(StrCat("sample after stopping the agents: ", s.error));
  }
  if (left_after_stop > 0) {
    problem(StrCat(left_after_stop, " node reservations left after every agent stopped"));
  }
  if (leaked_records + leaked_reservations + leaked_endpoints > 0) {
    Sample s = TakeSample(rig);
    std::string what;
    for (const auto& [ip, rec] : s.records) {
      if (what.size() > 800) break;
      what += StrCat(ip, "=", rec.pod.empty() ? "(reservation)" : rec.pod, "@",
                     rec.node.value_or(""));
      const std::string node = rec.node.value_or("");
      if (api::IsNodeReservation(rec) && node.rfind("node-", 0) == 0) {
        const int n = std::stoi(node.substr(5));
        what += StrCat("[agent starts ", rig.agent_starts(n), ", last ",
                       absl::ToDoubleSeconds(absl::Now() - rig.agent_started_at(n)), " s ago]");
      }
      what += " ";
    }
    problem(StrCat("leaked after ", settle_s, " s: ", what));
  }

  std::sort(add_ms.begin(), add_ms.end());
  auto pct = [&](double p) {
    return add_ms.empty() ? 0.0 : add_ms[std::min(add_ms.size() - 1,
                                                  static_cast<size_t>(p * (add_ms.size() - 1)))];
  };
  const int64_t crashes = rig.crashes();
  const bool ok = unaddressed.load() == 0 && duplicates_at_add.load() == 0 &&
                  duplicates_sampled.load() == 0 && live_ip_missing.load() == 0 &&
                  leaked_records == 0 && leaked_reservations == 0 && leaked_endpoints == 0 &&
                  left_after_stop == 0 &&
                  crashes == 0 && del_never_succeeded.load() == 0 && sample_errors.load() == 0;
  Json out{
      {"seed", o.seed},
      {"nodes", nodes},
      {"pods", pods_done.load()},
      {"workers_per_node", o.workers_per_node},
      {"pool_ips", o.rig.pool_ips},
      {"controllers", o.rig.controllers},
      {"gc_interval_s", absl::ToDoubleSeconds(o.rig.gc_interval)},
      {"setup_s", setup_s},
      {"churn_s", churn_s},
      {"addressed", addressed.load()},
      {"unaddressed", unaddressed.load()},
      {"add_ms", {{"p50", pct(0.5)}, {"p99", pct(0.99)}, {"max", pct(1.0)}}},
      {"add_execs", add_execs.load()},
      {"pods_retried", pods_retried.load()},
      {"del_execs", del_execs.load()},
      {"del_failures", del_failures.load()},
      {"del_never_succeeded", del_never_succeeded.load()},
      {"samples", samples.load()},
      {"duplicates_at_add", duplicates_at_add.load()},
      {"duplicates_sampled", duplicates_sampled.load()},
      {"live_ip_free_in_pool", live_ip_missing.load()},
      {"stale_endpoint_sightings", stale_endpoints.load()},
      {"leaked", {{"records", leaked_records},
                  {"reservations", leaked_reservations},
                  {"reservations_after_agents_stopped", left_after_stop},
                  {"endpoints", leaked_endpoints},
                  {"settle_s", settle_s}}},
      {"faults",
       {{"agent_kills", agent_kills.load()},
        {"leader_kills", leader_kills.load()},
        {"process_restarts", restarts.load()},
        {"plugin_kills_mid_add", plugin_kills.load()},
        {"watch_drops", api_faults.watch_closes},
        {"watch_streams_closed", api_faults.watches_closed},
        {"connection_cuts", api_faults.connection_cuts},
        {"connections_cut", api_faults.connections_cut},
        {"api_409", api_faults.conflicts},
        {"api_429", api_faults.too_many_requests},
        {"api_500", api_faults.internal_errors},
        {"api_timeouts", api_faults.timeouts}}},
      {"crashes", crashes},
      {"ok", ok},
  };
  {
    std::lock_guard<std::mutex> l(mu);
    if (!problems.empty()) out["problems"] = problems;
  }
  if (crashes > 0) out["crash_logs"] = rig.crash_logs();
  return out;
}

}  // namespace spiderpool::bench
