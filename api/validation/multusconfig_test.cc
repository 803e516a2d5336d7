// Every SpiderMultusConfig rule of reference §5 and the SpiderClaimParameter rules (§1.7).

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/validation/validation.h"

namespace spiderpool::api::validation {
namespace {

std::vector<std::string> Strings(const ErrorList& errs) {
  std::vector<std::string> out;
  for (const FieldError& e : errs) out.push_back(e.ToString());
  return out;
}

api::SpiderMultusConfig Macvlan() {
  api::SpiderMultusConfig m;
  m.SetTypeMeta();
  m.metadata.name = "macvlan-100";
  m.metadata.namespace_ = "kube-system";
  m.spec.cni_type = "macvlan";
  m.spec.macvlan = api::SpiderMacvlanCniConfig{.master = {"eth0"}, .vlan_id = 100};
  return m;
}

struct SmcCase {
  std::string name;
  std::function<void(api::SpiderMultusConfig&, Context&)> setup;
  std::vector<std::string> want;
};

class MultusConfigTest : public testing::TestWithParam<SmcCase> {};

TEST_P(MultusConfigTest, Create) {
  api::SpiderMultusConfig m = Macvlan();
  Context ctx;
  GetParam().setup(m, ctx);
  Result r = ValidateMultusConfigCreate(m, ctx);
  EXPECT_EQ(Strings(r.errors), GetParam().want);
}

const SmcCase kSmcCases[] = {
    {"Valid", [](auto&, auto&) {}, {}},
    {"CniTypeNil",
     [](auto& m, auto&) { m.spec.cni_type.reset(); },
     {"spec.cniType: Invalid value: \"null\": CniType must not be nil"}},
    {"MacvlanConfigMissing",
     [](auto& m, auto&) { m.spec.macvlan.reset(); },
     {"spec.macvlan: Required value: no spec.macvlan specified"}},
    {"VlanIDOutOfRange",
     [](auto& m, auto&) { m.spec.macvlan->vlan_id = 4095; },
     {"spec.macvlan.vlanID: Invalid value: 4095: invalid vlanId 4095, please make sure vlanId in "
      "range [0,4094]"}},
    {"NegativeMTU",
     [](auto& m, auto&) { m.spec.macvlan->mtu = -1; },
     {"spec.macvlan.mtu: Invalid value: -1: mtu must not be negative (0 keeps the kernel "
      "default)"}},
    {"MatchMasterSubnetNotForMacvlan",
     [](auto& m, auto&) {
       m.spec.macvlan->ippools = api::SpiderpoolPools{.ipv4 = {"p"}, .match_master_subnet = true};
     },
     {"spec.macvlan.ippools.matchMasterSubnet: Invalid value: true: MatchMasterSubnet feature is "
      "not supported for macvlan"}},
    {"MasterEmpty",
     [](auto& m, auto&) { m.spec.macvlan->master.clear(); },
     {"spec.macvlan.master: Required value: master can't be empty"}},
    {"TwoMastersWithoutBond",
     [](auto& m, auto&) { m.spec.macvlan->master = {"eth0", "eth1"}; },
     {"spec.macvlan.bond: Required value: the bond property is nil with multiple Interfaces: set "
      "bond.name and bond.mode, or use one master"}},
    {"TwoMastersBondWithoutName",
     [](auto& m, auto&) {
       m.spec.macvlan->master = {"eth0", "eth1"};
       m.spec.macvlan->bond = api::BondConfig{.name = "", .mode = 1};
     },
     {"spec.macvlan.bond.name: Required value: bond name can't be empty"}},
    {"TwoMastersWithBond",
     [](auto& m, auto&) {
       m.spec.macvlan->master = {"eth0", "eth1"};
       m.spec.macvlan->bond = api::BondConfig{.name = "bond0", .mode = 1};
     },
     {}},
    {"OtherConfigPresent",
     [](auto& m, auto&) { m.spec.sriov = api::SpiderSRIOVCniConfig{}; },
     {"spec.cniType: Forbidden: the cniType macvlan only supports spec.macvlan, please remove "
      "other CNI configs"}},
    {"IPvlanMissing",
     [](auto& m, auto&) { m.spec.cni_type = "ipvlan"; },
     {"spec.ipvlan: Required value: no spec.ipvlan specified",
      "spec.cniType: Forbidden: the cniType ipvlan only supports spec.ipvlan, please remove other "
      "CNI configs"}},
    {"IPvlanMatchMasterSubnet",
     [](auto& m, auto&) {
       m.spec.cni_type = "ipvlan";
       m.spec.ipvlan = m.spec.macvlan;
       m.spec.macvlan.reset();
       m.spec.ipvlan->ippools = api::SpiderpoolPools{.match_master_subnet = true};
     },
     {"spec.ipvlan.ippools.matchMasterSubnet: Invalid value: true: MatchMasterSubnet feature is "
      "not supported for ipvlan"}},
    {"SriovWithoutResourceName",
     [](auto& m, auto&) {
       m.spec.cni_type = "sriov";
       m.spec.macvlan.reset();
       m.spec.sriov = api::SpiderSRIOVCniConfig{};
     },
     {"spec.sriov.resourceName: Required value: no spec.sriov.resourceName specified: name the "
      "SR-IOV device-plugin resource of the VFs"}},
    {"SriovTxRates",
     [](auto& m, auto&) {
       m.spec.cni_type = "sriov";
       m.spec.macvlan.reset();
       m.spec.sriov = api::SpiderSRIOVCniConfig{
           .resource_name = "r", .vlan_id = -1, .min_tx_rate_mbps = 100, .max_tx_rate_mbps = 10};
     },
     {"spec.sriov.vlanID: Invalid value: -1: invalid vlanId -1, please make sure vlanId in range "
      "[0,4094]",
      "spec.sriov.minTxRateMbps: Invalid value: 100: minTxRateMbps must be less than "
      "maxTxRateMbps"}},
    {"SriovMissing",
     [](auto& m, auto&) {
       m.spec.cni_type = "sriov";
       m.spec.macvlan.reset();
     },
     {"spec.sriov: Required value: no spec.sriov specified"}},
    {"IBSriovWithoutResourceName",
     [](auto& m, auto&) {
       m.spec.cni_type = "ib-sriov";
       m.spec.macvlan.reset();
       m.spec.ibsriov = api::SpiderIBSriovCniConfig{.resource_name = ""};
     },
     {"spec.ibsriov.resourceName: Required value: no spec.ibsriov.resourceName specified: name "
      "the SR-IOV device-plugin resource of the VFs"}},
    {"IPoIBWithoutMaster",
     [](auto& m, auto&) {
       m.spec.cni_type = "ipoib";
       m.spec.macvlan.reset();
       m.spec.ipoib = api::SpiderIpoibCniConfig{};
     },
     {"spec.ipoib.master: Required value: no spec.ipoib.master specified"}},
    {"VlanModeMissing",
     [](auto& m, auto&) {
       m.spec.cni_type = "vlan";
       m.spec.macvlan.reset();
       m.spec.vlan = api::SpiderVlanCniConfig{.master = {"eth0"}, .vlan_id = 10};
     },
     {"spec.vlan.vlanMode: Required value: vlanMode must be set: manual or auto"}},
    {"VlanManualWithoutID",
     [](auto& m, auto&) {
       m.spec.cni_type = "vlan";
       m.spec.macvlan.reset();
       m.spec.vlan = api::SpiderVlanCniConfig{.master = {"eth0"}, .vlan_mode = "manual"};
     },
     {"spec.vlan.vlanID: Required value: vlanId must not be nil when vlanMode is manual"}},
    {"VlanAutoWithID",
     [](auto& m, auto&) {
       m.spec.cni_type = "vlan";
       m.spec.macvlan.reset();
       m.spec.vlan =
           api::SpiderVlanCniConfig{.master = {"eth0"}, .vlan_mode = "auto", .vlan_id = 7};
     },
     {"spec.vlan.vlanID: Forbidden: vlanId must not be specified when vlanMode is auto"}},
    {"VlanModeUnknown",
     [](auto& m, auto&) {
       m.spec.cni_type = "vlan";
       m.spec.macvlan.reset();
       m.spec.vlan = api::SpiderVlanCniConfig{.master = {"eth0"}, .vlan_mode = "trunk"};
     },
     {"spec.vlan.vlanMode: Unsupported value: \"trunk\": supported values: \"manual\", \"auto\""}},
    {"VlanMatchMasterSubnetAndBond",
     [](auto& m, auto&) {
       m.spec.cni_type = "vlan";
       m.spec.macvlan.reset();
       m.spec.vlan = api::SpiderVlanCniConfig{.master = {"eth0", "eth1"},
                                              .vlan_mode = "manual",
                                              .vlan_id = 5000,
                                              .ippools = api::SpiderpoolPools{
                                                  .match_master_subnet = true}};
     },
     {"spec.vlan.vlanID: Invalid value: 5000: invalid vlanId 5000, please make sure vlanId in "
      "range [0,4094]",
      "spec.vlan.ippools.matchMasterSubnet: Invalid value: true: MatchMasterSubnet feature is not "
      "supported for vlan",
      "spec.vlan.bond: Required value: the bond property is nil with multiple Interfaces: set "
      "bond.name and bond.mode, or use one master"}},
    {"OvsTrunks",
     [](auto& m, auto&) {
       m.spec.cni_type = "ovs";
       m.spec.macvlan.reset();
       m.spec.ovs = api::SpiderOvsCniConfig{
           .bridge = "br1",
           .vlan = 5000,
           .trunk = {{.min_id = 4095}, {.min_id = 10, .max_id = 5}, {.max_id = 4095}, {.id = 4097}}};
     },
     {"spec.ovs.vlan: Invalid value: 5000: invalid vlanId 5000, please make sure vlanId in range "
      "[0,4094]",
      "spec.ovs.trunk[0].minID: Invalid value: 4095: incorrect trunk minID parameter",
      "spec.ovs.trunk[1].maxID: Invalid value: 5: minID is greater than maxID in trunk parameter",
      "spec.ovs.trunk[2].maxID: Invalid value: 4095: incorrect trunk maxID parameter",
      "spec.ovs.trunk[3].id: Invalid value: 4097: incorrect trunk id parameter"}},
    {"OvsWithoutBridge",
     [](auto& m, auto&) {
       m.spec.cni_type = "ovs";
       m.spec.macvlan.reset();
       m.spec.ovs = api::SpiderOvsCniConfig{};
     },
     {"spec.ovs.bridge: Required value: bridge can't be empty"}},
    {"OvsWithInjectAnnotation",
     [](auto& m, auto&) {
       m.spec.cni_type = "ovs";
       m.spec.macvlan.reset();
       m.spec.ovs = api::SpiderOvsCniConfig{.bridge = "br1"};
       m.metadata.annotations["cni.spidernet.io/network-resource-inject"] = "x";
     },
     {"spec.cniType: Forbidden: the cniType ovs does not support RDMA resource or network "
      "resource injected"}},
    {"CustomInvalidJSON",
     [](auto& m, auto&) {
       m.spec.cni_type = "custom";
       m.spec.macvlan.reset();
       m.spec.custom_cni = "{\"type\": \"macvlan\",";
     },
     {"spec.customCNI: Forbidden: customCNI isn't a valid JSON encoding"}},
    {"CustomWithOtherConfigAndInject",
     [](auto& m, auto&) {
       m.spec.cni_type = "custom";
       m.metadata.annotations["cni.spidernet.io/rdma-resource-inject"] = "x";
     },
     {"spec.cniType: Forbidden: the cniType custom does not support RDMA resource or network "
      "resource injected",
      "spec.cniType: Forbidden: the cniType custom only supports spec.customCNI, please remove "
      "other CNI configs"}},
    {"CustomValid",
     [](auto& m, auto&) {
       m.spec.cni_type = "custom";
       m.spec.macvlan.reset();
       m.spec.custom_cni = R"({"cniVersion":"0.3.1","type":"bridge"})";
     },
     {}},
    {"RdmaInjectNeedsResourceAndPools",
     [](auto& m, auto&) { m.metadata.annotations["cni.spidernet.io/rdma-resource-inject"] = "g1"; },
     {"spec.macvlan.rdmaResourceName: Required value: the annotation "
      "cni.spidernet.io/rdma-resource-inject needs a resource to inject: set "
      "spec.macvlan.rdmaResourceName",
      "spec.macvlan.ippools: Required value: the annotation cni.spidernet.io/rdma-resource-inject "
      "needs at least one IPv4 or IPv6 IPPool in ippools"}},
    {"RdmaInjectSatisfied",
     [](auto& m, auto&) {
       m.metadata.annotations["cni.spidernet.io/rdma-resource-inject"] = "g1";
       m.spec.macvlan->rdma_resource_name = "spidernet.io/hca_shared_devices";
       m.spec.macvlan->ippools = api::SpiderpoolPools{.ipv6 = {"v6"}};
     },
     {}},
    {"NetworkInjectNeedsPoolsWithResource",
     [](auto& m, auto&) {
       m.metadata.annotations["cni.spidernet.io/network-resource-inject"] = "g1";
       m.spec.macvlan->rdma_resource_name = "spidernet.io/hca_shared_devices";
     },
     {"spec.macvlan.ippools: Required value: the annotation "
      "cni.spidernet.io/network-resource-inject with a resource name needs at least one IPv4 or "
      "IPv6 IPPool in ippools"}},
    {"NetworkInjectWithoutResourceIsFine",
     [](auto& m, auto&) { m.metadata.annotations["cni.spidernet.io/network-resource-inject"] = "g1"; },
     {}},
    {"CRNameNotDNS",
     [](auto& m, auto&) { m.metadata.annotations["multus.spidernet.io/cr-name"] = "Bad_Name"; },
     {"metadata.annotations[multus.spidernet.io/cr-name]: Invalid value: \"Bad_Name\": invalid "
      "custom net-attach-def resource name, err: [a lowercase RFC 1123 subdomain must consist of "
      "lower case alphanumeric characters, '-' or '.', and must start and end with an "
      "alphanumeric character (e.g. 'example.com', regex used for validation is "
      "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')]"}},
    {"CNIVersionUnsupported",
     [](auto& m, auto&) { m.metadata.annotations["multus.spidernet.io/cni-version"] = "0.2.0"; },
     {"metadata.annotations[multus.spidernet.io/cni-version]: Invalid value: \"0.2.0\": "
      "unsupported CNI version 0.2.0, supported versions: 0.3.0, 0.3.1, 0.4.0, 1.0.0"}},
    {"CNIVersionSupported",
     [](auto& m, auto&) { m.metadata.annotations["multus.spidernet.io/cni-version"] = "1.0.0"; },
     {}},
    {"NADOwnedByAnotherSMC",
     [](auto& m, auto& ctx) {
       m.metadata.annotations["multus.spidernet.io/cr-name"] = "shared";
       ctx.net_attach_def_owners = [](std::string_view ns, std::string_view name)
           -> absl::StatusOr<std::optional<std::vector<api::OwnerReference>>> {
         if (ns != "kube-system" || name != "shared") return std::nullopt;
         return std::vector<api::OwnerReference>{
             {.api_version = "spiderpool.spidernet.io/v2beta1",
              .kind = "SpiderMultusConfig",
              .name = "other",
              .uid = "u"}};
       };
     },
     {"metadata.annotations[multus.spidernet.io/cr-name]: Invalid value: \"shared\": the "
      "net-attach-def kube-system/shared already exists and is managed by SpiderMultusConfig "
      "kube-system/other."}},
    {"NADOwnedBySelfOrUnmanaged",
     [](auto&, auto& ctx) {
       ctx.net_attach_def_owners = [](std::string_view, std::string_view)
           -> absl::StatusOr<std::optional<std::vector<api::OwnerReference>>> {
         return std::vector<api::OwnerReference>{
             {.api_version = "spiderpool.spidernet.io/v2beta1",
              .kind = "SpiderMultusConfig",
              .name = "macvlan-100",
              .uid = "u"}};
       };
     },
     {}},
    {"NADLookupFails",
     [](auto&, auto& ctx) {
       ctx.net_attach_def_owners = [](std::string_view, std::string_view)
           -> absl::StatusOr<std::optional<std::vector<api::OwnerReference>>> {
         return absl::UnavailableError("connection refused");
       };
     },
     {"metadata.name: Internal error: failed to retrieve net-attach-def kube-system/macvlan-100, "
      "unable to determine conflicts with existing resources. error: connection refused"}},
    {"CoordinatorBlock",
     [](auto& m, auto&) {
       m.spec.coordinator = api::CoordinatorSpec{.pod_mac_prefix = "01:00", .veth_mtu = 0};
     },
     {"spec.coordinator.podMACPrefix: Invalid value: \"01:00\": not a unicast MAC: the lowest "
      "bit of the first byte must be 0",
      "spec.coordinator.vethMTU: Invalid value: 0: vethMTU must be greater than 0"}},
    {"ChainCNIJsonData",
     [](auto& m, auto&) {
       m.spec.chain_cni_json_data = {R"({"type":"tuning"})", R"({"name":"x"})", "[1]",
                                     R"({"type":5})"};
     },
     {"spec.chainCNIJsonData[1]: Forbidden: invalid {\"name\":\"x\"}: error parsing "
      "configuration: missing 'type'",
      "spec.chainCNIJsonData[2]: Forbidden: invalid [1]: error parsing configuration: json: "
      "cannot unmarshal non-object into Go value of type types.NetConf",
      "spec.chainCNIJsonData[3]: Forbidden: invalid {\"type\":5}: error parsing configuration: "
      "json: cannot unmarshal non-string into Go struct field NetConf.type of type string"}},
};

INSTANTIATE_TEST_SUITE_P(Rules, MultusConfigTest, testing::ValuesIn(kSmcCases),
                         [](const auto& info) { return info.param.name; });

TEST(MultusConfig, ChainCNIJsonDataThatIsNotJSON) {
  api::SpiderMultusConfig m = Macvlan();
  m.spec.chain_cni_json_data = {"{"};
  Result r = ValidateMultusConfigCreate(m, {});
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].type, ErrorType::kForbidden);
  EXPECT_EQ(r.errors[0].ToString().rfind(
                "spec.chainCNIJsonData[0]: Forbidden: invalid {: error parsing configuration: ", 0),
            0u)
      << r.errors[0].ToString();
}

