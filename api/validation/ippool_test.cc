// Every SpiderIPPool rule of reference §5 (one case per message at least), "all errors at once",
// immutability on update, and the mutating defaults.

#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/validation/test_objects.h"
#include "api/validation/validation.h"

namespace spiderpool::api::validation {
namespace {

using namespace testing_objects;  // NOLINT(build/namespaces)

// ---- SpiderIPPool CREATE ----------------------------------------------------------------------

struct PoolCase {
  std::string name;
  std::function<void(api::SpiderIPPool&, World&)> setup;
  std::vector<std::string> want;  // exact error strings, in order
};

class PoolCreateTest : public testing::TestWithParam<PoolCase> {};

TEST_P(PoolCreateTest, Errors) {
  const PoolCase& c = GetParam();
  api::SpiderIPPool pool = Pool();
  World w;
  c.setup(pool, w);
  Result r = ValidateIPPoolCreate(pool, w.ctx);
  EXPECT_FALSE(r.denied.has_value()) << r.Message();
  EXPECT_EQ(Strings(r.errors), c.want);
  EXPECT_EQ(r.ok(), c.want.empty());
}

const PoolCase kPoolCreateCases[] = {
    {"Valid", [](auto&, auto&) {}, {}},
    {"ValidIPv6", [](auto& p, auto&) { p = Pool6(); }, {}},
    {"IPVersionNil",
     [](auto& p, auto&) { p.spec.ip_version.reset(); },
     {"spec.ipVersion: Invalid value: \"null\": is not generated correctly, 'spec.subnet' may be "
      "invalid"}},
    {"IPVersionNotSupported",
     [](auto& p, auto&) { p.spec.ip_version = 5; },
     {"spec.ipVersion: Unsupported value: 5: supported values: \"4\", \"6\""}},
    {"IPv4Disabled",
     [](auto&, auto& w) { w.ctx.config.enable_ipv4 = false; },
     {"spec.ipVersion: Forbidden: IPv4 is disabled"}},
    {"IPv6Disabled",
     [](auto& p, auto& w) {
       p = Pool6();
       w.ctx.config.enable_ipv6 = false;
     },
     {"spec.ipVersion: Forbidden: IPv6 is disabled"}},
    {"SubnetNotACIDR",
     [](auto& p, auto&) { p.spec.subnet = "10.0.0.0/33"; },
     {"spec.subnet: Invalid value: \"10.0.0.0/33\": invalid CIDR format in IPv4 '10.0.0.0/33'"}},
    {"SubnetOfTheOtherFamily",
     [](auto& p, auto&) { p.spec.subnet = "fd00::/64"; },
     {"spec.subnet: Invalid value: \"fd00::/64\": invalid CIDR format in IPv4 'fd00::/64'"}},
    {"SubnetNotCanonical",
     [](auto& p, auto&) { p.spec.subnet = "10.0.0.1/24"; },
     {"spec.subnet: Invalid value: \"10.0.0.1/24\": unformatted subnet 10.0.0.1/24, please "
      "change it to 10.0.0.0/24"}},
    {"SubnetNotCanonicalIPv6Case",
     [](auto& p, auto&) {
       p = Pool6();
       p.spec.subnet = "FD00::/64";
     },
     {"spec.subnet: Invalid value: \"FD00::/64\": unformatted subnet FD00::/64, please change it "
      "to fd00::/64"}},
    {"SubnetOverlapsAnotherPool",
     [](auto&, auto& w) {
       api::SpiderIPPool o = Pool("big");
       o.spec.subnet = "10.0.0.0/16";
       o.spec.ips = {"10.0.5.1"};
       w.AddPool(o);
     },
     {"spec.subnet: Invalid value: \"10.0.0.0/24\": overlap with IPPool big which 'spec.subnet' "
      "is 10.0.0.0/16"}},
    {"OtherFamilyPoolsDoNotOverlap",
     [](auto&, auto& w) { w.AddPool(Pool6("v6")); },
     {}},
    {"SameSubnetDisjointRangesAllowed",  // §13
     [](auto&, auto& w) {
       api::SpiderIPPool o = Pool("pool2");
       o.spec.ips = {"10.0.0.101-10.0.0.200"};
       w.AddPool(o);
     },
     {}},
    {"SameSubnetOverlappingRanges",
     [](auto&, auto& w) {
       api::SpiderIPPool o = Pool("pool2");
       o.spec.ips = {"10.0.0.50-10.0.0.150", "10.0.0.5"};
       w.AddPool(o);
     },
     {"spec.ips: Forbidden: overlap with IPPool pool2 in IP ranges [10.0.0.50-10.0.0.100], total "
      "IP addresses of an IPPool are jointly determined by 'spec.ips' and 'spec.excludeIPs'"}},
    {"SameSubnetOverlapOnlyInExcludedIPs",
     [](auto& p, auto& w) {
       p.spec.exclude_ips = {"10.0.0.90-10.0.0.100"};
       api::SpiderIPPool o = Pool("pool2");
       o.spec.ips = {"10.0.0.95-10.0.0.150"};
       w.AddPool(o);
     },
     {}},
    {"IPOutsideSubnet",
     [](auto& p, auto&) { p.spec.ips = {"10.0.0.10", "10.0.1.5"}; },
     {"spec.ips[1]: Invalid value: \"10.0.1.5\": not match base subnet: 10.0.1.5 (outside "
      "'spec.subnet' 10.0.0.0/24)"}},
    {"RangeEndOutsideSubnet",
     [](auto& p, auto&) { p.spec.ips = {"10.0.0.250-10.0.1.5"}; },
     {"spec.ips[0]: Invalid value: \"10.0.0.250-10.0.1.5\": not match base subnet: 10.0.1.5 "
      "(outside 'spec.subnet' 10.0.0.0/24)"}},
    {"IPNotAnIP",
     [](auto& p, auto&) { p.spec.ips = {"10.0.0.300"}; },
     {"spec.ips[0]: Invalid value: \"10.0.0.300\": invalid IP address: 10.0.0.300"}},
    {"IPIsACIDR",
     [](auto& p, auto&) { p.spec.ips = {"10.0.0.0/25"}; },
     {"spec.ips[0]: Invalid value: \"10.0.0.0/25\": invalid range: 10.0.0.0/25"}},
    {"IPRangeWithTwoDashes",
     [](auto& p, auto&) { p.spec.ips = {"10.0.0.1-10.0.0.2-10.0.0.3"}; },
     {"spec.ips[0]: Invalid value: \"10.0.0.1-10.0.0.2-10.0.0.3\": invalid range: "
      "10.0.0.1-10.0.0.2-10.0.0.3"}},
    {"IPRangeReversed",
     [](auto& p, auto&) { p.spec.ips = {"10.0.0.20-10.0.0.10"}; },
     {"spec.ips[0]: Invalid value: \"10.0.0.20-10.0.0.10\": invalid range: 10.0.0.20-10.0.0.10 "
      "(its first IP is after its last: write it as 10.0.0.10-10.0.0.20)"}},
    {"IPRangesOverlap",
     [](auto& p, auto&) { p.spec.ips = {"10.0.0.10-10.0.0.20", "10.0.0.15-10.0.0.30"}; },
     {"spec.ips[1]: Invalid value: \"10.0.0.15-10.0.0.30\": range 10.0.0.15-10.0.0.30 overlaps "
      "with 10.0.0.10-10.0.0.20"}},
    {"IPRangeAlreadyCovered",
     [](auto& p, auto&) { p.spec.ips = {"10.0.0.10-10.0.0.20", "10.0.0.12"}; },
     {"spec.ips[1]: Invalid value: \"10.0.0.12\": range 10.0.0.12 is already covered by "
      "10.0.0.10-10.0.0.20"}},
    {"IPRangeCovers",
     [](auto& p, auto&) { p.spec.ips = {"10.0.0.12", "10.0.0.10-10.0.0.20"}; },
     {"spec.ips[1]: Invalid value: \"10.0.0.10-10.0.0.20\": range 10.0.0.10-10.0.0.20 covers "
      "10.0.0.12"}},
    {"AdjacentRangesDoNotOverlap",
     [](auto& p, auto&) { p.spec.ips = {"10.0.0.10-10.0.0.20", "10.0.0.21-10.0.0.30"}; },
     {}},
    {"ExcludeIPOutsideSubnet",
     [](auto& p, auto&) { p.spec.exclude_ips = {"10.0.9.9"}; },
     {"spec.excludeIPs[0]: Invalid value: \"10.0.9.9\": not match base subnet: 10.0.9.9 "
      "(outside 'spec.subnet' 10.0.0.0/24)"}},
    {"IPOfTheOtherFamily",
     [](auto& p, auto&) { p.spec.ips = {"fd00::1"}; },
     {"spec.ips[0]: Invalid value: \"fd00::1\": not match base subnet: fd00::1 (outside "
      "'spec.subnet' 10.0.0.0/24)"}},
    {"GatewayOutsideSubnet",
     [](auto& p, auto&) { p.spec.gateway = "10.0.1.1"; },
     {"spec.gateway: Invalid value: \"10.0.1.1\": not pertains to the 'spec.subnet' 10.0.0.0/24 "
      "of IPPool"}},
    {"GatewayNotAnIP",
     [](auto& p, auto&) { p.spec.gateway = "gw"; },
     {"spec.gateway: Invalid value: \"gw\": invalid IP format in IPv4 'gw'"}},
    {"GatewayInIPs",
     [](auto& p, auto&) { p.spec.gateway = "10.0.0.50"; },
     {"spec.ips[0]: Invalid value: \"10.0.0.10-10.0.0.100\": conflicts with 'spec.gateway' "
      "10.0.0.50, add the gateway IP address to 'spec.excludeIPs' or remove it from 'spec.ips'"}},
    {"GatewayInIPsButExcluded",
     [](auto& p, auto&) {
       p.spec.gateway = "10.0.0.50";
       p.spec.exclude_ips = {"10.0.0.50"};
     },
     {}},
    {"RouteDefaultDst",
     [](auto& p, auto&) { p.spec.routes = std::vector<api::Route>{{"0.0.0.0/0", "10.0.0.1"}}; },
     {"spec.routes[0].dst: Invalid value: \"0.0.0.0/0\": please specify 'spec.gateway' to "
      "configure the default route"}},
    {"RouteDefaultDstIPv6",
     [](auto& p, auto&) {
       p = Pool6();
       p.spec.routes = std::vector<api::Route>{{"::/0", "fd00::1"}};
     },
     {"spec.routes[0].dst: Invalid value: \"::/0\": please specify 'spec.gateway' to configure "
      "the default route"}},
    {"RouteDuplicateDst",
     [](auto& p, auto&) {
       p.spec.routes = std::vector<api::Route>{{"10.1.0.0/16", "10.0.0.1"},
                                               {"10.1.0.0/16", "10.0.0.2"}};
     },
     {"spec.routes[1].dst: Invalid value: \"10.1.0.0/16\": duplicate route with the same dst"}},
    {"RouteDstNotACIDROfTheFamily",
     [](auto& p, auto&) { p.spec.routes = std::vector<api::Route>{{"fd01::/64", "10.0.0.1"}}; },
     {"spec.routes[0].dst: Invalid value: \"fd01::/64\": invalid CIDR format in IPv4 "
      "'fd01::/64'"}},
    {"RouteGwOutsideSubnet",
     [](auto& p, auto&) { p.spec.routes = std::vector<api::Route>{{"10.1.0.0/16", "10.9.0.1"}}; },
     {"spec.routes[0].gw: Invalid value: \"10.9.0.1\": not pertains to the 'spec.subnet' "
      "10.0.0.0/24 of IPPool"}},
    {"RouteGwNotAnIP",
     [](auto& p, auto&) { p.spec.routes = std::vector<api::Route>{{"10.1.0.0/16", "x"}}; },
     {"spec.routes[0].gw: Invalid value: \"x\": invalid IP format in IPv4 'x'"}},
    {"PodAffinityEmpty",
     [](auto& p, auto&) { p.spec.pod_affinity = api::LabelSelector{}; },
     {"spec.podAffinity: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
      "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty podAffinity is invalid for "
      "SpiderIPPool (set matchLabels or matchExpressions, or remove spec.podAffinity)"}},
    {"PodAffinityBadLabelKey",
     [](auto& p, auto&) { p.spec.pod_affinity = api::LabelSelector{.match_labels = {{"a b", "x"}}}; },
     {"spec.podAffinity.matchLabels: Invalid value: \"a b\": name part must consist of "
      "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
      "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
      "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"}},
    {"PodAffinityBadLabelValue",
     [](auto& p, auto&) { p.spec.pod_affinity = api::LabelSelector{.match_labels = {{"app", "-x"}}}; },
     {"spec.podAffinity.matchLabels: Invalid value: \"-x\": a valid label must be an empty string "
      "or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
      "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
      "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"}},
    {"PodAffinityInWithoutValues",
     [](auto& p, auto&) {
       p.spec.pod_affinity =
           api::LabelSelector{.match_expressions = {{.key = "app", .op = "In", .values = {}}}};
     },
     {"spec.podAffinity.matchExpressions[0].values: Required value: must be specified when "
      "`operator` is 'In' or 'NotIn'"}},
    {"PodAffinityExistsWithValues",
     [](auto& p, auto&) {
       p.spec.pod_affinity =
           api::LabelSelector{.match_expressions = {{.key = "app", .op = "Exists", .values = {"x"}}}};
     },
     {"spec.podAffinity.matchExpressions[0].values: Forbidden: may not be specified when "
      "`operator` is 'Exists' or 'DoesNotExist'"}},
    {"PodAffinityBadOperator",
     [](auto& p, auto&) {
       p.spec.pod_affinity =
           api::LabelSelector{.match_expressions = {{.key = "app", .op = "Gt", .values = {"1"}}}};
     },
     {"spec.podAffinity.matchExpressions[0].operator: Invalid value: \"Gt\": not a valid selector "
      "operator"}},
    {"AutoPoolExtraMatchLabels",
     [](auto& p, auto&) {
       p.metadata.labels[std::string(api::kLabelOwnerApplicationName)] = "web";
       p.spec.pod_affinity = api::LabelSelector{
           .match_labels = {{std::string(api::kAppLabelName), "web"}, {"extra", "1"}}};
     },
     {"spec.podAffinity: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"extra\":"
      "\"1\", \"ipam.spidernet.io/app-name\":\"web\"}, "
      "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: it's invalid to add additional "
      "podAffinity matchLabels for auto-created SpiderIPPool (remove matchLabels[extra])"}},
    {"AutoPoolMatchExpressions",
     [](auto& p, auto&) {
       p.metadata.labels[std::string(api::kLabelOwnerApplicationName)] = "web";
       p.spec.pod_affinity = api::LabelSelector{
           .match_expressions = {{.key = "k", .op = "In", .values = {"v"}}}};
     },
     {"spec.podAffinity: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
      "MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:\"k\", "
      "Operator:\"In\", Values:[]string{\"v\"}}}}: it's invalid to add additional podAffinity "
      "matchExpressions for auto-created SpiderIPPool"}},
    {"PoolIPsInsideControllerSubnet",
     [](auto& p, auto& w) { OwnBy(&p, w.AddSubnet(Subnet())); },
     {}},
    {"PoolIPsOutsideControllerSubnet",
     [](auto& p, auto& w) {
       api::SpiderSubnet s = Subnet();
       s.spec.ips = {"10.0.0.2-10.0.0.50"};
       s.spec.exclude_ips = {"10.0.0.20"};
       OwnBy(&p, w.AddSubnet(s));
     },
     {"spec.ips: Forbidden: add some IP ranges [10.0.0.20 10.0.0.51-10.0.0.100] that are not "
      "contained in controller Subnet subnet1, total IP addresses of an IPPool are jointly "
      "determined by 'spec.ips' and 'spec.excludeIPs'"}},
    {"ControllerSubnetCheckOffWithoutSubnets",
     [](auto& p, auto& w) {
       api::SpiderSubnet s = Subnet();
       s.spec.ips = {"10.0.0.2"};
       OwnBy(&p, w.AddSubnet(s));
       w.ctx.config.enable_spider_subnet = false;
     },
     {}},
    {"ControllerSubnetMissing",
     [](auto& p, auto&) { OwnBy(&p, Subnet("gone")); },
     {"spec.subnet: Internal error: failed to get controller Subnet gone: "
      "spidersubnets.spiderpool.spidernet.io \"gone\" not found"}},
    {"AutoPoolIPsMatchControlledIPPools",
     [](auto& p, auto& w) {
       api::SpiderSubnet s = Subnet();
       s.SetControlledIPPools({{"pool1", {.ips = {"10.0.0.10-10.0.0.100"}}}});
       p.metadata.labels[std::string(api::kLabelOwnerApplicationName)] = "web";
       OwnBy(&p, w.AddSubnet(s));
     },
     {}},
    {"AutoPoolIPsDifferFromControlledIPPools",
     [](auto& p, auto& w) {
       api::SpiderSubnet s = Subnet();
       s.SetControlledIPPools({{"pool1", {.ips = {"10.0.0.10-10.0.0.99"}}}});
       p.metadata.labels[std::string(api::kLabelOwnerApplicationName)] = "web";
       OwnBy(&p, w.AddSubnet(s));
     },
     {"spec.ips: Forbidden: it's illegal to update AutoPool.Spec.IPs that are different from "
      "corresponding SpiderSubnet.Status.ControlledIPPools"}},
};

INSTANTIATE_TEST_SUITE_P(Rules, PoolCreateTest, testing::ValuesIn(kPoolCreateCases),
                         [](const auto& info) { return info.param.name; });

TEST(PoolCreate, NameTakenIsAlreadyExists) {
  World w;
  w.AddPool(Pool());
  Result r = ValidateIPPoolCreate(Pool(), w.ctx);
  ASSERT_TRUE(r.denied.has_value());
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.ToStatus().code, 409);
  EXPECT_EQ(r.Message(), "SpiderIPPool.spiderpool.spidernet.io \"pool1\" already exists");
}

TEST(PoolCreate, AllErrorsAtOnce) {
  api::SpiderIPPool p = Pool();
  p.spec.ips = {"10.0.0.10-10.0.0.100", "10.0.1.5", "bad"};
  p.spec.exclude_ips = {"10.0.2.1"};
  p.spec.gateway = "10.0.0.50";
  p.spec.routes = std::vector<api::Route>{{"0.0.0.0/0", "10.0.0.1"}, {"10.9.0.0/16", "10.8.0.1"}};
  p.spec.pod_affinity = api::LabelSelector{};
  World w;
  Result r = ValidateIPPoolCreate(p, w.ctx);
  std::vector<std::string> want = {
      "spec.ips[1]: Invalid value: \"10.0.1.5\": not match base subnet: 10.0.1.5 (outside "
      "'spec.subnet' 10.0.0.0/24)",
      "spec.ips[2]: Invalid value: \"bad\": invalid IP address: bad",
      "spec.excludeIPs[0]: Invalid value: \"10.0.2.1\": not match base subnet: 10.0.2.1 (outside "
      "'spec.subnet' 10.0.0.0/24)",
      "spec.ips[0]: Invalid value: \"10.0.0.10-10.0.0.100\": conflicts with 'spec.gateway' "
      "10.0.0.50, add the gateway IP address to 'spec.excludeIPs' or remove it from 'spec.ips'",
      "spec.routes[0].dst: Invalid value: \"0.0.0.0/0\": please specify 'spec.gateway' to "
      "configure the default route",
      "spec.routes[1].gw: Invalid value: \"10.8.0.1\": not pertains to the 'spec.subnet' "
      "10.0.0.0/24 of IPPool",
      "spec.podAffinity: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
      "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty podAffinity is invalid for "
      "SpiderIPPool (set matchLabels or matchExpressions, or remove spec.podAffinity)",
  };
  EXPECT_EQ(Strings(r.errors), want);
  std::string msg = r.Message();
  EXPECT_EQ(msg.rfind("SpiderIPPool.spiderpool.spidernet.io \"pool1\" is invalid: [spec.ips[1]: ", 0),
            0u)
      << msg;
  EXPECT_EQ(msg.back(), ']');
  api::Status s = r.ToStatus();
  EXPECT_EQ(s.code, 422);
  ASSERT_TRUE(s.details.has_value());
  ASSERT_EQ(s.details->causes.size(), want.size());
  EXPECT_EQ(s.details->causes[2].field, "spec.excludeIPs[0]");
  EXPECT_EQ(s.details->causes[2].reason, "FieldValueInvalid");
}

TEST(PoolCreate, EveryOverlappingPoolIsNamed) {
  World w;
  api::SpiderIPPool a = Pool("a");
  a.spec.subnet = "10.0.0.0/16";
  w.AddPool(a);
  api::SpiderIPPool b = Pool("b");
  b.spec.subnet = "10.0.0.0/25";
  w.AddPool(b);
  Result r = ValidateIPPoolCreate(Pool(), w.ctx);
  EXPECT_EQ(r.errors.size(), 2u) << r.Message();
}

// ---- SpiderIPPool UPDATE / DELETE -------------------------------------------------------------

TEST(PoolUpdate, IPVersionAndSubnetAreImmutable) {
  api::SpiderIPPool old_pool = Pool();
  api::SpiderIPPool p = Pool();
  p.spec.ip_version = 6;
  p.spec.subnet = "fd00::/64";
  p.spec.ips = {"fd00::10"};
  p.spec.gateway.reset();
  World w;
  Result r = ValidateIPPoolUpdate(old_pool, p, w.ctx);
  EXPECT_EQ(Strings(r.errors), (std::vector<std::string>{
                                   "spec.ipVersion: Forbidden: is not changeable",
                                   "spec.subnet: Forbidden: is not changeable"}));
}

TEST(PoolUpdate, SubnetTextChangeIsForbiddenEvenIfSameNetwork) {
  api::SpiderIPPool p = Pool();
  p.spec.subnet = "10.0.0.1/24";
  Result r = ValidateIPPoolUpdate(Pool(), p, {});
  EXPECT_EQ(Strings(r.errors),
            (std::vector<std::string>{"spec.subnet: Forbidden: is not changeable"}));
}

TEST(PoolUpdate, IPVersionSetFromNilIsAllowed) {
  api::SpiderIPPool old_pool = Pool();
  old_pool.spec.ip_version.reset();
  EXPECT_TRUE(ValidateIPPoolUpdate(old_pool, Pool(), {}).ok());
}

TEST(PoolUpdate, TerminatingWithFinalizerIsForbidden) {
  api::SpiderIPPool p = Pool();
  p.metadata.deletion_timestamp = api::Time{};
  p.metadata.finalizers = {"spiderpool.spidernet.io"};
  Result r = ValidateIPPoolUpdate(Pool(), p, {});
  ASSERT_TRUE(r.denied.has_value());
  EXPECT_EQ(r.ToStatus().code, 403);
  EXPECT_EQ(r.Message(), "forbidden: cannot update a terminating IPPool");
}

TEST(PoolUpdate, TerminatingWithoutFinalizerIsAllowedAsIs) {
  api::SpiderIPPool p = Pool();
  p.metadata.deletion_timestamp = api::Time{};
  p.spec.ips = {"garbage"};
  EXPECT_TRUE(ValidateIPPoolUpdate(Pool(), p, {}).ok());
}

TEST(PoolUpdate, RemovingAnAllocatedIPIsForbidden) {
  api::SpiderIPPool old_pool = Pool();
  old_pool.SetAllocatedIPs({{"10.0.0.50", {.pod = "default/web-1", .pod_uid = "u1"}},
                            {"10.0.0.60", {.pod = "default/web-2", .pod_uid = "u2"}}});
  api::SpiderIPPool p = old_pool;
  p.spec.exclude_ips = {"10.0.0.50"};
  p.spec.ips = {"10.0.0.10-10.0.0.55"};
  Result r = ValidateIPPoolUpdate(old_pool, p, {});
  EXPECT_EQ(Strings(r.errors),
            (std::vector<std::string>{
                "spec.ips: Forbidden: remove an IP address 10.0.0.50 that is being used by Pod "
                "default/web-1, total IP addresses of an IPPool are jointly determined by "
                "'spec.ips' and 'spec.excludeIPs'",
                "spec.ips: Forbidden: remove an IP address 10.0.0.60 that is being used by Pod "
                "default/web-2, total IP addresses of an IPPool are jointly determined by "
                "'spec.ips' and 'spec.excludeIPs'"}));
  // Keeping them is fine.
  p = old_pool;
  p.spec.ips = {"10.0.0.10-10.0.0.200"};
  EXPECT_TRUE(ValidateIPPoolUpdate(old_pool, p, {}).ok());
}

TEST(PoolUpdate, CorruptAllocatedIPsIsAnInternalError) {
  api::SpiderIPPool p = Pool();
  p.status.allocated_ips = "{not json";
  Result r = ValidateIPPoolUpdate(Pool(), p, {});
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].type, ErrorType::kInternal);
  EXPECT_EQ(r.errors[0].ToString().rfind("spec.ips: Internal error: failed to unmarshal the "
                                         "allocated IP records of IPPool pool1: ",
                                         0),
            0u);
}

