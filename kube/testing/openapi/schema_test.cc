#include "kube/testing/openapi/schema.h"

#include <string>
#include <vector>

#include "base/json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spiderpool::kube::testing::openapi {
namespace {

using base::Json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

Json J(const char* text) {
  auto j = base::ParseJson(text);
  EXPECT_TRUE(j.ok()) << j.status() << " in " << text;
  return j.ok() ? *j : Json();
}

// Wraps `spec_properties` into a resource schema: {apiVersion, kind, metadata, spec}.
Json Resource(const char* spec_properties, const char* spec_extra = "") {
  std::string s = std::string(R"({"type":"object","properties":{)") +
                  R"("apiVersion":{"type":"string"},"kind":{"type":"string"},)" +
                  R"("metadata":{"type":"object"},"spec":{"type":"object",)" + spec_extra +
                  R"("properties":)" + spec_properties + "}}}";
  return J(s.c_str());
}

Schema MustParse(const Json& j, ParseOptions opts = {}) {
  auto s = Schema::Parse(j, opts);
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok()) return *Schema::Parse(J(R"({"type":"object"})"));
  return *std::move(s);
}

std::vector<std::string> Strings(const std::vector<FieldError>& errs) {
  std::vector<std::string> out;
  for (const auto& e : errs) out.push_back(e.ToString());
  return out;
}

std::vector<std::string> ValidateSpec(const Schema& s, const char* spec) {
  Json obj = J((std::string(R"({"apiVersion":"x/v1","kind":"X","metadata":{"name":"a"},"spec":)") +
                spec + "}")
                   .c_str());
  return Strings(s.Validate(obj));
}

std::string ParseError(const Json& j, ParseOptions opts = {}) {
  auto s = Schema::Parse(j, opts);
  EXPECT_FALSE(s.ok()) << "expected a schema error for " << base::DumpJson(j);
  return s.ok() ? "" : std::string(s.status().message());
}

// ---- Parse: structural checks ------------------------------------------------------------------

