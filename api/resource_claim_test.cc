#include "api/resource_claim.h"

#include "base/json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spiderpool::api::resource_v1 {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Json J(std::string_view text) {
  auto j = base::ParseJson(text);
  EXPECT_TRUE(j.ok()) << j.status();
  return j.ok() ? *j : Json();
}

// A v1 claim as kube-apiserver 1.34+ serves it after scheduling, with status.devices of two
// drivers and fields this code does not model (skipNodeOperations, a future one).
constexpr char kAllocatedClaim[] = R"({
  "apiVersion": "resource.k8s.io/v1",
  "kind": "ResourceClaim",
  "metadata": {"name": "nic", "namespace": "ns1", "uid": "0f1e2d3c-aaaa-bbbb-cccc-000000000001",
               "resourceVersion": "42", "finalizers": ["resource.kubernetes.io/delete-protection"]},
  "spec": {"devices": {
    "requests": [
      {"name": "macvlan", "exactly": {"deviceClassName": "netresources.spidernet.io",
        "selectors": [{"cel": {"expression": "device.attributes[\"netresources.spidernet.io\"].ifName == \"eth1\""}}],
        "allocationMode": "ExactCount", "count": 1}},
      {"name": "gpu", "firstAvailable": [
        {"name": "big", "deviceClassName": "gpu.example.com", "count": 2},
        {"name": "small", "deviceClassName": "gpu.example.com"}]}
    ],
    "constraints": [{"requests": ["macvlan", "gpu"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}],
    "config": [{"requests": ["macvlan"], "opaque": {"driver": "netresources.spidernet.io",
      "parameters": {"apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderClaimParameter", "name": "scp1"}}}]
  }},
  "status": {
    "allocation": {
      "devices": {
        "results": [
          {"request": "macvlan", "driver": "netresources.spidernet.io", "pool": "node-1", "device": "eth1",
           "skipNodeOperations": ["NodeUnprepareResources"]},
          {"request": "gpu/small", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0",
           "shareID": "6c1f4e8a-1111-2222-3333-444455556666"}
        ],
        "config": [
          {"source": "FromClass", "opaque": {"driver": "netresources.spidernet.io", "parameters": {"x": 1}}},
          {"source": "FromClaim", "requests": ["macvlan"], "opaque": {"driver": "netresources.spidernet.io",
            "parameters": {"apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderClaimParameter", "name": "scp1"}}},
          {"source": "FromClaim", "requests": ["gpu"], "opaque": {"driver": "gpu.example.com", "parameters": {}}}
        ]
      },
      "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]},
      "allocationTimestamp": "2026-01-02T03:04:05Z"
    },
    "reservedFor": [{"resource": "pods", "name": "pod-a", "uid": "77777777-0000-0000-0000-000000000001"}],
    "devices": [
      {"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0",
       "shareID": "6c1f4e8a-1111-2222-3333-444455556666",
       "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-02T03:04:06Z", "reason": "Ok", "message": ""}],
       "data": {"vendor": "x"}, "futureField": true},
      {"driver": "netresources.spidernet.io", "pool": "node-1", "device": "eth1",
       "networkData": {"interfaceName": "net1", "ips": ["10.6.0.10/24", "fd00:6::10/64"], "hardwareAddress": "aa:bb:cc:dd:ee:ff"}}
    ]
  }
})";