TEST(PoolUpdate, SpecRulesRunAgainButNotCreateOnlyOnes) {
  World w;
  api::SpiderIPPool big = Pool("big");
  big.spec.subnet = "10.0.0.0/16";
  w.AddPool(big);
  api::SpiderIPPool p = Pool();
  // Subnet overlap with another pool is a CREATE rule; the pool itself is listed too.
  w.AddPool(p);
  EXPECT_TRUE(ValidateIPPoolUpdate(p, p, w.ctx).ok());
  p.spec.gateway = "10.0.1.1";
  Result r = ValidateIPPoolUpdate(Pool(), p, w.ctx);
  EXPECT_EQ(Strings(r.errors),
            (std::vector<std::string>{"spec.gateway: Invalid value: \"10.0.1.1\": not pertains to "
                                      "the 'spec.subnet' 10.0.0.0/24 of IPPool"}));
}

TEST(PoolUpdate, SameSubnetOverlapIsCheckedOnUpdate) {
  World w;
  api::SpiderIPPool other = Pool("pool2");
  other.spec.ips = {"10.0.0.100-10.0.0.120"};
  w.AddPool(other);
  Result r = ValidateIPPoolUpdate(Pool(), Pool(), w.ctx);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].ToString(),
            "spec.ips: Forbidden: overlap with IPPool pool2 in IP ranges [10.0.0.100], total IP "
            "addresses of an IPPool are jointly determined by 'spec.ips' and 'spec.excludeIPs'");
}

