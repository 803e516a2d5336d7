#include "base/json.h"

#include <gtest/gtest.h>

namespace spiderpool::base {
namespace {

TEST(Json, ParseErrorsAreValuesNotExceptions) {
  EXPECT_TRUE(ParseJson(R"({"a":[1,2]})").ok());
  auto bad = ParseJson(R"({"a":)");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("invalid JSON"), std::string::npos);
}

TEST(Json, RejectsDeepNesting) {
  std::string deep(10000, '[');
  auto r = ParseJson(deep);
  ASSERT_FALSE(r.ok());
  std::string ok_depth = std::string(100, '[') + std::string(100, ']');
  EXPECT_TRUE(ParseJson(ok_depth).ok());
}

TEST(Json, DumpReplacesInvalidUtf8) {
  Json j = std::string("a\xff" "b");
  EXPECT_EQ(DumpJson(j), "\"a\xEF\xBF\xBD" "b\"");
}

TEST(Json, Patches) {
  Json doc = {{"a", 1}, {"b", {{"c", 2}}}};
  auto p = ApplyJsonPatch(doc, Json::parse(R"([{"op":"replace","path":"/a","value":5}])"));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)["a"], 5);
  EXPECT_FALSE(ApplyJsonPatch(doc, Json::parse(R"([{"op":"remove","path":"/zz"}])")).ok());
  EXPECT_FALSE(ApplyJsonPatch(doc, Json::parse(R"({"op":"remove"})")).ok());
  Json m = ApplyMergePatch(doc, Json::parse(R"({"b":{"c":null,"d":3}})"));
  EXPECT_EQ(m, Json::parse(R"({"a":1,"b":{"d":3}})"));
}

}  // namespace
}  // namespace spiderpool::base
