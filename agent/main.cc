// spiderpool-agent: the per-node daemon. Today it serves IPAM to the `spiderpool` CNI plugin
// over a unix socket (agent/ipam) and exposes /healthz /readyz /metrics (and upstream's
// /v1/runtime/{liveness,readiness,startup}).
//
//   spiderpool-agent --node-name=NODE [--kubeconfig=PATH] [--config=conf.yml]
//                    [--socket=/var/run/spidernet/spiderpool.sock] [--health-port=5710]
//
// The node name also comes from $SPIDERPOOL_NODE_NAME (the DaemonSet's downward API), the
// kubeconfig from $KUBECONFIG or the pod's service account. Stops on SIGTERM/SIGINT: the socket
// is removed first, requests in flight finish.

#include <malloc.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "agent/ipam/config.h"
#include "agent/ipam/server.h"
#include "agent/ipam/service.h"
#include "base/flags.h"
#include "base/log.h"
#include "kube/health/health.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/config.h"
#include "kube/rest/rest_client.h"

ABSL_FLAG(std::string, node_name, "", "this node's name (default: $SPIDERPOOL_NODE_NAME)");
ABSL_FLAG(std::string, kubeconfig, "", "kubeconfig file (default: $KUBECONFIG, then in-cluster)");
ABSL_FLAG(std::string, config, "", "conf.yml of ConfigMap spiderpool-conf (default: built-in defaults)");
ABSL_FLAG(std::string, socket, "", "IPAM unix socket (default: ipamUnixSocketPath of conf.yml)");
ABSL_FLAG(std::string, agent_namespace, "", "namespace spiderpool runs in (default: $SPIDERPOOL_POD_NAMESPACE or kube-system)");
ABSL_FLAG(std::string, multus_cluster_network, "", "multus cluster network NAD (ns/name) for eth0");
ABSL_FLAG(int, health_port, 5710, "health and metrics HTTP port (0 = any, -1 = off)");
ABSL_FLAG(double, qps, 50, "API client QPS");
ABSL_FLAG(int, burst, 100, "API client burst");

namespace {

using namespace spiderpool;

int Fail(std::string_view what, const absl::Status& s) {
  std::cerr << "spiderpool-agent: " << what << ": " << s << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  // The agent is small and long-lived; keep its footprint flat: one malloc arena (per-thread
  // arenas only grow RSS), and the big transient buffers (a pool's status JSON can be
  // hundreds of KB) in their own mappings, returned to the kernel when freed instead of
  // fragmenting the heap.
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_THRESHOLD, 32 * 1024);
  mallopt(M_TRIM_THRESHOLD, 256 * 1024);
  base::ParseFlags(argc, argv, "spiderpool-agent: per-node IPAM for Spiderpool");

  const std::string node = absl::GetFlag(FLAGS_node_name).empty()
                               ? base::EnvOr("SPIDERPOOL_NODE_NAME", "")
                               : absl::GetFlag(FLAGS_node_name);
  if (node.empty()) {
    std::cerr << "spiderpool-agent: --node-name (or $SPIDERPOOL_NODE_NAME) is required\n";
    return 2;
  }

  agent::ipam::IPAMConfig ipam_config;
  if (const std::string path = absl::GetFlag(FLAGS_config); !path.empty()) {
    std::ifstream in(path);
    if (!in) return Fail("reading --config", absl::NotFoundError(path + ": cannot open"));
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<agent::ipam::IPAMConfig> parsed = agent::ipam::ParseIPAMConfig(text.str());
    if (!parsed.ok()) return Fail(path, parsed.status());
    ipam_config = *std::move(parsed);
  }
  if (!absl::GetFlag(FLAGS_socket).empty()) ipam_config.ipam_unix_socket_path = absl::GetFlag(FLAGS_socket);

  absl::StatusOr<kube::Config> config = absl::GetFlag(FLAGS_kubeconfig).empty()
                                            ? kube::ConfigFromEnvOrDefault()
                                            : kube::LoadKubeconfig(absl::GetFlag(FLAGS_kubeconfig));
  if (!config.ok()) return Fail("kubeconfig", config.status());
  config->qps = absl::GetFlag(FLAGS_qps);
  config->burst = absl::GetFlag(FLAGS_burst);
  config->user_agent = "spiderpool-agent/" + node;
  absl::StatusOr<std::shared_ptr<kube::RestClient>> rest = kube::RestClient::Create(*config);
  if (!rest.ok()) return Fail("API client", rest.status());

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  agent::ipam::ServiceOptions options{
      .node_name = node,
      .agent_namespace = absl::GetFlag(FLAGS_agent_namespace).empty()
                             ? base::EnvOr("SPIDERPOOL_POD_NAMESPACE", "kube-system")
                             : absl::GetFlag(FLAGS_agent_namespace),
      .config = ipam_config,
      .registry = &kube::metrics::Registry::Default()};
  if (!absl::GetFlag(FLAGS_multus_cluster_network).empty()) {
    options.multus_cluster_network = absl::GetFlag(FLAGS_multus_cluster_network);
  }
  agent::ipam::IpamService service(*rest, options);
  service.Start();

  std::unique_ptr<kube::health::Server> health;
  if (absl::GetFlag(FLAGS_health_port) >= 0) {
    health = std::make_unique<kube::health::Server>(
        kube::health::ServerOptions{.port = absl::GetFlag(FLAGS_health_port)});
    (void)health->AddReadyzCheck("ipam-caches", [&service]() {
      return service.Ready() ? absl::OkStatus() : absl::UnavailableError("caches not synced");
    });
    (void)health->AddAlias("/v1/runtime/liveness", kube::health::Probe::kLiveness);
    (void)health->AddAlias("/v1/runtime/readiness", kube::health::Probe::kReadiness);
    (void)health->AddAlias("/v1/runtime/startup", kube::health::Probe::kReadiness);
    if (absl::Status s = health->Start(); !s.ok()) return Fail("health server", s);
  }

  // Serve the socket right away: until the caches sync, IPAM calls get 503 (CNI "try again").
  absl::StatusOr<std::unique_ptr<agent::ipam::IpamServer>> server = agent::ipam::IpamServer::Start(
      {.socket_path = ipam_config.ipam_unix_socket_path,
       .max_in_flight = static_cast<int>(ipam_config.max_pending_requests),
       .request_timeout = ipam_config.request_timeout()},
      &service);
  if (!server.ok()) return Fail("IPAM socket", server.status());
  std::cout << "socket=" << ipam_config.ipam_unix_socket_path << "\n";
  if (health) std::cout << "health_port=" << health->port() << "\n";
  std::cout.flush();
  SP_LOG(Info).Msg("spiderpool-agent started").KV("node", node)
      .KV("socket", ipam_config.ipam_unix_socket_path);

  int sig = 0;
  sigwait(&set, &sig);
  SP_LOG(Info).Msg("stopping").KV("signal", sig);
  (*server)->Stop();
  if (health) health->Stop();
  service.Stop();
  return 0;
}
