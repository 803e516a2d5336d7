#include "operator/coordinator/cidrs.h"

#include <gtest/gtest.h>

namespace spiderpool::op::coordinator {
namespace {

using base::Json;
using Strings = std::vector<std::string>;

api::Pod PodWith(Strings command, Strings args = {}) {
  api::Pod pod;
  api::Container c;
  c.name = "main";
  c.command = std::move(command);
  c.args = std::move(args);
  pod.spec.containers.push_back(std::move(c));
  return pod;
}

TEST(ParseCIDRList, CommaAndSpaceSeparatedValidOnlyNoDuplicates) {
  EXPECT_EQ(ParseCIDRList("10.244.0.0/16,fd00:10:244::/56"),
            (Strings{"10.244.0.0/16", "fd00:10:244::/56"}));
  EXPECT_EQ(ParseCIDRList(" 10.0.0.0/8  bogus, 10.0.0.0/8 ,192.168.0.0/16 "),
            (Strings{"10.0.0.0/8", "192.168.0.0/16"}));
  EXPECT_TRUE((ParseCIDRList("")).empty());
  EXPECT_TRUE((ParseCIDRList("10.0.0.1")).empty());  // an IP, not a CIDR
}

TEST(FlagCIDRs, EqualsFormInCommandOrArgs) {
  auto kcm = PodWith({"kube-controller-manager", "--allocate-node-cidrs=true",
                      "--cluster-cidr=10.244.0.0/16,fd00::/56"});
  EXPECT_EQ(FlagCIDRs(kcm, "cluster-cidr"), (Strings{"10.244.0.0/16", "fd00::/56"}));
  auto args = PodWith({"kube-apiserver"}, {"--service-cluster-ip-range=10.96.0.0/12"});
  EXPECT_EQ(FlagCIDRs(args, "service-cluster-ip-range"), (Strings{"10.96.0.0/12"}));
}

TEST(FlagCIDRs, SeparateValueAndShellString) {
  EXPECT_EQ(FlagCIDRs(PodWith({"kcm", "--cluster-cidr", "10.1.0.0/16"}), "cluster-cidr"),
            (Strings{"10.1.0.0/16"}));
  EXPECT_EQ(
      FlagCIDRs(PodWith({"/bin/sh", "-c",
                         "exec kube-apiserver --v=2 --service-cluster-ip-range=\"10.2.0.0/16\""}),
                "service-cluster-ip-range"),
      (Strings{"10.2.0.0/16"}));
}

TEST(FlagCIDRs, AbsentOrEmpty) {
  EXPECT_FALSE(
      FlagCIDRs(PodWith({"kcm", "--cluster-cidr-extra=1.0.0.0/8"}), "cluster-cidr").has_value());
  auto empty = FlagCIDRs(PodWith({"kcm", "--cluster-cidr="}), "cluster-cidr");
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE((*empty).empty());
  EXPECT_FALSE(FlagCIDRs(api::Pod{}, "cluster-cidr").has_value());
}

TEST(KubeadmNetworkingCIDRs, ReadsClusterConfiguration) {
  api::ConfigMap cm;
  cm.data["ClusterConfiguration"] =
      "apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nnetworking:\n"
      "  dnsDomain: cluster.local\n  podSubnet: 10.244.0.0/16,fd00:10:244::/56\n"
      "  serviceSubnet: 10.96.0.0/12\n";
  EXPECT_EQ(KubeadmNetworkingCIDRs(cm, "podSubnet"),
            (Strings{"10.244.0.0/16", "fd00:10:244::/56"}));
  EXPECT_EQ(KubeadmNetworkingCIDRs(cm, "serviceSubnet"), (Strings{"10.96.0.0/12"}));
  EXPECT_FALSE(KubeadmNetworkingCIDRs(cm, "nope").has_value());
  cm.data["ClusterConfiguration"] = "networking: [unterminated";
  EXPECT_FALSE(KubeadmNetworkingCIDRs(cm, "podSubnet").has_value());
  cm.data["ClusterConfiguration"] = "networking:\n  podSubnet: 5\n";
  EXPECT_FALSE(KubeadmNetworkingCIDRs(cm, "podSubnet").has_value());
  EXPECT_FALSE(KubeadmNetworkingCIDRs(api::ConfigMap{}, "podSubnet").has_value());
}

TEST(CiliumClusterPoolCIDRs, BothFamiliesAndInvalidEntries) {
  api::ConfigMap cm;
  cm.data["cluster-pool-ipv4-cidr"] = "10.0.0.0/8 172.16.0.0/12";
  cm.data["cluster-pool-ipv6-cidr"] = "fd00::/104";
  CiliumConfigCIDRs got = CiliumClusterPoolCIDRs(cm);
  EXPECT_EQ(got.ipam_mode, "");
  EXPECT_EQ(got.cidrs, (Strings{"10.0.0.0/8", "172.16.0.0/12", "fd00::/104"}));
  EXPECT_TRUE((got.invalid).empty());
  cm.data["ipam"] = "multi-pool";
  cm.data["cluster-pool-ipv6-cidr"] = "nonsense";
  got = CiliumClusterPoolCIDRs(cm);
  EXPECT_EQ(got.ipam_mode, "multi-pool");
  EXPECT_EQ(got.invalid, Strings{"nonsense"});
  EXPECT_TRUE(CiliumUsesClusterPool(""));
  EXPECT_TRUE(CiliumUsesClusterPool("cluster-pool"));
  EXPECT_FALSE(CiliumUsesClusterPool("multi-pool"));
}

TEST(CalicoPoolCIDRs, SkipsDisabledDeletingAndMalformed) {
  Json list = {
      {"items",
       {{{"metadata", {{"name", "a"}}}, {"spec", {{"cidr", "10.244.0.0/16"}}}},
        {{"metadata", {{"name", "b"}}}, {"spec", {{"cidr", "10.245.0.0/16"}, {"disabled", true}}}},
        {{"metadata", {{"name", "c"}, {"deletionTimestamp", "2026-01-01T00:00:00Z"}}},
         {"spec", {{"cidr", "10.246.0.0/16"}}}},
        {{"metadata", {{"name", "d"}}}, {"spec", {{"cidr", 7}}}},
        {{"metadata", {{"name", "e"}}}, {"spec", {{"cidr", "fd00::/48"}, {"disabled", false}}}},
        "not an object"}}};
  EXPECT_EQ(CalicoPoolCIDRs(list), (Strings{"10.244.0.0/16", "fd00::/48"}));
  EXPECT_TRUE(HasLiveItems(list));
  EXPECT_FALSE(HasLiveItems(Json{{"items", Json::array()}}));
  EXPECT_FALSE(HasLiveItems(Json("garbage")));
  EXPECT_TRUE((CalicoPoolCIDRs(Json(nullptr))).empty());
}

TEST(ServiceCIDRObjectCIDRs, AllObjectsInOrder) {
  Json list = {{"items",
                {{{"metadata", {{"name", "kubernetes"}}},
                  {"spec", {{"cidrs", {"10.96.0.0/12", "fd00:96::/112"}}}}},
                 {{"metadata", {{"name", "extra"}}},
                  {"spec", {{"cidrs", {"10.100.0.0/16", 3, "10.96.0.0/12"}}}}}}}};
  EXPECT_EQ(ServiceCIDRObjectCIDRs(list),
            (Strings{"10.96.0.0/12", "fd00:96::/112", "10.100.0.0/16"}));
}

}  // namespace
}  // namespace spiderpool::op::coordinator
