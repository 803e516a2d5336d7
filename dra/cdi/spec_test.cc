#include "dra/cdi/spec.h"

#include "base/json.h"
#include "base/yaml.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spiderpool::dra::cdi {
namespace {

using base::Json;
using ::testing::HasSubstr;

constexpr char kUID[] = "a1b2c3d4-0000-4000-8000-000000000001";  // starts with a letter

TEST(VersionTest, LadderAndParsing) {
  EXPECT_EQ(KnownVersions().front(), "0.3.0");
  EXPECT_EQ(KnownVersions().back(), "1.1.0");
  EXPECT_EQ(*ParseVersion("0.5.0"), "0.5.0");
  EXPECT_EQ(*ParseVersion("v1.1.0"), "1.1.0");
  for (const char* bad : {"", "0.2.0", "0.5", "1.2.0", "abc", "0.5.0 "}) {
    auto v = ParseVersion(bad);
    EXPECT_FALSE(v.ok()) << bad;
  }
  EXPECT_THAT(std::string(ParseVersion("9.9.9").status().message()),
              HasSubstr("unknown cdiVersion \"9.9.9\" (known: 0.3.0, 0.4.0"));
  EXPECT_LT(CompareVersions("0.5.0", "0.6.0"), 0);
  EXPECT_GT(CompareVersions("1.0.0", "0.8.0"), 0);
  EXPECT_EQ(CompareVersions("0.4.0", "0.4.0"), 0);
}

TEST(MinimumVersionTest, Features) {
  auto min = [](const char* json) { return MinimumVersion(*base::ParseJson(json)).version; };
  EXPECT_EQ(min(R"({"kind":"a.b/c","devices":[{"name":"x","containerEdits":{"env":["A=1"]}}]})"),
            "0.3.0");
  EXPECT_EQ(min(R"({"devices":[{"name":"x","containerEdits":{"mounts":[{"hostPath":"/a","containerPath":"/b","type":"bind"}]}}]})"),
            "0.4.0");
  EXPECT_EQ(min(R"({"devices":[{"name":"1x"}]})"), "0.5.0");
  EXPECT_EQ(min(R"({"containerEdits":{"deviceNodes":[{"path":"/dev/x","hostPath":"/dev/y"}]},"devices":[{"name":"x"}]})"),
            "0.5.0");
  EXPECT_EQ(min(R"({"annotations":{"a":"b"},"devices":[{"name":"x"}]})"), "0.6.0");
  EXPECT_EQ(min(R"({"devices":[{"name":"x","annotations":{"a":"b"}}]})"), "0.6.0");
  EXPECT_EQ(min(R"({"kind":"a.b/c.d","devices":[{"name":"x"}]})"), "0.6.0");
  EXPECT_EQ(min(R"({"devices":[{"name":"x","containerEdits":{"intelRdt":{"closID":"c"}}}]})"), "0.7.0");
  EXPECT_EQ(min(R"({"devices":[{"name":"x","containerEdits":{"additionalGids":[5]}}]})"), "0.7.0");
  EXPECT_EQ(min(R"({"devices":[{"name":"x","containerEdits":{"intelRdt":{"schemata":["L3:0=f"]}}}]})"), "1.1.0");
  EXPECT_EQ(min(R"({"devices":[{"name":"x","containerEdits":{"intelRdt":{"enableMonitoring":true}}}]})"), "1.1.0");
  EXPECT_EQ(min(R"({"devices":[{"name":"x","containerEdits":{"netDevices":[{"hostInterfaceName":"eth1"}]}}]})"), "1.1.0");
  // Empty feature fields do not count.
  EXPECT_EQ(min(R"({"annotations":{},"devices":[{"name":"x","annotations":{},"containerEdits":{"netDevices":[]}}]})"), "0.3.0");
  // Garbage never crashes.
  EXPECT_EQ(min(R"([1,2])"), "0.3.0");
  EXPECT_EQ(min(R"({"devices":[1,"x",{"containerEdits":5}]})"), "0.3.0");
  auto reason = MinimumVersion(*base::ParseJson(R"({"devices":[{"name":"1x"}]})")).reason;
  EXPECT_EQ(reason, "devices[0].name \"1x\" starts with a digit");
}

TEST(NameRulesTest, KindVendorClass) {
  EXPECT_TRUE(ValidateKind(kKind).ok());
  EXPECT_TRUE(ValidateKind(kKind, "0.3.0").ok());
  EXPECT_THAT(std::string(ValidateKind("noslash").message()), HasSubstr("exactly one '/'"));
  EXPECT_THAT(std::string(ValidateKind("a/b/c").message()), HasSubstr("exactly one '/'"));
  EXPECT_THAT(std::string(ValidateKind("/c").message()), HasSubstr("invalid vendor: empty name"));
  EXPECT_THAT(std::string(ValidateKind("1a.io/c").message()), HasSubstr("should start with a letter"));
  EXPECT_THAT(std::string(ValidateKind("a.io-/c").message()), HasSubstr("should end with a letter or digit"));
  EXPECT_THAT(std::string(ValidateKind("a!b/c").message()), HasSubstr("invalid character \"!\" in vendor"));
  EXPECT_THAT(std::string(ValidateVendorName(std::string(254, 'a')).message()), HasSubstr("253"));
  EXPECT_THAT(std::string(ValidateClassName(std::string(64, 'a')).message()), HasSubstr("63"));
  EXPECT_THAT(std::string(ValidateKind("a.io/c.d", "0.5.0").message()),
              HasSubstr("dots need cdiVersion 0.6.0"));
  EXPECT_TRUE(ValidateKind("a.io/c.d", "0.6.0").ok());
  EXPECT_THAT(std::string(ValidateKind("a.io/c/").message()), HasSubstr("exactly one"));
  EXPECT_THAT(std::string(ValidateKind("a.io/c=d").message()), HasSubstr("invalid character \"=\" in class"));
}

TEST(NameRulesTest, DeviceAndEnvNames) {
  EXPECT_TRUE(ValidateDeviceName("abc-1_2.3").ok());
  EXPECT_THAT(std::string(ValidateDeviceName("").message()), HasSubstr("empty"));
  EXPECT_THAT(std::string(ValidateDeviceName("1abc", "0.4.0").message()),
              HasSubstr("starting with a digit needs cdiVersion 0.5.0"));
  EXPECT_TRUE(ValidateDeviceName("1abc", "0.5.0").ok());
  EXPECT_TRUE(ValidateDeviceName("1abc").ok());
  EXPECT_THAT(std::string(ValidateDeviceName("-abc").message()), HasSubstr("should start"));
  EXPECT_THAT(std::string(ValidateDeviceName("abc.").message()), HasSubstr("should end"));
  EXPECT_THAT(std::string(ValidateDeviceName("a/b").message()), HasSubstr("invalid character \"/\""));
  EXPECT_THAT(std::string(ValidateDeviceName("a b").message()), HasSubstr("invalid character \" \""));
  EXPECT_TRUE(ValidateEnvName("SPIDER_IP").ok());
  EXPECT_THAT(std::string(ValidateEnvName("").message()), HasSubstr("empty"));
  EXPECT_THAT(std::string(ValidateEnvName("A=B").message()), HasSubstr("contains '='"));
}

TEST(BuildSpecTest, BasicShapeAndVersion) {
  auto s = BuildSpec({.claim_uid = kUID, .env = {{"SPIDER_IP", "10.6.0.10/24"}}});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->version, "0.3.0");
  EXPECT_EQ(s->device_id, std::string("k8s.netresources.spidernet.io/claim=") + kUID);
  Json want = {{"cdiVersion", "0.3.0"},
               {"kind", "k8s.netresources.spidernet.io/claim"},
               {"devices",
                Json::array({{{"name", kUID},
                              {"containerEdits",
                               {{"env", Json::array({std::string("DRA_CLAIM_UID=") + kUID,
                                                     "SPIDER_IP=10.6.0.10/24"})}}}}})}};
  EXPECT_EQ(s->json, want) << s->json.dump(2);
  // The YAML text is the same object.
  auto y = base::ParseYaml(ToYaml(s->json));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(*y, want) << ToYaml(s->json);
}