TEST(MultusConfig, UpdateCRNameIsImmutable) {
  api::SpiderMultusConfig old_m = Macvlan();
  api::SpiderMultusConfig m = Macvlan();
  m.metadata.annotations["multus.spidernet.io/cr-name"] = "new";
  EXPECT_EQ(Strings(ValidateMultusConfigUpdate(old_m, m, {}).errors),
            (std::vector<std::string>{
                "metadata.annotations[multus.spidernet.io/cr-name]: Invalid value: \"new\": it's "
                "unsupported to changed Multus net-attach-def 'macvlan-100' to customized name "
                "'new'"}));
  old_m.metadata.annotations["multus.spidernet.io/cr-name"] = "old";
  EXPECT_EQ(Strings(ValidateMultusConfigUpdate(old_m, m, {}).errors),
            (std::vector<std::string>{
                "metadata.annotations[multus.spidernet.io/cr-name]: Invalid value: \"old\": it's "
                "unsupported to change customized Multus net-attach-def resource name from 'old' "
                "to 'new'"}));
  // Removing it (back to the SMC's own name) is allowed, as upstream allows it.
  api::SpiderMultusConfig plain = Macvlan();
  EXPECT_TRUE(ValidateMultusConfigUpdate(old_m, plain, {}).ok());
  EXPECT_TRUE(ValidateMultusConfigUpdate(m, m, {}).ok());
}

