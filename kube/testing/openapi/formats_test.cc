#include "kube/testing/openapi/formats.h"

#include "gtest/gtest.h"

namespace spiderpool::kube::testing::openapi {
namespace {

TEST(FormatsTest, EffectiveFormatNormalisesAndStrips) {
  EXPECT_EQ(EffectiveFormat("date-time"), "datetime");
  EXPECT_EQ(EffectiveFormat("ipv4"), "ipv4");
  EXPECT_EQ(EffectiveFormat("int32"), "");
  EXPECT_EQ(EffectiveFormat("int64"), "");
  EXPECT_EQ(EffectiveFormat("double"), "");
  EXPECT_EQ(EffectiveFormat("no-such"), "");
}

TEST(FormatsTest, Ip) {
  EXPECT_TRUE(CheckFormat("ipv4", "172.18.0.1"));
  EXPECT_FALSE(CheckFormat("ipv4", "172.18.0"));
  EXPECT_FALSE(CheckFormat("ipv4", "172.018.0.1"));
  EXPECT_FALSE(CheckFormat("ipv4", "fd00::1"));
  EXPECT_TRUE(CheckFormat("ipv4", "::ffff:1.2.3.4"));  // Go: parses and contains '.'
  EXPECT_TRUE(CheckFormat("ipv6", "fd00::1"));
  EXPECT_FALSE(CheckFormat("ipv6", "1.2.3.4"));
  EXPECT_FALSE(CheckFormat("ipv6", "fe80::1%eth0"));
}

TEST(FormatsTest, Cidr) {
  EXPECT_TRUE(CheckFormat("cidr", "172.18.0.0/16"));
  EXPECT_TRUE(CheckFormat("cidr", "10.0.0.1/24"));  // Go accepts non-canonical
  EXPECT_TRUE(CheckFormat("cidr", "fd00::/64"));
  EXPECT_FALSE(CheckFormat("cidr", "172.18.0.0/33"));
  EXPECT_FALSE(CheckFormat("cidr", "fd00::/129"));
  EXPECT_FALSE(CheckFormat("cidr", "172.18.0.0"));
  EXPECT_FALSE(CheckFormat("cidr", "172.18.0.0/"));
  EXPECT_FALSE(CheckFormat("cidr", "x/8"));
}

TEST(FormatsTest, Mac) {
  EXPECT_TRUE(CheckFormat("mac", "0a:1b:2c:3d:4e:5f"));
  EXPECT_TRUE(CheckFormat("mac", "0A-1B-2C-3D-4E-5F"));
  EXPECT_TRUE(CheckFormat("mac", "0a1b.2c3d.4e5f"));
  EXPECT_FALSE(CheckFormat("mac", "0a:1b:2c:3d:4e"));
  EXPECT_FALSE(CheckFormat("mac", "0a:1b:2c:3d:4e:5g"));
  EXPECT_FALSE(CheckFormat("mac", "0a:1b-2c:3d:4e:5f"));
}

TEST(FormatsTest, Uuid) {
  EXPECT_TRUE(CheckFormat("uuid", "123e4567-e89b-12d3-a456-426614174000"));
  EXPECT_TRUE(CheckFormat("uuid", "123E4567E89B12D3A456426614174000"));
  EXPECT_FALSE(CheckFormat("uuid", "123e4567-e89b-12d3-a456-42661417400"));
  EXPECT_TRUE(CheckFormat("uuid4", "123e4567-e89b-42d3-a456-426614174000"));
  EXPECT_FALSE(CheckFormat("uuid4", "123e4567-e89b-42d3-c456-426614174000"));
  EXPECT_TRUE(CheckFormat("uuid3", "123e4567-e89b-32d3-c456-426614174000"));
}

TEST(FormatsTest, DateAndDateTime) {
  EXPECT_TRUE(CheckFormat("date", "2024-02-29"));
  EXPECT_FALSE(CheckFormat("date", "2023-02-29"));
  EXPECT_FALSE(CheckFormat("date", "2023-13-01"));
  EXPECT_FALSE(CheckFormat("date", "2023-1-01"));
  EXPECT_TRUE(CheckFormat("datetime", "2024-01-02T15:04:05Z"));
  EXPECT_TRUE(CheckFormat("datetime", "2024-01-02t15:04:05.123+08:00"));
  EXPECT_FALSE(CheckFormat("datetime", "2024-01-02 15:04:05Z"));
  EXPECT_FALSE(CheckFormat("datetime", "2024-01-02T25:04:05Z"));
  EXPECT_FALSE(CheckFormat("datetime", "2024-01-02T15:04:05"));
}

TEST(FormatsTest, Others) {
  EXPECT_TRUE(CheckFormat("byte", "aGVsbG8="));
  EXPECT_FALSE(CheckFormat("byte", "aGVsbG8"));
  EXPECT_FALSE(CheckFormat("byte", ""));
  EXPECT_TRUE(CheckFormat("hostname", "node-1.example.com"));
  EXPECT_FALSE(CheckFormat("hostname", "-node"));
  EXPECT_FALSE(CheckFormat("hostname", "a_b"));
  EXPECT_TRUE(CheckFormat("email", "a@b.io"));
  EXPECT_TRUE(CheckFormat("email", "Ann <a@b.io>"));
  EXPECT_FALSE(CheckFormat("email", "ab.io"));
  EXPECT_TRUE(CheckFormat("uri", "https://example.com/x"));
  EXPECT_TRUE(CheckFormat("uri", "/v1/ipam"));
  EXPECT_FALSE(CheckFormat("uri", "example.com"));
  EXPECT_TRUE(CheckFormat("duration", "1h30m"));
  EXPECT_TRUE(CheckFormat("duration", "3 days"));
  EXPECT_FALSE(CheckFormat("duration", "soon"));
  EXPECT_TRUE(CheckFormat("hexcolor", "#fff"));
  EXPECT_FALSE(CheckFormat("hexcolor", "#ffff"));
  EXPECT_TRUE(CheckFormat("rgbcolor", "rgb(1, 2, 255)"));
  EXPECT_FALSE(CheckFormat("rgbcolor", "rgb(1,2,256)"));
  EXPECT_TRUE(CheckFormat("ssn", "123-45-6789"));
  EXPECT_FALSE(CheckFormat("ssn", "123456789"));
  EXPECT_TRUE(CheckFormat("bsonobjectid", "507f1f77bcf86cd799439011"));
  EXPECT_FALSE(CheckFormat("bsonobjectid", "507f1f77bcf86cd79943901"));
  EXPECT_TRUE(CheckFormat("password", "anything"));
}

}  // namespace
}  // namespace spiderpool::kube::testing::openapi
