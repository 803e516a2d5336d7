#pragma once
// One fixture for integration tests, so the same test runs against the loopback API server
// (default) or a real cluster: set SPIDERPOOL_TEST_KUBECONFIG=/path/to/kubeconfig.
//
//   auto cluster = TestCluster::Start();          // ASSERT_TRUE(cluster.ok())
//   kube::Client<api::Lease> leases((*cluster)->rest());
//   ... use (*cluster)->ns() for namespaced objects ...
//   if ((*cluster)->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
//
// On a real cluster it creates a namespace `sp-test-<random>` and deletes it at the end; on
// the loopback server it creates the same kind of namespace, so tests never assume "default".

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "kube/rest/client.h"
#include "kube/rest/config.h"
#include "kube/testing/apiserver.h"

namespace spiderpool::kube::testing {

inline constexpr char kTestKubeconfigEnv[] = "SPIDERPOOL_TEST_KUBECONFIG";

class TestCluster {
 public:
  // `options` configure the loopback server when no real cluster is given.
  static absl::StatusOr<std::unique_ptr<TestCluster>> Start(LoopbackOptions options = {});
  ~TestCluster();  // deletes the test namespace (best effort), stops the loopback server

  const Config& config() const { return config_; }
  // A fresh client (each has its own rate limiter) for this cluster.
  absl::StatusOr<std::shared_ptr<RestClient>> NewRest(double qps = 1000, int burst = 1000) const;
  // A shared client with generous limits for test setup.
  const std::shared_ptr<RestClient>& rest() const { return rest_; }
  const std::string& ns() const { return ns_; }
  // nullptr on a real cluster.
  LoopbackApiServer* loopback() const { return loopback_.get(); }
  bool real_cluster() const { return loopback_ == nullptr; }
  // A kubeconfig path for processes the test starts: the loopback server's, written into
  // `dir`, or the real cluster's (SPIDERPOOL_TEST_KUBECONFIG).
  absl::StatusOr<std::string> KubeconfigFor(const std::string& dir) const;

  // Creates (or replaces) every CustomResourceDefinition in the YAML files of `dir` and
  // waits (bounded) until each is Established. keep_existing: a CRD that already exists is
  // left as it is (stand-ins for another project's CRDs must not replace a real cluster's).
  struct ApplyOptions {
    bool keep_existing = false;
  };
  absl::Status ApplyCRDs(const std::string& dir, ApplyOptions options) const;
  absl::Status ApplyCRDs(const std::string& dir) const { return ApplyCRDs(dir, ApplyOptions{}); }

 private:
  TestCluster() = default;
  std::unique_ptr<LoopbackApiServer> loopback_;
  Config config_;
  std::shared_ptr<RestClient> rest_;
  std::string ns_;
};

}  // namespace spiderpool::kube::testing
