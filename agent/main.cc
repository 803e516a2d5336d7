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
// sockets go first, then the IPAM socket; requests in flight finish.
//
// Two binaries from this file (agent/BUILD.bazel): `spiderpool-agent` has no DRA code, so an
// IPAM-only agent never maps gRPC, protobuf or libnl (~6 MB of resident pages per node); with
// --dra-enabled or --device-plugin-enabled it execs `spiderpool-agent-dra` (built with
// SPIDERPOOL_AGENT_DRA) from its own directory: same pid, same arguments, same flags.

#include <limits.h>
#include <malloc.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/ipam/config.h"
#include "agent/ipam/coordinator.h"
#include "agent/ipam/server.h"
#include "agent/ipam/service.h"
#include "api/core.h"
#include "base/flags.h"
#include "base/sigpipe.h"
#include "kube/rest/client.h"
#include "base/log.h"
#include "kube/events/recorder.h"
#include "kube/health/health.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/config.h"
#include "kube/rest/rest_client.h"

#ifdef SPIDERPOOL_AGENT_DRA
#include "agent/dra/network_data.h"
#include "agent/dra/node_devices.h"
#include "dra/driver/driver.h"
#include "dra/kubeletplugin/plugin.h"
#include "dra/resourceslice/publisher.h"
#endif

ABSL_FLAG(std::string, node_name, "", "this node's name (default: $SPIDERPOOL_NODE_NAME)");
ABSL_FLAG(std::string, kubeconfig, "", "kubeconfig file (default: $KUBECONFIG, then in-cluster)");
ABSL_FLAG(std::string, config, "", "conf.yml of ConfigMap spiderpool-conf (default: built-in defaults)");
ABSL_FLAG(std::string, socket, "", "IPAM unix socket (default: ipamUnixSocketPath of conf.yml)");
ABSL_FLAG(std::string, agent_namespace, "", "namespace spiderpool runs in (default: $SPIDERPOOL_POD_NAMESPACE or kube-system)");
ABSL_FLAG(std::string, multus_cluster_network, "", "multus cluster network NAD (ns/name) for eth0");
ABSL_FLAG(int, health_port, 5710, "health and metrics HTTP port (0 = any, -1 = off)");
ABSL_FLAG(double, qps, 50, "API client QPS");
ABSL_FLAG(int, burst, 100, "API client burst");
// DRA (Kubernetes >= 1.32 with resource.k8s.io served) and its device-plugin fallback.
ABSL_FLAG(bool, dra_enabled, false, "publish ResourceSlices and serve the kubelet DRA plugin");
ABSL_FLAG(std::string, dra_driver_name, "netresources.spidernet.io", "DRA driver name");
ABSL_FLAG(std::string, dra_cdi_dir, "/var/run/cdi", "where CDI spec files of prepared claims go");
ABSL_FLAG(std::string, dra_cdi_version, "", "highest cdiVersion written unless a SpiderClaimParameter pins one (\"\" = 0.5.0)");
ABSL_FLAG(std::string, dra_rdma_library, "", "host path of the RDMA library mounted for rdmaAcc claims");
ABSL_FLAG(int, dra_slots_per_nic, 32, "devices (pods) published per NIC, capped by the free IPs of its pools");
ABSL_FLAG(std::string, dra_declared_subnets, "", "subnets of NICs without a host address in them: eth1=10.7.0.0/24,eth1=fd00:7::/64,...");
ABSL_FLAG(std::string, dra_resource_names, "", "k8s.cni.cncf.io/resourceName per NIC (SR-IOV device plugin resources): ens1f0=spidernet.io/sriov_a,...");
ABSL_FLAG(int, dra_health_port, 5713, "TCP port of the gRPC health service of the DRA plugin (-1 = off)");
ABSL_FLAG(std::string, kubelet_registry_dir, "/var/lib/kubelet/plugins_registry", "kubelet plugin registration directory");
ABSL_FLAG(std::string, kubelet_plugins_dir, "/var/lib/kubelet/plugins", "kubelet plugins directory (the DRA socket goes in <dir>/<driver>)");
ABSL_FLAG(bool, device_plugin_enabled, false, "advertise spidernet.io/<nic>-nic through the kubelet device-plugin API (clusters without DRA)");
ABSL_FLAG(std::string, kubelet_device_plugins_dir, "/var/lib/kubelet/device-plugins", "kubelet device-plugin directory");
ABSL_FLAG(std::string, nic_include, "", "comma-separated globs of NIC names to use (\"\" = all)");
ABSL_FLAG(std::string, nic_exclude, "", "comma-separated globs of NIC names never to use");
ABSL_FLAG(std::string, nic_netns, "", "discover NICs in this network namespace (path) instead of the agent's own");
ABSL_FLAG(std::string, sysfs_root, "/sys", "sysfs mount for PCI/NUMA/SR-IOV/RDMA facts of NICs");

