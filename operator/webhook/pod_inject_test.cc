// The Pod resource-injection webhook: InjectPodResources directly, and the handler at
// /mutate--v1-pod through AdmissionServer::Handle (annotation on the pod or on its namespace,
// no match, sorting, resource limits added once).

#include "operator/webhook/pod_inject.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/admission.h"
#include "api/codec.h"
#include "api/spider.h"
#include "base/json.h"
#include "gtest/gtest.h"
#include "kube/webhook/server.h"
#include "operator/webhook/handlers.h"

namespace spiderpool::op::webhook {
namespace {

using base::Json;
namespace kw = ::spiderpool::kube::webhook;
using Smcs = std::vector<std::shared_ptr<const api::SpiderMultusConfig>>;

constexpr const char* kRdma = "cni.spidernet.io/rdma-resource-inject";
constexpr const char* kNet = "cni.spidernet.io/network-resource-inject";
constexpr const char* kNetworks = "k8s.v1.cni.cncf.io/networks";

std::shared_ptr<const api::SpiderMultusConfig> Smc(const std::string& ns, const std::string& name,
                                                   const std::string& label_key,
                                                   const std::string& label_value, Json spec) {
  Json j = {{"apiVersion", "spiderpool.spidernet.io/v2beta1"},
            {"kind", "SpiderMultusConfig"},
            {"metadata", {{"name", name}, {"namespace", ns},
                          {"labels", {{label_key, label_value}}}}},
            {"spec", spec}};
  auto t = api::Decode<api::SpiderMultusConfig>(j);
  EXPECT_TRUE(t.ok()) << t.status();
  return std::make_shared<const api::SpiderMultusConfig>(t.ok() ? *t : api::SpiderMultusConfig{});
}

Json Pools() { return {{"ipv4", {"v4-pool"}}}; }

Json Macvlan(const std::string& master, const std::string& rdma = "") {
  Json c = {{"master", {master}}, {"ippools", Pools()}};
  if (!rdma.empty()) c["rdmaResourceName"] = rdma;
  return {{"cniType", "macvlan"}, {"macvlan", c}};
}

Json Sriov(const std::string& resource) {
  return {{"cniType", "sriov"},
          {"sriov", {{"resourceName", resource}, {"ippools", Pools()}}}};
}

Json PodWith(Json annotations, Json containers = nullptr) {
  if (containers.is_null()) {
    containers = Json::array({{{"name", "a"}, {"image", "busybox"}},
                              {{"name", "b"}, {"image", "busybox"}}});
  }
  Json md = {{"name", "p1"}};
  if (!annotations.is_null()) md["annotations"] = annotations;
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", md},
          {"spec", {{"containers", containers}}}};
}

TEST(InjectPodResources, NoAnnotationLeavesThePodAlone) {
  Smcs smcs = {Smc("spiderpool", "a", kRdma, "gpu", Sriov("spidernet.io/gpu1"))};
  auto r = InjectPodResources(PodWith(nullptr), {}, smcs);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->has_value());
}

TEST(InjectPodResources, PodAnnotationSortedNetworksAndLimits) {
  Smcs smcs = {
      Smc("spiderpool", "gpu2", kRdma, "gpu", Sriov("spidernet.io/gpu2")),
      Smc("spiderpool", "gpu1", kRdma, "gpu", Sriov("spidernet.io/gpu1")),
      Smc("default", "gpu1b", kRdma, "gpu", Sriov("spidernet.io/gpu1")),
      Smc("spiderpool", "other", kRdma, "cpu", Sriov("spidernet.io/x")),
      Smc("spiderpool", "net", kNet, "gpu", Sriov("spidernet.io/y")),
  };
  auto r = InjectPodResources(PodWith({{kRdma, "gpu"}}), {}, smcs);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->has_value());
  const Json& pod = **r;
  // By resourceName, then "<ns>/<name>".
  EXPECT_EQ(pod["metadata"]["annotations"][kNetworks],
            "default/gpu1b,spiderpool/gpu1,spiderpool/gpu2");
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"],
            Json({{"spidernet.io/gpu1", "1"}, {"spidernet.io/gpu2", "1"}}));
  EXPECT_FALSE(pod["spec"]["containers"][1].contains("resources"));
}

