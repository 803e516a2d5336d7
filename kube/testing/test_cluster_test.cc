#include "kube/testing/test_cluster.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "base/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "kube/rest/client.h"
#include "kube/rest/errors.h"

namespace spiderpool::kube::testing {
namespace {

const api::ResourceInfo kNamespaces{.group = "", .version = "v1", .kind = "Namespace",
                                    .plural = "namespaces", .singular = "namespace"};
const api::ResourceInfo kWidgets{.group = "test.spiderpool.io", .version = "v1",
                                 .kind = "Widget", .plural = "widgets", .singular = "widget",
                                 .namespaced = true, .has_status = true};

TEST(TestClusterTest, StartsWithAFreshNamespace) {
  auto a = TestCluster::Start();
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = TestCluster::Start();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*a)->ns().rfind("sp-test-", 0), 0u) << (*a)->ns();
  EXPECT_NE((*a)->ns(), (*b)->ns());
  DynamicClient namespaces((*a)->rest(), kNamespaces);
  absl::StatusOr<base::Json> ns = namespaces.Get("", (*a)->ns());
  ASSERT_TRUE(ns.ok()) << ns.status();
  EXPECT_EQ((*ns)["metadata"]["name"], (*a)->ns());

  const char* env = std::getenv(kTestKubeconfigEnv);
  if (env == nullptr || *env == '\0') {
    ASSERT_NE((*a)->loopback(), nullptr);
    EXPECT_FALSE((*a)->real_cluster());
    EXPECT_EQ((*a)->config().server, (*a)->loopback()->url());
    EXPECT_NE((*a)->loopback(), (*b)->loopback());
  } else {
    EXPECT_EQ((*a)->loopback(), nullptr);
    EXPECT_TRUE((*a)->real_cluster());
  }
}

TEST(TestClusterTest, NewRestHasItsOwnLimits) {
  auto c = TestCluster::Start();
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<std::shared_ptr<RestClient>> rest = (*c)->NewRest(2, 3);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ((*rest)->rate_limiter().qps(), 2);
  EXPECT_EQ((*rest)->rate_limiter().burst(), 3);
  EXPECT_NE(rest->get(), (*c)->rest().get());
  EXPECT_TRUE((*rest)->Do({.path = "/version"}).ok());
}

TEST(TestClusterTest, ApplyCRDsEstablishesAndIsIdempotent) {
  auto c = TestCluster::Start();
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE((*c)->ApplyCRDs("kube/rest/testdata/crds").ok());
  ASSERT_TRUE((*c)->ApplyCRDs("kube/rest/testdata/crds").ok());  // again: replaced in place
  DynamicClient widgets((*c)->rest(), kWidgets);
  absl::StatusOr<base::Json> created =
      widgets.Create({{"metadata", {{"name", "w"}, {"namespace", (*c)->ns()}}},
                      {"spec", {{"color", "green"}}}});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)["spec"]["color"], "green");
  EXPECT_FALSE((*c)->ApplyCRDs("/nonexistent/dir").ok());
}

// The real-cluster path (SPIDERPOOL_TEST_KUBECONFIG) exercised against a loopback server: a
// second TestCluster on the first one's kubeconfig creates its own namespace and deletes it
// when destroyed.
TEST(TestClusterTest, RealClusterModeCreatesAndDeletesItsNamespace) {
  const char* env = std::getenv(kTestKubeconfigEnv);
  std::string saved = env != nullptr ? env : "";
  auto host = TestCluster::Start();
  ASSERT_TRUE(host.ok()) << host.status();
  base::testing::TempDir dir("test-cluster");
  std::string kubeconfig = dir.Join("kubeconfig");
  if ((*host)->loopback() != nullptr) {
    ASSERT_TRUE((*host)->loopback()->WriteKubeconfig(kubeconfig).ok());
  } else {
    kubeconfig = saved;
  }
  setenv(kTestKubeconfigEnv, kubeconfig.c_str(), 1);
  std::string ns;
  {
    auto guest = TestCluster::Start();
    ASSERT_TRUE(guest.ok()) << guest.status();
    EXPECT_EQ((*guest)->loopback(), nullptr);
    EXPECT_TRUE((*guest)->real_cluster());
    ns = (*guest)->ns();
    EXPECT_NE(ns, (*host)->ns());
    ASSERT_TRUE(DynamicClient((*host)->rest(), kNamespaces).Get("", ns).ok());
  }
  if (saved.empty()) {
    unsetenv(kTestKubeconfigEnv);
  } else {
    setenv(kTestKubeconfigEnv, saved.c_str(), 1);
  }
  absl::StatusOr<base::Json> got = DynamicClient((*host)->rest(), kNamespaces).Get("", ns);
  // Gone, or terminating (deletionTimestamp set) while a real cluster finalizes it.
  EXPECT_TRUE(kube::IsNotFound(got.status()) ||
              (got.ok() && (*got)["metadata"].contains("deletionTimestamp")))
      << got.status();
}

}  // namespace
}  // namespace spiderpool::kube::testing
