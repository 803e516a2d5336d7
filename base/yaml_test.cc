#include "base/yaml.h"

#include <gtest/gtest.h>

namespace spiderpool::base {
namespace {

TEST(Yaml, ResolvesScalarsLikeKubernetes) {
  auto j = ParseYaml(R"(
a: 1
b: "1"
c: true
d: 'yes'
e: yes
f: ~
g: 1.5
h: 10.0.0.1
i: [x, 2]
)");
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ((*j)["a"], 1);
  EXPECT_EQ((*j)["b"], "1");
  EXPECT_EQ((*j)["c"], true);
  EXPECT_EQ((*j)["d"], "yes");
  EXPECT_EQ((*j)["e"], true);
  EXPECT_TRUE((*j)["f"].is_null());
  EXPECT_EQ((*j)["g"], 1.5);
  EXPECT_EQ((*j)["h"], "10.0.0.1");
  EXPECT_EQ((*j)["i"], Json::parse(R"(["x",2])"));
}

TEST(Yaml, MultipleDocumentsAndErrors) {
  auto docs = ParseYamlDocuments("a: 1\n---\n---\nb: 2\n");
  ASSERT_TRUE(docs.ok());
  EXPECT_EQ(docs->size(), 2u);
  EXPECT_FALSE(ParseYaml("a: [1, 2").ok());
  EXPECT_FALSE(ParseYaml("a: 1\n---\nb: 2\n").ok());
}

}  // namespace
}  // namespace spiderpool::base

namespace spiderpool::base {
namespace {

TEST(Yaml, MalformedInputEndsQuickly) {
  // yaml-cpp 0.7's LoadAll loops forever allocating on these (jbeder/yaml-cpp#1040).
  for (const char* bad : {"\"\",", ",", "- a\n,", "a: 1\n---\n,", "[a", "{a: [b}", "a: &x\nb: *y"}) {
    auto r = ParseYamlDocuments(bad);
    (void)r;  // an error or a partial result, but it returns
  }
  EXPECT_FALSE(ParseYamlDocuments("a: *nope").ok());
}

TEST(Yaml, AliasBombIsRefused) {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  std::string prev = "a";
  for (int i = 0; i < 9; ++i) {
    std::string name = std::string(1, static_cast<char>('b' + i));
    bomb += name + ": &" + name + " [";
    for (int k = 0; k < 10; ++k) bomb += (k ? ", *" : "*") + prev;
    bomb += "]\n";
    prev = name;
  }
  auto r = ParseYaml(bomb);  // 10^10 nodes if expanded
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("nodes"), std::string::npos);
}

TEST(Yaml, AnchorsAliasesAndKeys) {
  auto j = ParseYaml("base: &b {x: 1}\ncopy: *b\ntrue: yes\n'q': \"1\"\n");
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ((*j)["copy"]["x"], 1);
  EXPECT_EQ((*j)["true"], true);  // keys stay text
  EXPECT_EQ((*j)["q"], "1");
  EXPECT_FALSE(ParseYaml("? [a]\n: 1\n").ok());  // non-scalar key
}

}  // namespace
}  // namespace spiderpool::base
