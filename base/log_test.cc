#include "base/log.h"

#include <gtest/gtest.h>

#include <vector>

namespace spiderpool::base {
namespace {

TEST(Log, KeyValueLinesAndLevels) {
  std::vector<std::string> lines;
  SetLogSink([&](std::string_view l) { lines.emplace_back(l); });
  SetLogLevel(LogLevel::kInfo);
  SP_LOG(Info).Msg("reconciled pool").KV("controller", "ippool").KV("count", 3);
  SP_LOG(Debug).Msg("hidden");
  SP_VLOG(2).Msg("hidden too");
  SetLogVerbosity(2);
  SP_VLOG(2).Msg("shown");
  SetLogVerbosity(0);
  SetLogSink(nullptr);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0][0], 'I');
  EXPECT_NE(lines[0].find(" msg=\"reconciled pool\" controller=ippool count=3"), std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find("msg=shown"), std::string::npos);
  LogLevel l;
  EXPECT_TRUE(ParseLogLevel("WARN", &l));
  EXPECT_EQ(l, LogLevel::kWarning);
  EXPECT_FALSE(ParseLogLevel("loud", &l));
}

}  // namespace
}  // namespace spiderpool::base
