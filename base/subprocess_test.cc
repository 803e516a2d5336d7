#include "base/subprocess.h"

#include <signal.h>

#include "gtest/gtest.h"

namespace spiderpool::base {
namespace {

TEST(RunProcessTest, FeedsStdinAndCollectsOutputsAndExitCode) {
  auto r = RunProcess({.argv = {"/bin/sh", "-c", "cat; echo oops >&2; echo \"$FOO\"; exit 3"},
                       .env = {{"FOO", "bar"}},
                       .stdin_data = std::string(200000, 'x')});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->stdout_data, std::string(200000, 'x') + "bar\n");
  EXPECT_EQ(r->stderr_data, "oops\n");
  EXPECT_FALSE(r->timed_out);
}

TEST(RunProcessTest, KillsAtTheTimeout) {
  auto r = RunProcess({.argv = {"/bin/sleep", "30"}, .timeout = absl::Milliseconds(100)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->signal, SIGKILL);
}

TEST(RunProcessTest, MissingProgramIsAnError) {
  EXPECT_FALSE(RunProcess({.argv = {"/no/such/program"}}).ok());
}

TEST(ProcessTest, StartSignalWait) {
  auto p = Process::Start({.argv = {"/bin/sleep", "30"}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE((*p)->Running());
  (*p)->Signal(SIGTERM);
  EXPECT_EQ((*p)->Wait(), -1);
  EXPECT_FALSE((*p)->Running());
}

}  // namespace
}  // namespace spiderpool::base