TEST(BuildSpecTest, MountsAndDigitUID) {
  auto s = BuildSpec({.claim_uid = "0f1e2d3c-aaaa",
                      .mounts = {{.host_path = "/usr/lib/libibverbs.so.1",
                                  .container_path = "/usr/lib/libibverbs.so.1",
                                  .options = {"ro", "nosuid", "nodev", "bind"}}}});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->version, "0.5.0");  // device name starts with a digit
  Json want_mount = {{"hostPath", "/usr/lib/libibverbs.so.1"},
                     {"containerPath", "/usr/lib/libibverbs.so.1"},
                     {"options", {"ro", "nosuid", "nodev", "bind"}}};
  EXPECT_EQ(s->json["devices"][0]["containerEdits"]["mounts"], Json::array({want_mount}));
  auto y = base::ParseYaml(ToYaml(s->json));
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(*y, s->json);
  // A mount type needs 0.4.0.
  s = BuildSpec({.claim_uid = kUID, .mounts = {{.host_path = "/a", .container_path = "/b", .type = "bind"}}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->version, "0.4.0");
  EXPECT_EQ(s->json["devices"][0]["containerEdits"]["mounts"][0]["type"], "bind");
  EXPECT_FALSE(s->json["devices"][0]["containerEdits"]["mounts"][0].contains("options"));
}

