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
#include <mutex>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>
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

int Fail(std::string_view what, const absl::Status& s) {
  std::cerr << "spiderpool-controller: " << what << ": " << s << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
  mallopt(M_ARENA_MAX, 2);
  base::ParseFlags(argc, argv, "spiderpool-controller: the cluster side of Spiderpool");
  const std::string ns = absl::GetFlag(FLAGS_namespace).empty()
                             ? base::EnvOr("SPIDERPOOL_POD_NAMESPACE", "kube-system")
                             : absl::GetFlag(FLAGS_namespace);

  absl::StatusOr<kube::Config> config = absl::GetFlag(FLAGS_kubeconfig).empty()
                                            ? kube::ConfigFromEnvOrDefault()
                                            : kube::LoadKubeconfig(absl::GetFlag(FLAGS_kubeconfig));
  if (!config.ok()) return Fail("kubeconfig", config.status());
  config->qps = absl::GetFlag(FLAGS_qps);
  config->burst = absl::GetFlag(FLAGS_burst);
  config->user_agent = "spiderpool-controller";
  absl::StatusOr<std::shared_ptr<kube::RestClient>> rest = kube::RestClient::Create(*config);
  if (!rest.ok()) return Fail("API client", rest.status());

  if (absl::GetFlag(FLAGS_cleanup)) {
    absl::StatusOr<op::cleanup::Result> done = op::cleanup::Run(
        *rest, {.namespace_ = ns,
                .controller_deployment = absl::GetFlag(FLAGS_cleanup_controller_deployment),
                .webhook_configuration = absl::GetFlag(FLAGS_cleanup_webhook_configuration),
                .label_selector = absl::GetFlag(FLAGS_cleanup_label_selector),
                .timeout = absl::GetFlag(FLAGS_cleanup_timeout)});
    if (!done.ok()) return Fail("cleanup", done.status());
    std::cout << "cleanup: controller stopped=" << (done->controller_scaled_down ? "yes" : "no")
              << ", webhook configurations deleted=" << done->webhook_configurations_deleted.size()
              << ", finalizers removed=" << done->finalizers_removed.size() << "\n";
    return 0;
  }

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  kube::metrics::Registry& registry = kube::metrics::Registry::Default();
  kube::InformerOptions all{.registry = &registry};
  // The informers outlive the manager (declared first) and the controllers that index them.
  kube::Informer<api::SpiderIPPool> pools(*rest, all);
  kube::Informer<api::SpiderSubnet> subnets(*rest, all);
  kube::Informer<api::SpiderReservedIP> reserved(*rest, all);
  kube::Informer<api::SpiderEndpoint> endpoints(*rest, all);
  kube::Informer<api::Pod> pods(*rest, all);
  kube::Informer<api::Node> nodes(*rest, all);
  kube::Informer<api::StatefulSet> statefulsets(*rest, all);
  // The Pod resource-injection webhook's caches (only run with --pod-resource-inject).
  const bool pod_resource_inject = absl::GetFlag(FLAGS_pod_resource_inject);
  kube::Informer<api::SpiderMultusConfig> inject_smcs(*rest, all);
  kube::Informer<api::Namespace> inject_namespaces(*rest, all);
  const op::ipam::Caches caches{.pools = &pools, .subnets = &subnets, .reserved_ips = &reserved,
                                .endpoints = &endpoints, .pods = &pods, .nodes = &nodes,
                                .statefulsets = &statefulsets};

  kube::ManagerOptions options{.name = "spiderpool-controller"};
  if (absl::GetFlag(FLAGS_health_port) >= 0) {
    options.health = kube::health::ServerOptions{.port = absl::GetFlag(FLAGS_health_port),
                                                 .registry = &registry};
  }
  if (absl::GetFlag(FLAGS_leader_elect)) {
    std::string identity = absl::GetFlag(FLAGS_identity);
    if (identity.empty()) {
      char host[256] = {};
      ::gethostname(host, sizeof host - 1);
      identity = base::StrCat(host, "_", std::random_device{}());
    }
    options.leader_election = kube::LeaderElectionConfig{.identity = identity};
    options.lease_lock = [rest = *rest, ns] {
      return std::make_unique<kube::KubeLeaseLock>(rest, ns, "spiderpool-controller-leases");
    };
  }
  kube::Manager manager(options);

  // Controllers first (they register handlers and indexers), then the informers.
  manager.Add(std::make_unique<op::ipam::PoolController>(
      op::ipam::PoolControllerOptions{.registry = &registry}, *rest, caches));
  manager.Add(std::make_unique<op::ipam::IPGarbageCollector>(
      op::ipam::GCOptions{.interval = absl::GetFlag(FLAGS_gc_interval),
                          .additional_grace_delay = absl::GetFlag(FLAGS_gc_additional_grace_delay),
                          .enable_statefulset = absl::GetFlag(FLAGS_enable_statefulset),
                          .registry = &registry},
      *rest, caches));
  // SpiderMultusConfig -> NetworkAttachmentDefinition (its own SMC/NAD informers).
  absl::StatusOr<op::multus::MultusConfigController*> multus =
      op::multus::AddToManager(&manager, *rest, {.registry = &registry});
  if (!multus.ok()) return Fail("SpiderMultusConfig controller", multus.status());
  // SpiderSubnet auto pools for applications (shares the pool/subnet/reserved/sts caches, and
  // the pods: third-party applications are seen through them).
  absl::StatusOr<op::subnet::AutoPoolController*> auto_pools = op::subnet::AddToManager(
      &manager, *rest,
      {.enable_spider_subnet = absl::GetFlag(FLAGS_enable_spider_subnet),
       .enable_auto_pool_for_application = absl::GetFlag(FLAGS_enable_auto_pool_for_application),
       .cluster_subnet_default_flexible_ip_number =
           absl::GetFlag(FLAGS_cluster_subnet_default_flexible_ip_number),
       .enable_ipv4 = absl::GetFlag(FLAGS_enable_ipv4),
       .enable_ipv6 = absl::GetFlag(FLAGS_enable_ipv6),
       .registry = &registry},
      {.pools = &pools, .subnets = &subnets, .reserved_ips = &reserved,
       .statefulsets = &statefulsets, .pods = &pods});
  if (!auto_pools.ok()) return Fail("SpiderSubnet auto-pool controller", auto_pools.status());
  // SpiderCoordinator status: pod/service CIDRs and phase (its own small informers: the
  // coordinators, kube-system's control-plane pods, kubeadm-config and cilium-config).
  absl::StatusOr<op::coordinator::CoordinatorController*> coordinator =
      op::coordinator::AddToManager(&manager, *rest, {.registry = &registry});
  if (!coordinator.ok()) return Fail("SpiderCoordinator controller", coordinator.status());
  // Admission webhooks (every replica serves them; no leader election).
  if (absl::GetFlag(FLAGS_webhook_port) >= 0) {
    const bool create_configs = absl::GetFlag(FLAGS_webhook_create_configurations);
    op::webhook::WebhookServerOptions wo{
        .port = absl::GetFlag(FLAGS_webhook_port),
        .cert_dir = absl::GetFlag(FLAGS_webhook_cert_dir),
        .service_name = absl::GetFlag(FLAGS_webhook_service_name),
        .service_namespace = ns,
        // Configurations created below get the CA themselves.
        .patch_ca_bundle = !create_configs,
        .validation = {.enable_ipv4 = absl::GetFlag(FLAGS_enable_ipv4),
                       .enable_ipv6 = absl::GetFlag(FLAGS_enable_ipv6),
                       .enable_spider_subnet = absl::GetFlag(FLAGS_enable_spider_subnet),
                       .enable_validating_resources_deleted_webhook =
                           absl::GetFlag(FLAGS_enable_validating_resources_deleted_webhook)},
        // We ship the SpiderClaimParameter CRD (the DRA driver's claim parameters).
        .enable_claim_parameter = true,
        .enable_pod_resource_inject = pod_resource_inject,
        .pod_namespaces_exclude = absl::GetFlag(FLAGS_pod_resource_inject_namespaces_exclude),
        .pod_namespaces_include = absl::GetFlag(FLAGS_pod_resource_inject_namespaces_include),
        .multus_config_informer = pod_resource_inject ? &inject_smcs : nullptr,
        .namespace_informer = pod_resource_inject ? &inject_namespaces : nullptr,
        .ippool_informer = &pools,
        .subnet_informer = &subnets};
    absl::StatusOr<std::unique_ptr<op::webhook::WebhookServer>> webhook =
        op::webhook::WebhookServer::Create(*rest, std::move(wo));
    if (!webhook.ok()) return Fail("webhook server", webhook.status());
    if (absl::GetFlag(FLAGS_dra_claim_webhook)) {  // DRA: the claim's network as CEL (issue 15)
      op::dra::ClaimWebhookOptions dra_o{.spiderpool_namespace = ns,
                                         .sources = op::dra::ApiSources(*rest, &pools)};
      (*webhook)->server().Mutating(std::string(op::dra::kClaimWebhookPath),
                                    op::dra::ClaimHandler(std::move(dra_o)));
      manager.Add(op::dra::ConfigurationSync(
          *rest, {.service_namespace = ns, .service_name = absl::GetFlag(FLAGS_webhook_service_name),
                  .create = create_configs},
          [w = webhook->get()] { return w->ca_bundle_pem(); }));
    }
    if (manager.health() != nullptr) {
      (void)manager.health()->AddReadyzCheck("webhook", (*webhook)->HealthCheck());
    }
    if (create_configs) {
      manager.Add(std::make_unique<kube::FuncRunnable>(
          "webhook-server", /*needs_leader=*/false,
          [w = std::shared_ptr<op::webhook::WebhookServer>(std::move(*webhook))](
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
          }));
    } else {
      manager.Add(std::move(*webhook));
    }
  }
  manager.Add(kube::InformerRunnable(&pools));
  manager.Add(kube::InformerRunnable(&subnets));
  manager.Add(kube::InformerRunnable(&reserved));
  manager.Add(kube::InformerRunnable(&endpoints));
  manager.Add(kube::InformerRunnable(&pods));
  manager.Add(kube::InformerRunnable(&nodes));
  manager.Add(kube::InformerRunnable(&statefulsets));
  if (pod_resource_inject && absl::GetFlag(FLAGS_webhook_port) >= 0) {
    manager.Add(kube::InformerRunnable(&inject_smcs));
    manager.Add(kube::InformerRunnable(&inject_namespaces));
  }

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
