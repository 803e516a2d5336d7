#pragma once
// The set-up the integration tests of the Spider kinds share: a TestCluster (the loopback API
// server, or the real cluster of SPIDERPOOL_TEST_KUBECONFIG) with the chart's CRDs applied,
// and SpiderIPPools the test creates and deletes again.
//
//   class MyTest : public kube::testing::SpiderClusterTest {
//    protected:
//     void SetUp() override {
//       SpiderClusterTest::SetUp();
//       if (HasFatalFailure()) return;
//       auto pool = CreatePool("mine", "10.9.0.0/24", {"10.9.0.1-10.9.0.20"});
//       ASSERT_TRUE(pool.ok()) << pool.status();
//     }
//   };
//
// The test target needs data = ["//charts/spiderpool/crds"]. This is the one piece of
// kube/testing that knows a Spider kind (test support only).

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "kube/testing/test_cluster.h"

namespace spiderpool::kube::testing {

// The chart's CRDs, as a runfiles path.
inline constexpr char kSpiderCrdDir[] = "charts/spiderpool/crds";

class SpiderClusterTest : public ::testing::Test {
 protected:
  // Starts cluster_ and applies the Spider CRDs; a failure is fatal (HasFatalFailure()).
  void SetUp() override;
  // Deletes the pools CreatePool made (without waiting: on a real cluster a delete is not
  // immediate). Derived fixtures stop what uses them first, then call this.
  void TearDown() override;

  // Creates SpiderIPPool "<prefix>-<test namespace>" (unique on a shared cluster) with
  // spec.subnet and spec.ips; returns its name.
  absl::StatusOr<std::string> CreatePool(std::string_view prefix, std::string subnet,
                                         std::vector<std::string> ips);

  std::unique_ptr<TestCluster> cluster_;

 private:
  std::vector<std::string> pools_;
};

}  // namespace spiderpool::kube::testing
