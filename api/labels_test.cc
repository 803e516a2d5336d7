#include "api/labels.h"

#include "gtest/gtest.h"

namespace spiderpool::api {
namespace {

Labels L(std::initializer_list<std::pair<const std::string, std::string>> l) { return Labels(l); }

TEST(LabelSelectorParse, EmptyMatchesEverything) {
  auto s = Selector::Parse("");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->Empty());
  EXPECT_TRUE(s->Matches(Labels{}));
  EXPECT_TRUE(s->Matches(L({{"a", "b"}})));
  EXPECT_TRUE(Selector::Parse("   ")->Empty());
}

TEST(LabelSelectorParse, AllOperators) {
  auto s = Selector::Parse("a=b,c!=d,e in (x,y),f notin (z),g,!h");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->requirements().size(), 6u);
  EXPECT_EQ(s->String(), "a=b,c!=d,e in (x,y),f notin (z),g,!h");
  Labels good = L({{"a", "b"}, {"c", "x"}, {"e", "y"}, {"f", "w"}, {"g", ""}});
  EXPECT_TRUE(s->Matches(good));
  Labels bad = good;
  bad["a"] = "c";
  EXPECT_FALSE(s->Matches(bad));
  bad = good;
  bad["c"] = "d";
  EXPECT_FALSE(s->Matches(bad));
  bad = good;
  bad.erase("c");  // != matches a missing label
  EXPECT_TRUE(s->Matches(bad));
  bad = good;
  bad["e"] = "q";
  EXPECT_FALSE(s->Matches(bad));
  bad = good;
  bad["f"] = "z";
  EXPECT_FALSE(s->Matches(bad));
  bad = good;
  bad.erase("f");  // notin matches a missing label
  EXPECT_TRUE(s->Matches(bad));
  bad = good;
  bad.erase("g");
  EXPECT_FALSE(s->Matches(bad));
  bad = good;
  bad["h"] = "1";
  EXPECT_FALSE(s->Matches(bad));
}

TEST(LabelSelectorParse, DoubleEqualsAndWhitespace) {
  auto s = Selector::Parse("  app == web ,  tier in ( a , b )  ");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->Matches(L({{"app", "web"}, {"tier", "b"}})));
  EXPECT_FALSE(s->Matches(L({{"app", "web"}, {"tier", "c"}})));
}

TEST(LabelSelectorParse, EmptyValue) {
  auto s = Selector::Parse("a=");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->Matches(L({{"a", ""}})));
  EXPECT_FALSE(s->Matches(L({{"a", "x"}})));
  EXPECT_FALSE(s->Matches(Labels{}));
}

TEST(LabelSelectorParse, PrefixedKeys) {
  auto s = Selector::Parse("spiderpool.spidernet.io/pool=p1");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->Matches(L({{"spiderpool.spidernet.io/pool", "p1"}})));
}

TEST(LabelSelectorParse, GreaterLess) {
  auto s = Selector::Parse("n>3,m<10");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->Matches(L({{"n", "4"}, {"m", "9"}})));
  EXPECT_FALSE(s->Matches(L({{"n", "3"}, {"m", "9"}})));
  EXPECT_FALSE(s->Matches(L({{"n", "x"}, {"m", "9"}})));
  EXPECT_FALSE(Selector::Parse("n>x").ok());
}

TEST(LabelSelectorParse, BadInput) {
  for (const char* bad : {"a=b,", ",a", "a b", "a in b", "a in (b", "a in ()", "!", "!a=b",
                          "a=b=c", "a in (b c)", "=b", "a=(", "-a=b", "a=-b", "a/b/c=d",
                          "Bad_Prefix.com/a=b", "a notin", "a===b", "(a)"}) {
    auto s = Selector::Parse(bad);
    EXPECT_FALSE(s.ok()) << "accepted: " << bad;
    if (!s.ok()) {
      EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_FALSE(s.status().message().empty());
    }
  }
  auto s = Selector::Parse("a in ()");
  EXPECT_NE(std::string(s.status().message()).find("can't be empty"), std::string::npos)
      << s.status();
  s = Selector::Parse("x=" + std::string(64, 'a'));
  EXPECT_NE(std::string(s.status().message()).find("63 characters"), std::string::npos)
      << s.status();
}

TEST(LabelSelectorJson, MatchLabelsAndExpressions) {
  auto j = base::ParseJson(R"({"matchLabels":{"app":"web"},"matchExpressions":[
      {"key":"tier","operator":"In","values":["fe","be"]},
      {"key":"legacy","operator":"DoesNotExist"},
      {"key":"zone","operator":"Exists"},
      {"key":"env","operator":"NotIn","values":["dev"]}]})");
  ASSERT_TRUE(j.ok());
  auto s = Selector::FromJson(*j);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->Matches(L({{"app", "web"}, {"tier", "fe"}, {"zone", "a"}})));
  EXPECT_FALSE(s->Matches(L({{"app", "web"}, {"tier", "fe"}, {"zone", "a"}, {"env", "dev"}})));
  EXPECT_FALSE(s->Matches(L({{"app", "web"}, {"tier", "fe"}, {"zone", "a"}, {"legacy", ""}})));
  EXPECT_FALSE(s->Matches(L({{"app", "web"}, {"tier", "xx"}, {"zone", "a"}})));
  EXPECT_FALSE(s->Matches(L({{"app", "web"}, {"tier", "fe"}})));
}

