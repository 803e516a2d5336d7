// The CNI runtime process of ipam_e2e: a program run through it gets its stdin, environment and
// argv, and its exit code and both outputs come back; a program that cannot run is an error.
#include "bench/cni_runtime.h"

#include <unistd.h>

#include <filesystem>
#include <memory>

#include "absl/time/clock.h"
#include "base/strings.h"
#include "base/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace spiderpool::bench {
namespace {

class CniRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_ = tmp_.Join("runtime.sock");
    auto p = base::Process::Start({.argv = {"bench/cni_runtime", socket_}});
    ASSERT_TRUE(p.ok()) << p.status();
    runtime_ = std::move(*p);
    for (int i = 0; i < 500 && !std::filesystem::exists(socket_); ++i) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    ASSERT_TRUE(std::filesystem::exists(socket_)) << "the runtime never listened";
  }
  void TearDown() override {
    runtime_.reset();  // SIGKILL
  }
  base::testing::TempDir tmp_{"cni-runtime"};  // before runtime_, whose socket is in it
  std::string socket_;
  std::unique_ptr<base::Process> runtime_;
};

TEST_F(CniRuntimeTest, RunsTheProgramWithItsInputsAndReturnsItsOutputs) {
  auto r = RunThroughRuntime(
      socket_, {.argv = {"/bin/sh", "-c", "cat; echo \"$CNI_COMMAND $1\" >&2; exit 3", "sh", "x"},
                .env = {{"CNI_COMMAND", "ADD"}},
                .stdin_data = "{\"cniVersion\":\"1.0.0\"}\n",
                .timeout = absl::Seconds(10)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->stdout_data, "{\"cniVersion\":\"1.0.0\"}\n");
  EXPECT_EQ(r->stderr_data, "ADD x\n");
}

TEST_F(CniRuntimeTest, ATimeoutKillsTheProgram) {
  auto r = RunThroughRuntime(socket_, {.argv = {"/bin/sleep", "30"},
                                       .timeout = absl::Milliseconds(200)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->timed_out);
}

TEST_F(CniRuntimeTest, AProgramThatCannotRunIsAnError) {
  auto r = RunThroughRuntime(socket_, {.argv = {tmp_.Join("no-such-plugin")}});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no-such-plugin"), std::string::npos) << r.status();
}

TEST_F(CniRuntimeTest, NoRuntimeIsUnavailable) {
  auto r = RunThroughRuntime(tmp_.Join("nobody.sock"), {.argv = {"/bin/true"}});
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
}

}  // namespace
}  // namespace spiderpool::bench
