#include "base/json.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

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

// ForEachJsonMember hands over exactly what ParseJson would hold, member by member.
TEST(Json, MembersOneAtATimeEqualTheDom) {
  const std::string text =
      R"({"a":{"pod":"x","n":[1,2.5,-3,{"d":null}]},"b":"s","c":7,"d":null,"e":[],"f":{},)"
      R"("g":true,"h":1.25,"i":[[{"j":"k"}]],"a2":{"u":18446744073709551615}})";
  auto dom = ParseJson(text);
  ASSERT_TRUE(dom.ok());
  Json rebuilt = Json::object();
  std::vector<std::string> order;
  ASSERT_TRUE(ForEachJsonMember(text, [&](std::string k, Json v) {
                order.push_back(k);
                rebuilt[k] = std::move(v);
              }).ok());
  EXPECT_EQ(rebuilt, *dom);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b", "c", "d", "e", "f", "g", "h", "i", "a2"}));

  int calls = 0;
  auto count = [&](std::string, Json) { ++calls; };
  EXPECT_TRUE(ForEachJsonMember("null", count).ok());
  EXPECT_TRUE(ForEachJsonMember("{}", count).ok());
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(ForEachJsonMember("[1]", count).message(), "expected a JSON object, got array");
  EXPECT_EQ(ForEachJsonMember(R"("s")", count).message(), "expected a JSON object, got string");
  EXPECT_EQ(ForEachJsonMember("3", count).message(), "expected a JSON object, got number");
  EXPECT_FALSE(ForEachJsonMember(R"({"a":{"b":1})", count).ok());  // unterminated
  EXPECT_FALSE(ForEachJsonMember(R"({"a":1} x)", count).ok());     // trailing text
  std::string deep = "{\"a\":";
  for (int i = 0; i < kMaxJsonDepth + 1; ++i) deep += "[";
  EXPECT_EQ(ForEachJsonMember(deep, count).message(),
            "invalid JSON: nested deeper than 128 levels");
}

// Fuzz-style: byte mutations of a status-map-like document. ForEachJsonMember never crashes and
// agrees with ParseJson: both accept (and then hold the same members) or both reject.
TEST(Json, MemberStreamAgreesWithTheDomOnMutatedInput) {
  const std::string seed =
      R"({"10.0.0.1":{"pod":"ns/a","podUid":"u1","node":"n1"},"10.0.0.2":{"pod":"","podUid":"",)"
      R"("node":"n2"},"k":[1,{"x":[true,null,-2.5e3]}],"s":"\u00e9\"q"})";
  const std::string alphabet = "{}[]:,\"\\ 0123456789.-eEtrufalsn\x00\xff";
  std::mt19937 rng(20261121);
  int accepted = 0;
  for (int i = 0; i < 10000; ++i) {
    std::string text = seed;
    for (int edits = 1 + static_cast<int>(rng() % 4); edits > 0 && !text.empty(); --edits) {
      const size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: text.erase(at, 1 + rng() % 3); break;
        default: text.insert(at, 1, alphabet[rng() % alphabet.size()]);
      }
    }
    auto dom = ParseJson(text);
    Json rebuilt = Json::object();
    absl::Status streamed = ForEachJsonMember(text, [&](std::string k, Json v) { rebuilt[k] = std::move(v); });
    const bool dom_object = dom.ok() && (dom->is_object() || dom->is_null());
    ASSERT_EQ(streamed.ok(), dom_object) << text << "\n" << streamed;
    if (streamed.ok() && dom->is_object()) {
      ASSERT_EQ(rebuilt, *dom) << text;
      ++accepted;
    }
  }
  EXPECT_GT(accepted, 100) << "the mutations should leave some documents valid";
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