TEST(PoolDelete, OnlyWithTheFlagAndAllocatedIPs) {
  api::SpiderIPPool p = Pool();
  p.status.allocated_ip_count = 3;
  Context ctx;
  EXPECT_TRUE(ValidateIPPoolDelete(p, ctx).ok());
  ctx.config.enable_validating_resources_deleted_webhook = true;
  Result r = ValidateIPPoolDelete(p, ctx);
  ASSERT_TRUE(r.denied.has_value());
  EXPECT_EQ(r.ToStatus().code, 403);
  EXPECT_EQ(r.Message(),
            "spiderippools.spiderpool.spidernet.io \"pool1\" is forbidden: cannot delete an IPPool "
            "with allocated IPs(3)");
  p.status.allocated_ip_count = 0;
  EXPECT_TRUE(ValidateIPPoolDelete(p, ctx).ok());
}

// ---- Mutation -----------------------------------------------------------------------------------

TEST(MutatePool, DefaultsLabelsAndMergedRanges) {
  api::SpiderIPPool p;
  p.metadata.name = "p";
  p.spec.subnet = "10.148.4.0/24";
  p.spec.ips = {"10.148.4.9", "10.148.4.1-10.148.4.5", "10.148.4.6-10.148.4.7", "10.148.4.3"};
  p.spec.exclude_ips = {"10.148.4.5", "10.148.4.4"};
  ASSERT_TRUE(MutateIPPool(&p, {}).ok());
  EXPECT_EQ(p.spec.ip_version, 4);
  EXPECT_EQ(p.metadata.finalizers, std::vector<std::string>{"spiderpool.spidernet.io"});
  EXPECT_EQ(p.metadata.labels.at("ipam.spidernet.io/ippool-cidr"), "10-148-4-0-24");
  EXPECT_EQ(p.spec.ips, (std::vector<std::string>{"10.148.4.1-10.148.4.7", "10.148.4.9"}));
  EXPECT_EQ(p.spec.exclude_ips, std::vector<std::string>{"10.148.4.4-10.148.4.5"});
  EXPECT_TRUE(ValidateIPPoolCreate(p, {}).ok());
  api::SpiderIPPool again = p;
  ASSERT_TRUE(MutateIPPool(&again, {}).ok());
  EXPECT_EQ(api::Encode(again), api::Encode(p));
}

