#include "kube/testing/spider_cluster.h"

#include <utility>

#include "api/spider.h"
#include "base/strings.h"
#include "kube/rest/client.h"

namespace spiderpool::kube::testing {

void SpiderClusterTest::SetUp() {
  absl::StatusOr<std::unique_ptr<TestCluster>> c = TestCluster::Start();
  ASSERT_TRUE(c.ok()) << c.status();
  cluster_ = *std::move(c);
  absl::Status crds = cluster_->ApplyCRDs(kSpiderCrdDir);
  ASSERT_TRUE(crds.ok()) << crds;
}

void SpiderClusterTest::TearDown() {
  if (cluster_ == nullptr) return;
  for (const std::string& name : pools_) {
    (void)Client<api::SpiderIPPool>(cluster_->rest()).Delete("", name);
  }
}

absl::StatusOr<std::string> SpiderClusterTest::CreatePool(std::string_view prefix,
                                                          std::string subnet,
                                                          std::vector<std::string> ips) {
  api::SpiderIPPool pool;
  pool.metadata.name = base::StrCat(prefix, "-", cluster_->ns());
  pool.spec.subnet = std::move(subnet);
  pool.spec.ips = std::move(ips);
  absl::StatusOr<api::SpiderIPPool> created = Client<api::SpiderIPPool>(cluster_->rest()).Create(pool);
  if (!created.ok()) return created.status();
  pools_.push_back(created->metadata.name);
  return created->metadata.name;
}

}  // namespace spiderpool::kube::testing
