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

TEST(Json, ParsesWideObjectsOfObjectsAndKeepsLimits) {
  // Many object members (a big status.allocatedIPs): parsed in one pass, values intact.
  std::string text = "{";
  for (int i = 0; i < 5000; ++i) {
    text += (i ? ",\"" : "\"") + std::to_string(i) + "\":{\"pod\":\"p" + std::to_string(i) +
            "\",\"x\":[1,{\"y\":null}]}";
  }
  text += "}";
  auto j = ParseJson(text);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->size(), 5000u);
  EXPECT_EQ((*j)["4999"]["pod"], "p4999");
  EXPECT_TRUE((*j)["17"]["x"][1]["y"].is_null());
  // Depth counts objects and arrays alike; the message names the limit.
  std::string deep;
  for (int i = 0; i < kMaxJsonDepth + 1; ++i) deep += "{\"a\":";
  auto r = ParseJson(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "invalid JSON: nested deeper than 128 levels");
  std::string at_limit = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(ParseJson(at_limit).ok());
  // Trailing text is an error (strict), as are comments.
  EXPECT_FALSE(ParseJson("[1] x").ok());
  EXPECT_FALSE(ParseJson("[1] // c").ok());
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