namespace {

using namespace spiderpool;

int Fail(std::string_view what, const absl::Status& s) {
  std::cerr << "spiderpool-agent: " << what << ": " << s << "\n";
  return 1;
}

#ifdef SPIDERPOOL_AGENT_DRA

std::vector<std::string> Globs(const std::string& csv) {
  std::vector<std::string> out;
  for (absl::string_view g : absl::StrSplit(csv, ',', absl::SkipWhitespace())) {
    out.emplace_back(absl::StripAsciiWhitespace(g));
  }
  return out;
}

// NICs -> ResourceSlices (DRA) and/or device-plugin resources; the kubelet DRA plugin with the
// claim driver. Built before the IPAM service starts (it subscribes to the pool caches),
// started after.
class NodePlugins {
 public:
  NodePlugins(std::shared_ptr<kube::RestClient> rest, agent::ipam::IpamService& service,
              const std::string& node, kube::EventRecorder* recorder) {
    const bool dra = absl::GetFlag(FLAGS_dra_enabled);
    const bool device_plugin = absl::GetFlag(FLAGS_device_plugin_enabled);
    const std::string driver_name = absl::GetFlag(FLAGS_dra_driver_name);
    if (dra || device_plugin) {
      agent::dra::NodeDevicesOptions o{.node_name = node,
                                       .netns_path = absl::GetFlag(FLAGS_nic_netns),
                                       .publish_slices = dra,
                                       .device_plugin = device_plugin,
                                       .registry = &kube::metrics::Registry::Default()};
      o.discovery.sysfs_root = absl::GetFlag(FLAGS_sysfs_root);
      o.model.driver = driver_name;
      o.model.slots_per_nic = absl::GetFlag(FLAGS_dra_slots_per_nic);
      o.model.include_interfaces = Globs(absl::GetFlag(FLAGS_nic_include));
      o.model.exclude_interfaces = Globs(absl::GetFlag(FLAGS_nic_exclude));
      flag_error_ = agent::dra::ParseDeclaredSubnets(absl::GetFlag(FLAGS_dra_declared_subnets),
                                                     &o.model.declared_subnets);
      if (flag_error_.ok()) {
        flag_error_ = agent::dra::ParseResourceNames(absl::GetFlag(FLAGS_dra_resource_names),
                                                     &o.model.resource_names);
      }
      o.device_plugin_options.kubelet_dir = absl::GetFlag(FLAGS_kubelet_device_plugins_dir);
      o.device_plugin_options.rules = {.include = o.model.include_interfaces,
                                       .exclude = o.model.exclude_interfaces};
      if (dra) o.device_health = &device_health_;  // NIC link state -> the kubelet's stream
      if (dra) {
        // Slices die with their Node (ownerReference), when the Node is there to own them.
        kube::Client<api::Node> nodes(rest);
        if (absl::StatusOr<api::Node> n = nodes.Get("", node); n.ok()) {
          o.publisher.node_uid = n->metadata.uid;
        }
      }
      devices_ = std::make_unique<agent::dra::NodeDevices>(rest, o, [&service, node] {
        return agent::dra::PoolCapacities(
            service.CachedPools(), node, service.NodeLabels(),
            [&service](const std::string& pool) { return service.HandedOutReservations(pool); });
      });
      service.OnPoolsOrNodeChanged([d = devices_.get()] { d->Refresh(); });
    }
    if (!dra) return;
    const std::string plugin_dir = absl::GetFlag(FLAGS_kubelet_plugins_dir) + "/" + driver_name;
    dra::driver::Options d{.driver_name = driver_name,
                           .node_name = node,
                           .plugin_dir = plugin_dir,
                           .cdi_dir = absl::GetFlag(FLAGS_dra_cdi_dir),
                           .rdma_library_path = absl::GetFlag(FLAGS_dra_rdma_library),
                           .registry = &kube::metrics::Registry::Default(),
                           .recorder = recorder};
    if (!absl::GetFlag(FLAGS_dra_cdi_version).empty()) {
      d.cdi_max_version = absl::GetFlag(FLAGS_dra_cdi_version);
    }
    // Claims in the version the server serves (v1, else v1beta2, else v1beta1), like the slices.
    if (absl::StatusOr<std::string> v = dra::resourceslice::DiscoverResourceApiVersion(*rest);
        v.ok()) {
      d.api_version = *v;
    } else {
      SP_LOG(Warning).Msg("resource.k8s.io not served; claims will be read as v1")
          .KV("error", v.status().ToString());
    }
    claim_driver_ = std::make_unique<dra::driver::NetDriver>(rest, d);
    // status.devices[].networkData from this node's SpiderEndpoints (the IPAM results).
    network_data_ = std::make_unique<agent::dra::NetworkDataReporter>(
        rest, claim_driver_.get(), agent::dra::NetworkDataOptions{.node_name = node, .driver = driver_name},
        [d = devices_.get()] { return d != nullptr ? d->devices() : std::vector<api::Device>{}; });
    plugin_ = std::make_unique<dra::kubeletplugin::Plugin>(
        dra::kubeletplugin::PluginOptions{.driver_name = driver_name,
                                          .registry_dir = absl::GetFlag(FLAGS_kubelet_registry_dir),
                                          .plugin_dir = plugin_dir,
                                          .pod_uid = dra::kubeletplugin::PodUIDFromEnv(),
                                          .health_port = absl::GetFlag(FLAGS_dra_health_port),
                                          .device_health = &device_health_,
                                          .metrics = &kube::metrics::Registry::Default()},
        claim_driver_.get());
  }

