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
  EXPECT_TRUE(ParseLogLevel("Panic", &l));
  EXPECT_EQ(l, LogLevel::kError);
  EXPECT_FALSE(ParseLogLevel("loud", &l));
}

// A status is logged as "CODE: message": payloads (kube/rest puts the whole metav1.Status JSON
// in one) stay out of the line.
TEST(Log, StatusesWithoutPayloads) {
  std::vector<std::string> lines;
  SetLogSink([&](std::string_view l) { lines.emplace_back(l); });
  absl::Status s = absl::AbortedError("the object has been modified");
  s.SetPayload("spiderpool.io/kube/status", absl::Cord(R"({"kind":"Status","code":409})"));
  SP_LOG(Warning).Msg("write failed").KV("error", s);
  SP_LOG(Warning).Msg("fine").KV("error", absl::OkStatus());
  SetLogSink(nullptr);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find(R"(error="ABORTED: the object has been modified")"), std::string::npos)
      << lines[0];
  EXPECT_EQ(lines[0].find("kind"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("error=OK"), std::string::npos) << lines[1];
  EXPECT_EQ(StatusText(s), "ABORTED: the object has been modified");
}

}  // namespace
}  // namespace spiderpool::base
