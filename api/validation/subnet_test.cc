// Every SpiderSubnet rule of reference §5, immutability on update, and the mutating defaults.

#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/validation/test_objects.h"
#include "api/validation/validation.h"

namespace spiderpool::api::validation {
namespace {

using namespace testing_objects;  // NOLINT(build/namespaces)

// ---- SpiderSubnet -------------------------------------------------------------------------------

struct SubnetCase {
  std::string name;
  std::function<void(api::SpiderSubnet&, World&)> setup;
  std::vector<std::string> want;
};

class SubnetCreateTest : public testing::TestWithParam<SubnetCase> {};

TEST_P(SubnetCreateTest, Errors) {
  const SubnetCase& c = GetParam();
  api::SpiderSubnet s = Subnet();
  World w;
  c.setup(s, w);
  Result r = ValidateSubnetCreate(s, w.ctx);
  EXPECT_FALSE(r.denied.has_value()) << r.Message();
  EXPECT_EQ(Strings(r.errors), c.want);
}

const SubnetCase kSubnetCreateCases[] = {
    {"Valid", [](auto&, auto&) {}, {}},
    {"IPVersionNil",
     [](auto& s, auto&) { s.spec.ip_version.reset(); },
     {"spec.ipVersion: Invalid value: \"null\": is not generated correctly, 'spec.subnet' may be "
      "invalid"}},
    {"IPVersionNotSupported",
     [](auto& s, auto&) { s.spec.ip_version = 0; },
     {"spec.ipVersion: Unsupported value: 0: supported values: \"4\", \"6\""}},
    {"IPv4Disabled",
     [](auto&, auto& w) { w.ctx.config.enable_ipv4 = false; },
     {"spec.ipVersion: Forbidden: IPv4 is disabled"}},
    {"SubnetNotACIDR",
     [](auto& s, auto&) { s.spec.subnet = "10.0.0.0"; },
     {"spec.subnet: Invalid value: \"10.0.0.0\": invalid CIDR format in IPv4 '10.0.0.0'"}},
    {"SubnetNotCanonical",
     [](auto& s, auto&) { s.spec.subnet = "10.0.0.7/24"; },
     {"spec.subnet: Invalid value: \"10.0.0.7/24\": unformatted subnet 10.0.0.7/24, please "
      "change it to 10.0.0.0/24"}},
    {"OverlapsAnotherSubnet",
     [](auto&, auto& w) {
       api::SpiderSubnet o = Subnet("wide");
       o.spec.subnet = "10.0.0.0/8";
       o.spec.ips = {"10.1.0.1"};
       w.AddSubnet(o);
     },
     {"spec.subnet: Invalid value: \"10.0.0.0/24\": overlap with Subnet wide which 'spec.subnet' "
      "is 10.0.0.0/8"}},
    {"SameCIDRAsAnotherSubnet",
     [](auto&, auto& w) { w.AddSubnet(Subnet("twin")); },
     {"spec.subnet: Invalid value: \"10.0.0.0/24\": overlap with Subnet twin which 'spec.subnet' "
      "is 10.0.0.0/24"}},
    {"OverlapsAPoolSubnet",
     [](auto&, auto& w) {
       api::SpiderIPPool p = Pool("orphan");
       p.spec.subnet = "10.0.0.0/25";
       w.AddPool(p);
     },
     {"spec.subnet: Invalid value: \"10.0.0.0/24\": overlap with SpiderIPPool 'orphan' resource "
      "'spec.subnet' 10.0.0.0/25"}},
    {"PoolWithSameCIDRInside",
     [](auto&, auto& w) { w.AddPool(Pool("orphan")); },
     {}},
    {"PoolWithSameCIDROwnsIPsOutside",
     [](auto& s, auto& w) {
       s.spec.ips = {"10.0.0.2-10.0.0.50"};
       w.AddPool(Pool("orphan"));
     },
     {"spec.ips: Invalid value: []string{\"10.0.0.2-10.0.0.50\"}: SpiderIPPool 'orphan' owns some "
      "IP addresses that SpiderSubnet 'subnet1' can't control: add [10.0.0.51-10.0.0.100] to "
      "'spec.ips'"}},
    {"IPNotARange",
     [](auto& s, auto&) { s.spec.ips = {"10.0.0.2-10.0.0.x"}; },
     {"spec.ips[0]: Invalid value: \"10.0.0.2-10.0.0.x\": invalid IP range format in IPv4 "
      "'10.0.0.2-10.0.0.x'"}},
    {"IPOutsideSubnet",
     [](auto& s, auto&) { s.spec.ips = {"10.0.0.2-10.0.1.2"}; },
     {"spec.ips[0]: Invalid value: \"10.0.0.2-10.0.1.2\": not pertains to the 'spec.subnet' "
      "10.0.0.0/24 of Subnet"}},
    {"ExcludeIPOutsideSubnet",
     [](auto& s, auto&) { s.spec.exclude_ips = {"10.0.1.2"}; },
     {"spec.excludeIPs[0]: Invalid value: \"10.0.1.2\": not pertains to the 'spec.subnet' "
      "10.0.0.0/24 of Subnet"}},
    {"GatewayOutsideSubnet",
     [](auto& s, auto&) { s.spec.gateway = "10.0.1.1"; },
     {"spec.gateway: Invalid value: \"10.0.1.1\": not pertains to the 'spec.subnet' 10.0.0.0/24 "
      "of Subnet"}},
    {"GatewayInIPs",
     [](auto& s, auto&) { s.spec.gateway = "10.0.0.2"; },
     {"spec.ips[0]: Invalid value: \"10.0.0.2-10.0.0.200\": conflicts with 'spec.gateway' "
      "10.0.0.2, add the gateway IP address to 'spec.excludeIPs' or remove it from 'spec.ips'"}},
    {"RouteDefault",
     [](auto& s, auto&) { s.spec.routes = std::vector<api::Route>{{"0.0.0.0/0", "10.0.0.1"}}; },
     {"spec.routes[0].dst: Invalid value: \"0.0.0.0/0\": please specify 'spec.gateway' to "
      "configure the default route"}},
    {"RouteDuplicate",
     [](auto& s, auto&) {
       s.spec.routes = std::vector<api::Route>{{"10.2.0.0/16", "10.0.0.1"}, {"10.2.0.0/16", "10.0.0.1"}};
     },
     {"spec.routes[1].dst: Invalid value: \"10.2.0.0/16\": duplicate route with the same dst"}},
    {"RouteGwOutside",
     [](auto& s, auto&) { s.spec.routes = std::vector<api::Route>{{"10.2.0.0/16", "10.2.0.1"}}; },
     {"spec.routes[0].gw: Invalid value: \"10.2.0.1\": not pertains to the 'spec.subnet' "
      "10.0.0.0/24 of Subnet"}},
};

INSTANTIATE_TEST_SUITE_P(Rules, SubnetCreateTest, testing::ValuesIn(kSubnetCreateCases),
                         [](const auto& info) { return info.param.name; });

TEST(SubnetCreate, NameTakenIsAlreadyExists) {
  World w;
  w.AddSubnet(Subnet());
  Result r = ValidateSubnetCreate(Subnet(), w.ctx);
  ASSERT_TRUE(r.denied.has_value());
  EXPECT_EQ(r.Message(), "SpiderSubnet.spiderpool.spidernet.io \"subnet1\" already exists");
}

TEST(SubnetUpdate, ImmutableFieldsTerminatingAndInUse) {
  api::SpiderSubnet old_s = Subnet();
  api::SpiderSubnet s = Subnet();
  s.spec.ip_version = 6;
  s.spec.subnet = "10.0.1.0/24";
  s.spec.ips.clear();
  s.spec.gateway.reset();
  Result r = ValidateSubnetUpdate(old_s, s, {});
  EXPECT_EQ(Strings(r.errors),
            (std::vector<std::string>{
                "spec.ipVersion: Forbidden: is not changeable",
                "spec.subnet: Forbidden: is not changeable",
                "spec.subnet: Invalid value: \"10.0.1.0/24\": invalid CIDR format in IPv6 "
                "'10.0.1.0/24'"}));

  api::SpiderSubnet t = Subnet();
  t.metadata.deletion_timestamp = api::Time{};
  t.metadata.finalizers = {"spiderpool.spidernet.io"};
  r = ValidateSubnetUpdate(old_s, t, {});
  EXPECT_EQ(r.Message(), "forbidden: cannot update a terminaing Subnet");

  api::SpiderSubnet u = Subnet();
  u.SetControlledIPPools({{"auto4-web-eth0-1a2b3", {.ips = {"10.0.0.100-10.0.0.110"}}},
                          {"manual", {.ips = {"10.0.0.5"}}}});
  api::SpiderSubnet shrunk = u;
  shrunk.spec.ips = {"10.0.0.2-10.0.0.104"};
  r = ValidateSubnetUpdate(u, shrunk, {});
  EXPECT_EQ(Strings(r.errors),
            (std::vector<std::string>{
                "spec.ips: Forbidden: remove some IP ranges [10.0.0.105-10.0.0.110] that is being "
                "used by IPPool auto4-web-eth0-1a2b3, total IP addresses of an Subnet are jointly "
                "determined by 'spec.ips' and 'spec.excludeIPs'"}));
  EXPECT_TRUE(ValidateSubnetUpdate(u, u, {}).ok());
}

TEST(SubnetDelete, OnlyWithTheFlagAndAllocatedIPs) {
  api::SpiderSubnet s = Subnet();
  s.status.allocated_ip_count = 10;
  Context ctx;
  EXPECT_TRUE(ValidateSubnetDelete(s, ctx).ok());
  ctx.config.enable_validating_resources_deleted_webhook = true;
  Result r = ValidateSubnetDelete(s, ctx);
  EXPECT_EQ(r.Message(),
            "spidersubnets.spiderpool.spidernet.io \"subnet1\" is forbidden: cannot delete an "
            "Subnet with allocated IPs(10)");
}

// ---- Mutation ---------------------------------------------------------------------------------

TEST(MutateSubnet, DefaultsAndLabel) {
  api::SpiderSubnet s;
  s.spec.subnet = "172.18.0.0/16";
  s.spec.ips = {"172.18.0.10", "172.18.0.9"};
  ASSERT_TRUE(MutateSubnet(&s, {}).ok());
  EXPECT_EQ(s.spec.ip_version, 4);
  EXPECT_TRUE(s.metadata.HasFinalizer("spiderpool.spidernet.io"));
  EXPECT_EQ(s.metadata.labels.at("ipam.spidernet.io/subnet-cidr"), "172-18-0-0-16");
  EXPECT_EQ(s.spec.ips, std::vector<std::string>{"172.18.0.9-172.18.0.10"});
  api::SpiderSubnet bad;
  bad.spec.subnet = "";
  EXPECT_FALSE(MutateSubnet(&bad, {}).ok());
}


}  // namespace
}  // namespace spiderpool::api::validation
