// spiderpool-controller: the cluster-side binary (a Deployment, 2 replicas, Lease leader
// election). A composition root only: it builds the informers and wires the controllers of
// operator/* into a kube::Manager.
//
//   spiderpool-controller [--kubeconfig=PATH] [--namespace=kube-system] [--health-port=5720]
//                         [--leader-elect=true] [--gc-interval=600s] ...
//
// Informers and servers run on every replica; controllers and the IP GC only on the leader.

#include <malloc.h>
#include <unistd.h>

#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/time/time.h"
#include "api/apps.h"
#include "api/core.h"
#include "api/spider.h"
#include "base/flags.h"
#include "base/log.h"
#include "base/sigpipe.h"
#include "base/status.h"
#include "kube/controller/manager.h"
#include "kube/informer/informer.h"
#include "kube/leaderelection/lease_lock.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/config.h"
#include "kube/rest/rest_client.h"
#include "operator/cleanup/cleanup.h"
#include "operator/coordinator/controller.h"
#include "operator/dra/claim_webhook.h"
#include "operator/ipam/caches.h"
#include "operator/ipam/gc.h"
#include "operator/ipam/pool_controller.h"
#include "operator/multus/controller.h"
#include "operator/subnet/controller.h"
#include "operator/webhook/webhook_server.h"

ABSL_FLAG(std::string, kubeconfig, "", "kubeconfig file (default: $KUBECONFIG, then in-cluster)");
ABSL_FLAG(std::string, namespace, "",
          "namespace spiderpool runs in (default: $SPIDERPOOL_POD_NAMESPACE or kube-system)");
ABSL_FLAG(int, health_port, 5720, "probe and metrics port (0 = any free port, -1 = off)");
ABSL_FLAG(bool, leader_elect, true, "take the Lease spiderpool-controller-leases before acting");
ABSL_FLAG(std::string, identity, "", "leader election identity (default: hostname + random)");
ABSL_FLAG(absl::Duration, gc_interval, absl::Seconds(600),
          "period of the full IP GC scan (SPIDERPOOL_GC_DEFAULT_INTERVAL_DURATION)");
ABSL_FLAG(absl::Duration, gc_additional_grace_delay, absl::ZeroDuration(),
          "added to every pod's grace period before its IPs are reclaimed");
ABSL_FLAG(bool, enable_statefulset, true, "StatefulSet pods keep their IPs (enableStatefulSet)");
ABSL_FLAG(bool, enable_ipv4, true, "enableIPv4 (spiderpool-conf)");
ABSL_FLAG(bool, enable_ipv6, false, "enableIPv6 (spiderpool-conf)");
ABSL_FLAG(bool, enable_spider_subnet, true, "enableSpiderSubnet (spiderpool-conf)");
ABSL_FLAG(bool, enable_auto_pool_for_application, true,
          "enableAutoPoolForApplication (spiderpool-conf)");
ABSL_FLAG(int, cluster_subnet_default_flexible_ip_number, 1,
          "clusterSubnetDefaultFlexibleIPNumber (spiderpool-conf)");
ABSL_FLAG(int, webhook_port, 5722, "admission webhook HTTPS port (0 = any free port, -1 = off)");
ABSL_FLAG(std::string, webhook_service_name, "spiderpool-controller",
          "the Service in front of the webhook (certificate names)");
ABSL_FLAG(std::string, webhook_cert_dir, "",
          "tls.crt/tls.key directory (mounted Secret); empty = generate and keep them in the "
          "Secret spiderpool-controller-server-certs, patching the caBundle");
ABSL_FLAG(bool, webhook_create_configurations, false,
          "create/replace the webhook configurations (setups without the chart: the demo)");
ABSL_FLAG(bool, dra_claim_webhook, true,
          "DRA: serve the ResourceClaim webhook adding the SpiderClaimParameter's network as CEL "
          "selectors, and keep configuration spiderpool-controller-dra's caBundle (operator/dra)");
ABSL_FLAG(bool, enable_validating_resources_deleted_webhook, false,
          "refuse to delete pools/subnets with allocated IPs (upstream's switch)");
ABSL_FLAG(bool, pod_resource_inject, false,
          "podResourceInject.enabled: serve the Pod webhook (/mutate--v1-pod) injecting "
          "networks and RDMA/SR-IOV resources from cni.spidernet.io/*-resource-inject");
ABSL_FLAG(std::vector<std::string>, pod_resource_inject_namespaces_exclude,
          std::vector<std::string>({"kube-system", "spiderpool", "metallb-system",
                                    "istio-system"}),
          "podResourceInject.namespacesExclude (comma-separated)");
