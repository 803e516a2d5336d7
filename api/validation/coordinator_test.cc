// Every SpiderCoordinator rule of reference §5 and the coordinator defaults.

#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/codec.h"
#include "api/validation/validation.h"

namespace spiderpool::api::validation {
namespace {

std::vector<std::string> Strings(const ErrorList& errs) {
  std::vector<std::string> out;
  for (const FieldError& e : errs) out.push_back(e.ToString());
  return out;
}

api::SpiderCoordinator Coordinator() {
  api::SpiderCoordinator c;
  c.SetTypeMeta();
  c.metadata.name = "default";
  c.spec.pod_cidr_type = "auto";
  c.spec.pod_rp_filter = 0;
  c.spec.hijack_cidr = {"169.254.0.0/16", "10.96.0.10"};
  return c;
}

struct CoordCase {
  std::string name;
  std::function<void(api::SpiderCoordinator&)> setup;
  std::vector<std::string> want;
};

class CoordinatorTest : public testing::TestWithParam<CoordCase> {};

TEST_P(CoordinatorTest, CreateAndUpdate) {
  api::SpiderCoordinator c = Coordinator();
  GetParam().setup(c);
  EXPECT_EQ(Strings(ValidateCoordinatorCreate(c, {}).errors), GetParam().want);
  EXPECT_EQ(Strings(ValidateCoordinatorUpdate(Coordinator(), c, {}).errors), GetParam().want);
}

const CoordCase kCoordCases[] = {
    {"Valid", [](auto&) {}, {}},
    {"PodCIDRTypeMissing",
     [](auto& c) { c.spec.pod_cidr_type.reset(); },
     {"spec.podCIDRType: Unsupported value: \"\": supported values: \"auto\", \"cluster\", "
      "\"calico\", \"cilium\", \"none\""}},
    {"PodCIDRTypeUnknown",
     [](auto& c) { c.spec.pod_cidr_type = "flannel"; },
     {"spec.podCIDRType: Unsupported value: \"flannel\": supported values: \"auto\", \"cluster\", "
      "\"calico\", \"cilium\", \"none\""}},
    {"ModeUnknown",
     [](auto& c) { c.spec.mode = "bridge"; },
     {"spec.mode: Unsupported value: \"bridge\": supported values: \"auto\", \"underlay\", "
      "\"overlay\", \"disabled\""}},
    {"HijackCIDRInvalid",
     [](auto& c) { c.spec.hijack_cidr = {"10.0.0.0/8", "10.0.0.0/99", "host"}; },
     {"spec.hijackCIDR[1]: Invalid value: \"10.0.0.0/99\": invalid IP or CIDR: write an IP address "
      "(10.0.0.1) or a CIDR (10.0.0.0/8)",
      "spec.hijackCIDR[2]: Invalid value: \"host\": invalid IP or CIDR: write an IP address "
      "(10.0.0.1) or a CIDR (10.0.0.0/8)"}},
    {"PolicyRouteDstInvalid",
     [](auto& c) { c.spec.policy_routes = {{"10.0.0.0/", "10.0.0.1"}}; },
     {"spec.policyRoutes[0].dst: Invalid value: \"10.0.0.0/\": dst is an invalid IP address or "
      "CIDR"}},
    {"PolicyRouteGwInvalid",
     [](auto& c) { c.spec.policy_routes = {{"10.0.0.0/8", "10.0.0.0/8"}}; },
     {"spec.policyRoutes[0].gw: Invalid value: \"10.0.0.0/8\": gw is an invalid IP address"}},
    {"PolicyRouteFamiliesDiffer",
     [](auto& c) { c.spec.policy_routes = {{"fd00::/64", "10.0.0.1"}}; },
     {"spec.policyRoutes[0].gw: Invalid value: \"10.0.0.1\": dst and gw must use the same IP "
      "family"}},
    {"PolicyRouteBareIPDstIsFine",
     [](auto& c) { c.spec.policy_routes = {{"10.1.1.1", "10.0.0.1"}}; },
     {}},
    {"PodMACPrefixMalformed",
     [](auto& c) { c.spec.pod_mac_prefix = "0a:1"; },
     {"spec.podMACPrefix: Invalid value: \"0a:1\": not a valid MAC prefix (write two hex bytes, "
      "e.g. \"0a:1b\")"}},
    {"PodMACPrefixNotHex",
     [](auto& c) { c.spec.pod_mac_prefix = "0g:1b"; },
     {"spec.podMACPrefix: Invalid value: \"0g:1b\": not a valid MAC prefix (write two hex bytes, "
      "e.g. \"0a:1b\")"}},
    {"PodMACPrefixMulticast",
     [](auto& c) { c.spec.pod_mac_prefix = "0b:1b"; },
     {"spec.podMACPrefix: Invalid value: \"0b:1b\": not a unicast MAC: the lowest bit of the "
      "first byte must be 0"}},
    {"PodMACPrefixEmptyIsUnset", [](auto& c) { c.spec.pod_mac_prefix = ""; }, {}},
    {"TxQueueLenNegative",
     [](auto& c) { c.spec.tx_queue_len = -1; },
     {"spec.txQueueLen: Invalid value: -1: txQueueLen can't be less than 0"}},
    {"PodRPFilterMissing",
     [](auto& c) { c.spec.pod_rp_filter.reset(); },
     {"spec.podRPFilter: Unsupported value: \"null\": supported values: \"0\", \"1\", \"2\""}},
    {"PodRPFilterUnknown",
     [](auto& c) { c.spec.pod_rp_filter = 3; },
     {"spec.podRPFilter: Unsupported value: 3: supported values: \"0\", \"1\", \"2\""}},
    {"PodRPFilterNegativeMeansLeaveAlone", [](auto& c) { c.spec.pod_rp_filter = -1; }, {}},
    {"VethLinkAddressInvalid",
     [](auto& c) { c.spec.veth_link_address = "169.254.0.300"; },
     {"spec.vethLinkAddress: Invalid value: \"169.254.0.300\": vethLinkAddress is an invalid IP "
      "address"}},
    {"VethMTUZero",
     [](auto& c) { c.spec.veth_mtu = 0; },
     {"spec.vethMTU: Invalid value: 0: vethMTU must be greater than 0"}},
};

INSTANTIATE_TEST_SUITE_P(Rules, CoordinatorTest, testing::ValuesIn(kCoordCases),
                         [](const auto& info) { return info.param.name; });

TEST(Coordinator, AllErrorsAtOnce) {
  api::SpiderCoordinator c = Coordinator();
  c.spec.pod_cidr_type.reset();
  c.spec.tx_queue_len = -5;
  c.spec.veth_mtu = -1;
  Result r = ValidateCoordinatorCreate(c, {});
  EXPECT_EQ(r.errors.size(), 3u);
  EXPECT_EQ(r.Message().rfind("SpiderCoordinator.spiderpool.spidernet.io \"default\" is invalid: "
                              "[spec.podCIDRType: ",
                              0),
            0u);
}

TEST(Coordinator, SpecUnderAnotherPathWithOptionalFields) {
  api::CoordinatorSpec s;
  EXPECT_TRUE(ValidateCoordinatorSpec(s, "spec.coordinator", false).empty());
  s.tx_queue_len = -1;
  EXPECT_EQ(Strings(ValidateCoordinatorSpec(s, "spec.coordinator", false)),
            (std::vector<std::string>{
                "spec.coordinator.txQueueLen: Invalid value: -1: txQueueLen can't be less than 0"}));
}

TEST(MutateCoordinator, Defaults) {
  api::SpiderCoordinator c;
  c.spec.pod_cidr_type = "calico";
  c.spec.hijack_cidr = {"10.96.0.10", "fd00::a", "169.254.0.0/16"};
  c.spec.policy_routes = {{"10.1.1.1", "10.0.0.1"}, {"fd00::/64", "fd00::1"}};
  ASSERT_TRUE(MutateCoordinator(&c, {}).ok());
  EXPECT_EQ(c.spec.mode, "auto");
  EXPECT_EQ(c.spec.tune_pod_routes, true);
  EXPECT_EQ(c.spec.host_rule_table, 500);
  EXPECT_EQ(c.spec.pod_rp_filter, 0);
  EXPECT_EQ(c.spec.tx_queue_len, 0);
  EXPECT_EQ(c.spec.veth_link_address, "");
  EXPECT_EQ(c.spec.veth_mtu, 1500);
  EXPECT_EQ(c.spec.hijack_cidr,
            (std::vector<std::string>{"10.96.0.10/32", "fd00::a/128", "169.254.0.0/16"}));
  EXPECT_EQ(c.spec.policy_routes[0].dst, "10.1.1.1/32");
  EXPECT_EQ(c.spec.policy_routes[1].dst, "fd00::/64");
  EXPECT_TRUE(c.metadata.HasFinalizer("spiderpool.spidernet.io"));
  EXPECT_TRUE(ValidateCoordinatorCreate(c, {}).ok());
  api::SpiderCoordinator again = c;
  ASSERT_TRUE(MutateCoordinator(&again, {}).ok());
  EXPECT_EQ(api::Encode(again), api::Encode(c));
}

TEST(MutateCoordinator, KeepsSetValues) {
  api::SpiderCoordinator c;
  c.spec.pod_cidr_type = "none";
  c.spec.mode = "underlay";
  c.spec.tune_pod_routes = false;
  c.spec.host_rule_table = 600;
  c.spec.veth_mtu = 9000;
  ASSERT_TRUE(MutateCoordinator(&c, {}).ok());
  EXPECT_EQ(c.spec.mode, "underlay");
  EXPECT_EQ(c.spec.tune_pod_routes, false);
  EXPECT_EQ(c.spec.host_rule_table, 600);
  EXPECT_EQ(c.spec.veth_mtu, 9000);
}

TEST(MutateCoordinator, Errors) {
  api::SpiderCoordinator c;
  absl::Status s = MutateCoordinator(&c, {});
  EXPECT_EQ(s.message(), "PodCIDRType is not allowed to be empty");
  EXPECT_EQ(c.spec.mode, "auto");  // defaults come first
  EXPECT_FALSE(c.metadata.HasFinalizer("spiderpool.spidernet.io"));

  c.spec.pod_cidr_type = "auto";
  c.spec.hijack_cidr = {"not-an-ip"};
  EXPECT_EQ(MutateCoordinator(&c, {}).message(), "invalid IP address: not-an-ip");

  api::SpiderCoordinator deleting;
  deleting.metadata.deletion_timestamp = api::Time{};
  EXPECT_TRUE(MutateCoordinator(&deleting, {}).ok());
  EXPECT_FALSE(deleting.metadata.HasFinalizer("spiderpool.spidernet.io"));
}

}  // namespace
}  // namespace spiderpool::api::validation