TEST(MultusConfig, AllErrorsAtOnce) {
  api::SpiderMultusConfig m = Macvlan();
  m.metadata.annotations["multus.spidernet.io/cni-version"] = "9";
  m.spec.macvlan->vlan_id = -2;
  m.spec.macvlan->master = {"eth0", "eth1"};
  m.spec.ipvlan = api::SpiderIPvlanCniConfig{};
  m.spec.chain_cni_json_data = {"{}"};
  Result r = ValidateMultusConfigCreate(m, {});
  EXPECT_EQ(r.errors.size(), 5u) << r.Message();
  EXPECT_EQ(r.Message().rfind("SpiderMultusConfig.spiderpool.spidernet.io \"macvlan-100\" is "
                              "invalid: [metadata.annotations[multus.spidernet.io/cni-version]: ",
                              0),
            0u)
      << r.Message();
}

// ---- SpiderClaimParameter ---------------------------------------------------------------------

TEST(ClaimParameter, MultusNameRequiredAndMustExist) {
  api::SpiderClaimParameter scp;
  scp.SetTypeMeta();
  scp.metadata.name = "claim";
  scp.metadata.namespace_ = "team-a";
  scp.spec.default_nic = api::ClaimNic{.multus_name = "", .namespace_ = "kube-system"};
  scp.spec.secondary_nics = {{.multus_name = "macvlan-100", .namespace_ = "kube-system"},
                             {.multus_name = "missing", .namespace_ = ""}};
  std::vector<std::string> asked;
  Context ctx;
  ctx.multus_config_exists = [&](std::string_view ns,
                                 std::string_view name) -> absl::StatusOr<bool> {
    asked.push_back(std::string(ns) + "/" + std::string(name));
    return ns == "kube-system" && name == "macvlan-100";
  };
  Result r = ValidateClaimParameterCreate(scp, ctx);
  EXPECT_EQ(Strings(r.errors),
            (std::vector<std::string>{
                "spec.defaultNic.multusName: Required value: multusName must not be empty: name "
                "the SpiderMultusConfig that configures this NIC",
                "spec.secondaryNics[1].multusName: Not found: \"missing\": SpiderMultusConfig "
                "team-a/missing does not exist: create it first or fix multusName"}));
  EXPECT_EQ(asked, (std::vector<std::string>{"kube-system/macvlan-100", "team-a/missing"}));
  EXPECT_EQ(r.ToStatus().details->causes[1].reason, "FieldValueNotFound");

  scp.spec.default_nic->multus_name = "macvlan-100";
  scp.spec.secondary_nics.pop_back();
  EXPECT_TRUE(ValidateClaimParameterUpdate(scp, scp, ctx).ok());

  ctx.multus_config_exists = [](std::string_view, std::string_view) -> absl::StatusOr<bool> {
    return absl::UnavailableError("down");
  };
  r = ValidateClaimParameterCreate(scp, ctx);
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].ToString(),
            "spec.defaultNic.multusName: Internal error: failed to get SpiderMultusConfig "
            "kube-system/macvlan-100: down");
}

}  // namespace
}  // namespace spiderpool::api::validation
