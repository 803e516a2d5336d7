#include "api/resource_slice.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/json.h"

namespace spiderpool::api {
namespace {

using base::Json;

Json MustParse(std::string_view text) {
  auto j = base::ParseJson(text);
  EXPECT_TRUE(j.ok()) << j.status();
  return j.ok() ? *j : Json();
}

// A v1 slice as kube-apiserver returns it (upstream field names).
constexpr char kV1Slice[] = R"({
  "apiVersion": "resource.k8s.io/v1",
  "kind": "ResourceSlice",
  "metadata": {"name": "node1-netresources.spidernet.io-0", "resourceVersion": "42",
               "uid": "0b8f2e3c-1111-4222-8333-444455556666"},
  "spec": {
    "driver": "netresources.spidernet.io",
    "pool": {"name": "node1", "generation": 3, "resourceSliceCount": 1},
    "nodeName": "node1",
    "devices": [
      {"name": "eth1-0",
       "attributes": {
         "ifName": {"string": "eth1"},
         "mtu": {"int": 9000},
         "rdma": {"bool": false},
         "driverVersion": {"version": "1.2.3-rc.1+build.5"},
         "resource.kubernetes.io/pcieRoot": {"string": "pci0000:3b"}},
       "capacity": {"bandwidth": {"value": "10G"}},
       "taints": [{"key": "example.com/t", "effect": "NoSchedule"}]}
    ]
  }
})";

TEST(ResourceSlice, DecodesV1AndKeepsUnknownFields) {
  auto s = DecodeResourceSliceFrom(MustParse(kV1Slice), "v1");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->api_version, "resource.k8s.io/v1");
  EXPECT_EQ(s->spec.driver, "netresources.spidernet.io");
  EXPECT_EQ(s->spec.pool, (ResourcePool{"node1", 3, 1}));
  EXPECT_EQ(s->spec.node_name, "node1");
  ASSERT_EQ(s->spec.devices.size(), 1u);
  const Device& d = s->spec.devices[0];
  EXPECT_EQ(d.attributes.at("ifName"), DeviceAttribute::String("eth1"));
  EXPECT_EQ(d.attributes.at("mtu"), DeviceAttribute::Int(9000));
  EXPECT_EQ(d.attributes.at("rdma"), DeviceAttribute::Bool(false));
  EXPECT_EQ(d.attributes.at("driverVersion"), DeviceAttribute::Version("1.2.3-rc.1+build.5"));
  EXPECT_EQ(d.capacity.at("bandwidth").value, "10G");
  EXPECT_TRUE(ValidateResourceSlice(*s).empty());
  // Round trip: taints survive, `bool: false` and `int: 0`-like set values are written.
  auto back = EncodeResourceSliceAs(*s, "v1");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, MustParse(kV1Slice));
}

TEST(ResourceSlice, V1beta1WrapsDevicesInBasic) {
  auto s = DecodeResourceSliceFrom(MustParse(kV1Slice), "v1");
  ASSERT_TRUE(s.ok());
  auto beta1 = EncodeResourceSliceAs(*s, "v1beta1");
  ASSERT_TRUE(beta1.ok());
  EXPECT_EQ((*beta1)["apiVersion"], "resource.k8s.io/v1beta1");
  const Json& dev = (*beta1)["spec"]["devices"][0];
  EXPECT_EQ(dev["name"], "eth1-0");
  EXPECT_FALSE(dev.contains("attributes"));
  EXPECT_EQ(dev["basic"]["attributes"]["mtu"]["int"], 9000);
  EXPECT_EQ(dev["basic"]["capacity"]["bandwidth"]["value"], "10G");
  EXPECT_EQ(dev["basic"]["taints"][0]["effect"], "NoSchedule");
  auto again = DecodeResourceSliceFrom(*beta1, "v1beta1");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(Encode(*again), Encode(*s));
  // A device without attributes still gets an (empty) `basic`.
  ResourceSlice bare = *s;
  bare.spec.devices = {Device{.name = "x"}};
  auto b = EncodeResourceSliceAs(bare, "v1beta1");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)["spec"]["devices"][0], MustParse(R"({"name": "x", "basic": {}})"));
}

TEST(ResourceSlice, V1beta2IsTheV1Shape) {
  auto s = DecodeResourceSliceFrom(MustParse(kV1Slice), "v1");
  ASSERT_TRUE(s.ok());
  auto beta2 = EncodeResourceSliceAs(*s, "v1beta2");
  ASSERT_TRUE(beta2.ok());
  Json expected = MustParse(kV1Slice);
  expected["apiVersion"] = "resource.k8s.io/v1beta2";
  EXPECT_EQ(*beta2, expected);
  auto again = DecodeResourceSliceFrom(*beta2, "v1beta2");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->api_version, "resource.k8s.io/v1");
}

