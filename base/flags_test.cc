#include "base/flags.h"

#include <cstdlib>

#include "base/log.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spiderpool::base {
namespace {

constexpr char kVar[] = "SPIDERPOOL_TEST_LOG_LEVEL";

// The chart's `debug.logLevel` reaches the daemons as $SPIDERPOOL_LOG_LEVEL.
TEST(SetLogLevelFromEnv, AppliesTheLevelAndRefusesAnUnknownOne) {
  SetLogLevel(LogLevel::kInfo);
  unsetenv(kVar);
  EXPECT_TRUE(SetLogLevelFromEnv(kVar).ok());
  EXPECT_EQ(GetLogLevel(), LogLevel::kInfo);  // unset: unchanged

  setenv(kVar, "debug", 1);
  EXPECT_TRUE(SetLogLevelFromEnv(kVar).ok());
  EXPECT_EQ(GetLogLevel(), LogLevel::kDebug);

  setenv(kVar, "loud", 1);
  absl::Status s = SetLogLevelFromEnv(kVar);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), testing::HasSubstr("$SPIDERPOOL_TEST_LOG_LEVEL=\"loud\""));
  EXPECT_EQ(GetLogLevel(), LogLevel::kDebug);  // a bad value changes nothing

  unsetenv(kVar);
  SetLogLevel(LogLevel::kInfo);
}

}  // namespace
}  // namespace spiderpool::base
