#pragma once
// Test fixture of operator/ipam's integration tests: a kube::testing::TestCluster (the loopback
// API server, or a real cluster with SPIDERPOOL_TEST_KUBECONFIG) with the chart's CRDs, the
// informers of Caches scoped to this test (namespaced kinds in the test namespace;
// cluster-scoped Spider objects by the label kOwnerLabel=<namespace>, so a real cluster's own
// pools are never touched), and builders for the objects the tests need.
//
// Lifetimes: construct the controller under test after the TestEnv and before RunInformers();
// keep the returned Running handle (and the controller's Run thread) declared after the
// controller, so they stop first.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/apps.h"
#include "api/core.h"
#include "api/spider.h"
#include "base/testing/wait.h"
#include "kube/informer/informer.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/client.h"
#include "kube/testing/test_cluster.h"
#include "operator/ipam/caches.h"

namespace spiderpool::op::ipam::testing {

inline constexpr char kOwnerLabel[] = "spiderpool.test/owner";
// A finalizer the tests put on pods to keep them Terminating (the loopback server deletes a
// pod at once; a real cluster would too without a kubelet).
inline constexpr char kHoldFinalizer[] = "spiderpool.test/hold";

using ::spiderpool::base::testing::WaitUntil;

class TestEnv {
 public:
  static absl::StatusOr<std::unique_ptr<TestEnv>> Start();
  ~TestEnv();  // best-effort cleanup of the cluster-scoped objects and held finalizers

  const std::string& ns() const { return cluster_->ns(); }
  const std::shared_ptr<kube::RestClient>& rest() const { return rest_; }
  kube::testing::TestCluster& cluster() { return *cluster_; }
  kube::metrics::Registry& registry() { return registry_; }
  Caches caches();
  // A cluster-unique name for a cluster-scoped object: "<ns>-<suffix>".
  std::string Name(const std::string& suffix) const { return ns() + "-" + suffix; }

  // Runs every informer on its own thread until the handle is destroyed.
  class Running {
   public:
    ~Running();  // requests stop and joins
    std::vector<std::jthread> threads;
  };
  std::unique_ptr<Running> RunInformers();
  bool WaitSynced();

  // ---- builders (create on the server, return what it stored) ----
  absl::StatusOr<api::Node> CreateNode(const std::string& name, bool ready = true);
  struct PodSpec {
    std::string node;
    std::vector<api::OwnerReference> owners;
    std::vector<std::string> finalizers;
    std::optional<int64_t> termination_grace_period_seconds = 0;
  };
  absl::StatusOr<api::Pod> CreatePod(const std::string& name, const PodSpec& spec);
  // Sets status.phase (and, for Succeeded/Failed, a container finishedAt of `finished_at`).
  absl::StatusOr<api::Pod> SetPodPhase(const std::string& name, const std::string& phase,
                                       absl::Time finished_at = absl::Now());
  // Deletes the pod for good: gracePeriodSeconds 0, as the kubelet once the containers stopped.
  absl::Status DeletePod(const std::string& name);
  // Removes kHoldFinalizer (the pod is then gone if it was being deleted).
  absl::Status ReleasePod(const std::string& name);

  absl::StatusOr<api::SpiderIPPool> CreatePool(const std::string& name, const std::string& subnet,
                                               std::vector<std::string> ips,
                                               std::vector<std::string> exclude = {},
                                               std::map<std::string, std::string> labels = {},
                                               bool finalizer = true);
  // Read-modify-write of status.allocatedIPs (RetryOnConflict); `fn` edits the records and may
  // set *counts_too=false to leave allocatedIPCount as it was (to simulate drift).
  absl::Status EditRecords(const std::string& pool,
                           const std::function<void(api::PoolIPAllocations*)>& fn,
                           bool update_count = true);
  absl::StatusOr<api::PoolIPAllocations> Records(const std::string& pool);
  absl::StatusOr<api::SpiderIPPool> GetPool(const std::string& pool);

  // A SpiderEndpoint for pod `name` (uid, one IPv4 on eth0), with the spiderpool finalizer.
  // StatefulSet endpoints get no ownerReference (as the agent does).
  absl::StatusOr<api::SpiderEndpoint> CreateEndpoint(const std::string& name,
                                                     const std::string& uid,
                                                     const std::string& node,
                                                     const std::string& ipv4_cidr,
                                                     const std::string& pool,
                                                     const std::string& owner_type = "Pod",
                                                     const std::string& owner_name = "");
  // nullopt when absent (NotFound).
  absl::StatusOr<std::optional<api::SpiderEndpoint>> GetEndpoint(const std::string& name);

  absl::StatusOr<api::StatefulSet> CreateStatefulSet(const std::string& name, int32_t replicas,
                                                     std::optional<int32_t> ordinals_start,
                                                     const std::string& node);
  absl::Status ScaleStatefulSet(const std::string& name, int32_t replicas);

  absl::StatusOr<api::SpiderReservedIP> CreateReservedIP(const std::string& name,
                                                         std::vector<std::string> ips);
  absl::StatusOr<api::SpiderSubnet> CreateSubnet(const std::string& name, const std::string& subnet,
                                                 std::vector<std::string> ips,
                                                 bool finalizer = true);

  // A test-owned metadata skeleton for cluster-scoped Spider objects.
  api::ObjectMeta ClusterMeta(const std::string& name) const;

 private:
  TestEnv() = default;

  std::unique_ptr<kube::testing::TestCluster> cluster_;
  std::shared_ptr<kube::RestClient> rest_;
  kube::metrics::Registry registry_;
  std::unique_ptr<kube::Informer<api::SpiderIPPool>> pools_;
  std::unique_ptr<kube::Informer<api::SpiderSubnet>> subnets_;
  std::unique_ptr<kube::Informer<api::SpiderReservedIP>> reserved_;
  std::unique_ptr<kube::Informer<api::SpiderEndpoint>> endpoints_;
  std::unique_ptr<kube::Informer<api::Pod>> pods_;
  std::unique_ptr<kube::Informer<api::Node>> nodes_;
  std::unique_ptr<kube::Informer<api::StatefulSet>> statefulsets_;
  std::vector<std::string> nodes_created_;
};

}  // namespace spiderpool::op::ipam::testing