TEST(ResourceSlice, UnknownVersionAndDecodeErrors) {
  ResourceSlice s;
  EXPECT_EQ(EncodeResourceSliceAs(s, "v1alpha3").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(DecodeResourceSliceFrom(Json::object(), "v2").ok());
  auto bad = DecodeResourceSliceFrom(MustParse(R"({"spec": {"driver": "d", "pool": {"name": "p",
      "generation": "x", "resourceSliceCount": 1}, "devices": [{"name": "a",
      "basic": 5}, {"basic": {"attributes": {"m": {"int": "z"}}}}]}})"),
                                     "v1beta1");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "spec.devices[0].basic: expected object, got integer 5; spec.pool.generation: "
            "expected integer, got string \"x\"; spec.devices[1].name: Required value; "
            "spec.devices[1].attributes[m].int: expected integer, got string \"z\"");
}

TEST(DeviceClass, RoundTripsInEveryVersion) {
  constexpr char kClass[] = R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
    "metadata": {"name": "netresources.spidernet.io"},
    "spec": {"selectors": [{"cel": {"expression": "device.driver == \"netresources.spidernet.io\""}}],
             "config": [{"opaque": {"driver": "netresources.spidernet.io",
                                    "parameters": {"apiVersion": "v1", "kind": "X"}}}]}})";
  auto c = DecodeDeviceClassFrom(MustParse(kClass), "v1");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->spec.selectors.size(), 1u);
  EXPECT_EQ(c->spec.selectors[0].cel->expression,
            "device.driver == \"netresources.spidernet.io\"");
  EXPECT_EQ(c->spec.config[0].opaque->parameters["kind"], "X");
  for (const char* v : {"v1", "v1beta2", "v1beta1"}) {
    auto j = EncodeDeviceClassAs(*c, v);
    ASSERT_TRUE(j.ok());
    Json expected = MustParse(kClass);
    expected["apiVersion"] = std::string("resource.k8s.io/") + v;
    EXPECT_EQ(*j, expected) << v;
  }
  DeviceClass empty;
  empty.metadata.name = "x";
  auto e = EncodeDeviceClassAs(empty, "v1");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)["spec"], Json::object());  // spec is required
}

// ---- validation -------------------------------------------------------------------------

ResourceSlice ValidSlice() {
  ResourceSlice s;
  s.metadata.name = "node1-netresources.spidernet.io-0";
  s.spec.driver = "netresources.spidernet.io";
  s.spec.pool = {"node1", 1, 1};
  s.spec.node_name = "node1";
  Device d{.name = "eth0-0"};
  d.attributes["ifName"] = DeviceAttribute::String("eth0");
  s.spec.devices.push_back(d);
  return s;
}

std::vector<std::string> Messages(const ResourceSlice& s) {
  std::vector<std::string> out;
  for (const auto& e : ValidateResourceSlice(s)) out.push_back(e.ToString());
  return out;
}

TEST(ValidateResourceSlice, ValidSliceHasNoErrors) {
  EXPECT_TRUE(Messages(ValidSlice()).empty());
  EXPECT_TRUE(ValidateResourceSliceStatus(ValidSlice()).ok());
}

TEST(ValidateResourceSlice, TooManyAttributes) {
  ResourceSlice s = ValidSlice();
  for (int i = 0; i < 32; ++i) {
    s.spec.devices[0].attributes["a" + std::to_string(i)] = DeviceAttribute::Int(i);
  }
  EXPECT_EQ(Messages(s),
            std::vector<std::string>{"spec.devices[0]: Invalid value: 33: the total number of "
                                     "attributes and capacities must not exceed 32"});
  // Attributes and capacities are counted together.
  ResourceSlice t = ValidSlice();
  for (int i = 0; i < 31; ++i) {
    t.spec.devices[0].capacity["c" + std::to_string(i)] = DeviceCapacity{.value = "1"};
  }
  EXPECT_TRUE(Messages(t).empty());
  t.spec.devices[0].capacity["one_more"] = DeviceCapacity{.value = "1"};
  EXPECT_EQ(Messages(t).size(), 1u);
  absl::Status st = ValidateResourceSliceStatus(s);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "ResourceSlice.resource.k8s.io \"node1-netresources.spidernet.io-0\" is invalid: "
            "spec.devices[0]: Invalid value: 33: the total number of attributes and capacities "
            "must not exceed 32");
}

