#include "api/codec.h"

#include <gtest/gtest.h>

#include "api/meta.h"

namespace spiderpool::api {
namespace {

struct Route {
  std::string dst;
  std::string gw;
  template <typename V>
  void Visit(V& v) {
    v.Field("dst", dst, {.required = true, .format = Format::kCIDR});
    v.Field("gw", gw, {.required = true, .format = Format::kIP});
  }
};

struct Spec {
  std::optional<int64_t> ip_version;
  std::string subnet;
  std::vector<std::string> ips;
  std::optional<std::vector<Route>> routes;
  int32_t mtu = 0;
  std::string mode;
  bool flag = false;
  std::map<std::string, std::string> labels;
  template <typename V>
  void Visit(V& v) {
    v.Field("ipVersion", ip_version, {.enum_values = {"4", "6"}});
    v.Field("subnet", subnet, {.required = true, .format = Format::kCIDR});
    v.Field("ips", ips, {.format = Format::kIPRange});
    v.Field("routes", routes);
    v.Field("mtu", mtu, {.minimum = 0, .maximum = 9000});
    v.Field("mode", mode, {.enum_values = {"auto", "manual"}});
    v.Field("flag", flag);
    v.Field("labels", labels);
  }
};

struct Obj {
  ObjectMeta metadata;
  Spec spec;
  template <typename V>
  void Visit(V& v) {
    v.Field("metadata", metadata);
    v.Field("spec", spec);
  }
};

TEST(Codec, ReportsEveryErrorWithItsPath) {
  auto j = base::ParseJson(R"({
    "metadata": {"name": 5, "labels": {"a": 1}},
    "spec": {"ipVersion": 5, "ips": ["10.0.0.1", "10.0.0.2-10.0.0.9", "10.0.0.300"],
             "routes": [{"dst": "10.1.0.0/16"}, {"dst": "x", "gw": "10.0.0.1"}],
             "mtu": "big", "mode": "bogus", "flag": "yes"}
  })");
  ASSERT_TRUE(j.ok());
  DecodeErrors errs;
  DecodeInto<Obj>(*j, &errs);
  std::vector<std::string> got;
  for (const auto& e : errs.errors) got.push_back(e.ToString());
  EXPECT_EQ(got, (std::vector<std::string>{
                     "metadata.name: expected string, got integer 5",
                     "metadata.labels[a]: expected string, got integer 1",
                     "spec.ipVersion: unsupported value 5: supported values: \"4\", \"6\"",
                     "spec.subnet: Required value",
                     "spec.ips[2]: \"10.0.0.300\" is not an IP",
                     "spec.routes[0].gw: Required value",
                     "spec.routes[1].dst: \"x\" is not a CIDR",
                     "spec.mtu: expected 32-bit integer, got string \"big\"",
                     "spec.mode: unsupported value \"bogus\": supported values: \"auto\", \"manual\"",
                     "spec.flag: expected boolean, got string \"yes\"",
                 }));
  auto st = Decode<Obj>(*j);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(st.status().message()).find("spec.ips[2]: \"10.0.0.300\" is not an IP"),
            std::string::npos);
}