TEST(MutatePool, IPv6) {
  api::SpiderIPPool p;
  p.spec.subnet = "fd00:10::/64";
  p.spec.ips = {"fd00:10::5", "fd00:10::1-fd00:10::4"};
  ASSERT_TRUE(MutateIPPool(&p, {}).ok());
  EXPECT_EQ(p.spec.ip_version, 6);
  EXPECT_EQ(p.metadata.labels.at("ipam.spidernet.io/ippool-cidr"), "fd00-10---64");
  EXPECT_EQ(p.spec.ips, std::vector<std::string>{"fd00:10::1-fd00:10::5"});
}

TEST(MutatePool, Errors) {
  api::SpiderIPPool p;
  p.spec.subnet = "nope";
  absl::Status s = MutateIPPool(&p, {});
  EXPECT_EQ(s.message(), "failed to generate 'spec.ipVersion' from 'spec.subnet' nope, nothing to "
                         "mutate");
  EXPECT_TRUE(p.metadata.HasFinalizer("spiderpool.spidernet.io"));  // done before the error
  EXPECT_FALSE(p.spec.ip_version.has_value());

  p.spec.subnet = "fd00::/64";
  p.spec.ip_version = 4;
  s = MutateIPPool(&p, {});
  EXPECT_EQ(s.message(), "failed to parse 'spec.subnet' fd00::/64 as a valid label value: invalid "
                         "CIDR format in IPv4 'fd00::/64'");

  p = Pool();
  p.spec.ips = {"10.0.0.1", "x"};
  s = MutateIPPool(&p, {});
  EXPECT_EQ(s.message(), "failed to merge 'spec.ips': invalid IP range format in IPv4 'x'");
  EXPECT_EQ(p.spec.ips, (std::vector<std::string>{"10.0.0.1", "x"}));  // left for validation
}