TEST(ValidateResourceSlice, AttributeValues) {
  ResourceSlice s = ValidSlice();
  auto& attrs = s.spec.devices[0].attributes;
  attrs["long"] = DeviceAttribute::String(std::string(65, 'x'));
  attrs["ok64"] = DeviceAttribute::String(std::string(64, 'x'));
  attrs["none"] = DeviceAttribute{};
  attrs["two"] = DeviceAttribute{.int_value = 1, .bool_value = true};
  attrs["ver"] = DeviceAttribute::Version("1.02.3");
  EXPECT_EQ(Messages(s),
            (std::vector<std::string>{
                "spec.devices[0].attributes[long].string: Too long: may not be more than 64 bytes",
                "spec.devices[0].attributes[none]: Invalid value: \"\": exactly one value must "
                "be specified",
                "spec.devices[0].attributes[two]: Invalid value: {\"bool\":true,\"int\":1}: "
                "exactly one value must be specified",
                "spec.devices[0].attributes[ver].version: Invalid value: \"1.02.3\": must be a "
                "string compatible with semver.org spec 2.0.0",
            }));
}

TEST(ValidateResourceSlice, SemverForms) {
  for (const char* good : {"0.0.0", "1.2.3", "10.20.30-alpha", "1.0.0-alpha.1", "1.0.0-0.3.7",
                           "1.0.0-x.7.z.92", "1.0.0+20130313144700", "1.0.0-beta+exp.sha.5114f85",
                           "1.0.0--x"}) {
    ResourceSlice s = ValidSlice();
    s.spec.devices[0].attributes["v"] = DeviceAttribute::Version(good);
    EXPECT_TRUE(Messages(s).empty()) << good;
  }
  for (const char* bad : {"1.2", "1.2.3.4", "01.2.3", "1.2.3-01", "1.2.3-", "1.2.3+", "1.2.3-a..b",
                          "v1.2.3", "", "1.2.3+a_b"}) {
    ResourceSlice s = ValidSlice();
    s.spec.devices[0].attributes["v"] = DeviceAttribute::Version(bad);
    EXPECT_EQ(Messages(s).size(), 1u) << bad;
  }
}

TEST(ValidateResourceSlice, QualifiedNames) {
  auto msgs = [](std::string_view name) {
    std::vector<std::string> out;
    for (const auto& e : ValidateQualifiedName(name, "p")) out.push_back(e.ToString());
    return out;
  };
  EXPECT_TRUE(msgs("ifName").empty());
  EXPECT_TRUE(msgs("_x9").empty());
  EXPECT_TRUE(msgs("resource.kubernetes.io/pcieRoot").empty());
  EXPECT_TRUE(msgs("k8s.cni.cncf.io/deviceID").empty());
  EXPECT_EQ(msgs("9lives"),
            std::vector<std::string>{
                "p: Invalid value: \"9lives\": a valid C identifier must start with alphabetic "
                "character or '_', followed by a string of alphanumeric characters or '_' (e.g. "
                "'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
                "'[A-Za-z_][A-Za-z0-9_]*')"});
  EXPECT_EQ(msgs(std::string(33, 'a')),
            std::vector<std::string>{"p: Too long: may not be more than 32 bytes"});
  EXPECT_EQ(msgs("a/b/c"), std::vector<std::string>{
                               "p: Invalid value: \"a/b/c\": must not contain more than one slash"});
  EXPECT_EQ(msgs("/x"),
            std::vector<std::string>{"p: Invalid value: \"\": the domain must not be empty"});
  EXPECT_EQ(msgs("d.io/"),
            std::vector<std::string>{"p: Invalid value: \"\": the name must not be empty"});
  EXPECT_EQ(msgs("Bad_Domain/x").size(), 1u);
  EXPECT_EQ(msgs(std::string(64, 'a') + "/x"),
            std::vector<std::string>{"p: Too long: may not be more than 63 bytes"});
  // Key errors sit on the map, value errors on the key; long keys are truncated in the path.
  ResourceSlice s = ValidSlice();
  std::string long_key = std::string(70, 'd') + "/" + std::string(40, 'n');
  s.spec.devices[0].attributes[long_key] = DeviceAttribute{};
  std::vector<std::string> m = Messages(s);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0], "spec.devices[0].attributes: Too long: may not be more than 63 bytes");
  EXPECT_EQ(m[1], "spec.devices[0].attributes: Too long: may not be more than 32 bytes");
  EXPECT_EQ(m[2], "spec.devices[0].attributes[" + std::string(47, 'd') + "..." + std::string(5, 'd') +
                      "/" + std::string(40, 'n') +
                      "]: Invalid value: \"\": exactly one value must be specified");
}