TEST(ResourceClaim, DecodesV1WithEveryPart) {
  auto c = DecodeResourceClaim(J(kAllocatedClaim));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->metadata.uid, "0f1e2d3c-aaaa-bbbb-cccc-000000000001");
  ASSERT_EQ(c->spec.devices.requests.size(), 2u);
  const DeviceRequest& mac = c->spec.devices.requests[0];
  ASSERT_TRUE(mac.exactly.has_value());
  EXPECT_EQ(mac.exactly->device_class_name, "netresources.spidernet.io");
  ASSERT_EQ(mac.exactly->selectors.size(), 1u);
  EXPECT_THAT(mac.exactly->selectors[0].cel->expression, HasSubstr("ifName"));
  EXPECT_EQ(mac.exactly->count, 1);
  const DeviceRequest& gpu = c->spec.devices.requests[1];
  EXPECT_FALSE(gpu.exactly.has_value());
  ASSERT_EQ(gpu.first_available.size(), 2u);
  EXPECT_EQ(gpu.first_available[0].count, 2);
  EXPECT_EQ(*c->spec.devices.constraints[0].match_attribute, "resource.kubernetes.io/pcieRoot");
  EXPECT_EQ(c->spec.devices.config[0].opaque->parameters["name"], "scp1");

  ASSERT_TRUE(c->status.allocation.has_value());
  const auto& results = c->status.allocation->devices.results;
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1].MainRequest(), "gpu");
  EXPECT_EQ(*results[1].share_id, "6c1f4e8a-1111-2222-3333-444455556666");
  EXPECT_TRUE(results[0].unknown.contains("skipNodeOperations"));
  EXPECT_EQ(c->status.allocation->node_selector["nodeSelectorTerms"][0]["matchFields"][0]["values"][0],
            "node-1");
  EXPECT_EQ(c->status.reserved_for[0].name, "pod-a");
  ASSERT_EQ(c->status.devices.size(), 2u);
  EXPECT_EQ(c->status.devices[0].conditions[0].type, "Ready");
  EXPECT_EQ(c->status.devices[0].data["vendor"], "x");
  ASSERT_TRUE(c->status.devices[1].network_data.has_value());
  EXPECT_THAT(c->status.devices[1].network_data->ips, ElementsAre("10.6.0.10/24", "fd00:6::10/64"));
  EXPECT_EQ(c->status.devices[1].network_data->interface_name, "net1");
  EXPECT_EQ(c->status.devices[1].network_data->hardware_address, "aa:bb:cc:dd:ee:ff");
}

TEST(ResourceClaim, EncodesBackToTheSameJson) {
  Json in = J(kAllocatedClaim);
  auto c = DecodeResourceClaim(in);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Encode(*c), in) << base::DumpJsonPretty(Encode(*c));
}

TEST(ResourceClaim, ResultsAndConfigsOfOneDriver) {
  auto c = DecodeResourceClaim(J(kAllocatedClaim));
  ASSERT_TRUE(c.ok());
  auto ours = c->ResultsFor("netresources.spidernet.io");
  ASSERT_EQ(ours.size(), 1u);
  EXPECT_EQ(ours[0]->device, "eth1");
  EXPECT_TRUE(c->ResultsFor("other.example.com").empty());
  // Class config (no requests) first, then the claim's config for "macvlan".
  auto cfg = c->ConfigsFor("netresources.spidernet.io", "macvlan");
  ASSERT_EQ(cfg.size(), 2u);
  EXPECT_EQ(cfg[0]->source, "FromClass");
  EXPECT_EQ(cfg[1]->source, "FromClaim");
  // "gpu" in requests covers the subrequest "gpu/small".
  EXPECT_EQ(c->ConfigsFor("gpu.example.com", "gpu/small").size(), 1u);
  EXPECT_TRUE(c->ConfigsFor("gpu.example.com", "macvlan").empty());

  ResourceClaim unallocated;
  EXPECT_TRUE(unallocated.ResultsFor("netresources.spidernet.io").empty());
  EXPECT_TRUE(unallocated.ConfigsFor("netresources.spidernet.io", "x").empty());
}

TEST(ResourceClaim, AppliesToMatchesSubrequests) {
  DeviceAllocationConfiguration c;
  EXPECT_TRUE(c.AppliesTo("anything"));
  c.requests = {"a/x", "b"};
  EXPECT_TRUE(c.AppliesTo("a/x"));
  EXPECT_FALSE(c.AppliesTo("a/y"));
  EXPECT_FALSE(c.AppliesTo("a"));
  EXPECT_TRUE(c.AppliesTo("b"));
  EXPECT_TRUE(c.AppliesTo("b/z"));
  EXPECT_FALSE(c.AppliesTo("bb"));
}