  // 0, or main's exit code after printing why.
  int Start() {
    if (!flag_error_.ok()) return Fail("flags", flag_error_);
    if (devices_) {
      if (absl::Status s = devices_->Start(); !s.ok()) return Fail("NIC discovery", s);
    }
    if (plugin_) {
      // A claim half-prepared before a crash is finished or rolled back before serving.
      if (absl::Status s = claim_driver_->Recover(); !s.ok()) {
        SP_LOG(Warning).Msg("DRA checkpoint recovery").KV("error", s.ToString());
      }
      if (absl::Status s = plugin_->Start(); !s.ok()) return Fail("DRA kubelet plugin", s);
      network_data_->Start();
      std::cout << "dra_registration_socket=" << plugin_->sockets().registration << "\n"
                << "dra_socket=" << plugin_->sockets().dra << "\n";
      if (plugin_->health_port() > 0) {
        std::cout << "dra_health_port=" << plugin_->health_port() << "\n";
      }
    }
    return 0;
  }

  // The kubelet plugin first: its sockets go, so the kubelet moves to a newer instance (or
  // waits) before anything it may call is torn down.
  void Stop() {
    if (plugin_) plugin_->Stop();
    if (network_data_) network_data_->Stop();
    if (devices_) devices_->Stop();
  }

 private:
  dra::kubeletplugin::DeviceHealthFeed device_health_;  // before its users: outlives them
  absl::Status flag_error_;  // --dra-declared-subnets / --dra-resource-names
  std::unique_ptr<agent::dra::NodeDevices> devices_;
  std::unique_ptr<dra::driver::NetDriver> claim_driver_;
  std::unique_ptr<agent::dra::NetworkDataReporter> network_data_;  // uses claim_driver_
  std::unique_ptr<dra::kubeletplugin::Plugin> plugin_;
};

#else  // !SPIDERPOOL_AGENT_DRA

// Becomes spiderpool-agent-dra, looked up beside the running binary (/proc/self/exe), then
// beside argv[0] (a runfiles or install symlink). Returns only when no exec succeeded.
int ExecDraAgent(char** argv) {
  std::vector<std::string> dirs;
  char self[PATH_MAX];
  if (const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1); n > 0) {
    const std::string exe(self, static_cast<size_t>(n));
    dirs.push_back(exe.substr(0, exe.rfind('/') + 1));
  }
  if (const std::string arg0 = argv[0]; arg0.find('/') != std::string::npos) {
    const std::string dir = arg0.substr(0, arg0.rfind('/') + 1);
    if (dirs.empty() || dirs.front() != dir) dirs.push_back(dir);
  }
  std::string tried;
  for (const std::string& dir : dirs) {
    const std::string path = dir + "spiderpool-agent-dra";
    ::execv(path.c_str(), argv);
    tried += (tried.empty() ? "" : ", ") + path + ": " + std::strerror(errno);
  }
  return Fail("--dra-enabled/--device-plugin-enabled need spiderpool-agent-dra",
              absl::NotFoundError(tried));
}