ABSL_FLAG(std::vector<std::string>, pod_resource_inject_namespaces_include, {},
          "podResourceInject.namespacesInclude (comma-separated; empty = all)");
ABSL_FLAG(bool, cleanup, false,
          "run the chart's pre-delete hook and exit (operator/cleanup): scale the controller "
          "Deployment to 0 and wait for its pods, delete its webhook configurations, remove the "
          "finalizer spiderpool.spidernet.io from every Spider* object");
ABSL_FLAG(std::string, cleanup_controller_deployment, "spiderpool-controller",
          "--cleanup: the controller Deployment (in --namespace) to stop first; \"\" = none");
ABSL_FLAG(std::string, cleanup_webhook_configuration, "spiderpool-controller",
          "--cleanup: the Mutating/ValidatingWebhookConfiguration to delete; \"\" = none");
ABSL_FLAG(absl::Duration, cleanup_timeout, absl::Minutes(2),
          "--cleanup: how long the controller's pods may take to go");
ABSL_FLAG(std::string, cleanup_label_selector, "",
          "--cleanup: only objects with these labels (default: all)");
ABSL_FLAG(double, qps, 50, "API client QPS");
ABSL_FLAG(int, burst, 100, "API client burst");

namespace {

using namespace spiderpool;

// A step of main that failed: printed as "spiderpool-controller: <what>: <status>", exit 1.
struct Failure {
  std::string what;
  absl::Status status;
};

int Fail(std::string_view what, const absl::Status& s) {
  std::cerr << "spiderpool-controller: " << what << ": " << s << "\n";
  return 1;
}
int Fail(const Failure& f) { return Fail(f.what, f.status); }

// ---- 1. flags -> settings ----------------------------------------------------------------

// Everything the flags say, as the options of the parts they configure. Informers, the
// metrics registry and the API client are wired in later steps.
struct Settings {
  std::string ns;
  std::string kubeconfig;  // "" = $KUBECONFIG, then in-cluster
  double qps = 0;
  int burst = 0;
  std::optional<op::cleanup::Options> cleanup;  // --cleanup: run it and exit
  int health_port = -1;                         // -1 = no health/metrics server
  bool leader_elect = true;
  std::string identity;
  op::ipam::GCOptions gc;
  op::subnet::AutoPoolOptions auto_pools;
  std::optional<op::webhook::WebhookServerOptions> webhook;  // --webhook-port=-1: none
  bool create_webhook_configurations = false;
  bool dra_claim_webhook = true;
};

Settings SettingsFromFlags() {
  Settings s;
  s.ns = absl::GetFlag(FLAGS_namespace).empty()
             ? base::EnvOr("SPIDERPOOL_POD_NAMESPACE", "kube-system")
             : absl::GetFlag(FLAGS_namespace);
  s.kubeconfig = absl::GetFlag(FLAGS_kubeconfig);
  s.qps = absl::GetFlag(FLAGS_qps);
  s.burst = absl::GetFlag(FLAGS_burst);
  if (absl::GetFlag(FLAGS_cleanup)) {
    s.cleanup = op::cleanup::Options{
        .namespace_ = s.ns,
        .controller_deployment = absl::GetFlag(FLAGS_cleanup_controller_deployment),
        .webhook_configuration = absl::GetFlag(FLAGS_cleanup_webhook_configuration),
        .label_selector = absl::GetFlag(FLAGS_cleanup_label_selector),
        .timeout = absl::GetFlag(FLAGS_cleanup_timeout)};
  }
  s.health_port = absl::GetFlag(FLAGS_health_port);
  s.leader_elect = absl::GetFlag(FLAGS_leader_elect);
  s.identity = absl::GetFlag(FLAGS_identity);
  s.gc = {.interval = absl::GetFlag(FLAGS_gc_interval),
          .additional_grace_delay = absl::GetFlag(FLAGS_gc_additional_grace_delay),
          .enable_statefulset = absl::GetFlag(FLAGS_enable_statefulset)};
  s.auto_pools = {
      .enable_spider_subnet = absl::GetFlag(FLAGS_enable_spider_subnet),
      .enable_auto_pool_for_application = absl::GetFlag(FLAGS_enable_auto_pool_for_application),
      .cluster_subnet_default_flexible_ip_number =
          absl::GetFlag(FLAGS_cluster_subnet_default_flexible_ip_number),
      .enable_ipv4 = absl::GetFlag(FLAGS_enable_ipv4),
      .enable_ipv6 = absl::GetFlag(FLAGS_enable_ipv6)};
  s.create_webhook_configurations = absl::GetFlag(FLAGS_webhook_create_configurations);
  s.dra_claim_webhook = absl::GetFlag(FLAGS_dra_claim_webhook);
  if (absl::GetFlag(FLAGS_webhook_port) >= 0) {
    s.webhook = op::webhook::WebhookServerOptions{
        .port = absl::GetFlag(FLAGS_webhook_port),
        .cert_dir = absl::GetFlag(FLAGS_webhook_cert_dir),
        .service_name = absl::GetFlag(FLAGS_webhook_service_name),
        .service_namespace = s.ns,
        // Configurations the server creates itself get the CA then.
        .patch_ca_bundle = !s.create_webhook_configurations,
        .validation = {.enable_ipv4 = absl::GetFlag(FLAGS_enable_ipv4),
                       .enable_ipv6 = absl::GetFlag(FLAGS_enable_ipv6),
                       .enable_spider_subnet = absl::GetFlag(FLAGS_enable_spider_subnet),
                       .enable_validating_resources_deleted_webhook =
                           absl::GetFlag(FLAGS_enable_validating_resources_deleted_webhook)},
        // We ship the SpiderClaimParameter CRD (the DRA driver's claim parameters).
        .enable_claim_parameter = true,
        .enable_pod_resource_inject = absl::GetFlag(FLAGS_pod_resource_inject),
        .pod_namespaces_exclude = absl::GetFlag(FLAGS_pod_resource_inject_namespaces_exclude),
        .pod_namespaces_include = absl::GetFlag(FLAGS_pod_resource_inject_namespaces_include)};
  }
  return s;
}

absl::StatusOr<kube::Config> KubeConfig(const Settings& s) {
  absl::StatusOr<kube::Config> config =
      s.kubeconfig.empty() ? kube::ConfigFromEnvOrDefault() : kube::LoadKubeconfig(s.kubeconfig);
  if (!config.ok()) return config;
  config->qps = s.qps;
  config->burst = s.burst;
  config->user_agent = "spiderpool-controller";
  return config;
}

// --cleanup: the chart's pre-delete hook.
int RunCleanup(const std::shared_ptr<kube::RestClient>& rest, const op::cleanup::Options& o) {
  absl::StatusOr<op::cleanup::Result> done = op::cleanup::Run(rest, o);
  if (!done.ok()) return Fail("cleanup", done.status());
  std::cout << "cleanup: controller stopped=" << (done->controller_scaled_down ? "yes" : "no")
            << ", webhook configurations deleted=" << done->webhook_configurations_deleted.size()
            << ", finalizers removed=" << done->finalizers_removed.size() << "\n";
  return 0;
}

// ---- 2. shared caches ------------------------------------------------------------------

// The informers the controllers and the webhooks share. They outlive the manager (declared
// before it) and the controllers that index them.
struct SharedCaches {
  SharedCaches(const std::shared_ptr<kube::RestClient>& rest, kube::InformerOptions all)
      : pools(rest, all), subnets(rest, all), reserved(rest, all), endpoints(rest, all),
        pods(rest, all), nodes(rest, all), statefulsets(rest, all), inject_smcs(rest, all),
        inject_namespaces(rest, all) {}