TEST(InjectPodResources, SortsByMasterOrBondName) {
  Json bond = {{"cniType", "macvlan"},
               {"macvlan", {{"master", {"eth8", "eth9"}}, {"bond", {{"name", "bond0"}, {"mode", 1}}},
                            {"rdmaResourceName", "spidernet.io/b"}, {"ippools", Pools()}}}};
  Smcs smcs = {Smc("ns", "z", kNet, "v", Macvlan("eth1", "spidernet.io/e1")),
               Smc("ns", "y", kNet, "v", Macvlan("eth0", "spidernet.io/e0")),
               Smc("ns", "a", kNet, "v", bond)};
  auto r = InjectPodResources(PodWith({{kNet, "v"}}), {}, smcs);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((**r)["metadata"]["annotations"][kNetworks], "ns/a,ns/y,ns/z");
}

TEST(InjectPodResources, NamespaceAnnotation) {
  Smcs smcs = {Smc("spiderpool", "m", kNet, "blue", Macvlan("eth0", "spidernet.io/e0"))};
  auto r = InjectPodResources(PodWith(nullptr), {{kNet, "blue"}}, smcs);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((**r)["metadata"]["annotations"][kNetworks], "spiderpool/m");
}

TEST(InjectPodResources, PodAnnotationWinsOverNamespace) {
  Smcs smcs = {Smc("ns", "pod", kNet, "p", Macvlan("eth0", "spidernet.io/e0")),
               Smc("ns", "nsv", kNet, "n", Macvlan("eth0", "spidernet.io/e0"))};
  auto r = InjectPodResources(PodWith({{kNet, "p"}}), {{kNet, "n"}}, smcs);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((**r)["metadata"]["annotations"][kNetworks], "ns/pod");
}

TEST(InjectPodResources, NoMatchIsUpstreamsMessage) {
  Smcs smcs = {Smc("ns", "a", kRdma, "other", Sriov("spidernet.io/a"))};
  auto r = InjectPodResources(PodWith({{kRdma, "gpu"}}), {}, smcs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "no spidermultusconfigs with annotation: cni.spidernet.io/rdma-resource-inject:gpu "
            "found");
}

TEST(InjectPodResources, ExistingLimitIsNotDuplicated) {
  Json containers = Json::array(
      {{{"name", "a"}, {"image", "x"}},
       {{"name", "b"}, {"image", "x"},
        {"resources", {{"limits", {{"spidernet.io/gpu1", "2"}}}}}}});
  Smcs smcs = {Smc("ns", "a", kRdma, "gpu", Sriov("spidernet.io/gpu1")),
               Smc("ns", "b", kRdma, "gpu", Sriov("spidernet.io/gpu2"))};
  auto r = InjectPodResources(PodWith({{kRdma, "gpu"}}, containers), {}, smcs);
  ASSERT_TRUE(r.ok()) << r.status();
  const Json& pod = **r;
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"],
            Json({{"spidernet.io/gpu2", "1"}}));
  EXPECT_EQ(pod["spec"]["containers"][1]["resources"]["limits"],
            Json({{"spidernet.io/gpu1", "2"}}));
}

TEST(InjectPodResources, SmcWithoutResourceIsRefused) {
  Smcs smcs = {Smc("ns", "m", kNet, "v", Macvlan("eth0"))};
  auto r = InjectPodResources(PodWith({{kNet, "v"}}), {}, smcs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "SpiderMultusConfig ns/m: no resource name to inject for cniType macvlan");
}

TEST(InjectPodResources, UnsupportedCniType) {
  Smcs smcs = {Smc("ns", "o", kNet, "v",
                   {{"cniType", "ovs"}, {"ovs", {{"bridge", "br0"}, {"ippools", Pools()}}}})};
  auto r = InjectPodResources(PodWith({{kNet, "v"}}), {}, smcs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "RDMA resource injection does not support cniType: ovs");
}

// ---- the handler ---------------------------------------------------------------------------

struct Answer {
  Json response;
  Json patched;
};

