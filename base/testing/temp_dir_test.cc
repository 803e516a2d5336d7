#include "base/testing/temp_dir.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "gtest/gtest.h"

namespace spiderpool::base::testing {
namespace {

namespace fs = std::filesystem;

TEST(TempDir, IsAnEmptyDirectoryUnderTmpNamedAfterItsTag) {
  TempDir tmp("tdtest");
  EXPECT_EQ(tmp.path().rfind("/tmp/sp-tdtest-", 0), 0u) << tmp.path();
  std::error_code ec;
  EXPECT_TRUE(fs::is_directory(tmp.path(), ec)) << ec.message();
  EXPECT_TRUE(fs::is_empty(tmp.path(), ec)) << ec.message();
}

TEST(TempDir, DefaultTagIsTest) {
  TempDir tmp;
  EXPECT_EQ(tmp.path().rfind("/tmp/sp-test-", 0), 0u) << tmp.path();
}

TEST(TempDir, TwoAreDifferentDirectories) {
  TempDir a("tdtest");
  TempDir b("tdtest");
  EXPECT_NE(a.path(), b.path());
}

TEST(TempDir, JoinAppendsTheNameAfterASlash) {
  TempDir tmp("tdtest");
  EXPECT_EQ(tmp.Join("x.sock"), tmp.path() + "/x.sock");
}

TEST(TempDir, RemovesItsTreeWhenItGoes) {
  std::string path;
  {
    TempDir tmp("tdtest");
    path = tmp.path();
    std::ofstream(tmp.Join("file")) << "data";
    ASSERT_TRUE(fs::create_directory(tmp.Join("sub")));
    std::ofstream(tmp.Join("sub/inner")) << "data";
    ASSERT_TRUE(fs::exists(tmp.Join("sub/inner")));
  }
  std::error_code ec;
  EXPECT_FALSE(fs::exists(path, ec)) << path;
  EXPECT_FALSE(ec) << ec.message();
}

}  // namespace
}  // namespace spiderpool::base::testing