  op::ipam::Caches Ipam() {
    return {.pools = &pools, .subnets = &subnets, .reserved_ips = &reserved,
            .endpoints = &endpoints, .pods = &pods, .nodes = &nodes,
            .statefulsets = &statefulsets};
  }

  // Added after the controllers, which register their handlers and indexers first. The Pod
  // resource-injection webhook's two run only when that webhook is served.
  void AddTo(kube::Manager* manager, bool pod_resource_inject) {
    manager->Add(kube::InformerRunnable(&pools));
    manager->Add(kube::InformerRunnable(&subnets));
    manager->Add(kube::InformerRunnable(&reserved));
    manager->Add(kube::InformerRunnable(&endpoints));
    manager->Add(kube::InformerRunnable(&pods));
    manager->Add(kube::InformerRunnable(&nodes));
    manager->Add(kube::InformerRunnable(&statefulsets));
    if (pod_resource_inject) {
      manager->Add(kube::InformerRunnable(&inject_smcs));
      manager->Add(kube::InformerRunnable(&inject_namespaces));
    }
  }

  kube::Informer<api::SpiderIPPool> pools;
  kube::Informer<api::SpiderSubnet> subnets;
  kube::Informer<api::SpiderReservedIP> reserved;
  kube::Informer<api::SpiderEndpoint> endpoints;
  kube::Informer<api::Pod> pods;
  kube::Informer<api::Node> nodes;
  kube::Informer<api::StatefulSet> statefulsets;
  // The Pod resource-injection webhook's caches (only run with --pod-resource-inject).
  kube::Informer<api::SpiderMultusConfig> inject_smcs;
  kube::Informer<api::Namespace> inject_namespaces;
};

// ---- 3. the manager and its runnables --------------------------------------------------

kube::ManagerOptions ManagerOptionsFor(const Settings& s,
                                       const std::shared_ptr<kube::RestClient>& rest,
                                       kube::metrics::Registry* registry) {
  kube::ManagerOptions options{.name = "spiderpool-controller"};
  if (s.health_port >= 0) {
    options.health = kube::health::ServerOptions{.port = s.health_port, .registry = registry};
  }
  if (s.leader_elect) {
    std::string identity = s.identity;
    if (identity.empty()) {
      char host[256] = {};
      ::gethostname(host, sizeof host - 1);
      identity = base::StrCat(host, "_", std::random_device{}());
    }
    options.leader_election = kube::LeaderElectionConfig{.identity = identity};
    options.lease_lock = [rest, ns = s.ns] {
      return std::make_unique<kube::KubeLeaseLock>(rest, ns, "spiderpool-controller-leases");
    };
  }
  return options;
}

// The leader's controllers: pool status, IP GC, SpiderMultusConfig -> NAD, SpiderSubnet auto
// pools, SpiderCoordinator status.
std::optional<Failure> AddControllers(kube::Manager* manager, const Settings& s,
                                      const std::shared_ptr<kube::RestClient>& rest,
                                      SharedCaches& caches, kube::metrics::Registry* registry) {
  manager->Add(std::make_unique<op::ipam::PoolController>(
      op::ipam::PoolControllerOptions{.registry = registry}, rest, caches.Ipam()));
  op::ipam::GCOptions gc = s.gc;
  gc.registry = registry;
  manager->Add(std::make_unique<op::ipam::IPGarbageCollector>(gc, rest, caches.Ipam()));
  // SpiderMultusConfig -> NetworkAttachmentDefinition (its own SMC/NAD informers).
  absl::StatusOr<op::multus::MultusConfigController*> multus =
      op::multus::AddToManager(manager, rest, {.registry = registry});
  if (!multus.ok()) return Failure{"SpiderMultusConfig controller", multus.status()};
  // SpiderSubnet auto pools for applications (shares the pool/subnet/reserved/sts caches, and
  // the pods: third-party applications are seen through them).
  op::subnet::AutoPoolOptions auto_pool_options = s.auto_pools;
  auto_pool_options.registry = registry;
  absl::StatusOr<op::subnet::AutoPoolController*> auto_pools = op::subnet::AddToManager(
      manager, rest, auto_pool_options,
      {.pools = &caches.pools, .subnets = &caches.subnets, .reserved_ips = &caches.reserved,
       .statefulsets = &caches.statefulsets, .pods = &caches.pods});
  if (!auto_pools.ok()) return Failure{"SpiderSubnet auto-pool controller", auto_pools.status()};
  // SpiderCoordinator status: pod/service CIDRs and phase (its own small informers: the
  // coordinators, kube-system's control-plane pods, kubeadm-config and cilium-config).
  absl::StatusOr<op::coordinator::CoordinatorController*> coordinator =
      op::coordinator::AddToManager(manager, rest, {.registry = registry});
  if (!coordinator.ok()) return Failure{"SpiderCoordinator controller", coordinator.status()};
  return std::nullopt;
}

// Serves the webhooks until stopped, after creating their configurations
// (--webhook-create-configurations: setups without the chart).
std::unique_ptr<kube::Runnable> ServeAndCreateConfigurations(
    std::unique_ptr<op::webhook::WebhookServer> webhook) {
  return std::make_unique<kube::FuncRunnable>(
      "webhook-server", /*needs_leader=*/false,
      [w = std::shared_ptr<op::webhook::WebhookServer>(std::move(webhook))](
          std::stop_token stop) -> absl::Status {
        SP_RETURN_IF_ERROR(w->Start());
        if (absl::Status s = w->EnsureConfigurations(); !s.ok()) {
          w->Stop();
          return s;
        }
        SP_LOG(Info).Msg("webhook serving").KV("port", w->port());
        std::mutex mu;
        std::condition_variable_any cv;
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, stop, [] { return false; });  // until stop is requested
        w->Stop();
        return absl::OkStatus();
      });
}

