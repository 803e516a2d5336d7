#include "ipam/annotations.h"

#include "gtest/gtest.h"

namespace spiderpool::ipam {
namespace {

std::string Err(const absl::Status& s) { return std::string(s.message()); }

TEST(Annotations, PodIPPool) {
  auto a = ParsePodIPPoolAnnotation(R"({"ipv4":["p1","p2"],"ipv6":["q"],"other":1})");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->ipv4, (std::vector<std::string>{"p1", "p2"}));
  EXPECT_EQ(a->ipv6, (std::vector<std::string>{"q"}));
  // Go matches keys case-insensitively.
  auto b = ParsePodIPPoolAnnotation(R"({"IPv4":["p1"]})");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->ipv4, (std::vector<std::string>{"p1"}));
  EXPECT_TRUE(ParsePodIPPoolAnnotation("null")->ipv4.empty());
  EXPECT_EQ(Err(ParsePodIPPoolAnnotation(R"({"ipv4":"p1"})").status()),
            "wrong input, invalid format of Pod annotation 'ipam.spidernet.io/ippool': json: "
            "cannot unmarshal string into Go struct field AnnoPodIPPoolValue.ipv4 of type []string");
  EXPECT_EQ(Err(ParsePodIPPoolAnnotation(R"([1])").status()),
            "wrong input, invalid format of Pod annotation 'ipam.spidernet.io/ippool': json: "
            "cannot unmarshal array into Go value of type types.AnnoPodIPPoolValue");
  auto bad = ParsePodIPPoolAnnotation("{");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Err(bad.status()).rfind("wrong input, invalid format of Pod annotation "
                                    "'ipam.spidernet.io/ippool': ", 0),
            0u);
}

TEST(Annotations, PodIPPoolsAndMultiNIC) {
  auto items = ParsePodIPPoolsAnnotation(
      R"([{"interface":"eth0","ipv4":["a"],"cleangateway":false},)"
      R"({"interface":"net1","ipv6":["b"],"cleangateway":true}])");
  ASSERT_TRUE(items.ok()) << items.status();
  ASSERT_EQ(items->size(), 2u);
  EXPECT_EQ((*items)[1].interface_, "net1");
  EXPECT_TRUE((*items)[1].clean_gateway);
  EXPECT_TRUE(ValidateAndMutateMultiNIC(*items, "net1").ok());
  EXPECT_EQ(Err(ValidateAndMutateMultiNIC(*items, "net2")), "interface net2 must be specified");

  std::vector<AnnoIPPoolItem> mixed = {{.interface_ = "eth0"}, {}};
  EXPECT_EQ(Err(ValidateAndMutateMultiNIC(mixed, "eth0")),
            "NIC should be either all specified or all unspecified");
  std::vector<AnnoIPPoolItem> dup = {{.interface_ = "eth0"}, {.interface_ = "eth0"}};
  EXPECT_EQ(Err(ValidateAndMutateMultiNIC(dup, "eth0")), "duplicate interface eth0");
  std::vector<AnnoIPPoolItem> none;
  EXPECT_EQ(Err(ValidateAndMutateMultiNIC(none, "eth0")), "value requires at least one item");
  std::vector<AnnoIPPoolItem> unnamed = {{.ipv4 = {"a"}}, {.ipv4 = {"b"}}, {.ipv4 = {"c"}}};
  ASSERT_TRUE(ValidateAndMutateMultiNIC(unnamed, "whatever").ok());
  EXPECT_EQ(unnamed[0].interface_, "0");
  EXPECT_EQ(unnamed[2].interface_, "2");

  EXPECT_TRUE(IsMultipleNicWithNoName({{"ipam.spidernet.io/ippools", R"([{"ipv4":["a"]}])"}}));
  EXPECT_FALSE(IsMultipleNicWithNoName(
      {{"ipam.spidernet.io/ippools", R"([{"interface":"eth0","ipv4":["a"]}])"}}));
  EXPECT_FALSE(IsMultipleNicWithNoName({{"ipam.spidernet.io/ippools", "[]"}}));
  EXPECT_FALSE(IsMultipleNicWithNoName({}));
  EXPECT_EQ(Err(ParsePodIPPoolsAnnotation(R"([{"cleangateway":"yes"}])").status()),
            "wrong input, invalid format of Pod annotation 'ipam.spidernet.io/ippools': json: "
            "cannot unmarshal string into Go struct field AnnoIPPoolItem.cleangateway of type bool");
}

TEST(Annotations, Routes) {
  auto r = ParsePodRoutesAnnotation({{"ipam.spidernet.io/routes",
                                      R"([{"dst":"10.1.0.0/16","gw":"10.0.0.1"},)"
                                      R"({"dst":"fd01::/64","gw":"fd00::1"}])"}});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[1].dst, "fd01::/64");
  EXPECT_TRUE(ParsePodRoutesAnnotation({})->empty());
  EXPECT_EQ(Err(ParsePodRoutesAnnotation(
                    {{"ipam.spidernet.io/routes", R"([{"dst":"10.1.0.0/16","gw":"fd00::1"}])"}})
                    .status()),
            "wrong input, invalid format of Pod annotation 'ipam.spidernet.io/routes': invalid "
            "route format 'dst: 10.1.0.0/16, gw: fd00::1'");
  EXPECT_FALSE(ParsePodRoutesAnnotation({{"ipam.spidernet.io/routes", R"({"dst":"x"})"}}).ok());
}