TEST(LabelSelectorJson, EmptyAndNull) {
  auto empty = Selector::FromJson(base::Json::object());
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->Matches(L({{"a", "b"}})));
  EXPECT_TRUE(empty->Matches(Labels{}));
  auto null = Selector::FromJson(nullptr);
  ASSERT_TRUE(null.ok());
  EXPECT_TRUE(null->MatchesNothing());
  EXPECT_FALSE(null->Matches(Labels{}));
}

TEST(LabelSelectorJson, BadInput) {
  for (const char* bad : {
           R"([])",
           R"({"matchLabels":{"a":1}})",
           R"({"matchLabels":[]})",
           R"({"matchExpressions":{}})",
           R"({"matchExpressions":[{"key":"a","operator":"Equals","values":["x"]}]})",
           R"({"matchExpressions":[{"key":"a","operator":"In"}]})",
           R"({"matchExpressions":[{"key":"a","operator":"In","values":[]}]})",
           R"({"matchExpressions":[{"key":"a","operator":"Exists","values":["x"]}]})",
           R"({"matchExpressions":[{"operator":"Exists"}]})",
           R"({"matchExpressions":[{"key":"a"}]})",
           R"({"matchExpressions":[{"key":"a b","operator":"Exists"}]})",
           R"({"matchExpressions":[{"key":"a","operator":"In","values":[1]}]})",
           R"({"selector":{}})",
       }) {
    auto j = base::ParseJson(bad);
    ASSERT_TRUE(j.ok()) << bad;
    auto s = Selector::FromJson(*j);
    EXPECT_FALSE(s.ok()) << "accepted: " << bad;
  }
  auto j = base::ParseJson(R"({"matchExpressions":[{"key":"a","operator":"Equals"}]})");
  auto s = Selector::FromJson(*j);
  EXPECT_NE(std::string(s.status().message()).find("matchExpressions[0].operator"),
            std::string::npos)
      << s.status();
}

TEST(LabelsOf, ReadsMetadataLabels) {
  auto j = base::ParseJson(R"({"metadata":{"labels":{"a":"b","n":1}}})");
  Labels l = LabelsOf(*j);
  EXPECT_EQ(l.size(), 1u);
  EXPECT_EQ(l["a"], "b");
  EXPECT_TRUE(LabelsOf(base::Json(3)).empty());
}

TEST(FieldSelector, ParseAndMatch) {
  auto s = FieldSelector::Parse("metadata.name=p1,spec.nodeName!=n2,metadata.namespace==default");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->requirements().size(), 3u);
  EXPECT_TRUE(s->Matches({{"metadata.name", "p1"},
                          {"spec.nodeName", "n1"},
                          {"metadata.namespace", "default"}}));
  EXPECT_FALSE(s->Matches({{"metadata.name", "p1"},
                           {"spec.nodeName", "n2"},
                           {"metadata.namespace", "default"}}));
  // A missing field compares as "".
  EXPECT_TRUE(s->Matches({{"metadata.name", "p1"}, {"metadata.namespace", "default"}}));
  EXPECT_EQ(s->String(), "metadata.name=p1,spec.nodeName!=n2,metadata.namespace=default");
}

TEST(FieldSelector, EmptyAndEscapes) {
  EXPECT_TRUE(FieldSelector::Parse("")->Empty());
  auto s = FieldSelector::Parse(R"(a=x\,y\=z\\)");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->requirements()[0].value, "x,y=z\\");
  EXPECT_EQ(s->String(), R"(a=x\,y\=z\\)");
  auto e = FieldSelector::Parse("spec.nodeName=");
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->Matches(std::map<std::string, std::string>{}));
}

TEST(FieldSelector, BadInput) {
  for (const char* bad : {"a", "=b", R"(a=b\q)", "a=b=c", R"(a=b\)", "metadata.name"}) {
    EXPECT_FALSE(FieldSelector::Parse(bad).ok()) << "accepted: " << bad;
  }
}

TEST(Selector, KeyAndValueRulesAreTheNameRules) {
  Selector s;
  absl::Status st = s.Add({"a/b/c", SelectorOperator::kExists, {}});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(std::string(st.message()).find("a qualified name must consist"), std::string::npos)
      << st;
  st = s.Add({"k", SelectorOperator::kIn, {"bad value"}});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(std::string(st.message()).find("a valid label must be an empty string"),
            std::string::npos)
      << st;
}

}  // namespace
}  // namespace spiderpool::api
