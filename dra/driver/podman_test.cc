// A real CDI consumer on a spec NetDriver wrote: a claim allocated on the loopback API server,
// a SpiderClaimParameter (rdmaAcc=false) pinning cdiVersion 0.5.0 with the
// dra.spidernet.io/cdi-version annotation, Prepare through the driver, then podman 4.3 runs a
// busybox container with `--device k8s.netresources.spidernet.io/claim=<uid>` and sees the
// claim's environment. After Unprepare podman can no longer resolve the device.
// podman 4.3 reads only /etc/cdi and /var/run/cdi, so the driver writes into /var/run/cdi (the
// claim UID is unique; the file is removed by Unprepare and again in TearDown).
// Root + podman + runc + busybox only; skipped with the reason elsewhere.
#include <unistd.h>

#include <filesystem>
#include <optional>

#include "api/spider.h"
#include "base/strings.h"
#include "base/subprocess.h"
#include "base/testing/podman.h"
#include "base/testing/temp_dir.h"
#include "base/yaml.h"
#include "dra/driver/driver.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/client.h"
#include "kube/testing/test_cluster.h"

namespace spiderpool::dra::driver {
namespace {

using ::spiderpool::base::testing::ReadFile;

namespace fs = std::filesystem;
using base::Json;
using base::StrCat;
using ::testing::HasSubstr;

constexpr char kCrdDir[] = "charts/spiderpool/crds";

class DriverPodmanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = base::testing::PodmanSkipReason(); !why.empty()) GTEST_SKIP() << why;
    auto c = kube::testing::TestCluster::Start();
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
    ASSERT_TRUE(cluster_->ApplyCRDs(kCrdDir).ok());
    tmp_ = dir_.path();  // set past the skip and the cluster only: TearDown's guard
    auto podman = base::testing::PodmanSandbox::Create(tmp_);
    ASSERT_TRUE(podman.ok()) << podman.status();
    podman_.emplace(*std::move(podman));
    created_cdi_dir_ = !fs::exists(cdi::kDefaultSpecDir);
  }

  void TearDown() override {
    if (tmp_.empty()) return;
    std::error_code ec;
    if (!uid_.empty()) fs::remove(cdi::SpecWriter(cdi::kDefaultSpecDir).PathFor(uid_), ec);
    if (created_cdi_dir_) fs::remove(cdi::kDefaultSpecDir, ec);  // only if still empty
  }

  absl::StatusOr<base::ProcessResult> Run(std::vector<std::string> cmd) {
    return podman_->Run({"--network=none", "--device", StrCat(cdi::kKind, "=", uid_)}, cmd);
  }

  base::testing::TempDir dir_{"drvpod"};  // before podman_, whose files are in it
  std::unique_ptr<kube::testing::TestCluster> cluster_;
  std::string tmp_, uid_;
  bool created_cdi_dir_ = false;
  std::optional<base::testing::PodmanSandbox> podman_;
};

TEST_F(DriverPodmanTest, PodmanRunsWithTheSpecTheDriverWrote) {
  const std::string ns = cluster_->ns();
  api::SpiderMultusConfig smc;
  smc.metadata.name = "macvlan-eth1";
  smc.metadata.namespace_ = ns;
  smc.spec.cni_type = "macvlan";
  smc.spec.macvlan = api::SpiderMacvlanCniConfig{.master = {"eth1"}};
  ASSERT_TRUE(kube::Client<api::SpiderMultusConfig>(cluster_->rest()).Create(smc).ok());
  api::SpiderClaimParameter scp;
  scp.metadata.name = "scp";
  scp.metadata.namespace_ = ns;
  scp.metadata.annotations[std::string(api::kAnnoDRACDIVersion)] = "0.5.0";
  scp.spec.rdma_acc = false;
  scp.spec.default_nic = api::ClaimNic{.multus_name = "macvlan-eth1", .namespace_ = ns};
  ASSERT_TRUE(kube::Client<api::SpiderClaimParameter>(cluster_->rest()).Create(scp).ok());

  kube::DynamicClient claims(cluster_->rest(), api::resource_v1::ResourceClaim::Resource());
  Json claim = {{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceClaim"},
                {"metadata", {{"name", "nic"}, {"namespace", ns}}},
                {"spec",
                 {{"devices",
                   {{"requests",
                     {{{"name", "nic"}, {"exactly", {{"deviceClassName", "netresources.spidernet.io"}}}}}}}}}}};
  auto created = claims.Create(claim);
  ASSERT_TRUE(created.ok()) << created.status();
  uid_ = (*created)["metadata"]["uid"];
  Json obj = *created;
  obj["status"] = {
      {"allocation",
       {{"devices",
         {{"results", {{{"request", "nic"}, {"driver", kDriverName}, {"pool", "node-1"}, {"device", "eth1"}}}},
          {"config",
           {{{"source", "FromClaim"},
             {"opaque",
              {{"driver", kDriverName},
               {"parameters",
                {{"apiVersion", "spiderpool.spidernet.io/v2beta1"},
                 {"kind", "SpiderClaimParameter"},
                 {"name", "scp"}}}}}}}}}}}}};
  ASSERT_TRUE(claims.UpdateStatus(obj).ok());

  kube::metrics::Registry registry;
  NetDriver d(cluster_->rest(), {.node_name = "node-1",
                                 .plugin_dir = tmp_ + "/plugin",
                                 .cdi_dir = cdi::kDefaultSpecDir,
                                 .boot_id = "boot",
                                 .registry = &registry});
  kubeletplugin::ClaimRef ref{ns, uid_, "nic"};
  auto out = d.Prepare({ref});
  ASSERT_EQ(out[uid_].error, "");
  ASSERT_EQ(out[uid_].devices.size(), 1u);
  ASSERT_EQ(out[uid_].devices[0].cdi_device_ids[0], StrCat(cdi::kKind, "=", uid_));
  auto spec = base::ParseYaml(ReadFile(d.SpecPath(uid_)));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ((*spec)["cdiVersion"], "0.5.0");  // the annotation's pin

  auto run = Run({"/bin/busybox", "env"});
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->exit_code, 0) << run->stderr_data;
  EXPECT_THAT(run->stdout_data, HasSubstr("DRA_CLAIM_UID=" + uid_ + "\n"));
  EXPECT_THAT(run->stdout_data, HasSubstr(StrCat("SPIDERPOOL_DRA_CLAIM=", ns, "/nic\n")));
  EXPECT_THAT(run->stdout_data, HasSubstr(StrCat("SPIDERPOOL_DRA_DEFAULT_NETWORK=", ns, "/macvlan-eth1\n")));
  EXPECT_THAT(run->stdout_data, HasSubstr("SPIDERPOOL_DRA_MASTER_NICS=eth1\n"));
  EXPECT_THAT(run->stdout_data, ::testing::Not(HasSubstr("LD_PRELOAD")));  // rdmaAcc=false

  auto unprepared = d.Unprepare({ref});
  ASSERT_EQ(unprepared[uid_], "");
  auto gone = Run({"/bin/busybox", "true"});
  ASSERT_TRUE(gone.ok());
  EXPECT_NE(gone->exit_code, 0);
  EXPECT_THAT(gone->stderr_data, HasSubstr("unresolvable CDI devices"));
}

}  // namespace
}  // namespace spiderpool::dra::driver