TEST(SchemaParseTest, AcceptsAStructuralSchema) {
  auto s = Schema::Parse(Resource(R"({"a":{"type":"string"}})"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->root().type, "object");
  ASSERT_NE(s->Find("spec.a"), nullptr);
  EXPECT_EQ(s->Find("spec.a")->type, "string");
}

TEST(SchemaParseTest, TypeRequiredEverywhere) {
  EXPECT_EQ(ParseError(J(R"({"properties":{}})")),
            "invalid openAPIV3Schema: type: Required value: must not be empty at the root");
  EXPECT_EQ(ParseError(Resource(R"({"a":{"description":"x"}})")),
            "invalid openAPIV3Schema: properties[spec].properties[a].type: Required value: must "
            "not be empty for specified object fields");
  EXPECT_EQ(ParseError(Resource(R"({"a":{"type":"array","items":{}}})")),
            "invalid openAPIV3Schema: properties[spec].properties[a].items.type: Required value: "
            "must not be empty for specified array items");
  EXPECT_EQ(ParseError(Resource(R"({"a":{"type":"array"}})")),
            "invalid openAPIV3Schema: properties[spec].properties[a].items: Required value: must "
            "be specified");
}

TEST(SchemaParseTest, IntOrStringAndPreserveUnknownNeedNoType) {
  EXPECT_TRUE(Schema::Parse(Resource(R"({"a":{"x-kubernetes-int-or-string":true}})")).ok());
  EXPECT_TRUE(
      Schema::Parse(Resource(R"({"a":{"x-kubernetes-preserve-unknown-fields":true}})")).ok());
  EXPECT_TRUE(
      Schema::Parse(
          Resource(
              R"({"a":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}],"pattern":"^[0-9]+$"}})"))
          .ok());
}

TEST(SchemaParseTest, RootAndMetadataRules) {
  EXPECT_THAT(ParseError(J(R"({"type":"string"})")),
              HasSubstr("type: Invalid value: \"string\": must be object at the root"));
  EXPECT_THAT(ParseError(J(R"({"type":"object","additionalProperties":{"type":"string"}})")),
              HasSubstr("additionalProperties: Forbidden: must not be used at the root"));
  EXPECT_THAT(
      ParseError(J(
          R"({"type":"object","properties":{"metadata":{"type":"object","properties":{"labels":{"type":"object"}}}}})")),
      HasSubstr("properties[metadata]: Forbidden: must not specify anything other than name and "
                "generateName"));
  EXPECT_TRUE(
      Schema::Parse(
          J(R"({"type":"object","properties":{"metadata":{"type":"object","properties":{"name":{"type":"string","maxLength":10}}}}})"))
          .ok());
  EXPECT_THAT(ParseError(J(R"({"type":"object","properties":{"kind":{"type":"integer"}}})")),
              HasSubstr("properties[kind].type: Invalid value: \"integer\": must be string"));
}

TEST(SchemaParseTest, RejectsUnsupportedKeywords) {
  EXPECT_THAT(
      ParseError(Resource(R"({"a":{"type":"string","requried":true}})")),
      HasSubstr("properties[spec].properties[a].requried: Forbidden: unknown schema keyword"));
  EXPECT_THAT(ParseError(Resource(R"({"a":{"$ref":"#/definitions/x"}})")),
              HasSubstr("properties[spec].properties[a].$ref: Forbidden: $ref is not supported"));
  EXPECT_THAT(ParseError(Resource(R"({"a":{"type":"object","patternProperties":{}}})")),
              HasSubstr("patternProperties is not supported"));
  EXPECT_THAT(ParseError(Resource(R"({"a":{"type":"strin"}})")),
              HasSubstr("properties[spec].properties[a].type: Unsupported value: \"strin\": "
                        "supported values: \"array\", \"boolean\", \"integer\", \"number\", "
                        "\"object\", \"string\""));
  EXPECT_THAT(ParseError(Resource(R"({"a":{"type":"array","items":[{"type":"string"}]}})")),
              HasSubstr("items must be a schema object and not an array"));
  EXPECT_THAT(ParseError(Resource(R"({"a":{"type":"string","maxLength":-1}})")),
              HasSubstr("maxLength: Invalid value: -1: must be a non-negative integer"));
}

TEST(SchemaParseTest, UniqueItemsForbiddenUnlessAllowed) {
  Json j = Resource(R"({"a":{"type":"array","uniqueItems":true,"items":{"type":"string"}}})");
  EXPECT_THAT(ParseError(j), HasSubstr("uniqueItems: Forbidden: uniqueItems cannot be set to true "
                                       "since the runtime complexity becomes quadratic"));
  ParseOptions opts;
  opts.allow_unique_items = true;
  EXPECT_TRUE(Schema::Parse(j, opts).ok());
}

TEST(SchemaParseTest, AdditionalPropertiesRules) {
  EXPECT_THAT(
      ParseError(Resource(
          R"({"a":{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":{"type":"string"}}})")),
      HasSubstr("additionalProperties: Forbidden: additionalProperties and properties are "
                "mutual exclusive"));
  EXPECT_TRUE(
      Schema::Parse(Resource(R"({"a":{"type":"object","additionalProperties":{"type":"string"}}})"))
          .ok());
}

TEST(SchemaParseTest, ExtensionRules) {
  EXPECT_THAT(ParseError(Resource(
                  R"({"a":{"type":"object","x-kubernetes-preserve-unknown-fields":false}})")),
              HasSubstr("x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true "
                        "or undefined"));
  EXPECT_THAT(
      ParseError(Resource(
          R"({"a":{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"bag"}})")),
      HasSubstr("x-kubernetes-list-type: Unsupported value: \"bag\""));
  EXPECT_THAT(
      ParseError(Resource(
          R"({"a":{"type":"array","items":{"type":"object"},"x-kubernetes-list-type":"map"}})")),
      HasSubstr("x-kubernetes-list-map-keys: Required value: must not be empty if "
                "x-kubernetes-list-type is map"));
  EXPECT_THAT(
      ParseError(Resource(
          R"({"a":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"items":{"type":"object","properties":{"name":{"type":"string"}}}}})")),
      HasSubstr("must have a default or be a required property"));
  EXPECT_TRUE(
      Schema::Parse(
          Resource(
              R"({"a":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}}})"))
          .ok());
  EXPECT_THAT(ParseError(Resource(R"({"a":{"type":"object","x-kubernetes-map-type":"sparse"}})")),
              HasSubstr("x-kubernetes-map-type: Unsupported value: \"sparse\""));
  EXPECT_THAT(
      ParseError(Resource(R"({"a":{"type":"string","x-kubernetes-embedded-resource":true}})")),
      HasSubstr("must be object if x-kubernetes-embedded-resource is true"));
}

TEST(SchemaParseTest, InvalidPatternIsReportedWithItsPath) {
  EXPECT_THAT(ParseError(Resource(R"({"a":{"type":"string","pattern":"[a-"}})")),
              HasSubstr("properties[spec].properties[a].pattern: Invalid value: \"[a-\": must be a "
                        "valid regular expression, but isn't"));
  EXPECT_THAT(ParseError(Resource(R"({"a":{"type":"string","pattern":"(a)\\1"}})")),
              HasSubstr("back-references are not supported"));
}

TEST(SchemaParseTest, ValueValidationsMustNotBeStructural) {
  EXPECT_THAT(ParseError(Resource(R"({"a":{"type":"string","anyOf":[{"type":"string"}]}})")),
              HasSubstr("properties[spec].properties[a].anyOf[0].type: Forbidden: must be empty to "
                        "be structural"));
  EXPECT_THAT(ParseError(Resource(R"({"a":{"type":"string","allOf":[{"description":"x"}]}})")),
              HasSubstr("allOf[0].description: Forbidden: must be empty to be structural"));
  EXPECT_THAT(
      ParseError(Resource(R"({"a":{"type":"object","not":{"properties":{"b":{"minLength":1}}}}})")),
      HasSubstr("properties[spec].properties[a].properties[b]: Required value: because it "
                "is defined in properties[spec].properties[a].not.properties[b]"));
  EXPECT_TRUE(
      Schema::Parse(
          Resource(
              R"({"a":{"type":"object","properties":{"b":{"type":"string"}},"oneOf":[{"required":["b"]},{"properties":{"b":{"minLength":3}}}]}})"))
          .ok());
}

TEST(SchemaParseTest, DefaultsMustValidate) {
  EXPECT_THAT(
      ParseError(Resource(R"({"a":{"type":"integer","default":"x"}})")),
      HasSubstr("properties[spec].properties[a].default: Invalid value: \"string\":  in body "
                "must be of type integer: \"string\""));
  EXPECT_THAT(
      ParseError(Resource(
          R"({"a":{"type":"object","properties":{"b":{"type":"string"}},"default":{"c":1}}})")),
      HasSubstr("properties[spec].properties[a].default: Invalid value: "
                "map[string]interface {}{\"c\":1}: must not have unknown fields, got: c"));
  EXPECT_THAT(ParseError(Resource(R"({"a":{"type":"string","enum":["x","y"],"default":"z"}})")),
              HasSubstr("default: Unsupported value: \"z\""));
  EXPECT_TRUE(
      Schema::Parse(Resource(R"({"a":{"type":"string","enum":["x","y"],"default":"x"}})")).ok());
}

TEST(SchemaParseTest, ErrorsAreAllReportedAndSorted) {
  std::string msg = ParseError(Resource(R"({"b":{"description":"x"},"a":{"type":"foo"}})"));
  EXPECT_EQ(msg,
            "invalid openAPIV3Schema: [properties[spec].properties[a].type: Unsupported value: "
            "\"foo\": supported values: \"array\", \"boolean\", \"integer\", \"number\", "
            "\"object\", \"string\", properties[spec].properties[b].type: Required value: must not "
            "be empty for specified object fields]");
}

TEST(SchemaParseTest, NonObjectSchemaIsAnError) {
  EXPECT_THAT(ParseError(J("[1]")), HasSubstr("must be a schema object"));
  EXPECT_THAT(ParseError(Resource(R"({"a":"string"})")),
              HasSubstr("properties[spec].properties[a]: Invalid value: \"string\": must be a "
                        "schema object"));
}

TEST(SchemaParseTest, CelRulesAreAcceptedAndIgnored) {
  Schema s = MustParse(Resource(
      R"({"a":{"type":"integer","x-kubernetes-validations":[{"rule":"self > 5","message":"too small"}]}})"));
  EXPECT_EQ(s.Find("spec.a")->validation_rules, 1u);
  EXPECT_THAT(ValidateSpec(s, R"({"a":1})"), IsEmpty());
}

// ---- Validate: every keyword ----------------------------------------------------------------

TEST(SchemaValidateTest, TypeErrorsUseTheApiserverWording) {
  Schema s = MustParse(Resource(
      R"({"mtu":{"type":"integer","format":"int32"},"name":{"type":"string"},"ratio":{"type":"number"},"on":{"type":"boolean"},"list":{"type":"array","items":{"type":"string"}},"obj":{"type":"object"}})"));
  EXPECT_THAT(ValidateSpec(s, R"({"mtu":"string"})"),
              ElementsAre("spec.mtu: Invalid value: \"string\": spec.mtu in body must be of type "
                          "integer: \"string\""));
  EXPECT_THAT(
      ValidateSpec(s, R"({"name":5})"),
      ElementsAre("spec.name: Invalid value: \"integer\": spec.name in body must be of type "
                  "string: \"integer\""));
  EXPECT_THAT(ValidateSpec(s, R"({"on":"true"})"),
              ElementsAre("spec.on: Invalid value: \"string\": spec.on in body must be of type "
                          "boolean: \"string\""));
  EXPECT_THAT(ValidateSpec(s, R"({"list":{}})"),
              ElementsAre("spec.list: Invalid value: \"object\": spec.list in body must be of type "
                          "array: \"object\""));
  EXPECT_THAT(ValidateSpec(s, R"({"obj":[]})"),
              ElementsAre("spec.obj: Invalid value: \"array\": spec.obj in body must be of type "
                          "object: \"array\""));
  EXPECT_THAT(ValidateSpec(s, R"({"list":["a",1]})"),
              ElementsAre("spec.list[1]: Invalid value: \"integer\": spec.list[1] in body must be "
                          "of type string: \"integer\""));
  auto errs = s.Validate(J(R"({"spec":{"mtu":"x"}})"));
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].type, "FieldValueTypeInvalid");
  EXPECT_EQ(errs[0].field, "spec.mtu");
  EXPECT_EQ(errs[0].message,
            "Invalid value: \"string\": spec.mtu in body must be of type integer: \"string\"");
}

TEST(SchemaValidateTest, IntegerMustBeIntegral) {
  Schema s = MustParse(Resource(R"({"n":{"type":"integer"},"f":{"type":"number"}})"));
  EXPECT_THAT(ValidateSpec(s, R"({"n":5.0})"), IsEmpty());  // Go: IsFloat64AJSONInteger
  EXPECT_THAT(ValidateSpec(s, R"({"n":5.5})"),
              ElementsAre("spec.n: Invalid value: \"number\": spec.n in body must be of type "
                          "integer: \"number\""));
  EXPECT_THAT(ValidateSpec(s, R"({"n":1e300})"),
              ElementsAre("spec.n: Invalid value: \"number\": spec.n in body must be of type "
                          "integer: \"number\""));
  EXPECT_THAT(ValidateSpec(s, R"({"f":5})"), IsEmpty());  // integers are numbers
  EXPECT_THAT(ValidateSpec(s, R"({"f":5.25})"), IsEmpty());
  // Beyond int64: Go decodes a float64, too big to be an integer.
  EXPECT_THAT(ValidateSpec(s, R"({"n":18446744073709551615})"),
              ElementsAre("spec.n: Invalid value: \"number\": spec.n in body must be of type "
                          "integer: \"number\""));
}

TEST(SchemaValidateTest, NullAndNullable) {
  Schema s =
      MustParse(Resource(R"({"a":{"type":"string"},"b":{"type":"string","nullable":true}})"));
  EXPECT_THAT(ValidateSpec(s, R"({"a":null})"),
              ElementsAre("spec.a: Invalid value: \"null\": spec.a in body must be of type string: "
                          "\"null\""));
  EXPECT_THAT(ValidateSpec(s, R"({"b":null})"), IsEmpty());
}

TEST(SchemaValidateTest, IntOrString) {
  Schema s = MustParse(Resource(R"({"q":{"x-kubernetes-int-or-string":true}})"));
  EXPECT_THAT(ValidateSpec(s, R"({"q":5})"), IsEmpty());
  EXPECT_THAT(ValidateSpec(s, R"({"q":"5Gi"})"), IsEmpty());
  EXPECT_THAT(ValidateSpec(s, R"({"q":true})"),
              ElementsAre("spec.q: Invalid value: \"boolean\": spec.q in body must be of type "
                          "integer,string: \"boolean\""));
  EXPECT_THAT(ValidateSpec(s, R"({"q":1.5})"),
              ElementsAre("spec.q: Invalid value: \"number\": spec.q in body must be of type "
                          "integer,string: \"number\""));
}

TEST(SchemaValidateTest, PreserveUnknownFieldsAcceptsAnyType) {
  Schema s = MustParse(Resource(R"({"raw":{"x-kubernetes-preserve-unknown-fields":true}})"));
  EXPECT_THAT(ValidateSpec(s, R"({"raw":{"x":[1,"a",null]}})"), IsEmpty());
  EXPECT_THAT(ValidateSpec(s, R"({"raw":"s"})"), IsEmpty());
}

TEST(SchemaValidateTest, EnumNumbersAndStrings) {
  Schema s = MustParse(Resource(
      R"({"ipVersion":{"type":"integer","format":"int64","enum":[4,6]},"cniType":{"type":"string","enum":["macvlan","ipvlan","custom"]}})"));
  EXPECT_THAT(ValidateSpec(s, R"({"ipVersion":4,"cniType":"ipvlan"})"), IsEmpty());
  EXPECT_THAT(ValidateSpec(s, R"({"ipVersion":6.0})"), IsEmpty());
  EXPECT_THAT(ValidateSpec(s, R"({"ipVersion":5})"),
              ElementsAre("spec.ipVersion: Unsupported value: 5: supported values: \"4\", \"6\""));
  auto errs = s.Validate(J(R"({"spec":{"cniType":"foo"}})"));
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].type, "FieldValueNotSupported");
  EXPECT_EQ(errs[0].ToString(),
            "spec.cniType: Unsupported value: \"foo\": supported values: \"macvlan\", \"ipvlan\", "
            "\"custom\"");
  // A wrong type reports both the type and the enum failure, like the apiserver.
  EXPECT_THAT(
      ValidateSpec(s, R"({"ipVersion":"4"})"),
      ElementsAre("spec.ipVersion: Invalid value: \"string\": spec.ipVersion in body must "
                  "be of type integer: \"string\"",
                  "spec.ipVersion: Unsupported value: \"4\": supported values: \"4\", \"6\""));
}

