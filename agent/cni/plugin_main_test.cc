// PluginMain's watchdog, in a forked child (a death test): a run that blocks past the deadline
// it armed is cut off with the outcome it armed the watchdog with; a run that finishes in time
// prints its own outcome.

#include "agent/cni/plugin_main.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "base/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace spiderpool::agent::cni {
namespace {

using ::spiderpool::base::testing::ReadFile;

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Blocks for 30 s after arming the watchdog 10 ms ahead (+ its 0.5 s grace).
Outcome HangingRun(const Env&, const ProcessHooks& hooks) {
  hooks.deadline_known(steady_clock::now() + milliseconds(10),
                       Outcome{.exit_code = 11, .stdout_text = R"({"code":11,"msg":"timeout"})"});
  std::this_thread::sleep_for(std::chrono::seconds(30));
  return Outcome{.exit_code = 99, .stdout_text = "too late"};
}

// Finishes 10 ms after arming the watchdog 10 ms ahead: inside the grace.
Outcome PromptRun(const Env&, const ProcessHooks& hooks) {
  hooks.deadline_known(steady_clock::now() + milliseconds(10),
                       Outcome{.exit_code = 11, .stdout_text = "watchdog"});
  std::this_thread::sleep_for(milliseconds(10));
  return Outcome{.exit_code = 3, .stdout_text = "own outcome"};
}

// Runs PluginMain(run) with stdout sent to `path` (the death test's child).
[[noreturn]] void RunWithStdoutTo(const std::string& path, Outcome (*run)(const Env&, const ProcessHooks&)) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || dup2(fd, 1) < 0) std::_Exit(98);
  PluginMain(run);
}

TEST(PluginMainDeathTest, TheWatchdogPrintsItsOutcomeAndExitsAfterTheDeadline) {
  base::testing::TempDir dir;
  const std::string out = dir.path() + "/stdout";
  const auto t0 = steady_clock::now();
  EXPECT_EXIT(RunWithStdoutTo(out, &HangingRun), testing::ExitedWithCode(11), "");
  EXPECT_EQ(ReadFile(out), R"({"code":11,"msg":"timeout"})");
  // Not before the deadline's grace (the child ran at most as long as the parent waited).
  EXPECT_GE(steady_clock::now() - t0, milliseconds(500));
}

TEST(PluginMainDeathTest, ARunThatFinishesInTimePrintsItsOwnOutcome) {
  base::testing::TempDir dir;
  const std::string out = dir.path() + "/stdout";
  EXPECT_EXIT(RunWithStdoutTo(out, &PromptRun), testing::ExitedWithCode(3), "");
  EXPECT_EQ(ReadFile(out), "own outcome");
}

}  // namespace
}  // namespace spiderpool::agent::cni
