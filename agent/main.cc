// spiderpool-agent: the per-node daemon.
//   - IPAM for the `spiderpool` CNI plugin over a unix socket (agent/ipam), and on the same
//     socket the SpiderCoordinator settings for the `coordinator` plugin
//     (GET /v1/coordinator/config, agent/ipam/coordinator.h);
//   - with --dra-enabled: NIC discovery -> this node's ResourceSlices, and the kubelet DRA
//     plugin (registration + DRA service over gRPC unix sockets) preparing claims into CDI
//     spec files (agent/dra, dra/);
//   - with --device-plugin-enabled: spidernet.io/<nic>-nic device-plugin resources instead;
//   - /healthz /readyz /metrics (and upstream's /v1/runtime/{liveness,readiness,startup}).
//
//   spiderpool-agent --node-name=NODE [--kubeconfig=PATH] [--config=conf.yml]
//                    [--socket=/var/run/spidernet/spiderpool.sock] [--health-port=5710]
//                    [--dra-enabled] [--device-plugin-enabled] [--nic-include=eth*] ...
//
// The node name also comes from $SPIDERPOOL_NODE_NAME (the DaemonSet's downward API), the
// kubeconfig from $KUBECONFIG or the pod's service account, the pod UID (seamless-upgrade
// socket names of the DRA plugin) from $POD_UID. Stops on SIGTERM/SIGINT: the DRA plugin's
// sockets go first, then the IPAM socket; requests in flight finish. /readyz is ready once the
// IPAM caches have synced; until then IPAM calls get 503 (CNI "try again"). A start-up failure
// exits 1 with its error, stopping what had started.
//
// Two binaries from this file (agent/BUILD.bazel): `spiderpool-agent` has no DRA code, so an
// IPAM-only agent never maps gRPC, protobuf or libnl (~6 MB of resident pages per node); with
// --dra-enabled or --device-plugin-enabled it execs `spiderpool-agent-dra` (this file linked
// with agent/dra/compose.cc instead of compose_ipam_only.cc) from its own directory: same
// pid, same arguments, same flags.
//
// Composition only: one set of informers (agent/ipam/caches.h), and every part a runnable of
// an ordered kube::Manager, started in this order and stopped in the reverse one:
//   informers -> IPAM service (pool writer threads) -> IPAM socket -> [DRA: NIC discovery ->
//   DRA network data -> DRA kubelet plugin] -> "started" (prints socket= and health_port=).
// The Manager's probe server serves /healthz /readyz /metrics.

#include <malloc.h>

#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "agent/dra/compose.h"
#include "agent/ipam/caches.h"
#include "agent/ipam/config.h"
#include "agent/ipam/coordinator.h"
#include "agent/ipam/server.h"
#include "agent/ipam/service.h"
#include "base/flags.h"
#include "base/log.h"
#include "base/sigpipe.h"
#include "base/status.h"
#include "kube/controller/manager.h"
#include "kube/events/recorder.h"
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
// The DRA and device-plugin flags: agent/dra/flags.h.