TEST(ValidateResourceSlice, DeviceNamesAndCount) {
  ResourceSlice s = ValidSlice();
  s.spec.devices.push_back(Device{.name = "Eth_1"});
  s.spec.devices.push_back(Device{.name = "a.b"});
  s.spec.devices.push_back(Device{.name = "eth0-0"});
  EXPECT_EQ(Messages(s),
            (std::vector<std::string>{
                "spec.devices[1].name: Invalid value: \"Eth_1\": a lowercase RFC 1123 label must "
                "consist of lower case alphanumeric characters or '-', and must start and end "
                "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "spec.devices[2].name: Invalid value: \"a.b\": must not contain dots",
                "spec.devices[3]: Duplicate value: \"eth0-0\"",
            }));
  ResourceSlice big = ValidSlice();
  big.spec.devices.clear();
  for (int i = 0; i < 129; ++i) big.spec.devices.push_back(Device{.name = "Bad_" + std::to_string(i)});
  EXPECT_EQ(Messages(big),
            std::vector<std::string>{"spec.devices: Too many: 129: must have at most 128 items"});
  big.spec.devices.pop_back();
  EXPECT_EQ(Messages(big).size(), 128u);  // now each bad name is reported
}

TEST(ValidateResourceSlice, SpecFields) {
  ResourceSlice s = ValidSlice();
  s.metadata.name = "";
  s.spec.driver = std::string(64, 'a');
  s.spec.pool = {"", -1, 0};
  s.spec.node_name.reset();
  EXPECT_EQ(Messages(s),
            (std::vector<std::string>{
                "metadata.name: Required value: name or generateName is required",
                "spec.driver: Too long: may not be more than 63 bytes",
                "spec.pool.name: Required value",
                "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
                "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero",
                "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                "`perDeviceNodeSelection` is required",
            }));
  ResourceSlice t = ValidSlice();
  t.spec.all_nodes = true;
  t.spec.pool.name = "a/Bad";
  t.spec.driver = "";
  std::vector<std::string> m = Messages(t);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0], "spec.driver: Required value");
  EXPECT_EQ(m[1].substr(0, 50), "spec.driver: Invalid value: \"\": a lowercase RFC 11");
  EXPECT_EQ(m[2].substr(0, 45), "spec.pool.name: Invalid value: \"Bad\": a lower");
  EXPECT_EQ(m[3],
            "spec: Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of `nodeName`, "
            "`nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple "
            "fields are set");
  ResourceSlice u = ValidSlice();
  u.spec.node_name = "";
  u.spec.node_selector = Json::object();
  EXPECT_EQ(Messages(u),
            (std::vector<std::string>{
                "spec.nodeName: Invalid value: \"\": must be either unset or set to a non-empty "
                "string",
                "spec.nodeSelector.nodeSelectorTerms: Invalid value: null: must have exactly one "
                "node selector term",
            }));
  // Upper-case driver names are accepted (the check lower-cases first), as upstream.
  ResourceSlice v = ValidSlice();
  v.spec.driver = "NetResources.example.com";
  EXPECT_TRUE(Messages(v).empty());
}

TEST(ValidateResourceSlice, ConsumableCapacityAndPerDeviceFields) {
  ResourceSlice s = ValidSlice();
  DeviceCapacity c{.value = "10"};
  c.unknown = MustParse(R"({"requestPolicy": {"default": "1"}})");
  s.spec.devices[0].capacity["bw"] = c;
  s.spec.devices[0].unknown = MustParse(R"({"nodeName": "node1"})");
  EXPECT_EQ(Messages(s),
            (std::vector<std::string>{
                "spec.devices[0].capacity[bw].requestPolicy: Forbidden: allowMultipleAllocations "
                "must be true",
                "spec.devices[0]: Invalid value: \"null\": `nodeName`, `nodeSelector` and "
                "`allNodes` can only be set if `perDeviceNodeSelection` is set to true in the "
                "ResourceSlice spec",
            }));
  s.spec.devices[0].allow_multiple_allocations = true;
  s.spec.node_name.reset();
  s.spec.per_device_node_selection = true;
  EXPECT_TRUE(Messages(s).empty());
}

}  // namespace
}  // namespace spiderpool::api