TEST(SchemaValidateTest, Pattern) {
  Schema s =
      MustParse(Resource(R"({"mac":{"type":"string","pattern":"^[0-9a-f]{2}:[0-9a-f]{2}$"}})"));
  EXPECT_THAT(ValidateSpec(s, R"({"mac":"0a:1b"})"), IsEmpty());
  EXPECT_THAT(ValidateSpec(s, R"({"mac":"0a-1b"})"),
              ElementsAre("spec.mac: Invalid value: \"0a-1b\": spec.mac in body should match "
                          "'^[0-9a-f]{2}:[0-9a-f]{2}$'"));
}

TEST(SchemaValidateTest, StringLength) {
  Schema s = MustParse(Resource(R"({"s":{"type":"string","minLength":2,"maxLength":4}})"));
  EXPECT_THAT(ValidateSpec(s, R"({"s":"ab"})"), IsEmpty());
  EXPECT_THAT(ValidateSpec(s, "{\"s\":\"h\xC3\xA9\xC3\xA9h\"}"), IsEmpty());  // 4 runes, 6 bytes
  EXPECT_THAT(ValidateSpec(s, R"({"s":"a"})"),
              ElementsAre("spec.s: Invalid value: \"a\": spec.s in body should be at least 2 chars "
                          "long"));
  auto errs = s.Validate(J(R"({"spec":{"s":"abcde"}})"));
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].type, "FieldValueTooLong");
  EXPECT_EQ(errs[0].ToString(), "spec.s: Too long: may not be more than 4 bytes");
}

