#include "operator/ipam/test_env.h"

#include <chrono>
#include <thread>

#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "kube/rest/errors.h"

namespace spiderpool::op::ipam::testing {

namespace {

constexpr char kCrdDir[] = "charts/spiderpool/crds";
constexpr char kPauseImage[] = "registry.k8s.io/pause:3.9";

template <typename T>
void StripAndDelete(const kube::Client<T>& client, const std::string& ns,
                    const std::string& selector, const std::string& finalizer) {
  auto list = client.List(ns, {.label_selector = selector});
  if (!list.ok()) return;
  for (T& obj : list->items) {
    if (obj.metadata.RemoveFinalizer(finalizer)) (void)client.Update(obj);
    (void)client.Delete(ns, obj.metadata.name);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<TestEnv>> TestEnv::Start() {
  std::unique_ptr<TestEnv> env(new TestEnv());
  SP_ASSIGN_OR_RETURN(env->cluster_, kube::testing::TestCluster::Start());
  SP_RETURN_IF_ERROR(env->cluster_->ApplyCRDs(kCrdDir));
  SP_ASSIGN_OR_RETURN(env->rest_, env->cluster_->NewRest());
  const std::string owned = base::StrCat(kOwnerLabel, "=", env->ns());
  auto opts = [&](std::string ns, std::string selector) {
    return kube::InformerOptions{.namespace_ = std::move(ns),
                                 .label_selector = std::move(selector),
                                 .registry = &env->registry_};
  };
  env->pools_ = std::make_unique<kube::Informer<api::SpiderIPPool>>(env->rest_, opts("", owned));
  env->subnets_ =
      std::make_unique<kube::Informer<api::SpiderSubnet>>(env->rest_, opts("", owned));
  env->reserved_ =
      std::make_unique<kube::Informer<api::SpiderReservedIP>>(env->rest_, opts("", owned));
  env->endpoints_ =
      std::make_unique<kube::Informer<api::SpiderEndpoint>>(env->rest_, opts(env->ns(), ""));
  env->pods_ = std::make_unique<kube::Informer<api::Pod>>(env->rest_, opts(env->ns(), ""));
  env->nodes_ = std::make_unique<kube::Informer<api::Node>>(env->rest_, opts("", ""));
  env->statefulsets_ =
      std::make_unique<kube::Informer<api::StatefulSet>>(env->rest_, opts(env->ns(), ""));
  return env;
}

TestEnv::~TestEnv() {
  if (cluster_ == nullptr || rest_ == nullptr) return;
  // A real cluster keeps what the test made: remove it (finalizers first). The loopback
  // server goes away with the cluster.
  if (cluster_->real_cluster()) {
    const std::string owned = base::StrCat(kOwnerLabel, "=", ns());
    const std::string fin(api::kSpiderFinalizer);
    StripAndDelete(kube::Client<api::SpiderIPPool>(rest_), "", owned, fin);
    StripAndDelete(kube::Client<api::SpiderSubnet>(rest_), "", owned, fin);
    StripAndDelete(kube::Client<api::SpiderReservedIP>(rest_), "", owned, fin);
    StripAndDelete(kube::Client<api::SpiderEndpoint>(rest_), ns(), "", fin);
    StripAndDelete(kube::Client<api::Pod>(rest_), ns(), "", kHoldFinalizer);
    kube::Client<api::Node> nodes(rest_);
    for (const std::string& n : nodes_created_) (void)nodes.Delete("", n);
  }
}

Caches TestEnv::caches() {
  return Caches{.pools = pools_.get(),
                .subnets = subnets_.get(),
                .reserved_ips = reserved_.get(),
                .endpoints = endpoints_.get(),
                .pods = pods_.get(),
                .nodes = nodes_.get(),
                .statefulsets = statefulsets_.get()};
}

TestEnv::Running::~Running() {
  for (auto& t : threads) t.request_stop();
  for (auto& t : threads) t.join();
}

std::unique_ptr<TestEnv::Running> TestEnv::RunInformers() {
  auto r = std::make_unique<Running>();
  auto run = [&](auto* informer) {
    r->threads.emplace_back([informer](std::stop_token s) { informer->Run(s); });
  };
  run(pools_.get());
  run(subnets_.get());
  run(reserved_.get());
  run(endpoints_.get());
  run(pods_.get());
  run(nodes_.get());
  run(statefulsets_.get());
  return r;
}

bool TestEnv::WaitSynced() {
  return WaitUntil([&] {
    return pools_->HasSynced() && subnets_->HasSynced() && reserved_->HasSynced() &&
           endpoints_->HasSynced() && pods_->HasSynced() && nodes_->HasSynced() &&
           statefulsets_->HasSynced();
  });
}

api::ObjectMeta TestEnv::ClusterMeta(const std::string& name) const {
  api::ObjectMeta m;
  m.name = name;
  m.labels[kOwnerLabel] = ns();
  return m;
}

absl::StatusOr<api::Node> TestEnv::CreateNode(const std::string& name, bool ready) {
  api::Node n;
  n.metadata = ClusterMeta(name);
  SP_ASSIGN_OR_RETURN(api::Node created, kube::Client<api::Node>(rest_).Create(n));
  nodes_created_.push_back(name);
  created.status.conditions.push_back(
      {.type = "Ready", .status = ready ? "True" : "False", .reason = "Test"});
  return kube::Client<api::Node>(rest_).UpdateStatus(created);
}

absl::StatusOr<api::Pod> TestEnv::CreatePod(const std::string& name, const PodSpec& spec) {
  api::Pod p;
  p.metadata.namespace_ = ns();
  p.metadata.name = name;
  p.metadata.owner_references = spec.owners;
  p.metadata.finalizers = spec.finalizers;
  p.spec.node_name = spec.node;
  p.spec.termination_grace_period_seconds = spec.termination_grace_period_seconds;
  api::Container c;
  c.name = "c";
  c.image = kPauseImage;
  p.spec.containers.push_back(c);
  return kube::Client<api::Pod>(rest_).Create(p);
}

absl::StatusOr<api::Pod> TestEnv::SetPodPhase(const std::string& name, const std::string& phase,
                                              absl::Time finished_at) {
  kube::Client<api::Pod> pods(rest_);
  absl::StatusOr<api::Pod> out;
  absl::Status s = kube::RetryOnConflict(kube::DefaultRetry(), [&]() -> absl::Status {
    SP_ASSIGN_OR_RETURN(api::Pod p, pods.Get(ns(), name));
    p.status.phase = phase;
    p.status.container_statuses.clear();
    api::ContainerStatus cs;
    cs.name = "c";
    cs.image = kPauseImage;
    if (phase == api::kPodSucceeded || phase == api::kPodFailed) {
      cs.unknown = {{"state",
                     {{"terminated",
                       {{"exitCode", phase == api::kPodSucceeded ? 0 : 1},
                        {"startedAt", api::FormatTime(finished_at - absl::Seconds(1))},
                        {"finishedAt", api::FormatTime(finished_at)}}}}}};
    }
    p.status.container_statuses.push_back(cs);
    out = pods.UpdateStatus(p);
    return out.status();
  });
  if (!s.ok()) return s;
  return out;
}

absl::Status TestEnv::DeletePod(const std::string& name) {
  // As the kubelet's last delete once the containers stopped: a plain DELETE of a pod bound
  // to a node only starts its graceful termination.
  absl::Status s = kube::Client<api::Pod>(rest_).Delete(ns(), name, {.grace_period_seconds = 0});
  return kube::IsNotFound(s) ? absl::OkStatus() : s;
}

absl::Status TestEnv::ReleasePod(const std::string& name) {
  kube::Client<api::Pod> pods(rest_);
  return kube::RetryOnConflict(kube::DefaultRetry(), [&]() -> absl::Status {
    auto p = pods.Get(ns(), name);
    if (!p.ok()) return kube::IsNotFound(p.status()) ? absl::OkStatus() : p.status();
    if (!p->metadata.RemoveFinalizer(kHoldFinalizer)) return absl::OkStatus();
    auto out = pods.Update(*p);
    return out.ok() || kube::IsNotFound(out.status()) ? absl::OkStatus() : out.status();
  });
}

absl::StatusOr<api::SpiderIPPool> TestEnv::CreatePool(const std::string& name,
                                                      const std::string& subnet,
                                                      std::vector<std::string> ips,
                                                      std::vector<std::string> exclude,
                                                      std::map<std::string, std::string> labels,
                                                      bool finalizer) {
  api::SpiderIPPool p;
  p.metadata = ClusterMeta(name);
  for (auto& [k, v] : labels) p.metadata.labels[k] = v;
  if (finalizer) p.metadata.finalizers.push_back(std::string(api::kSpiderFinalizer));
  p.spec.ip_version = subnet.find(':') == std::string::npos ? 4 : 6;
  p.spec.subnet = subnet;
  p.spec.ips = std::move(ips);
  p.spec.exclude_ips = std::move(exclude);
  return kube::Client<api::SpiderIPPool>(rest_).Create(p);
}

absl::Status TestEnv::EditRecords(const std::string& pool,
                                  const std::function<void(api::PoolIPAllocations*)>& fn,
                                  bool update_count) {
  kube::Client<api::SpiderIPPool> pools(rest_);
  base::BackoffPolicy retry = kube::DefaultRetry();
  retry.steps = 50;
  return kube::RetryOnConflict(retry, [&]() -> absl::Status {
    SP_ASSIGN_OR_RETURN(api::SpiderIPPool p, pools.Get("", pool));
    SP_ASSIGN_OR_RETURN(api::PoolIPAllocations recs, p.AllocatedIPs());
    fn(&recs);
    const auto count = p.status.allocated_ip_count;
    p.SetAllocatedIPs(recs);
    if (!update_count) p.status.allocated_ip_count = count;
    return pools.UpdateStatus(p).status();
  });
}

absl::StatusOr<api::PoolIPAllocations> TestEnv::Records(const std::string& pool) {
  SP_ASSIGN_OR_RETURN(api::SpiderIPPool p, GetPool(pool));
  return p.AllocatedIPs();
}

absl::StatusOr<api::SpiderIPPool> TestEnv::GetPool(const std::string& pool) {
  return kube::Client<api::SpiderIPPool>(rest_).Get("", pool);
}

absl::StatusOr<api::SpiderEndpoint> TestEnv::CreateEndpoint(
    const std::string& name, const std::string& uid, const std::string& node,
    const std::string& ipv4_cidr, const std::string& pool, const std::string& owner_type,
    const std::string& owner_name) {
  api::SpiderEndpoint ep;
  ep.metadata.namespace_ = ns();
  ep.metadata.name = name;
  ep.metadata.finalizers.push_back(std::string(api::kSpiderFinalizer));
  if (owner_type != "StatefulSet") {
    ep.metadata.owner_references.push_back({.api_version = "v1",
                                            .kind = "Pod",
                                            .name = name,
                                            .uid = uid,
                                            .controller = true,
                                            .block_owner_deletion = true});
  }
  api::IPAllocationDetail d;
  d.interface_ = "eth0";
  d.ipv4 = ipv4_cidr;
  d.ipv4_pool = pool;
  ep.status = api::WorkloadEndpointStatus{
      .current = {.uid = uid, .node = node, .ips = {d}},
      .owner_controller_type = owner_type,
      .owner_controller_name = owner_name.empty() ? name : owner_name};
  return kube::Client<api::SpiderEndpoint>(rest_).Create(ep);
}

absl::StatusOr<std::optional<api::SpiderEndpoint>> TestEnv::GetEndpoint(const std::string& name) {
  auto ep = kube::Client<api::SpiderEndpoint>(rest_).Get(ns(), name);
  if (ep.ok()) return std::optional<api::SpiderEndpoint>(std::move(*ep));
  if (kube::IsNotFound(ep.status())) return std::optional<api::SpiderEndpoint>();
  return ep.status();
}

absl::StatusOr<api::StatefulSet> TestEnv::CreateStatefulSet(const std::string& name,
                                                            int32_t replicas,
                                                            std::optional<int32_t> ordinals_start,
                                                            const std::string& node) {
  api::StatefulSet sts;
  sts.metadata.namespace_ = ns();
  sts.metadata.name = name;
  sts.spec.replicas = replicas;
  if (ordinals_start.has_value()) sts.spec.ordinals = api::StatefulSetOrdinals{*ordinals_start};
  sts.spec.service_name = name;
  sts.spec.pod_management_policy = "Parallel";
  sts.spec.selector = api::LabelSelector{.match_labels = {{"app", name}}};
  sts.spec.template_.metadata.labels["app"] = name;
  sts.spec.template_.spec.node_name = node;  // a real cluster binds them to our fake node
  sts.spec.template_.spec.termination_grace_period_seconds = 0;
  api::Container c;
  c.name = "c";
  c.image = kPauseImage;
  sts.spec.template_.spec.containers.push_back(c);
  return kube::Client<api::StatefulSet>(rest_).Create(sts);
}

absl::Status TestEnv::ScaleStatefulSet(const std::string& name, int32_t replicas) {
  return kube::Client<api::StatefulSet>(rest_)
      .Patch(ns(), name, kube::PatchType::kMerge, {{"spec", {{"replicas", replicas}}}})
      .status();
}

absl::StatusOr<api::SpiderReservedIP> TestEnv::CreateReservedIP(const std::string& name,
                                                                std::vector<std::string> ips) {
  api::SpiderReservedIP r;
  r.metadata = ClusterMeta(name);
  r.spec.ip_version = 4;
  r.spec.ips = std::move(ips);
  return kube::Client<api::SpiderReservedIP>(rest_).Create(r);
}

absl::StatusOr<api::SpiderSubnet> TestEnv::CreateSubnet(const std::string& name,
                                                        const std::string& subnet,
                                                        std::vector<std::string> ips,
                                                        bool finalizer) {
  api::SpiderSubnet s;
  s.metadata = ClusterMeta(name);
  if (finalizer) s.metadata.finalizers.push_back(std::string(api::kSpiderFinalizer));
  s.spec.ip_version = 4;
  s.spec.subnet = subnet;
  s.spec.ips = std::move(ips);
  return kube::Client<api::SpiderSubnet>(rest_).Create(s);
}

}  // namespace spiderpool::op::ipam::testing
