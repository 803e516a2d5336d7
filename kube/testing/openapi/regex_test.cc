#include "kube/testing/openapi/regex.h"

#include <string>

#include "gtest/gtest.h"

namespace spiderpool::kube::testing::openapi {
namespace {

TEST(RegexTest, SearchIsUnanchoredLikeGoMatchString) {
  auto re = Regex::Compile("[0-9]+");
  ASSERT_TRUE(re.ok()) << re.status();
  EXPECT_TRUE(re->Search("abc123"));
  EXPECT_FALSE(re->Search("abc"));
  EXPECT_EQ(re->pattern(), "[0-9]+");
}

TEST(RegexTest, AnchorsAndClasses) {
  auto re = Regex::Compile(R"(^[a-z0-9]([-a-z0-9]*[a-z0-9])?$)");
  ASSERT_TRUE(re.ok());
  EXPECT_TRUE(re->Search("macvlan-conf"));
  EXPECT_FALSE(re->Search("-bad"));
  EXPECT_FALSE(re->Search("Bad"));
  auto quantity = Regex::Compile(
      R"(^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$)");
  ASSERT_TRUE(quantity.ok()) << quantity.status();
  EXPECT_TRUE(quantity->Search("100Mi"));
  EXPECT_FALSE(quantity->Search("100MB"));
}

TEST(RegexTest, LeadingCaseInsensitiveFlag) {
  auto re = Regex::Compile("(?i)^abc$");
  ASSERT_TRUE(re.ok());
  EXPECT_TRUE(re->Search("ABC"));
  EXPECT_FALSE(re->Search("ABCD"));
}

TEST(RegexTest, TranslatesTextAnchors) {
  auto re = Regex::Compile(R"(\Aab\z)");
  ASSERT_TRUE(re.ok()) << re.status();
  EXPECT_TRUE(re->Search("ab"));
  EXPECT_FALSE(re->Search("xab"));
  // Inside a class \A is not an anchor; std::regex rejects it as an unknown escape or keeps it.
  auto in_class = Regex::Compile(R"([\]a])");
  ASSERT_TRUE(in_class.ok()) << in_class.status();
  EXPECT_TRUE(in_class->Search("]"));
}

TEST(RegexTest, RejectsWhatRe2Rejects) {
  EXPECT_FALSE(Regex::Compile(R"((a)\1)").ok());
  EXPECT_FALSE(Regex::Compile("a(?=b)").ok());
  EXPECT_FALSE(Regex::Compile("a(?!b)").ok());
  EXPECT_FALSE(Regex::Compile("(?<=a)b").ok());
  EXPECT_FALSE(Regex::Compile("[abc").ok());
  EXPECT_FALSE(Regex::Compile("a\\").ok());
  EXPECT_FALSE(Regex::Compile("(ab").ok());
}

TEST(RegexTest, RejectsRe2SyntaxWeCannotHonour) {
  EXPECT_FALSE(Regex::Compile(R"(\pL+)").ok());
  EXPECT_FALSE(Regex::Compile("(?P<name>a)").ok());
  EXPECT_FALSE(Regex::Compile("a(?i)b").ok());
  EXPECT_FALSE(Regex::Compile("(?s).").ok());
}

TEST(RegexTest, NonCapturingGroupsWork) {
  auto re = Regex::Compile("^(?:ab)+$");
  ASSERT_TRUE(re.ok());
  EXPECT_TRUE(re->Search("abab"));
  EXPECT_FALSE(re->Search("aba"));
}

TEST(RegexTest, LongInputDoesNotExhaustTheStack) {
  auto re = Regex::Compile("^(a|b)*c$");
  ASSERT_TRUE(re.ok());
  std::string s(200000, 'a');
  EXPECT_FALSE(re->Search(s));
  s += 'c';
  EXPECT_TRUE(re->Search(s));
}

}  // namespace
}  // namespace spiderpool::kube::testing::openapi