TEST(MutatePool, TerminatingIsLeftAlone) {
  api::SpiderIPPool p;
  p.spec.subnet = "10.0.0.0/24";
  p.metadata.deletion_timestamp = api::Time{};
  ASSERT_TRUE(MutateIPPool(&p, {}).ok());
  EXPECT_TRUE(p.metadata.finalizers.empty());
  EXPECT_FALSE(p.spec.ip_version.has_value());
}

TEST(MutatePool, ControllerSubnetOwnerLabelAndInheritance) {
  World w;
  api::SpiderSubnet s = Subnet("s1");
  s.spec.routes = std::vector<api::Route>{{"10.9.0.0/16", "10.0.0.254"}};
  ASSERT_TRUE(MutateSubnet(&s, {}).ok());
  w.AddSubnet(s);
  api::SpiderSubnet other = Subnet("s0");
  other.spec.subnet = "10.0.1.0/24";
  ASSERT_TRUE(MutateSubnet(&other, {}).ok());
  w.AddSubnet(other);

  api::SpiderIPPool p;
  p.metadata.name = "pool1";
  p.spec.subnet = "10.0.0.0/24";
  p.spec.ips = {"10.0.0.10"};
  ASSERT_TRUE(MutateIPPool(&p, w.ctx).ok());
  ASSERT_EQ(p.metadata.owner_references.size(), 1u);
  const api::OwnerReference& ref = p.metadata.owner_references[0];
  EXPECT_EQ(ref.api_version, "spiderpool.spidernet.io/v2beta1");
  EXPECT_EQ(ref.kind, "SpiderSubnet");
  EXPECT_EQ(ref.name, "s1");
  EXPECT_EQ(ref.uid, "uid-s1");
  EXPECT_EQ(ref.controller, true);
  EXPECT_EQ(ref.block_owner_deletion, true);
  EXPECT_EQ(p.metadata.labels.at("ipam.spidernet.io/owner-spider-subnet"), "s1");
  EXPECT_EQ(p.spec.gateway, "10.0.0.1");
  ASSERT_TRUE(p.spec.routes.has_value());
  EXPECT_EQ(p.spec.routes->size(), 1u);
  EXPECT_TRUE(ValidateIPPoolCreate(p, w.ctx).ok()) << ValidateIPPoolCreate(p, w.ctx).Message();

  api::SpiderIPPool again = p;
  ASSERT_TRUE(MutateIPPool(&again, w.ctx).ok());
  EXPECT_EQ(api::Encode(again), api::Encode(p));

  // An explicit empty route list and an own gateway are kept.
  api::SpiderIPPool q;
  q.spec.subnet = "10.0.0.0/24";
  q.spec.gateway = "10.0.0.254";
  q.spec.routes = std::vector<api::Route>{};
  ASSERT_TRUE(MutateIPPool(&q, w.ctx).ok());
  EXPECT_EQ(q.spec.gateway, "10.0.0.254");
  EXPECT_TRUE(q.spec.routes.has_value() && q.spec.routes->empty());

  // Subnets off: no owner.
  api::SpiderIPPool r;
  r.spec.subnet = "10.0.0.0/24";
  w.ctx.config.enable_spider_subnet = false;
  ASSERT_TRUE(MutateIPPool(&r, w.ctx).ok());
  EXPECT_TRUE(r.metadata.owner_references.empty());
  EXPECT_EQ(r.metadata.labels.count("ipam.spidernet.io/owner-spider-subnet"), 0u);
}