// The admission webhooks (every replica serves them; no leader election), with the DRA claim
// webhook (the claim's network as CEL, issue 15) and its configuration's caBundle.
std::optional<Failure> AddWebhookServer(kube::Manager* manager, const Settings& s,
                                        const std::shared_ptr<kube::RestClient>& rest,
                                        SharedCaches& caches) {
  op::webhook::WebhookServerOptions o = *s.webhook;
  if (o.enable_pod_resource_inject) {
    o.multus_config_informer = &caches.inject_smcs;
    o.namespace_informer = &caches.inject_namespaces;
  }
  o.ippool_informer = &caches.pools;
  o.subnet_informer = &caches.subnets;
  absl::StatusOr<std::unique_ptr<op::webhook::WebhookServer>> webhook =
      op::webhook::WebhookServer::Create(rest, std::move(o));
  if (!webhook.ok()) return Failure{"webhook server", webhook.status()};
  if (s.dra_claim_webhook) {
    op::dra::ClaimWebhookOptions dra_o{.spiderpool_namespace = s.ns,
                                       .sources = op::dra::ApiSources(rest, &caches.pools)};
    (*webhook)->server().Mutating(std::string(op::dra::kClaimWebhookPath),
                                  op::dra::ClaimHandler(std::move(dra_o)));
    manager->Add(op::dra::ConfigurationSync(
        rest, {.service_namespace = s.ns, .service_name = s.webhook->service_name,
               .create = s.create_webhook_configurations},
        [w = webhook->get()] { return w->ca_bundle_pem(); }));
  }
  if (manager->health() != nullptr) {
    (void)manager->health()->AddReadyzCheck("webhook", (*webhook)->HealthCheck());
  }
  if (s.create_webhook_configurations) {
    manager->Add(ServeAndCreateConfigurations(*std::move(webhook)));
  } else {
    manager->Add(*std::move(webhook));
  }
  return std::nullopt;
}