TEST(Annotations, NamespaceDefaults) {
  auto d = ParseNamespaceDefaultPools({{"ipam.spidernet.io/default-ipv4-ippool", R"(["a","b*"])"},
                                       {"ipam.spidernet.io/default-ipv6-ippool", "[]"}});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->ipv4, (std::vector<std::string>{"a", "b*"}));
  EXPECT_TRUE(d->ipv6.empty());
  EXPECT_EQ(Err(ParseNamespaceDefaultPools({{"ipam.spidernet.io/default-ipv6-ippool", "\"a\""}})
                    .status()),
            "invalid format of Namespace annotation 'ipam.spidernet.io/default-ipv6-ippool': "
            "json: cannot unmarshal string into Go value of type types.AnnoNSDefautlV4PoolValue");
}

TEST(Annotations, Subnet) {
  auto none = ParseSubnetAnnotation({}, 1);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  auto single = ParseSubnetAnnotation(
      {{"ipam.spidernet.io/subnet", R"({"ipv4":["s4","s4b"],"ipv6":["s6"]})"}}, 2);
  ASSERT_TRUE(single.ok()) << single.status();
  ASSERT_TRUE((*single)->single.has_value());
  EXPECT_EQ((*single)->single->interface_, "eth0");
  EXPECT_EQ((*single)->single->ipv4, (std::vector<std::string>{"s4"}));  // first only
  EXPECT_EQ((*single)->flexible_ip_number, 2);
  EXPECT_TRUE((*single)->reclaim_ip_pool);

  // subnets wins over subnet; ip number and reclaim.
  auto multi = ParseSubnetAnnotation(
      {{"ipam.spidernet.io/subnets",
        R"([{"interface":"eth0","ipv4":["a"]},{"interface":"net1","ipv4":["b"]}])"},
       {"ipam.spidernet.io/subnet", R"({"ipv4":["zzz"]})"},
       {"ipam.spidernet.io/ippool-ip-number", "5"},
       {"ipam.spidernet.io/ippool-reclaim", "false"}},
      1);
  ASSERT_TRUE(multi.ok()) << multi.status();
  EXPECT_EQ((*multi)->multiple.size(), 2u);
  EXPECT_FALSE((*multi)->flexible_ip_number.has_value());
  EXPECT_EQ((*multi)->assign_ip_number, 5);
  EXPECT_FALSE((*multi)->reclaim_ip_pool);

  auto err = [](Annotations a) { return Err(ParseSubnetAnnotation(a, 1).status()); };
  EXPECT_EQ(err({{"ipam.spidernet.io/subnets",
                  R"([{"interface":"eth0","ipv4":["a"]},{"interface":"eth0","ipv4":["b"]}])"}}),
            "it's invalid to use the same Interface name for multiple interfaces: "
            R"([{"interface":"eth0","ipv4":["a"]},{"interface":"eth0","ipv4":["b"]}])");
  EXPECT_EQ(err({{"ipam.spidernet.io/subnets",
                  R"([{"interface":"eth0","ipv4":["a"]},{"interface":"net1","ipv4":["a"]}])"}}),
            "it's invalid to use the same subnet for multiple interfaces: "
            R"([{"interface":"eth0","ipv4":["a"]},{"interface":"net1","ipv4":["a"]}])");
  EXPECT_EQ(err({{"ipam.spidernet.io/subnets", R"([{"interface":"eth0","ipv4":[""]}])"}}),
            "it's invalid to set an empty IPv4 subnet with mutilple interfaces");
  EXPECT_EQ(err({{"ipam.spidernet.io/subnet", R"({"interface":"eth0"})"}}),
            R"(it's invalid to set dual empty subnet with single interface: {"interface":"eth0"})");
  EXPECT_EQ(err({{"ipam.spidernet.io/subnets", "[]"}}), "no subnets specified: []");
  EXPECT_EQ(err({{"ipam.spidernet.io/subnet", "{"}}).rfind(
                "failed to parse anntation 'ipam.spidernet.io/subnet' value '{', error: ", 0),
            0u);
  EXPECT_EQ(err({{"ipam.spidernet.io/subnet", R"({"ipv4":["a"]})"},
                 {"ipam.spidernet.io/ippool-ip-number", "-1"}}),
            "subnet 'ipam.spidernet.io/ippool-ip-number' value must equal or greater than 0");
  EXPECT_EQ(err({{"ipam.spidernet.io/subnet", R"({"ipv4":["a"]})"},
                 {"ipam.spidernet.io/ippool-reclaim", "nope"}}),
            "failed to parse spider subnet 'ipam.spidernet.io/ippool-reclaim', error: "
            "strconv.ParseBool: parsing \"nope\": invalid syntax");
}

