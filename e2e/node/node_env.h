#pragma once
// Node-level test environment (root only): network namespaces standing in for nodes and pods,
// the real CNI plugins from /usr/lib/cni, and our binaries (agent, CNI plugin, controller) as
// real processes talking to the loopback API server — or to a real cluster through
// SPIDERPOOL_TEST_KUBECONFIG.
//
// A "node" is a network namespace whose `eth0` is one end of a veth pair (the macvlan master);
// the other ends of all nodes' pairs sit in a shared "switch" bridge namespace, so pods on
// different nodes reach each other. A "pod" is a network namespace the main CNI plugin fills.
// Every name carries a random prefix; everything is removed in the destructor.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/json.h"
#include "base/subprocess.h"

namespace spiderpool::e2e {

// Why node tests cannot run here ("" = they can): not root, `ip` or the CNI plugins missing.
std::string NodeTestSkipReason();

// Runs `ip` with the arguments; error with its stderr when it fails.
absl::StatusOr<std::string> Ip(std::vector<std::string> args);

class Network {
 public:
  static absl::StatusOr<std::unique_ptr<Network>> Create();
  ~Network();

  const std::string& prefix() const { return prefix_; }
  // Adds a node namespace with eth0 plugged into the switch.
  absl::StatusOr<std::string> AddNode(const std::string& node);
  absl::StatusOr<std::string> AddPodNetns(const std::string& pod);
  absl::Status DeletePodNetns(const std::string& pod);
  std::string NodeNetns(const std::string& node) const { return prefix_ + "-n-" + node; }
  std::string PodNetns(const std::string& pod) const { return prefix_ + "-p-" + pod; }
  std::string PodNetnsPath(const std::string& pod) const { return "/var/run/netns/" + PodNetns(pod); }

  // `ip -j addr show dev IF` / `ip -j route` inside a pod, parsed.
  absl::StatusOr<std::vector<std::string>> PodAddresses(const std::string& pod, const std::string& if_name);
  absl::StatusOr<base::Json> PodRoutes(const std::string& pod);
  bool PodLinkExists(const std::string& pod, const std::string& if_name);
  // One ping from a pod (busybox ping), true when answered.
  bool Ping(const std::string& from_pod, const std::string& ip);

 private:
  explicit Network(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string prefix_;
  std::vector<std::string> netns_;
  int next_veth_ = 0;
};

// What a CNI call returned.
struct CniOutcome {
  int exit_code = -1;
  std::string stdout_data;
  std::string stderr_data;
  base::Json json;  // stdout parsed (null if it was not JSON)
  std::string Describe() const;
};

struct CniCall {
  std::string command;  // ADD | DEL | CHECK | VERSION
  std::string container_id;
  std::string netns_path;
  std::string if_name = "eth0";
  std::string cni_args;  // "K8S_POD_NAMESPACE=..;K8S_POD_NAME=..;K8S_POD_UID=..;IgnoreUnknown=1"
  std::string config;    // the network config (stdin)
  std::string plugin = "/usr/lib/cni/macvlan";
  std::string run_in_netns;  // the node namespace the plugin runs in
  std::string cni_path;      // directories with our `spiderpool` + /usr/lib/cni
};
absl::StatusOr<CniOutcome> RunCni(const CniCall& call);

// Absolute path of a runfile (relative to the workspace root).
std::string Runfile(const std::string& path);

}  // namespace spiderpool::e2e