TEST(SchemaValidateTest, Formats) {
  Schema s = MustParse(Resource(
      R"({"ip":{"type":"string","format":"ipv4"},"ts":{"type":"string","format":"date-time"},"cidr":{"type":"string","format":"cidr"},"ip6":{"type":"string","format":"ipv6"}})"));
  EXPECT_THAT(
      ValidateSpec(
          s,
          R"({"ip":"10.0.0.1","ts":"2024-05-01T10:00:00Z","cidr":"10.0.0.0/8","ip6":"fd00::1"})"),
      IsEmpty());
  EXPECT_THAT(ValidateSpec(s, R"({"ip":"10.0.0.256"})"),
              ElementsAre("spec.ip: Invalid value: \"10.0.0.256\": spec.ip in body must be of type "
                          "ipv4: \"10.0.0.256\""));
  EXPECT_THAT(ValidateSpec(s, R"({"ts":"yesterday"})"),
              ElementsAre("spec.ts: Invalid value: \"yesterday\": spec.ts in body must be of type "
                          "datetime: \"yesterday\""));
  EXPECT_THAT(ValidateSpec(s, R"({"cidr":"10.0.0.0/40"})"),
              ElementsAre("spec.cidr: Invalid value: \"10.0.0.0/40\": spec.cidr in body must be of "
                          "type cidr: \"10.0.0.0/40\""));
  // A non-string value under a string format: kube-openapi's format branch of the type check.
  EXPECT_THAT(
      ValidateSpec(s, R"({"ip":5})"),
      ElementsAre("spec.ip: Invalid value: \"int64\": spec.ip in body must be of type ipv4: "
                  "\"int64\""));
}

TEST(SchemaValidateTest, Int32RangeIsCheckedUnlikeTheApiserver) {
  Schema s = MustParse(Resource(
      R"({"mtu":{"type":"integer","format":"int32"},"big":{"type":"integer","format":"int64"}})"));
  EXPECT_THAT(ValidateSpec(s, R"({"mtu":2147483647,"big":9223372036854775807})"), IsEmpty());
  EXPECT_THAT(ValidateSpec(s, R"({"mtu":2147483648})"),
              ElementsAre("spec.mtu: Invalid value: 2147483648: spec.mtu in body should be less "
                          "than or equal to 2147483647"));
  EXPECT_THAT(
      ValidateSpec(s, R"({"mtu":-2147483649})"),
      ElementsAre("spec.mtu: Invalid value: -2147483649: spec.mtu in body should be greater "
                  "than or equal to -2147483648"));
}