namespace {

using namespace spiderpool;

int Fail(std::string_view what, const absl::Status& s) {
  std::cerr << "spiderpool-agent: " << what << ": " << s << "\n";
  return 1;
}

absl::StatusOr<agent::ipam::IPAMConfig> ReadIPAMConfig() {
  agent::ipam::IPAMConfig ipam_config;
  if (const std::string path = absl::GetFlag(FLAGS_config); !path.empty()) {
    std::ifstream in(path);
    if (!in) return absl::NotFoundError("reading --config: " + path + ": cannot open");
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<agent::ipam::IPAMConfig> parsed = agent::ipam::ParseIPAMConfig(text.str());
    if (!parsed.ok()) return base::Annotate(parsed.status(), path);
    ipam_config = *std::move(parsed);
  }
  if (!absl::GetFlag(FLAGS_socket).empty()) ipam_config.ipam_unix_socket_path = absl::GetFlag(FLAGS_socket);
  return ipam_config;
}

}  // namespace

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
  // The agent is small and long-lived; keep its footprint flat: one malloc arena (per-thread
  // arenas only grow RSS), and the big transient buffers (a pool's status JSON can be
  // hundreds of KB) in their own mappings, returned to the kernel when freed instead of
  // fragmenting the heap. (bench/ipam_e2e peak without these three: 44 MB instead of 21.)
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_THRESHOLD, 32 * 1024);
  mallopt(M_TRIM_THRESHOLD, 256 * 1024);
  base::ParseFlags(argc, argv, "spiderpool-agent: per-node IPAM for Spiderpool");
  if (absl::Status s = base::SetLogLevelFromEnv("SPIDERPOOL_LOG_LEVEL"); !s.ok()) {
    return Fail("log level", s);
  }
  if (absl::Status s = agent::dra::ExecDraAgentIfAsked(argv); !s.ok()) return Fail("exec", s);

  const std::string node = absl::GetFlag(FLAGS_node_name).empty()
                               ? base::EnvOr("SPIDERPOOL_NODE_NAME", "")
                               : absl::GetFlag(FLAGS_node_name);
  if (node.empty()) {
    std::cerr << "spiderpool-agent: --node-name (or $SPIDERPOOL_NODE_NAME) is required\n";
    return 2;
  }
  absl::StatusOr<agent::ipam::IPAMConfig> ipam_config = ReadIPAMConfig();
  if (!ipam_config.ok()) return Fail("config", ipam_config.status());

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

  kube::metrics::Registry& registry = kube::metrics::Registry::Default();
  // Warning Events on the pods whose IPAM ADD or DRA prepare failed; the same (pod, reason) is
  // written at most every 30 s (runtimes retry a failed sandbox every few seconds). Declared
  // before its users: it outlives them, and flushes what is queued when it goes.
  kube::EventRecorder recorder(*rest, {.component = "spiderpool-agent",
                                       .host = node,
                                       .min_interval = absl::Seconds(30),
                                       .registry = &registry});
  // The informers, shared by everything below; they outlive the manager and their readers.
  agent::ipam::Caches caches(*rest, {.node_name = node, .registry = &registry});
  agent::ipam::ServiceOptions options{
      .node_name = node,
      .agent_namespace = absl::GetFlag(FLAGS_agent_namespace).empty()
                             ? base::EnvOr("SPIDERPOOL_POD_NAMESPACE", "kube-system")
                             : absl::GetFlag(FLAGS_agent_namespace),
      .config = *ipam_config,
      .registry = &registry,
      .recorder = &recorder};
  if (!absl::GetFlag(FLAGS_multus_cluster_network).empty()) {
    options.multus_cluster_network = absl::GetFlag(FLAGS_multus_cluster_network);
  }
  agent::ipam::IpamService service(*rest, options, caches);
  // GET /v1/coordinator/config: the SpiderCoordinator cache, and the pod cache for the
  // default-route-nic annotation.
  agent::ipam::CoordinatorConfigSource coordinator(&caches.coordinator, &caches.pods);

  kube::ManagerOptions manager_options{.name = "spiderpool-agent", .ordered = true};
  if (absl::GetFlag(FLAGS_health_port) >= 0) {
    // share_port: with DRA the DaemonSet rolls with maxSurge 1, so for a moment the old and
    // the new agent pod both run on this host network and both answer probes.
    manager_options.health = kube::health::ServerOptions{
        .port = absl::GetFlag(FLAGS_health_port), .registry = &registry, .share_port = true};
  }
  kube::Manager manager(manager_options);
  if (kube::health::Server* health = manager.health(); health != nullptr) {
    (void)health->AddReadyzCheck("ipam-caches", [&service]() {
      return service.Ready() ? absl::OkStatus() : absl::UnavailableError("caches not synced");
    });
    (void)health->AddAlias("/v1/runtime/liveness", kube::health::Probe::kLiveness);
    (void)health->AddAlias("/v1/runtime/readiness", kube::health::Probe::kReadiness);
    (void)health->AddAlias("/v1/runtime/startup", kube::health::Probe::kReadiness);
  }
  for (std::unique_ptr<kube::Runnable>& r : caches.Runnables()) manager.Add(std::move(r));
  manager.Add(std::make_unique<kube::StartStopRunnable>(
      "IPAM service",
      [&service] {
        service.Start();
        return absl::OkStatus();
      },
      [&service] { service.Stop(); }));
  // Served right away: until the caches sync, IPAM calls get 503 (CNI "try again"). Stopping
  // waits for the requests in flight.
  std::unique_ptr<agent::ipam::IpamServer> server;
  manager.Add(std::make_unique<kube::StartStopRunnable>(
      "IPAM socket",
      [&]() -> absl::Status {
        absl::StatusOr<std::unique_ptr<agent::ipam::IpamServer>> started =
            agent::ipam::IpamServer::Start(
                {.socket_path = ipam_config->ipam_unix_socket_path,
                 .max_in_flight = static_cast<int>(ipam_config->max_pending_requests),
                 .request_timeout = ipam_config->request_timeout()},
                &service, &coordinator);
        if (!started.ok()) return started.status();
        server = *std::move(started);
        return absl::OkStatus();
      },
      [&server] { server->Stop(); }));
  if (absl::Status s = agent::dra::AddToManager(
          manager, {.rest = *rest,
                    .node_name = node,
                    .caches = &caches,
                    .handed_out = [&service](const std::string& pool) {
                      return service.HandedOutReservations(pool);
                    },
                    .recorder = &recorder,
                    .registry = &registry});
      !s.ok()) {
    return Fail("flags", s);
  }
  manager.Add(std::make_unique<kube::StartStopRunnable>(
      "started",
      [&] {
        std::cout << "socket=" << ipam_config->ipam_unix_socket_path << "\n";
        if (manager.health() != nullptr) {
          std::cout << "health_port=" << manager.health()->port() << "\n";
        }
        std::cout.flush();
        SP_LOG(Info).Msg("spiderpool-agent started").KV("node", node)
            .KV("socket", ipam_config->ipam_unix_socket_path);
        return absl::OkStatus();
      },
      [] {}));

  std::stop_source stop;
  std::jthread signals([&stop, &set] {
    int sig = 0;
    sigwait(&set, &sig);
    if (stop.stop_requested()) return;  // woken by main below
    SP_LOG(Info).Msg("stopping").KV("signal", sig);
    stop.request_stop();
  });
  absl::Status s = manager.Run(stop.get_token());
  if (!stop.stop_requested()) {
    // A runnable failed (or the probe port is taken): wake the signal thread and exit 1.
    stop.request_stop();
    ::kill(::getpid(), SIGTERM);
  }
  if (!s.ok()) return Fail("start", s);
  return 0;
}
