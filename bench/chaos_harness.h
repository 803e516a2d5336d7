#pragma once
// The rig behind bench/chaos (IPAM under every failure at once, issue 18 point 1) and
// bench/soak (steady churn for a long time, point 4): the loopback API server in this
// process, the CRDs, one SpiderIPPool, N Nodes, one real `spiderpool-agent` process per node,
// M real `spiderpool-controller` processes (leader election), and pods that go through what a
// kubelet does: the Pod is created (bound to its node), the real `spiderpool` CNI plugin is
// exec'd for ADD (a failed ADD tears the sandbox down with DEL, backs off and tries a new
// sandbox), the pod lives a while, is deleted gracefully, DEL runs until it succeeds, and the
// Pod is removed with grace 0.
//
// The harness's own API calls (pods, checker reads) go in-process (LoopbackApiServer::Call /
// ListObjectsAtOnce), so random API faults hit only the product's processes.
//
// testonly: depends on kube/testing.

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/json.h"
#include "base/subprocess.h"
#include "kube/testing/test_cluster.h"

namespace spiderpool::bench {

struct RigOptions {
  int nodes = 10;
  int pool_ips = 256;   // the pool: 10.200.0.1 .. pool_ips addresses
  int controllers = 2;  // spiderpool-controller replicas (0 = none: nothing runs the GC)
  absl::Duration gc_interval = absl::Seconds(10);  // the controller's full GC scan period
  // The loopback server's connection behaviour (kube-apiserver: 90 s, 1800 s).
  absl::Duration keep_alive_idle_timeout = absl::Seconds(2);
  absl::Duration watch_min_request_timeout = absl::Seconds(20);
  double plugin_timeout_seconds = 20;  // the plugin's ipam_timeout_seconds
  bool keep_logs = false;              // keep the temporary directory (path on stderr)
};

// A simulated pod.
struct PodRef {
  std::string name;
  std::string uid;
  int node = 0;
};

// What one pod's life through the kubelet's steps cost (for the result line).
struct PodOutcome {
  bool addressed = false;
  std::string ip;          // the ADD result's IPv4 (no prefix)
  std::string container_id;  // the sandbox whose ADD worked
  int add_attempts = 0;    // ADD execs (1 = first try)
  int plugin_kills = 0;    // ADD execs killed mid-ADD
  int del_attempts = 0;    // DEL execs, teardown of failed sandboxes included
  int del_failures = 0;    // DEL execs that exited non-zero
  std::string last_error;  // of the last failed exec
};

class Rig {
 public:
  static absl::StatusOr<std::unique_ptr<Rig>> Start(RigOptions options);
  ~Rig();  // stops every process, the server; removes the temporary directory
  Rig(const Rig&) = delete;
  Rig& operator=(const Rig&) = delete;

  kube::testing::LoopbackApiServer& server() const { return *cluster_->loopback(); }
  const std::string& ns() const { return cluster_->ns(); }
  const RigOptions& options() const { return options_; }
  const std::string& pool_name() const { return pool_name_; }
  const std::string& dir() const { return dir_; }

  // ---- processes ----
  absl::Status StartAgent(int node);
  void KillAgent(int node);  // SIGKILL + reap (no-op when not running)
  // SIGTERM and wait for the exit (SIGKILL after `timeout`); false if it had to be killed.
  bool StopAgent(int node, absl::Duration timeout);
  pid_t agent_pid(int node) const;
  int agent_starts(int node) const;        // 1 = never restarted
  absl::Time agent_started_at(int node) const;
  absl::Status StartController(int replica);  // a new identity on every start
  void KillController(int replica);
  pid_t controller_pid(int replica) const;
  // The replica holding the Lease spiderpool-controller-leases now (-1: none / unknown).
  int LeaderReplica() const;
  // Processes found exited that nobody killed: each is counted, its log tail kept, and it is
  // started again. Returns how many were found this call.
  int ReapCrashes();
  int64_t crashes() const { return crashes_.load(); }
  std::vector<std::string> crash_logs() const;
  // Waits until every agent answers GET /v1/ipam/healthy.
  absl::Status WaitAgentsReady(absl::Duration timeout);