TEST(MutatePool, AnotherControllerIsAnError) {
  World w;
  api::SpiderSubnet s = Subnet("s1");
  ASSERT_TRUE(MutateSubnet(&s, {}).ok());
  w.AddSubnet(s);
  api::SpiderIPPool p;
  p.metadata.name = "pool1";
  p.spec.subnet = "10.0.0.0/24";
  p.metadata.owner_references.push_back(
      {.api_version = "apps/v1", .kind = "Deployment", .name = "web", .uid = "u", .controller = true});
  absl::Status st = MutateIPPool(&p, w.ctx);
  EXPECT_EQ(st.message(), "failed to set the reference of the controller Subnet: failed to set "
                          "owner reference: Object /pool1 is already owned by another Deployment "
                          "controller web");
  EXPECT_EQ(p.metadata.owner_references.size(), 1u);
}

TEST(MutatePool, RecreatedSubnetReplacesTheStaleReference) {
  World w;
  api::SpiderSubnet s = Subnet("s1");
  s.metadata.uid = "new-uid";
  ASSERT_TRUE(MutateSubnet(&s, {}).ok());
  w.AddSubnet(s);
  api::SpiderIPPool p;
  p.spec.subnet = "10.0.0.0/24";
  p.metadata.owner_references.push_back({.api_version = "spiderpool.spidernet.io/v2beta1",
                                         .kind = "SpiderSubnet",
                                         .name = "s1",
                                         .uid = "old-uid",
                                         .controller = true});
  ASSERT_TRUE(MutateIPPool(&p, w.ctx).ok());
  ASSERT_EQ(p.metadata.owner_references.size(), 1u);
  EXPECT_EQ(p.metadata.owner_references[0].uid, "new-uid");
}

TEST(CIDRLabelValue, Examples) {
  EXPECT_EQ(*CIDRLabelValue("10.148.4.0/24"), "10-148-4-0-24");
  EXPECT_EQ(*CIDRLabelValue("fd00:10::/64", 6), "fd00-10---64");
  EXPECT_EQ(CIDRLabelValue("10.0.0.0/24", 6).status().message(),
            "invalid CIDR format in IPv6 '10.0.0.0/24'");
  EXPECT_EQ(CIDRLabelValue("10.0.0.0/24", 5).status().message(), "invalid IP version '5'");
}


}  // namespace
}  // namespace spiderpool::api::validation