TEST(SchemaValidateTest, Required) {
  Schema s = MustParse(Resource(
      R"({"subnet":{"type":"string"},"routes":{"type":"array","items":{"type":"object","required":["dst","gw"],"properties":{"dst":{"type":"string"},"gw":{"type":"string"}}}}})",
      R"("required":["subnet"],)"));
  EXPECT_THAT(ValidateSpec(s, R"({"subnet":"10.0.0.0/8"})"), IsEmpty());
  auto errs = s.Validate(
      J(R"({"spec":{"routes":[{"dst":"0.0.0.0/0","gw":"10.0.0.1"},{"dst":"1.0.0.0/8"}]}})"));
  EXPECT_THAT(Strings(errs),
              ElementsAre("spec.routes[1].gw: Required value", "spec.subnet: Required value"));
  EXPECT_EQ(errs[1].type, "FieldValueRequired");
  EXPECT_EQ(errs[1].message, "Required value");
  // A required object missing at the root.
  Schema root = MustParse(
      J(R"({"type":"object","required":["spec"],"properties":{"spec":{"type":"object"}}})"));
  EXPECT_THAT(Strings(root.Validate(J("{}"))), ElementsAre("spec: Required value"));
}

TEST(SchemaValidateTest, MinimumMaximum) {
  Schema s = MustParse(Resource(
      R"({"vlan":{"type":"integer","minimum":0,"maximum":4094},"x":{"type":"number","minimum":0.5,"maximum":10,"exclusiveMinimum":true,"exclusiveMaximum":true}})"));
  EXPECT_THAT(ValidateSpec(s, R"({"vlan":0,"x":9.9})"), IsEmpty());
  EXPECT_THAT(
      ValidateSpec(s, R"({"vlan":4095})"),
      ElementsAre("spec.vlan: Invalid value: 4095: spec.vlan in body should be less than or "
                  "equal to 4094"));
  EXPECT_THAT(ValidateSpec(s, R"({"vlan":-1})"),
              ElementsAre("spec.vlan: Invalid value: -1: spec.vlan in body should be greater than "
                          "or equal to 0"));
  EXPECT_THAT(ValidateSpec(s, R"({"x":10})"),
              ElementsAre("spec.x: Invalid value: 10: spec.x in body should be less than 10"));
  EXPECT_THAT(ValidateSpec(s, R"({"x":0.5})"),
              ElementsAre("spec.x: Invalid value: 0.5: spec.x in body should be greater than 0.5"));
}

TEST(SchemaValidateTest, MultipleOf) {
  Schema s = MustParse(Resource(
      R"({"n":{"type":"integer","multipleOf":5},"f":{"type":"number","multipleOf":0.5}})"));
  EXPECT_THAT(ValidateSpec(s, R"({"n":10,"f":1.5})"), IsEmpty());
  EXPECT_THAT(ValidateSpec(s, R"({"n":12})"),
              ElementsAre("spec.n: Invalid value: 12: spec.n in body should be a multiple of 5"));
  EXPECT_THAT(
      ValidateSpec(s, R"({"f":1.25})"),
      ElementsAre("spec.f: Invalid value: 1.25: spec.f in body should be a multiple of 0.5"));
}

TEST(SchemaValidateTest, ItemsCount) {
  Schema s = MustParse(
      Resource(R"({"m":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string"}}})"));
  EXPECT_THAT(ValidateSpec(s, R"({"m":["eth0"]})"), IsEmpty());
  EXPECT_THAT(ValidateSpec(s, R"({"m":[]})"),
              ElementsAre("spec.m: Invalid value: 0: spec.m in body should have at least 1 items"));
  auto errs = s.Validate(J(R"({"spec":{"m":["a","b","c"]}})"));
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].type, "FieldValueTooMany");
  EXPECT_EQ(errs[0].ToString(), "spec.m: Too many: 3: must have at most 2 items");
}

TEST(SchemaValidateTest, UniqueItems) {
  ParseOptions opts;
  opts.allow_unique_items = true;
  Schema s = MustParse(
      Resource(
          R"({"u":{"type":"array","uniqueItems":true,"items":{"x-kubernetes-int-or-string":true}}})"),
      opts);
  EXPECT_THAT(ValidateSpec(s, R"({"u":[1,"1",2]})"), IsEmpty());
  EXPECT_THAT(
      ValidateSpec(s, R"({"u":[1,2,1]})"),
      ElementsAre("spec.u: Invalid value: \"\": spec.u in body shouldn't contain duplicates"));
}

TEST(SchemaValidateTest, PropertiesCount) {
  Schema s = MustParse(Resource(
      R"({"labels":{"type":"object","minProperties":1,"maxProperties":2,"additionalProperties":{"type":"string"}}})"));
  EXPECT_THAT(ValidateSpec(s, R"({"labels":{"a":"b"}})"), IsEmpty());
  EXPECT_THAT(
      ValidateSpec(s, R"({"labels":{}})"),
      ElementsAre("spec.labels: Invalid value: 0: spec.labels in body should have at least 1 "
                  "properties"));
  EXPECT_THAT(ValidateSpec(s, R"({"labels":{"a":"1","b":"2","c":"3"}})"),
              ElementsAre("spec.labels: Too many: 3: must have at most 2 items"));
}

TEST(SchemaValidateTest, AdditionalPropertiesSchemaValidatesMapValues) {
  Schema s = MustParse(
      Resource(R"({"matchLabels":{"type":"object","additionalProperties":{"type":"string"}}})"));
  EXPECT_THAT(ValidateSpec(s, R"({"matchLabels":{"ipam.spidernet.io/app":"x"}})"), IsEmpty());
  EXPECT_THAT(
      ValidateSpec(s, R"({"matchLabels":{"app":1}})"),
      ElementsAre("spec.matchLabels.app: Invalid value: \"integer\": spec.matchLabels.app in "
                  "body must be of type string: \"integer\""));
}

TEST(SchemaValidateTest, AdditionalPropertiesFalseAndTrue) {
  Schema closed = MustParse(Resource(R"({"o":{"type":"object","additionalProperties":false}})"));
  EXPECT_THAT(ValidateSpec(closed, R"({"o":{}})"), IsEmpty());
  EXPECT_THAT(
      ValidateSpec(closed, R"({"o":{"x":1}})"),
      ElementsAre("spec.o: Invalid value: \"x\": spec.o.x in body is a forbidden property"));
  Schema open = MustParse(Resource(R"({"o":{"type":"object","additionalProperties":true}})"));
  EXPECT_THAT(ValidateSpec(open, R"({"o":{"x":[1]}})"), IsEmpty());
}