TEST(BuildSpecTest, ValidationNamesTheField) {
  auto err = [](ClaimSpec c) {
    auto s = BuildSpec(c);
    EXPECT_FALSE(s.ok());
    return std::string(s.status().message());
  };
  EXPECT_THAT(err({.claim_uid = ""}), HasSubstr("claimUID: invalid device name: empty"));
  EXPECT_THAT(err({.claim_uid = "../etc"}), HasSubstr("claimUID: invalid device name \"../etc\""));
  EXPECT_THAT(err({.claim_uid = std::string(201, 'a')}), HasSubstr("claimUID: longer than 200"));
  EXPECT_THAT(err({.claim_uid = kUID, .env = {{"A", "1"}, {"B=C", "2"}}}),
              HasSubstr("env[1].name: environment variable name \"B=C\" contains '='"));
  EXPECT_THAT(err({.claim_uid = kUID, .env = {{"", "1"}}}),
              HasSubstr("env[0].name: empty environment variable name"));
  EXPECT_THAT(err({.claim_uid = kUID, .env = {{"DRA_CLAIM_UID", "x"}}}),
              HasSubstr("env[0].name: duplicate environment variable \"DRA_CLAIM_UID\""));
  EXPECT_THAT(err({.claim_uid = kUID, .env = {{"A", "1"}, {"A", "2"}}}),
              HasSubstr("env[1].name: duplicate"));
  EXPECT_THAT(err({.claim_uid = kUID, .env = {{"A", std::string("x\0y", 3)}}}),
              HasSubstr("env[0].value: contains a NUL byte"));
  EXPECT_THAT(err({.claim_uid = kUID, .env = {{"A", "\xff"}}}),
              HasSubstr("env[0].value: invalid UTF-8 at byte 0"));
  EXPECT_THAT(err({.claim_uid = kUID, .mounts = {{.host_path = "lib", .container_path = "/lib"}}}),
              HasSubstr("mounts[0].hostPath: path \"lib\" is not absolute"));
  EXPECT_THAT(err({.claim_uid = kUID, .mounts = {{.host_path = "/lib", .container_path = ""}}}),
              HasSubstr("mounts[0].containerPath: empty path"));
  EXPECT_THAT(err({.claim_uid = kUID,
                   .mounts = {{.host_path = "/a", .container_path = "/b", .options = {"ro", ""}}}}),
              HasSubstr("mounts[0].options[1]: empty option"));
  EXPECT_THAT(err({.claim_uid = kUID, .net_devices = {{.host_interface_name = "a/b"}}}),
              HasSubstr("netDevices[0].hostInterfaceName: invalid character"));
  EXPECT_THAT(err({.claim_uid = kUID, .net_devices = {{.host_interface_name = std::string(16, 'e')}}}),
              HasSubstr("1-15 characters"));
  EXPECT_THAT(err({.claim_uid = kUID, .device_annotations = {{"", "v"}}}),
              HasSubstr("annotations: empty key"));
}

