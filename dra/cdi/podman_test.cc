// A real CDI consumer: podman 4.3 resolves `--device k8s.netresources.spidernet.io/claim=<uid>`
// from the spec file SpecWriter writes and injects its env and mounts into a container run from
// a busybox rootfs. podman 4.3 has no `cdi_spec_dirs` setting in containers.conf (checked: the
// key is absent from its binary; it reads only /etc/cdi and /var/run/cdi), so the test writes
// into /var/run/cdi under a unique claim UID and removes the file afterwards.
// Root + podman + runc + busybox only; skipped with the reason elsewhere.
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <fstream>
#include <random>

#include "base/strings.h"
#include "base/subprocess.h"
#include "base/testing/podman.h"
#include "base/testing/temp_dir.h"
#include "dra/cdi/spec.h"
#include "dra/cdi/writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spiderpool::dra::cdi {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

std::string RandomUID() {
  // UUID-shaped, starting with a digit so the 0.5.0 rule is exercised.
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd() ^ ::getpid());
  std::string hex;
  for (int i = 0; i < 32; ++i) hex += "0123456789abcdef"[rng() % 16];
  hex[0] = "0123456789"[rng() % 10];
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20);
}

class CdiPodmanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = base::testing::PodmanSkipReason(); !why.empty()) GTEST_SKIP() << why;
    tmp_ = dir_.path();  // set past the skip only: TearDown's guard
    auto podman = base::testing::PodmanSandbox::Create(tmp_);
    ASSERT_TRUE(podman.ok()) << podman.status();
    podman_.emplace(*std::move(podman));
    fs::create_directories(podman_->rootfs() + "/opt");
    WriteFile(tmp_ + "/librdma-fake.so", "fake rdma library\n");
    created_cdi_dir_ = !fs::exists(kDefaultSpecDir);
    uid_ = RandomUID();
  }

  void TearDown() override {
    if (tmp_.empty()) return;
    EXPECT_TRUE(writer_.Remove(uid_).ok());
    std::error_code ec;
    if (created_cdi_dir_) fs::remove(kDefaultSpecDir, ec);  // only if still empty
  }

  // --network=none: no host bridge. `debug` only where a reason must be read: it makes conmon
  // log to syslog, which costs ~20 s per run here.
  absl::StatusOr<base::ProcessResult> RunWithDevice(std::vector<std::string> cmd,
                                                    bool debug = false) {
    if (!debug) {
      return podman_->Run({"--network=none", "--device", base::StrCat(kKind, "=", uid_)}, cmd);
    }
    std::vector<std::string> args = {"--log-level=debug", "run", "--rm", "--network=none",
                                     "--device", base::StrCat(kKind, "=", uid_), "--rootfs",
                                     podman_->rootfs()};
    args.insert(args.end(), cmd.begin(), cmd.end());
    return podman_->Podman(args);
  }

  base::testing::TempDir dir_{"cdipod"};  // before podman_, whose files are in it
  std::string tmp_, uid_;
  bool created_cdi_dir_ = false;
  SpecWriter writer_{kDefaultSpecDir};
  std::optional<base::testing::PodmanSandbox> podman_;
};

TEST_F(CdiPodmanTest, PodmanInjectsTheClaimEnvAndMount) {
  auto spec = BuildSpec({.claim_uid = uid_,
                         .env = {{"SPIDER_IP", "10.6.0.10/24"}},
                         .mounts = {{.host_path = tmp_ + "/librdma-fake.so",
                                     .container_path = "/opt/librdma-fake.so",
                                     .options = {"ro", "nosuid", "nodev", "bind"}}}});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->version, "0.5.0");  // the UID starts with a digit
  ASSERT_TRUE(writer_.Write(*spec).ok());
  ASSERT_TRUE(fs::exists(writer_.PathFor(uid_)));
  // This busybox has no printenv applet: `env` prints the same.
  auto run = RunWithDevice({"/bin/busybox", "env"});
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->exit_code, 0) << run->stderr_data;
  EXPECT_THAT(run->stdout_data, HasSubstr("DRA_CLAIM_UID=" + uid_ + "\n"));
  EXPECT_THAT(run->stdout_data, HasSubstr("SPIDER_IP=10.6.0.10/24\n"));
  auto cat = RunWithDevice({"/bin/busybox", "cat", "/opt/librdma-fake.so"});
  ASSERT_TRUE(cat.ok()) << cat.status();
  ASSERT_EQ(cat->exit_code, 0) << cat->stderr_data;
  EXPECT_EQ(cat->stdout_data, "fake rdma library\n");
  // Read-only bind mount.
  auto write = RunWithDevice({"/bin/busybox", "sh", "-c", "echo x > /opt/librdma-fake.so"});
  ASSERT_TRUE(write.ok());
  EXPECT_NE(write->exit_code, 0);
  // After Remove the device is gone for podman too.
  ASSERT_TRUE(writer_.Remove(uid_).ok());
  auto gone = RunWithDevice({"/bin/busybox", "true"});
  ASSERT_TRUE(gone.ok());
  EXPECT_NE(gone->exit_code, 0);
  EXPECT_THAT(gone->stderr_data, HasSubstr("unresolvable CDI devices"));
}

// Why the default is capped at 0.5.0: podman 4.3's CDI library rejects a 0.6.0 file.
TEST_F(CdiPodmanTest, PinnedVersion060IsRejectedByPodman) {
  auto spec = BuildSpec({.claim_uid = uid_, .version_pin = "0.6.0"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->version, "0.6.0");
  ASSERT_TRUE(writer_.Write(*spec).ok());
  auto run = RunWithDevice({"/bin/busybox", "true"}, /*debug=*/true);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_NE(run->exit_code, 0);
  EXPECT_THAT(run->stderr_data, HasSubstr("unresolvable CDI devices"));
  EXPECT_THAT(run->stderr_data, HasSubstr("invalid version \\\"0.6.0\\\""));
}

}  // namespace
}  // namespace spiderpool::dra::cdi