  // ---- a pod's life ----
  absl::Status CreatePod(PodRef* pod);
  // One plugin exec. `timeout` kills it (SIGKILL) when it runs longer.
  absl::StatusOr<base::ProcessResult> Cni(const std::string& command, const PodRef& pod,
                                           const std::string& container_id,
                                           absl::Duration timeout);
  // ADD as the kubelet retries it: on failure DEL of that sandbox, back-off (100 ms doubling
  // to 2 s), a new sandbox; until `deadline`. `kill_rate` of the execs are SIGKILLed after a
  // random 2-40 ms (a plugin killed mid-ADD). `rng` draws those.
  PodOutcome AddLikeKubelet(const PodRef& pod, absl::Time deadline, double kill_rate,
                            std::mt19937_64* rng, int* sandbox_seq);
  // Graceful delete, DEL until it succeeds (or `deadline`), then the delete with grace 0.
  absl::Status DeleteLikeKubelet(const PodRef& pod, const std::string& container_id,
                                 absl::Time deadline, PodOutcome* outcome);

 private:
  explicit Rig(RigOptions options) : options_(std::move(options)) {}
  struct Proc {
    mutable std::mutex mu;
    std::unique_ptr<base::Process> process;  // guarded by mu
    bool killed = false;                     // guarded by mu: we stopped it on purpose
    std::string identity;                    // controllers
    int generation = 0;
    absl::Time started_at;
    std::string log;
  };
  absl::Status StartProc(Proc& p, std::vector<std::string> argv, const std::string& log);
  void KillProc(Proc& p);
  // `sig`, then SIGKILL if still running after `timeout`; reaps, keeps the log. False if it
  // had to be killed (never for SIGKILL itself).
  bool StopProc(Proc& p, int sig, absl::Duration timeout);
  std::vector<std::string> AgentArgv(int node) const;
  std::vector<std::string> ControllerArgv(int replica, const std::string& identity) const;

  RigOptions options_;
  std::unique_ptr<kube::testing::TestCluster> cluster_;
  std::string dir_;
  std::string kubeconfig_;
  std::string pool_name_ = "chaos-pool";
  std::string agent_bin_, plugin_bin_, controller_bin_;
  std::vector<std::unique_ptr<Proc>> agents_;
  std::vector<std::unique_ptr<Proc>> controllers_;
  std::atomic<int64_t> crashes_{0};
  mutable std::mutex crash_mu_;
  std::vector<std::string> crash_logs_;  // guarded by crash_mu_
};

// ---- the chaos run (bench/chaos_main.cc, bench/chaos_test.cc) ----

struct ChaosOptions {
  uint64_t seed = 1;
  RigOptions rig = {};
  int pods = 1000;            // pods added and deleted, at least
  absl::Duration min_duration = absl::ZeroDuration();  // keep churning at least this long
  int workers_per_node = 3;   // pods in flight per node
  absl::Duration max_hold = absl::Milliseconds(300);  // a pod lives 0..max_hold after ADD
  absl::Duration pod_deadline = absl::Seconds(120);   // kubelet gives up ADD/DEL after this
  // API faults (LoopbackApiServer RandomFaults), per request.
  double conflict_rate = 0.02;
  double too_many_requests_rate = 0.01;
  double internal_error_rate = 0.01;
  double timeout_rate = 0.005;
  absl::Duration timeout_delay = absl::Milliseconds(500);
  // Mean time between events of each kind (exponential; zero = never).
  absl::Duration agent_kill_every = absl::Seconds(3);
  absl::Duration watch_drop_every = absl::Seconds(4);
  absl::Duration connection_cut_every = absl::Seconds(5);
  absl::Duration leader_kill_every = absl::Seconds(30);
  double plugin_kill_rate = 0.02;  // ADD execs killed mid-ADD
  absl::Duration check_every = absl::Milliseconds(100);
  // After the last pod: how long leftovers may take to go (the GC's interval is added).
  absl::Duration settle_margin = absl::Seconds(30);
};

// Runs the whole scenario and returns the result line; "ok" is true when every pod was
// addressed, no duplicate was seen, nothing leaked and no process crashed.
base::Json RunChaos(const ChaosOptions& options);

}  // namespace spiderpool::bench