TEST(SchemaValidateTest, NestedPathsUseBracketsForItems) {
  Schema s = MustParse(Resource(
      R"({"routes":{"type":"array","items":{"type":"object","properties":{"dst":{"type":"string","format":"cidr"}}}}})"));
  EXPECT_THAT(ValidateSpec(s, R"({"routes":[{"dst":"10.0.0.0/8"},{"dst":"bad"}]})"),
              ElementsAre("spec.routes[1].dst: Invalid value: \"bad\": spec.routes[1].dst in body "
                          "must be of type cidr: \"bad\""));
}

TEST(SchemaValidateTest, ListTypeSetAndMap) {
  Schema s = MustParse(Resource(
      R"({"set":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},"map":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"v":{"type":"integer"}}}}})"));
  EXPECT_THAT(ValidateSpec(s, R"({"set":["a","b"],"map":[{"name":"a"},{"name":"b"}]})"), IsEmpty());
  auto errs = s.Validate(J(R"({"spec":{"set":["a","b","a","a","b"]}})"));
  EXPECT_THAT(Strings(errs), ElementsAre("spec.set[2]: Duplicate value: \"a\"",
                                         "spec.set[4]: Duplicate value: \"b\""));
  EXPECT_EQ(errs[0].type, "FieldValueDuplicate");
  EXPECT_THAT(ValidateSpec(s, R"({"map":[{"name":"a","v":1},{"name":"a","v":2}]})"),
              ElementsAre("spec.map[1]: Duplicate value: map[string]interface {}{\"name\":\"a\"}"));
}

TEST(SchemaValidateTest, Junctors) {
  Schema s = MustParse(Resource(
      R"({"a":{"type":"string","anyOf":[{"minLength":3},{"pattern":"^x"}]},"o":{"type":"integer","oneOf":[{"minimum":0},{"maximum":10}]},"n":{"type":"string","not":{"enum":["bad"]}},"all":{"type":"integer","allOf":[{"minimum":1},{"maximum":3}]}})"));
  EXPECT_THAT(ValidateSpec(s, R"({"a":"x","o":20,"n":"good","all":2})"), IsEmpty());
  EXPECT_THAT(
      ValidateSpec(s, R"({"a":"ab"})"),
      ElementsAre(": Invalid value: \"\": \"spec.a\" must validate at least one schema (anyOf)",
                  "spec.a: Invalid value: \"ab\": spec.a in body should be at least 3 chars long"));
  EXPECT_THAT(ValidateSpec(s, R"({"o":5})"),
              ElementsAre(": Invalid value: \"\": \"spec.o\" must validate one and only one schema "
                          "(oneOf). Found 2 valid alternatives"));
  EXPECT_THAT(ValidateSpec(s, R"({"n":"bad"})"),
              ElementsAre(": Invalid value: \"\": \"spec.n\" must not validate the schema (not)"));
  EXPECT_THAT(
      ValidateSpec(s, R"({"all":5})"),
      ElementsAre("spec.all: Invalid value: 5: spec.all in body should be less than or equal to 3",
                  ": Invalid value: \"\": \"spec.all\" must validate all the schemas (allOf)"));
}

TEST(SchemaValidateTest, AllErrorsAreReported) {
  Schema s =
      MustParse(Resource(R"({"a":{"type":"string"},"b":{"type":"integer"},"c":{"type":"boolean"}})",
                         R"("required":["d"],)"));
  EXPECT_THAT(ValidateSpec(s, R"({"a":1,"b":"x","c":"y"})"),
              ElementsAre(HasSubstr("spec.a:"), HasSubstr("spec.b:"), HasSubstr("spec.c:"),
                          "spec.d: Required value"));
}

// ---- Default --------------------------------------------------------------------------------

TEST(SchemaDefaultTest, AppliesDefaultsOnlyWhereTheParentExists) {
  Schema s = MustParse(Resource(
      R"({"default":{"type":"boolean","default":false},"coordinator":{"type":"object","properties":{"mode":{"type":"string","default":"auto"},"hostRuleTable":{"type":"integer","default":500}}}})"));
  Json obj = J(R"({"kind":"X"})");
  s.Default(&obj);
  EXPECT_EQ(obj, J(R"({"kind":"X"})"));  // no spec: nothing defaulted inside it

  obj = J(R"({"spec":{}})");
  s.Default(&obj);
  EXPECT_EQ(obj, J(R"({"spec":{"default":false}})"));  // coordinator absent: its fields stay absent

  obj = J(R"({"spec":{"default":true,"coordinator":{"mode":"underlay"}}})");
  s.Default(&obj);
  EXPECT_EQ(
      obj, J(R"({"spec":{"default":true,"coordinator":{"mode":"underlay","hostRuleTable":500}}})"));
}

TEST(SchemaDefaultTest, DefaultedObjectsGetTheirNestedDefaults) {
  Schema s = MustParse(Resource(
      R"({"o":{"type":"object","default":{},"properties":{"a":{"type":"integer","default":1},"b":{"type":"string"}}}})"));
  Json obj = J(R"({"spec":{}})");
  s.Default(&obj);
  EXPECT_EQ(obj, J(R"({"spec":{"o":{"a":1}}})"));
}

TEST(SchemaDefaultTest, NullHandling) {
  Schema s = MustParse(Resource(
      R"({"a":{"type":"string","default":"x"},"b":{"type":"string"},"c":{"type":"string","nullable":true},"d":{"type":"string","nullable":true,"default":"y"}})"));
  Json obj = J(R"({"spec":{"a":null,"b":null,"c":null,"d":null}})");
  s.Default(&obj);
  // Non-nullable null with default -> default; without default -> dropped; nullable -> kept.
  EXPECT_EQ(obj, J(R"({"spec":{"a":"x","c":null,"d":null}})"));
}