TEST(ResourceClaim, V1beta1FlatRequestsMoveUnderExactly) {
  Json in = J(R"({
    "apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
    "metadata": {"name": "c", "namespace": "n"},
    "spec": {"devices": {"requests": [
      {"name": "nic", "deviceClassName": "netresources.spidernet.io", "allocationMode": "ExactCount",
       "count": 2, "adminAccess": false, "selectors": [{"cel": {"expression": "true"}}],
       "tolerations": [{"key": "k", "operator": "Exists"}]},
      {"name": "alt", "firstAvailable": [{"name": "one", "deviceClassName": "c1"}]}
    ]}},
    "status": {"allocation": {"devices": {"results": [
      {"request": "nic", "driver": "netresources.spidernet.io", "pool": "p", "device": "eth1"}]}}}
  })");
  auto c = DecodeResourceClaim(in);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->api_version, "resource.k8s.io/v1");
  const DeviceRequest& nic = c->spec.devices.requests[0];
  ASSERT_TRUE(nic.exactly.has_value());
  EXPECT_EQ(nic.exactly->device_class_name, "netresources.spidernet.io");
  EXPECT_EQ(nic.exactly->count, 2);
  EXPECT_EQ(nic.exactly->admin_access, false);
  EXPECT_EQ(nic.exactly->tolerations[0].op, "Exists");
  EXPECT_TRUE(nic.unknown.empty()) << nic.unknown;  // nothing left over
  const DeviceRequest& alt = c->spec.devices.requests[1];
  EXPECT_FALSE(alt.exactly.has_value());
  EXPECT_EQ(alt.first_available[0].device_class_name, "c1");
  EXPECT_EQ(c->ResultsFor("netresources.spidernet.io").size(), 1u);

  // v1beta2 already has the v1 shape.
  Json b2 = J(R"({"apiVersion": "resource.k8s.io/v1beta2", "kind": "ResourceClaim",
    "spec": {"devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "c"}}]}}})");
  auto c2 = DecodeResourceClaim(b2);
  ASSERT_TRUE(c2.ok()) << c2.status();
  EXPECT_EQ(c2->spec.devices.requests[0].exactly->device_class_name, "c");
  EXPECT_EQ(c2->api_version, "resource.k8s.io/v1");
}

TEST(ResourceClaim, TemplatesAndListsConvertToo) {
  Json t = J(R"({"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaimTemplate",
    "metadata": {"name": "t", "namespace": "n"},
    "spec": {"metadata": {"labels": {"a": "b"}},
             "spec": {"devices": {"requests": [{"name": "nic", "deviceClassName": "c"}],
                                  "config": [{"opaque": {"driver": "d", "parameters": {"k": "v"}}}]}}}})");
  auto tmpl = DecodeResourceClaimTemplate(t);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  EXPECT_EQ(tmpl->spec.metadata.labels.at("a"), "b");
  EXPECT_EQ(tmpl->spec.spec.devices.requests[0].exactly->device_class_name, "c");
  EXPECT_EQ(tmpl->spec.spec.devices.config[0].opaque->parameters["k"], "v");

  Json list = J(R"({"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaimList",
    "metadata": {"resourceVersion": "9"},
    "items": [{"metadata": {"name": "a"}, "spec": {"devices": {"requests": [{"name": "r", "deviceClassName": "c"}]}}}]})");
  ASSERT_TRUE(ConvertToV1(&list).ok());
  auto decoded = Decode<ResourceClaimList>(list);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->items[0].spec.devices.requests[0].exactly->device_class_name, "c");
  EXPECT_FALSE(list["items"][0].contains("kind"));
}