Answer CallPod(const kw::AdmissionServer& s, const std::string& ns, Json pod,
               const std::string& op = "CREATE") {
  Json req = {{"uid", "uid-1"},
              {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
              {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
              {"namespace", ns},
              {"operation", op},
              {"userInfo", {{"username", "admin"}}},
              {"object", pod}};
  Json review = {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"},
                 {"request", req}};
  kw::HttpReply r = s.Handle({.path = std::string(kPodMutatePath),
                              .body = base::DumpJson(review)});
  EXPECT_EQ(r.status, 200) << r.body;
  Answer a;
  auto body = base::ParseJson(r.body);
  if (!body.ok()) return a;
  a.response = (*body)["response"];
  a.patched = pod;
  if (a.response.contains("patch")) {
    auto resp = api::Decode<api::AdmissionResponse>(a.response);
    EXPECT_TRUE(resp.ok());
    auto patch = api::ResponsePatch(*resp);
    EXPECT_TRUE(patch.ok());
    auto applied = base::ApplyJsonPatch(pod, *patch);
    EXPECT_TRUE(applied.ok()) << applied.status();
    if (applied.ok()) a.patched = *applied;
  }
  return a;
}

class PodHandlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HandlerOptions o;
    o.enable_pod_resource_inject = true;
    o.sources.multus_configs = [this]() -> absl::StatusOr<Smcs> { return smcs_; };
    o.sources.namespace_annotations =
        [this](const std::string& ns) -> absl::StatusOr<std::map<std::string, std::string>> {
      auto it = ns_annotations_.find(ns);
      if (it == ns_annotations_.end()) return std::map<std::string, std::string>();
      return it->second;
    };
    RegisterHandlers(&server_, o);
  }
  kw::AdmissionServer server_{kw::ServerOptions{}};
  Smcs smcs_;
  std::map<std::string, std::map<std::string, std::string>> ns_annotations_;
};

TEST_F(PodHandlerTest, PatchesNetworksAndLimits) {
  smcs_ = {Smc("spiderpool", "gpu1", kRdma, "gpu", Sriov("spidernet.io/gpu1"))};
  Answer a = CallPod(server_, "default", PodWith({{kRdma, "gpu"}}));
  EXPECT_TRUE(a.response.value("allowed", false)) << a.response;
  EXPECT_EQ(a.patched["metadata"]["annotations"][kNetworks], "spiderpool/gpu1");
  EXPECT_EQ(a.patched["spec"]["containers"][0]["resources"]["limits"]["spidernet.io/gpu1"], "1");
}

TEST_F(PodHandlerTest, NamespaceAnnotationThroughTheSource) {
  smcs_ = {Smc("spiderpool", "m", kNet, "blue", Macvlan("eth0", "spidernet.io/e0"))};
  ns_annotations_["team"] = {{kNet, "blue"}};
  Answer a = CallPod(server_, "team", PodWith(nullptr));
  EXPECT_TRUE(a.response.value("allowed", false)) << a.response;
  EXPECT_EQ(a.patched["metadata"]["annotations"][kNetworks], "spiderpool/m");
  Answer other = CallPod(server_, "default", PodWith(nullptr));
  EXPECT_TRUE(other.response.value("allowed", false));
  EXPECT_FALSE(other.response.contains("patch"));
}

TEST_F(PodHandlerTest, NoMatchIsDenied) {
  Answer a = CallPod(server_, "default", PodWith({{kNet, "nothing"}}));
  EXPECT_FALSE(a.response.value("allowed", true));
  EXPECT_EQ(a.response["status"].value("code", 0), 403);
  EXPECT_EQ(a.response["status"].value("message", ""),
            "no spidermultusconfigs with annotation: cni.spidernet.io/network-resource-inject:"
            "nothing found");
}

TEST_F(PodHandlerTest, UpdateIsNotMutated) {
  smcs_ = {Smc("spiderpool", "gpu1", kRdma, "gpu", Sriov("spidernet.io/gpu1"))};
  Answer a = CallPod(server_, "default", PodWith({{kRdma, "gpu"}}), "UPDATE");
  EXPECT_TRUE(a.response.value("allowed", false));
  EXPECT_FALSE(a.response.contains("patch"));
}

}  // namespace
}  // namespace spiderpool::op::webhook