TEST(SchemaDefaultTest, ItemsAndMapValues) {
  Schema s = MustParse(Resource(
      R"({"ips":{"type":"array","items":{"type":"object","properties":{"vlan":{"type":"integer","default":0},"interface":{"type":"string"}}}},"m":{"type":"object","additionalProperties":{"type":"object","properties":{"x":{"type":"boolean","default":true}}}}})"));
  Json obj =
      J(R"({"spec":{"ips":[{"interface":"eth0"},{"interface":"net1","vlan":5}],"m":{"k":{}}}})");
  s.Default(&obj);
  EXPECT_EQ(
      obj,
      J(R"({"spec":{"ips":[{"interface":"eth0","vlan":0},{"interface":"net1","vlan":5}],"m":{"k":{"x":true}}}})"));
}

TEST(SchemaDefaultTest, IsIdempotentAndCopiesDefaults) {
  Schema s =
      MustParse(Resource(R"({"l":{"type":"array","items":{"type":"string"},"default":["a"]}})"));
  Json obj = J(R"({"spec":{}})");
  s.Default(&obj);
  obj["spec"]["l"].push_back("b");
  Json again = J(R"({"spec":{}})");
  s.Default(&again);
  EXPECT_EQ(again, J(R"({"spec":{"l":["a"]}})"));
  Json twice = again;
  s.Default(&twice);
  EXPECT_EQ(twice, again);
}

// ---- Prune ----------------------------------------------------------------------------------

TEST(SchemaPruneTest, DropsUnknownFieldsAndReportsSortedPaths) {
  Schema s = MustParse(Resource(
      R"({"subnet":{"type":"string"},"routes":{"type":"array","items":{"type":"object","properties":{"dst":{"type":"string"}}}}})"));
  Json obj =
      J(R"({"apiVersion":"a/v1","kind":"K","metadata":{"name":"n","whatever":{"x":1}},"extra":1,
                 "spec":{"subnet":"s","vlan":5,"routes":[{"dst":"d","gw":"g"},{"dst":"e"}]},"status":{"x":1}})");
  std::vector<std::string> pruned;
  s.Prune(&obj, &pruned);
  EXPECT_EQ(obj, J(R"({"apiVersion":"a/v1","kind":"K","metadata":{"name":"n","whatever":{"x":1}},
                     "spec":{"subnet":"s","routes":[{"dst":"d"},{"dst":"e"}]}})"));
  EXPECT_THAT(pruned, ElementsAre("extra", "spec.routes[0].gw", "spec.vlan", "status"));
}

TEST(SchemaPruneTest, RootMetaFieldsAreKeptEvenWhenNotInTheSchema) {
  Schema s = MustParse(J(R"({"type":"object","properties":{"spec":{"type":"object"}}})"));
  Json obj = J(R"({"apiVersion":"v1","kind":"K","metadata":{"name":"n"},"spec":{"a":1}})");
  std::vector<std::string> pruned;
  s.Prune(&obj, &pruned);
  EXPECT_EQ(obj, J(R"({"apiVersion":"v1","kind":"K","metadata":{"name":"n"},"spec":{}})"));
  EXPECT_THAT(pruned, ElementsAre("spec.a"));
  // Nested apiVersion/kind are ordinary fields.
  obj = J(R"({"spec":{"kind":"x"}})");
  pruned.clear();
  s.Prune(&obj, &pruned);
  EXPECT_THAT(pruned, ElementsAre("spec.kind"));
}

TEST(SchemaPruneTest, PreserveUnknownFieldsStillPrunesKnownSubtrees) {
  Schema s = MustParse(Resource(
      R"({"raw":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"known":{"type":"object","properties":{"a":{"type":"string"}}}}}})"));
  Json obj = J(R"({"spec":{"raw":{"free":{"deep":[1,{"x":2}]},"known":{"a":"1","b":"2"}}}})");
  std::vector<std::string> pruned;
  s.Prune(&obj, &pruned);
  EXPECT_EQ(obj, J(R"({"spec":{"raw":{"free":{"deep":[1,{"x":2}]},"known":{"a":"1"}}}})"));
  EXPECT_THAT(pruned, ElementsAre("spec.raw.known.b"));
}

TEST(SchemaPruneTest, EmbeddedResourceKeepsItsMetaFields) {
  Schema s = MustParse(Resource(
      R"({"template":{"type":"object","x-kubernetes-embedded-resource":true,"properties":{"spec":{"type":"object","properties":{"a":{"type":"string"}}}}}})"));
  Json obj = J(
      R"({"spec":{"template":{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"a":"b"}},"spec":{"a":"x","b":"y"},"junk":1}}})");
  std::vector<std::string> pruned;
  s.Prune(&obj, &pruned);
  EXPECT_EQ(
      obj,
      J(R"({"spec":{"template":{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"a":"b"}},"spec":{"a":"x"}}}})"));
  EXPECT_THAT(pruned, ElementsAre("spec.template.junk", "spec.template.spec.b"));
}

TEST(SchemaPruneTest, MapValuesAndAdditionalPropertiesTrue) {
  Schema s = MustParse(Resource(
      R"({"labels":{"type":"object","additionalProperties":{"type":"object","properties":{"x":{"type":"string"}}}},"any":{"type":"object","additionalProperties":true}})"));
  Json obj = J(R"({"spec":{"labels":{"k":{"x":"1","y":"2"}},"any":{"s":"v","o":{"z":1}}}})");
  std::vector<std::string> pruned;
  s.Prune(&obj, &pruned);
  // additionalProperties: true keeps the keys but has no schema for what is inside objects.
  EXPECT_EQ(obj, J(R"({"spec":{"labels":{"k":{"x":"1"}},"any":{"s":"v","o":{}}}})"));
  EXPECT_THAT(pruned, ElementsAre("spec.any.o.z", "spec.labels.k.y"));
}

