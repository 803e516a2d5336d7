#include "api/names.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spiderpool::api {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// The texts below are kube-apiserver's (k8s.io/apimachinery/pkg/util/validation), as a real
// cluster answers them in a 422's causes.
constexpr char kLabelRegex[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
constexpr char kSubdomainRegex[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
constexpr char kNamePartRegex[] =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

TEST(Dns1123Label, ValidAndInvalid) {
  EXPECT_THAT(IsDns1123Label("kube-system"), IsEmpty());
  EXPECT_THAT(IsDns1123Label("0"), IsEmpty());
  EXPECT_THAT(IsDns1123Label(std::string(63, 'a')), IsEmpty());
  EXPECT_THAT(IsDns1123Label("a.b"), ElementsAre("must not contain dots"));
  EXPECT_THAT(IsDns1123Label("-a"), ElementsAre(kLabelRegex));
  EXPECT_THAT(IsDns1123Label("A"), ElementsAre(kLabelRegex));
  EXPECT_THAT(IsDns1123Label(""), ElementsAre(kLabelRegex));
  EXPECT_THAT(IsDns1123Label(std::string(64, 'a')),
              ElementsAre("must be no more than 63 characters"));
  EXPECT_THAT(IsDns1123Label(std::string(64, '_')),
              ElementsAre("must be no more than 63 characters", kLabelRegex));
}

TEST(Dns1123Subdomain, ValidAndInvalid) {
  EXPECT_THAT(IsDns1123Subdomain("a.b-c.d"), IsEmpty());
  for (const char* bad : {"A", "a..b", "-a", "", "a.", ".a", "a_b"}) {
    EXPECT_THAT(IsDns1123Subdomain(bad), ElementsAre(kSubdomainRegex)) << bad;
  }
  EXPECT_THAT(IsDns1123Subdomain(std::string(254, 'a')),
              ElementsAre("must be no more than 253 characters"));
}

TEST(Dns1035Label, ValidAndInvalid) {
  EXPECT_THAT(IsDns1035Label("my-name"), IsEmpty());
  EXPECT_THAT(IsDns1035Label("1abc"),
              ElementsAre("a DNS-1035 label must consist of lower case alphanumeric characters or "
                          "'-', start with an alphabetic character, and end with an alphanumeric "
                          "character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
                          "'[a-z]([-a-z0-9]*[a-z0-9])?')"));
}

TEST(QualifiedName, ValidAndInvalid) {
  EXPECT_THAT(IsQualifiedName("example.com/My_Name.1"), IsEmpty());
  EXPECT_THAT(IsQualifiedName("app"), IsEmpty());
  EXPECT_THAT(IsQualifiedName("/a"), ElementsAre("prefix part must be non-empty"));
  EXPECT_THAT(IsQualifiedName("a/"), ElementsAre("name part must be non-empty", kNamePartRegex));
  EXPECT_THAT(IsQualifiedName("Ex.com/a"),
              ElementsAre(std::string("prefix part ") + kSubdomainRegex));
  EXPECT_THAT(IsQualifiedName("-a"), ElementsAre(kNamePartRegex));
  EXPECT_THAT(IsQualifiedName(std::string(64, 'a')),
              ElementsAre("name part must be no more than 63 characters"));
  EXPECT_THAT(
      IsQualifiedName("a/b/c"),
      ElementsAre("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and "
                  "must start and end with an alphanumeric character (e.g. 'MyName',  or "
                  "'my.name',  or '123-abc', regex used for validation is "
                  "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain "
                  "prefix and '/' (e.g. 'example.com/MyName')"));
}

TEST(LabelValue, ValidAndInvalid) {
  EXPECT_THAT(IsValidLabelValue(""), IsEmpty());
  EXPECT_THAT(IsValidLabelValue("My_value.1"), IsEmpty());
  EXPECT_THAT(
      IsValidLabelValue("a b"),
      ElementsAre("a valid label must be an empty string or consist of alphanumeric characters, "
                  "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
                  "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                  "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"));
  EXPECT_THAT(IsValidLabelValue(std::string(64, 'a')),
              ElementsAre("must be no more than 63 characters"));
}

TEST(CIdentifier, ValidAndInvalid) {
  EXPECT_THAT(IsCIdentifier("_my_Name1"), IsEmpty());
  EXPECT_THAT(IsCIdentifier("1a"),
              ElementsAre("a valid C identifier must start with alphabetic character or '_', "
                          "followed by a string of alphanumeric characters or '_' (e.g. "
                          "'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
                          "'[A-Za-z_][A-Za-z0-9_]*')"));
  EXPECT_THAT(IsCIdentifier(""), ::testing::SizeIs(1));
}

TEST(Patterns, HaveNoLengthLimit) {
  EXPECT_TRUE(MatchesDns1123Label(std::string(100, 'a')));
  EXPECT_FALSE(MatchesDns1123Label("a-"));
  EXPECT_TRUE(MatchesDns1123Subdomain("a.b"));
  EXPECT_FALSE(MatchesDns1123Subdomain("a..b"));
  EXPECT_TRUE(MatchesQualifiedNamePart("A.b_c-1"));
  EXPECT_FALSE(MatchesQualifiedNamePart("a_"));
}

}  // namespace
}  // namespace spiderpool::api
