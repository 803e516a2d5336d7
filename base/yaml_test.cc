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
