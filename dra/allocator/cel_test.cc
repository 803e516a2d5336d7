#include "dra/allocator/cel.h"

#include <gtest/gtest.h>

namespace spiderpool::dra::allocator {
namespace {

using api::DeviceAttribute;

DeviceView Dev() {
  api::Device d{.name = "eth1-0"};
  d.attributes = {{"ifName", DeviceAttribute::String("eth1")},
                  {"slot", DeviceAttribute::Int(3)},
                  {"rdma", DeviceAttribute::Bool(false)},
                  {"pool_a", DeviceAttribute::Bool(true)},
                  {"k8s.cni.cncf.io/resourceName", DeviceAttribute::String("x/y")},
                  {"ver", DeviceAttribute::Version("1.0.0")}};
  return DeviceView::Of("netresources.spidernet.io", d);
}

absl::StatusOr<bool> Eval(std::string_view text) {
  auto e = Expression::Parse(text);
  if (!e.ok()) return e.status();
  return e->Evaluate(Dev());
}

constexpr std::string_view kA = R"(device.attributes["netresources.spidernet.io"])";

TEST(Cel, WhatOurSelectorsUse) {
  EXPECT_EQ(*Eval(R"(device.driver == "netresources.spidernet.io")"), true);
  EXPECT_EQ(*Eval(R"(device.driver == "other")"), false);
  EXPECT_EQ(*Eval(std::string(R"("ifName" in )") + std::string(kA) + " && " + std::string(kA) +
                  R"(.ifName in ["eth0", "eth1"])"),
            true);
  EXPECT_EQ(*Eval(std::string(kA) + R"(.ifName == "eth2")"), false);
  EXPECT_EQ(*Eval(std::string(kA) + R"(["ifName"] != "eth2")"), true);
  EXPECT_EQ(*Eval(R"(("pool_b" in device.attributes["netresources.spidernet.io"] || )"
                  R"("pool_a" in device.attributes["netresources.spidernet.io"]))"),
            true);
  EXPECT_EQ(*Eval(std::string(kA) + ".slot == 3 && !" + std::string(kA) + ".rdma"), true);
  EXPECT_EQ(*Eval(R"(device.attributes["k8s.cni.cncf.io"].resourceName == "x/y")"), true);
  EXPECT_EQ(*Eval(R"("resourceName" in device.attributes["nowhere.io"])"), false);
  EXPECT_EQ(*Eval(R"("k8s.cni.cncf.io" in device.attributes)"), true);
  EXPECT_EQ(*Eval(R"("a\"b" == "a\x22b")"), true);
}

TEST(Cel, MissingKeysAndShortCircuit) {
  // A missing attribute is an error, not false...
  auto missing = Eval(std::string(kA) + R"(.mtu == 1500)");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("no such key: mtu"), std::string::npos);
  // ...unless the guard decides first, on either side (CEL's commutative && / ||).
  EXPECT_EQ(*Eval(std::string(R"("mtu" in )") + std::string(kA) + " && " + std::string(kA) +
                  ".mtu == 1500"),
            false);
  EXPECT_EQ(*Eval(std::string(kA) + R"(.mtu == 1500 && false)"), false);
  EXPECT_EQ(*Eval(std::string(kA) + R"(.mtu == 1500 || true)"), true);
  EXPECT_FALSE(Eval(std::string(kA) + R"(.mtu == 1500 || false)").ok());
  // Type mismatches and versions are errors too.
  EXPECT_FALSE(Eval(std::string(kA) + R"(.slot == "3")").ok());
  EXPECT_FALSE(Eval(std::string(kA) + R"(.ver == "1.0.0")").ok());
  EXPECT_FALSE(Eval(R"("x")").ok());  // not a bool
}

TEST(Cel, UnsupportedSyntaxIsAParseError) {
  for (std::string_view text : {
           R"(device.attributes["d"].name.matches("x"))",
           R"(has(device.attributes["d"].name))",
           R"(device.attributes["d"].slot > 1)",
           R"(device.attributes["d"].?name.orValue(""))",
           R"(device.capacity["d"].x == 1)",  // parses, but fails at evaluation
           R"(x == 1)",
           R"(true ? 1 : 2)",
           R"("a" + "b" == "ab")",
           R"(device.driver == "x)",
           R"((true)",
       }) {
    auto e = Expression::Parse(text);
    if (e.ok()) {
      EXPECT_FALSE(e->Evaluate(Dev()).ok()) << text;
    } else {
      EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument) << text;
    }
  }
  EXPECT_FALSE(Expression::Parse("device.driver.matches(\"x\")").ok());
  EXPECT_FALSE(Expression::Parse("").ok());
}

}  // namespace
}  // namespace spiderpool::dra::allocator