TEST(Annotations, PoolIPNumber) {
  EXPECT_EQ(*ParsePoolIPNumber("3"), (std::pair<bool, int64_t>{false, 3}));
  EXPECT_EQ(*ParsePoolIPNumber("+2"), (std::pair<bool, int64_t>{true, 2}));
  EXPECT_EQ(Err(ParsePoolIPNumber("++2").status()), "invalid input '++2'");
  EXPECT_EQ(Err(ParsePoolIPNumber("+x").status()),
            "invalid input '+x': strconv.Atoi: parsing \"x\": invalid syntax");
  EXPECT_EQ(Err(ParsePoolIPNumber("99999999999999999999").status()),
            "invalid input '99999999999999999999': strconv.Atoi: parsing "
            "\"99999999999999999999\": value out of range");
  EXPECT_EQ(ParsePoolIPNumber("-4")->second, -4);
}

TEST(Annotations, Networks) {
  auto comma = ParseNetworksAnnotation("macvlan-a, other/mv-b@net7 ,mv-c", "pod-ns");
  ASSERT_TRUE(comma.ok()) << comma.status();
  ASSERT_EQ(comma->size(), 3u);
  EXPECT_EQ((*comma)[0].namespace_, "pod-ns");
  EXPECT_EQ((*comma)[1].namespace_, "other");
  EXPECT_EQ((*comma)[1].name, "mv-b");
  EXPECT_EQ((*comma)[1].interface_, "net7");
  auto js = ParseNetworksAnnotation(
      R"([{"name":"mv","namespace":"kube-system","interface":"eth1","mac":"02:00:00:00:00:01"}])",
      "pod-ns");
  ASSERT_TRUE(js.ok()) << js.status();
  EXPECT_EQ((*js)[0].interface_, "eth1");
  EXPECT_EQ(Err(ParseNetworksAnnotation("", "ns").status()), "parsePodNetworkAnnotation: , ns");
  EXPECT_EQ(Err(ParseNetworksAnnotation("a/b/c", "ns").status()),
            "parsePodNetworkAnnotation: parsePodNetworkObjectName: Invalid network object "
            "(failed at '/')");
  EXPECT_EQ(Err(ParseNetworksAnnotation("Bad_Name", "ns").status()),
            "parsePodNetworkAnnotation: parsePodNetworkObjectName: Failed to parse: one or more "
            "items did not match comma-delimited format (must consist of lower case alphanumeric "
            "characters). Must start and end with an alphanumeric character), mismatch @ "
            "'Bad_Name'");
  EXPECT_EQ(Err(ParseNetworksAnnotation(R"([{"name":"a","mac":"zz"}])", "ns").status()),
            "parsePodNetworkAnnotation: failed to mac: address zz: invalid MAC address");
  EXPECT_FALSE(ParseNetworksAnnotation(R"([{"name":1}])", "ns").ok());
}

TEST(Annotations, NetworkForNIC) {
  const Annotations annos = {{"v1.multus-cni.io/default-network", "mv-default"},
                             {"k8s.v1.cni.cncf.io/networks", "mv-a, x/mv-b@eth9"}};
  EXPECT_EQ(*NetworkForNIC(annos, "pns", "eth0", std::nullopt, "kube-system"),
            "kube-system/mv-default");
  EXPECT_EQ(*NetworkForNIC(annos, "pns", "0", std::nullopt, "kube-system"),
            "kube-system/mv-default");
  EXPECT_EQ(*NetworkForNIC(annos, "pns", "net1", std::nullopt, "kube-system"), "pns/mv-a");
  EXPECT_EQ(*NetworkForNIC(annos, "pns", "eth9", std::nullopt, "kube-system"), "x/mv-b");
  EXPECT_EQ(*NetworkForNIC(annos, "pns", "2", std::nullopt, "kube-system"), "x/mv-b");
  EXPECT_EQ(Err(NetworkForNIC(annos, "pns", "net5", std::nullopt, "kube-system").status()),
            "unknown: no matched multus object for NIC 'net5'. The multus network-attachments: "
            "mv-a, x/mv-b@eth9");
  // eth0 without the default-network annotation: the cluster network, or an error.
  EXPECT_EQ(*NetworkForNIC({}, "pns", "eth0", std::string("ns1/cluster"), "kube-system"),
            "ns1/cluster");
  auto unset = NetworkForNIC({}, "pns", "eth0", std::nullopt, "kube-system");
  EXPECT_EQ(unset.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Err(unset.status()), "cluster-network multus isn't set");
  EXPECT_EQ(Err(NetworkForNIC({}, "pns", "net1", std::nullopt, "kube-system").status()),
            "failed to parse pod network annotation: parsePodNetworkAnnotation: , pns");
}

}  // namespace
}  // namespace spiderpool::ipam