TEST(SchemaPruneTest, NullPathsVectorIsAllowed) {
  Schema s = MustParse(Resource(R"({"a":{"type":"string"}})"));
  Json obj = J(R"({"spec":{"a":"x","b":1}})");
  s.Prune(&obj, nullptr);
  EXPECT_EQ(obj, J(R"({"spec":{"a":"x"}})"));
}

// ---- ValidateObject and Status helpers -------------------------------------------------------

Schema PoolSchema() {
  return MustParse(Resource(
      R"({"ipVersion":{"type":"integer","format":"int64","enum":[4,6]},"subnet":{"type":"string"},"default":{"type":"boolean","default":false},"mtu":{"type":"integer","format":"int32"}})",
      R"("required":["subnet"],)"));
}

TEST(ValidateObjectTest, PrunesDefaultsAndAcceptsAValidObject) {
  Schema s = PoolSchema();
  Json obj = J(
      R"({"apiVersion":"spiderpool.spidernet.io/v2beta1","kind":"SpiderIPPool","metadata":{"name":"p"},"spec":{"subnet":"10.0.0.0/8","vlan":3}})");
  std::vector<FieldError> errors;
  std::vector<std::string> pruned;
  EXPECT_TRUE(ValidateObject(s, &obj, &errors, &pruned).ok());
  EXPECT_THAT(errors, IsEmpty());
  EXPECT_THAT(pruned, ElementsAre("spec.vlan"));
  EXPECT_EQ(obj["spec"], J(R"({"subnet":"10.0.0.0/8","default":false})"));
}

TEST(ValidateObjectTest, ReturnsInvalidArgumentWithCauses) {
  Schema s = PoolSchema();
  Json obj = J(R"({"metadata":{"name":"p"},"spec":{"ipVersion":5,"mtu":"string","subnet":null}})");
  std::vector<FieldError> errors;
  absl::Status st = ValidateObject(s, &obj, &errors);
  ASSERT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  // subnet: null is dropped (non-nullable, no default) and then reported as required.
  EXPECT_THAT(Strings(errors),
              ElementsAre("spec.ipVersion: Unsupported value: 5: supported values: \"4\", \"6\"",
                          "spec.mtu: Invalid value: \"string\": spec.mtu in body must be of type "
                          "integer: \"string\"",
                          "spec.subnet: Required value"));
  EXPECT_EQ(
      std::string(st.message()),
      "[spec.ipVersion: Unsupported value: 5: supported values: \"4\", \"6\", spec.mtu: Invalid "
      "value: \"string\": spec.mtu in body must be of type integer: \"string\", spec.subnet: "
      "Required value]");
  EXPECT_EQ(FieldErrorsFromStatus(st), errors);
  EXPECT_THAT(FieldErrorsFromStatus(absl::InvalidArgumentError("x")), IsEmpty());
}

TEST(ValidateObjectTest, SingleErrorMessageHasNoBrackets) {
  Schema s = PoolSchema();
  Json obj = J(R"({"spec":{}})");
  absl::Status st = ValidateObject(s, &obj);
  EXPECT_EQ(std::string(st.message()), "spec.subnet: Required value");
}

TEST(ValidateObjectTest, StatusHelpers) {
  std::vector<FieldError> errs = {
      {"FieldValueNotSupported", "spec.ipVersion",
       "Unsupported value: 5: supported values: \"4\", \"6\""},
      {"FieldValueRequired", "spec.subnet", "Required value"},
      {"FieldValueRequired", "spec.subnet", "Required value"},
  };
  EXPECT_EQ(AggregateMessage(errs),
            "[spec.ipVersion: Unsupported value: 5: supported values: \"4\", \"6\", spec.subnet: "
            "Required value]");
  EXPECT_EQ(
      InvalidMessage("spiderpool.spidernet.io", "SpiderIPPool", "pool1", {errs[0]}),
      "SpiderIPPool.spiderpool.spidernet.io \"pool1\" is invalid: spec.ipVersion: Unsupported "
      "value: 5: supported values: \"4\", \"6\"");
  EXPECT_EQ(InvalidMessage("", "Pod", "p", {}), "Pod \"p\" is invalid");
  Json status = InvalidStatusJson("spiderpool.spidernet.io", "SpiderIPPool", "pool1",
                                  {errs[0], {"FieldValueInvalid", "", "Invalid value: \"\": x"}});
  EXPECT_EQ(status["code"], 422);
  EXPECT_EQ(status["reason"], "Invalid");
  EXPECT_EQ(status["status"], "Failure");
  EXPECT_EQ(status["details"]["kind"], "SpiderIPPool");
  EXPECT_EQ(status["details"]["group"], "spiderpool.spidernet.io");
  EXPECT_EQ(status["details"]["name"], "pool1");
  EXPECT_EQ(
      status["details"]["causes"][0],
      J(R"({"reason":"FieldValueNotSupported","message":"Unsupported value: 5: supported values: \"4\", \"6\"","field":"spec.ipVersion"})"));
  EXPECT_FALSE(status["details"]["causes"][1].contains("field"));  // omitempty
}

TEST(SchemaFindTest, FollowsPropertiesItemsAndMaps) {
  Schema s = MustParse(Resource(
      R"({"routes":{"type":"array","items":{"type":"object","properties":{"dst":{"type":"string"}}}},"m":{"type":"object","additionalProperties":{"type":"integer"}}})"));
  ASSERT_NE(s.Find(""), nullptr);
  EXPECT_EQ(s.Find("")->type, "object");
  ASSERT_NE(s.Find(".spec.routes[].dst"), nullptr);
  EXPECT_EQ(s.Find("spec.routes[0].dst")->type, "string");
  EXPECT_EQ(s.Find("spec.routes")->type, "array");
  EXPECT_EQ(s.Find("spec.m.anykey")->type, "integer");
  EXPECT_EQ(s.Find("spec.nope"), nullptr);
  EXPECT_EQ(s.Find("spec.routes[].dst.deeper"), nullptr);
}

}  // namespace
}  // namespace spiderpool::kube::testing::openapi