TEST(Codec, RangesAndWrongShapes) {
  auto r = DecodeJson<Obj>(R"({"spec": {"subnet": "10.0.0.0/8", "mtu": 9001}})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "spec.mtu: must be less than or equal to 9000, got 9001");
  r = DecodeJson<Obj>(R"({"spec": []})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "spec: expected object, got array");
  r = DecodeJson<Obj>(R"([1])");
  ASSERT_FALSE(r.ok());
  r = DecodeJson<Obj>(R"({"spec": {"subnet": "10.0.0.0/8", "mtu": 1.5}})");
  ASSERT_FALSE(r.ok());
  r = DecodeJson<Obj>(R"({"spec": {"subnet": "10.0.0.0/8", "mtu": 1500.0}})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->spec.mtu, 1500);
}

TEST(Codec, OmitsZeroValuesButKeepsSetOptionals) {
  Obj o;
  o.spec.subnet = "10.0.0.0/8";
  o.spec.routes = std::vector<Route>{};  // explicitly empty: written
  o.spec.ip_version = 0;                 // optional with zero value: written
  Json j = Encode(o);
  EXPECT_EQ(j, Json::parse(R"({"spec": {"subnet": "10.0.0.0/8", "routes": [], "ipVersion": 0}})"));
  // ipVersion 0 is written (set optional) and then rejected by the enum on the way back.
  EXPECT_EQ(Decode<Obj>(j).status().message(),
            "spec.ipVersion: unsupported value 0: supported values: \"4\", \"6\"");
  o.spec.ip_version = 4;
  auto back = Decode<Obj>(Encode(o));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->spec.routes.has_value());
  EXPECT_TRUE(back->spec.routes->empty());
  auto absent = DecodeJson<Obj>(R"({"spec": {"subnet": "10.0.0.0/8"}})");
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->spec.routes.has_value());
}

TEST(Codec, KeepsUnknownMetadataFields) {
  const char* text = R"({"metadata": {"name": "a", "managedFields": [{"manager": "kubectl"}],
     "creationTimestamp": "2024-05-06T07:08:09Z", "selfLink": "/x"}})";
  auto o = DecodeJson<Obj>(text);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(api::FormatTime(o->metadata.creation_timestamp->value), "2024-05-06T07:08:09Z");
  Json j = Encode(*o);
  EXPECT_EQ(j["metadata"]["managedFields"][0]["manager"], "kubectl");
  EXPECT_EQ(j["metadata"]["selfLink"], "/x");
  EXPECT_EQ(j["metadata"]["creationTimestamp"], "2024-05-06T07:08:09Z");
}

TEST(Codec, ListsFields) {
  FieldTree t = ListFields<Obj>();
  ASSERT_TRUE(t.children.count("spec"));
  const FieldTree& spec = t.children.at("spec");
  EXPECT_TRUE(spec.children.count("routes"));
  EXPECT_TRUE(spec.children.at("routes").children.count("gw"));
  EXPECT_TRUE(t.children.at("metadata").preserves_unknown);
}

TEST(Codec, TimesRoundTrip) {
  auto t = ParseTime("2024-01-02T03:04:05.123456Z");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(FormatMicroTime(*t), "2024-01-02T03:04:05.123456Z");
  EXPECT_EQ(api::FormatTime(*t), "2024-01-02T03:04:05Z");
  EXPECT_FALSE(ParseTime("yesterday").ok());
}

TEST(Meta, FinalizersConditionsSelectors) {
  ObjectMeta m;
  EXPECT_TRUE(m.AddFinalizer("spiderpool.spidernet.io"));
  EXPECT_FALSE(m.AddFinalizer("spiderpool.spidernet.io"));
  EXPECT_TRUE(m.HasFinalizer("spiderpool.spidernet.io"));
  EXPECT_TRUE(m.RemoveFinalizer("spiderpool.spidernet.io"));
  EXPECT_FALSE(m.RemoveFinalizer("spiderpool.spidernet.io"));

  std::vector<Condition> conds;
  Condition c{.type = "Ready", .status = "True", .reason = "Ok", .message = "fine"};
  c.last_transition_time.value = absl::FromUnixSeconds(100);
  EXPECT_TRUE(SetCondition(&conds, c));
  c.last_transition_time.value = absl::FromUnixSeconds(200);
  EXPECT_FALSE(SetCondition(&conds, c));  // same status: transition time kept, no change
  EXPECT_EQ(conds[0].last_transition_time.value, absl::FromUnixSeconds(100));
  c.status = "False";
  EXPECT_TRUE(SetCondition(&conds, c));
  EXPECT_EQ(FindCondition(conds, "Ready")->last_transition_time.value, absl::FromUnixSeconds(200));

  LabelSelector sel;
  EXPECT_TRUE(sel.Matches({}));
  sel.match_labels["app"] = "web";
  sel.match_expressions.push_back({.key = "tier", .op = "In", .values = {"a", "b"}});
  sel.match_expressions.push_back({.key = "skip", .op = "DoesNotExist"});
  EXPECT_TRUE(sel.Matches({{"app", "web"}, {"tier", "b"}}));
  EXPECT_FALSE(sel.Matches({{"app", "web"}, {"tier", "c"}}));
  EXPECT_FALSE(sel.Matches({{"app", "web"}, {"tier", "a"}, {"skip", ""}}));
}

}  // namespace
}  // namespace spiderpool::api