TEST(ResourceClaim, ErrorsNameTheField) {
  auto bad_version = DecodeResourceClaim(J(R"({"apiVersion": "resource.k8s.io/v9", "kind": "ResourceClaim"})"));
  ASSERT_FALSE(bad_version.ok());
  EXPECT_THAT(bad_version.status().message(), HasSubstr("unsupported version \"resource.k8s.io/v9\""));
  EXPECT_FALSE(DecodeResourceClaim(J("[]")).ok());

  auto bad = DecodeResourceClaim(J(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "status": {"allocation": {"devices": {"results": [{"request": "r", "driver": "d", "pool": "p"}],
                                          "config": [{"opaque": {"driver": "d", "parameters": 1}}]}},
               "devices": [{"driver": "d", "pool": "p", "device": "x", "networkData": {"ips": ["10.0.0.1/33"]}}]}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("status.allocation.devices.results[0].device: Required value"));
  EXPECT_THAT(bad.status().message(), HasSubstr("status.allocation.devices.config[0].source: Required value"));
  EXPECT_THAT(bad.status().message(), HasSubstr("status.devices[0].networkData.ips[0]"));
}

AllocatedDeviceStatus Entry(std::string driver, std::string device,
                            std::optional<std::string> share = std::nullopt) {
  AllocatedDeviceStatus e;
  e.driver = std::move(driver);
  e.pool = "p";
  e.device = std::move(device);
  e.share_id = std::move(share);
  return e;
}

TEST(DeviceStatus, UpsertAndRemoveByKey) {
  std::vector<AllocatedDeviceStatus> list = {Entry("other", "eth1"), Entry("ours", "eth1")};
  AllocatedDeviceStatus updated = Entry("ours", "eth1");
  updated.network_data = NetworkDeviceData{.interface_name = "net1"};
  EXPECT_TRUE(UpsertDeviceStatus(&list, updated));
  EXPECT_FALSE(UpsertDeviceStatus(&list, updated));  // identical: no change
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1].network_data->interface_name, "net1");
  EXPECT_FALSE(list[0].network_data.has_value());  // other driver's entry untouched
  // Unset and empty shareID are the same key; another shareID is another entry.
  EXPECT_TRUE(UpsertDeviceStatus(&list, Entry("ours", "eth1", "")));
  EXPECT_EQ(list.size(), 2u);
  EXPECT_TRUE(UpsertDeviceStatus(&list, Entry("ours", "eth1", "s-1")));
  EXPECT_EQ(list.size(), 3u);

  EXPECT_EQ(RemoveDeviceStatuses(&list, "ours",
                                 [](const AllocatedDeviceStatus& d) { return d.share_id == "s-1"; }),
            1u);
  EXPECT_EQ(RemoveDeviceStatuses(&list, "ours"), 1u);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].driver, "other");
  EXPECT_EQ(RemoveDeviceStatuses(&list, "ours"), 0u);
}

TEST(DeviceStatus, ValidateEnforcesTheServerLimits) {
  AllocatedDeviceStatus e = Entry("d", "eth1");
  e.network_data = NetworkDeviceData{.interface_name = "net1",
                                     .ips = {"10.0.0.5/24", "fd00::5/64"},
                                     .hardware_address = "aa:bb:cc:dd:ee:ff"};
  EXPECT_TRUE(ValidateDeviceStatus(e, "status.devices[0]").ok());

  e.network_data->ips = {"10.0.0.5", "10.0.0.6/24", "10.0.0.6/24"};
  e.network_data->interface_name = std::string(257, 'x');
  absl::Status s = ValidateDeviceStatus(e, "status.devices[0]");
  EXPECT_THAT(s.message(), HasSubstr("status.devices[0].networkData.ips[0]: Invalid value: \"10.0.0.5\""));
  EXPECT_THAT(s.message(), HasSubstr("status.devices[0].networkData.ips[2]: Duplicate value"));
  EXPECT_THAT(s.message(), HasSubstr("networkData.interfaceName: Too long"));
  e.network_data->ips.assign(17, "10.0.0.1/32");
  EXPECT_THAT(ValidateDeviceStatus(e, "x").message(), HasSubstr("x.networkData.ips: Too many: 17"));
  e.network_data.reset();
  e.conditions.resize(9);
  EXPECT_THAT(ValidateDeviceStatus(e, "x").message(), HasSubstr("x.conditions: Too many: 9"));
  EXPECT_THAT(ValidateDeviceStatus(AllocatedDeviceStatus{}, "x").message(),
              HasSubstr("x.driver: Required value"));
}

TEST(ResourceClaim, ResourceInfo) {
  EXPECT_EQ(ResourceClaim::Resource().ApiVersion(), "resource.k8s.io/v1");
  EXPECT_EQ(ResourceClaim::Resource().plural, "resourceclaims");
  EXPECT_TRUE(ResourceClaim::Resource().namespaced);
  EXPECT_TRUE(ResourceClaim::Resource().has_status);
  EXPECT_EQ(ResourceClaimTemplate::Resource().plural, "resourceclaimtemplates");
  EXPECT_FALSE(ResourceClaimTemplate::Resource().has_status);
}

}  // namespace
}  // namespace spiderpool::api::resource_v1