// ---- 4. run ----------------------------------------------------------------------------

// SIGTERM/SIGINT are taken by a thread of Run (sigwait); blocked before any other thread
// starts, so that every thread inherits the mask.
sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// Runs the manager until a stop signal, lost leadership or a failed runnable.
int Run(kube::Manager& manager, sigset_t set, const std::string& ns) {
  std::stop_source stop;
  std::jthread signals([&stop, &set] {
    int sig = 0;
    sigwait(&set, &sig);
    SP_LOG(Info).Msg("stopping").KV("signal", sig);
    stop.request_stop();
  });
  SP_LOG(Info).Msg("spiderpool-controller starting").KV("namespace", ns);
  if (manager.health() != nullptr) {
    std::cout << "health_port=" << manager.health()->port() << "\n" << std::flush;
  }
  absl::Status s = manager.Run(stop.get_token());
  if (!stop.stop_requested()) {
    // Leadership lost or a runnable failed: exit non-zero so the pod restarts (as
    // controller-runtime does); wake the signal thread.
    ::kill(::getpid(), SIGTERM);
  }
  if (!s.ok()) return Fail("manager", s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
  mallopt(M_ARENA_MAX, 2);
  base::ParseFlags(argc, argv, "spiderpool-controller: the cluster side of Spiderpool");
  if (absl::Status s = base::SetLogLevelFromEnv("SPIDERPOOL_LOG_LEVEL"); !s.ok()) {
    return Fail("log level", s);
  }
  Settings settings = SettingsFromFlags();
  absl::StatusOr<kube::Config> config = KubeConfig(settings);
  if (!config.ok()) return Fail("kubeconfig", config.status());
  absl::StatusOr<std::shared_ptr<kube::RestClient>> rest = kube::RestClient::Create(*config);
  if (!rest.ok()) return Fail("API client", rest.status());
  if (settings.cleanup) return RunCleanup(*rest, *settings.cleanup);

  const sigset_t signals = BlockStopSignals();
  kube::metrics::Registry& registry = kube::metrics::Registry::Default();
  SharedCaches caches(*rest, {.registry = &registry});
  kube::Manager manager(ManagerOptionsFor(settings, *rest, &registry));
  // Controllers first (they register handlers and indexers), then the informers.
  if (auto f = AddControllers(&manager, settings, *rest, caches, &registry)) return Fail(*f);
  if (settings.webhook) {
    if (auto f = AddWebhookServer(&manager, settings, *rest, caches)) return Fail(*f);
  }
  caches.AddTo(&manager, settings.webhook && settings.webhook->enable_pod_resource_inject);
  return Run(manager, signals, settings.ns);
}