#endif  // SPIDERPOOL_AGENT_DRA

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
#ifndef SPIDERPOOL_AGENT_DRA
  if (absl::GetFlag(FLAGS_dra_enabled) || absl::GetFlag(FLAGS_device_plugin_enabled)) {
    return ExecDraAgent(argv);
  }
#endif

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

  // Warning Events on the pods whose IPAM ADD or DRA prepare failed; the same (pod, reason) is
  // written at most every 30 s (runtimes retry a failed sandbox every few seconds). Declared
  // before its users: it outlives them, and flushes what is queued when it goes.
  kube::EventRecorder recorder(*rest, {.component = "spiderpool-agent",
                                       .host = node,
                                       .min_interval = absl::Seconds(30),
                                       .registry = &kube::metrics::Registry::Default()});
  agent::ipam::ServiceOptions options{
      .node_name = node,
      .agent_namespace = absl::GetFlag(FLAGS_agent_namespace).empty()
                             ? base::EnvOr("SPIDERPOOL_POD_NAMESPACE", "kube-system")
                             : absl::GetFlag(FLAGS_agent_namespace),
      .config = ipam_config,
      .registry = &kube::metrics::Registry::Default(),
      .recorder = &recorder};
  if (!absl::GetFlag(FLAGS_multus_cluster_network).empty()) {
    options.multus_cluster_network = absl::GetFlag(FLAGS_multus_cluster_network);
  }
  agent::ipam::IpamService service(*rest, options);
  // GET /v1/coordinator/config: the SpiderCoordinator cache, and the service's pod cache for
  // the default-route-nic annotation.
  agent::ipam::CoordinatorConfigSource coordinator(
      *rest, {.cached_pod = [&service](const std::string& ns,
                                       const std::string& name) { return service.CachedPod(ns, name); },
              .pods_synced = [&service] { return service.PodsSynced(); },
              .registry = &kube::metrics::Registry::Default()});

#ifdef SPIDERPOOL_AGENT_DRA
  NodePlugins node_plugins(*rest, service, node, &recorder);
#endif

  service.Start();
  coordinator.Start();
#ifdef SPIDERPOOL_AGENT_DRA
  if (int rc = node_plugins.Start(); rc != 0) return rc;
#endif

  std::unique_ptr<kube::health::Server> health;
  if (absl::GetFlag(FLAGS_health_port) >= 0) {
    health = std::make_unique<kube::health::Server>(
        // share_port: with DRA the DaemonSet rolls with maxSurge 1, so for a moment the old
        // and the new agent pod both run on this host network and both answer probes.
        kube::health::ServerOptions{.port = absl::GetFlag(FLAGS_health_port), .share_port = true});
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
      &service, &coordinator);
  if (!server.ok()) return Fail("IPAM socket", server.status());
  std::cout << "socket=" << ipam_config.ipam_unix_socket_path << "\n";
  if (health) std::cout << "health_port=" << health->port() << "\n";
  std::cout.flush();
  SP_LOG(Info).Msg("spiderpool-agent started").KV("node", node)
      .KV("socket", ipam_config.ipam_unix_socket_path);

  int sig = 0;
  sigwait(&set, &sig);
  SP_LOG(Info).Msg("stopping").KV("signal", sig);
#ifdef SPIDERPOOL_AGENT_DRA
  node_plugins.Stop();
#endif
  (*server)->Stop();
  if (health) health->Stop();
  coordinator.Stop();
  service.Stop();
  return 0;
}
