#include "kube/testing/openapi/go_format.h"

#include "gtest/gtest.h"

namespace spiderpool::kube::testing::openapi {
namespace {

using base::Json;

TEST(GoFormatTest, Quote) {
  EXPECT_EQ(GoQuote("abc"), "\"abc\"");
  EXPECT_EQ(GoQuote("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(GoQuote("a\nb\tc\r"), R"("a\nb\tc\r")");
  EXPECT_EQ(GoQuote(std::string("\x01\x7f", 2)), R"("\x01\x7f")");
  EXPECT_EQ(GoQuote("h\xC3\xA9llo"), "\"h\xC3\xA9llo\"");  // printable UTF-8 stays
  EXPECT_EQ(GoQuote("\xC2\xA0"), R"("\u00a0")");           // NBSP is not printable
  EXPECT_EQ(GoQuote("\xff"), R"("\xff")");                 // invalid UTF-8 byte
  EXPECT_EQ(GoQuote(""), "\"\"");
}

TEST(GoFormatTest, FloatLikeGoPercentV) {
  EXPECT_EQ(GoFloat(0), "0");
  EXPECT_EQ(GoFloat(4094), "4094");
  EXPECT_EQ(GoFloat(0.5), "0.5");
  EXPECT_EQ(GoFloat(-1.25), "-1.25");
  EXPECT_EQ(GoFloat(123456), "123456");
  EXPECT_EQ(GoFloat(1e6), "1e+06");
  EXPECT_EQ(GoFloat(1234567), "1.234567e+06");
  EXPECT_EQ(GoFloat(0.0001), "0.0001");
  EXPECT_EQ(GoFloat(0.00001), "1e-05");
  EXPECT_EQ(GoFloat(1.5e300), "1.5e+300");
}

TEST(GoFormatTest, FloatLikeEncodingJson) {
  EXPECT_EQ(GoJsonFloat(4), "4");
  EXPECT_EQ(GoJsonFloat(1e6), "1000000");
  EXPECT_EQ(GoJsonFloat(1e21), "1e+21");
  EXPECT_EQ(GoJsonFloat(1e-7), "1e-7");
  EXPECT_EQ(GoJsonFloat(0.5), "0.5");
}

TEST(GoFormatTest, BadValue) {
  EXPECT_EQ(GoBadValue(nullptr), "null");
  EXPECT_EQ(GoBadValue(5), "5");
  EXPECT_EQ(GoBadValue(-5), "-5");
  EXPECT_EQ(GoBadValue(2.5), "2.5");
  EXPECT_EQ(GoBadValue(true), "true");
  EXPECT_EQ(GoBadValue("x"), "\"x\"");
  EXPECT_EQ(GoBadValue(Json::parse(R"({"b":1,"a":"x"})")),
            R"(map[string]interface {}{"a":"x", "b":1})");
  EXPECT_EQ(GoBadValue(Json::parse(R"(["x",null,1.5,[]])")),
            R"([]interface {}{"x", interface {}(nil), 1.5, []interface {}{}})");
  // Beyond int64 Go decodes into float64.
  EXPECT_EQ(GoBadValue(Json(18446744073709551615ull)), "1.8446744073709552e+19");
}

TEST(GoFormatTest, EnumValues) {
  EXPECT_EQ(GoEnumValue("macvlan"), "macvlan");
  EXPECT_EQ(GoEnumValue(4), "4");
  EXPECT_EQ(GoEnumValue(true), "true");
  EXPECT_EQ(GoEnumValue(nullptr), "null");
  EXPECT_EQ(GoEnumValue(1.5), "1.5");
  EXPECT_EQ(GoEnumValue(Json::parse(R"({"a":1})")), R"({"a":1})");
}

TEST(GoFormatTest, RuneCount) {
  EXPECT_EQ(RuneCount(""), 0u);
  EXPECT_EQ(RuneCount("abc"), 3u);
  EXPECT_EQ(RuneCount("h\xC3\xA9"), 2u);
  EXPECT_EQ(RuneCount("\xF0\x9F\x98\x80"), 1u);
  EXPECT_EQ(RuneCount("\xff\xfe"), 2u);
}

}  // namespace
}  // namespace spiderpool::kube::testing::openapi