TEST(BuildSpecTest, DefaultIsCappedAtPodmanVersion) {
  // Annotations need 0.6.0: refused without a pin, explaining why and how to pin.
  auto s = BuildSpec({.claim_uid = kUID, .device_annotations = {{"a", "b"}}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("needs cdiVersion 0.6.0 (devices[0].annotations), above the default maximum 0.5.0"));
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("dra.spidernet.io/cdi-version"));
  // A raised cap chooses the minimum.
  s = BuildSpec({.claim_uid = kUID, .device_annotations = {{"a", "b"}}}, {.max_version = "1.1.0"});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->version, "0.6.0");
  EXPECT_EQ(s->json["devices"][0]["annotations"], (Json{{"a", "b"}}));
  s = BuildSpec({.claim_uid = kUID, .net_devices = {{.host_interface_name = "eth1", .name = "net1"}}},
                {.max_version = "1.1.0"});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->version, "1.1.0");
  EXPECT_EQ(s->json["devices"][0]["containerEdits"]["netDevices"],
            *base::ParseJson(R"([{"hostInterfaceName":"eth1","name":"net1"}])"));
  EXPECT_FALSE(BuildSpec({.claim_uid = kUID}, {.max_version = "7"}).ok());
}

TEST(BuildSpecTest, PinOverridesAndIsValidated) {
  auto s = BuildSpec({.claim_uid = kUID, .version_pin = "0.6.0"});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->version, "0.6.0");
  EXPECT_EQ(s->json["cdiVersion"], "0.6.0");
  s = BuildSpec({.claim_uid = kUID, .device_annotations = {{"a", "b"}}, .version_pin = "v0.7.0"});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->version, "0.7.0");
  s = BuildSpec({.claim_uid = kUID, .version_pin = "0.9.0"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("annotation dra.spidernet.io/cdi-version: unknown cdiVersion \"0.9.0\""));
  s = BuildSpec({.claim_uid = "9abc", .version_pin = "0.4.0"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("cdiVersion 0.4.0 cannot express this spec: it needs 0.5.0 (devices[0].name "
                        "\"9abc\" starts with a digit)"));
  s = BuildSpec({.claim_uid = kUID, .device_annotations = {{"a", "b"}}, .version_pin = "0.5.0"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("it needs 0.6.0"));
}

TEST(ToYamlTest, ShapesAndEscapes) {
  Json j = {{"s", "a\"b\\c\n\t\x7f"},
            {"u", "h\xc3\xa9 \xf0\x9f\x98\x80"},
            {"n", nullptr},
            {"b", true},
            {"i", 42},
            {"e1", Json::array()},
            {"e2", Json::object()},
            {"nested", Json::array({Json::array({1, "x"}), Json{{"k", Json::array({"v"})}}})},
            {"yes", "yes"},
            {"null", "null"}};
  std::string y = ToYaml(j);
  auto back = base::ParseYaml(y);
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << y;
  EXPECT_EQ(*back, j) << y;
  EXPECT_THAT(y, HasSubstr("\"u\": \"h\\u00E9 \\U0001F600\""));
}

}  // namespace
}  // namespace spiderpool::dra::cdi
