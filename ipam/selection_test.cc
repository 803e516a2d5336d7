#include "ipam/selection.h"

#include <memory>

#include "api/spider.h"
#include "gtest/gtest.h"

namespace spiderpool::ipam {
namespace {

using Strings = std::vector<std::string>;

std::string Err(const absl::Status& s) { return std::string(s.message()); }

class SelectionTest : public ::testing::Test {
 protected:
  SelectionTest() {
    req_.pod.namespace_ = "default";
    req_.pod.name = "web-1";
    req_.pod.uid = "pod-uid";
    req_.pod.labels = {{"app", "web"}};
    req_.pod.owner = {.api_version = "apps/v1", .kind = "Deployment", .namespace_ = "default",
                      .name = "web", .uid = "aaaa-bbbb-cccc-dddd-123456789abc"};
    req_.namespace_.labels = {{"team", "a"}};
    req_.node = {.name = "node1", .labels = {{"zone", "z1"}}};
    req_.if_name = "eth0";
    cfg_.enable_ipv4 = true;
    cfg_.enable_ipv6 = true;
  }

  api::SpiderIPPool& Add(std::string name, int version = 4) {
    auto p = std::make_unique<api::SpiderIPPool>();
    p->metadata.name = std::move(name);
    p->spec.ip_version = version;
    p->spec.subnet = version == 4 ? "10.0.0.0/24" : "fd00::/64";
    p->spec.ips = {version == 4 ? "10.0.0.1-10.0.0.100" : "fd00::1-fd00::100"};
    storage_.push_back(std::move(p));
    return *storage_.back();
  }
  std::vector<const api::SpiderIPPool*> Pools() const {
    std::vector<const api::SpiderIPPool*> out;
    for (const auto& p : storage_) out.push_back(p.get());
    return out;
  }
  absl::StatusOr<Selection> Select() { return SelectPools(req_, cfg_, Pools()); }
  Selection MustSelect() {
    auto s = Select();
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : Selection{};
  }

  SelectionRequest req_;
  SelectionConfig cfg_;
  std::vector<std::unique_ptr<api::SpiderIPPool>> storage_;
};

// ---- Rules ----------------------------------------------------------------------------------

TEST_F(SelectionTest, Rule6ClusterDefaultPools) {
  Add("d4").spec.default_ = true;
  Add("d6", 6).spec.default_ = true;
  Add("other");
  Selection s = MustSelect();
  EXPECT_EQ(s.rule, SelectionRule::kClusterDefault);
  ASSERT_EQ(s.nics.size(), 1u);
  EXPECT_EQ(s.nics[0].if_name, "eth0");
  EXPECT_EQ(s.nics[0].ipv4_pools, Strings{"d4"});
  EXPECT_EQ(s.nics[0].ipv6_pools, Strings{"d6"});
  EXPECT_FALSE(s.nics[0].clean_gateway);
}

TEST_F(SelectionTest, Rule6NoPoolsAtAll) {
  Add("plain");
  auto s = Select();
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Err(s.status()), "no IPPool available, no pool selection rules of any type are specified");
}

TEST_F(SelectionTest, Rule5CNIDefaultsBeatClusterDefaults) {
  Add("d4").spec.default_ = true;
  Add("cni4");
  Add("cni6", 6);
  req_.default_ipv4_pools = {"cni4"};
  req_.default_ipv6_pools = {"cni6"};
  req_.clean_gateway = true;
  Selection s = MustSelect();
  EXPECT_EQ(s.rule, SelectionRule::kCNIDefault);
  EXPECT_EQ(s.nics[0].ipv4_pools, Strings{"cni4"});
  EXPECT_EQ(s.nics[0].ipv6_pools, Strings{"cni6"});
  EXPECT_TRUE(s.nics[0].clean_gateway);
}

TEST_F(SelectionTest, Rule4NamespaceBeatsCNI) {
  Add("cni4");
  Add("ns4");
  req_.default_ipv4_pools = {"cni4"};
  req_.namespace_.annotations = {{"ipam.spidernet.io/default-ipv4-ippool", R"(["ns4"])"}};
  Selection s = MustSelect();
  EXPECT_EQ(s.rule, SelectionRule::kNamespaceDefault);
  EXPECT_EQ(s.nics[0].ipv4_pools, Strings{"ns4"});
  EXPECT_TRUE(s.nics[0].ipv6_pools.empty());  // a NIC may get one family only
  // An empty namespace annotation falls through to the next rule.
  req_.namespace_.annotations = {{"ipam.spidernet.io/default-ipv4-ippool", "[]"}};
  EXPECT_EQ(MustSelect().rule, SelectionRule::kCNIDefault);
}

TEST_F(SelectionTest, Rule3PodIPPoolBeatsNamespace) {
  Add("ns4");
  Add("pod4");
  req_.namespace_.annotations = {{"ipam.spidernet.io/default-ipv4-ippool", R"(["ns4"])"}};
  req_.pod.annotations = {{"ipam.spidernet.io/ippool", R"({"ipv4":["pod4"]})"}};
  Selection s = MustSelect();
  EXPECT_EQ(s.rule, SelectionRule::kPodIPPoolAnnotation);
  EXPECT_EQ(s.nics[0].ipv4_pools, Strings{"pod4"});
  req_.pod.annotations = {{"ipam.spidernet.io/ippool", R"({"ipv4":"pod4"})"}};
  EXPECT_EQ(Err(Select().status()),
            "wrong input, invalid format of Pod annotation 'ipam.spidernet.io/ippool': json: "
            "cannot unmarshal string into Go struct field AnnoPodIPPoolValue.ipv4 of type []string");
}

TEST_F(SelectionTest, Rule2PodIPPoolsMultiNIC) {
  Add("a4");
  Add("b4");
  Add("b6", 6);
  req_.pod.annotations = {
      {"ipam.spidernet.io/ippool", R"({"ipv4":["a4"]})"},
      {"ipam.spidernet.io/ippools",
       R"([{"interface":"eth0","ipv4":["a4"]},{"interface":"net1","ipv4":["b4"],"ipv6":["b6"],"cleangateway":true}])"}};
  Selection s = MustSelect();
  EXPECT_EQ(s.rule, SelectionRule::kPodIPPoolsAnnotation);
  EXPECT_FALSE(s.multiple_nic_no_name);
  ASSERT_EQ(s.nics.size(), 2u);
  EXPECT_EQ(s.nics[0].if_name, "eth0");
  EXPECT_EQ(s.nics[1].if_name, "net1");
  EXPECT_EQ(s.nics[1].ipv6_pools, Strings{"b6"});
  EXPECT_TRUE(s.nics[1].clean_gateway);
  EXPECT_FALSE(s.nics[0].clean_gateway);

  req_.if_name = "net2";
  EXPECT_EQ(Err(Select().status()),
            "wrong input, invalid format of Pod annotation 'ipam.spidernet.io/ippools': "
            "interface net2 must be specified");
  req_.pod.annotations["ipam.spidernet.io/ippools"] =
      R"([{"interface":"eth0","ipv4":["a4"]},{"ipv4":["b4"]}])";
  EXPECT_EQ(Err(Select().status()),
            "wrong input, invalid format of Pod annotation 'ipam.spidernet.io/ippools': "
            "NIC should be either all specified or all unspecified");
}

TEST_F(SelectionTest, Rule2WithoutNames) {
  Add("a4");
  Add("b4");
  req_.pod.annotations = {{"ipam.spidernet.io/ippools", R"([{"ipv4":["a4"]},{"ipv4":["b4"]}])"}};
  Selection s = MustSelect();
  EXPECT_TRUE(s.multiple_nic_no_name);
  ASSERT_EQ(s.nics.size(), 2u);
  EXPECT_EQ(s.nics[0].if_name, "0");
  EXPECT_EQ(s.nics[1].if_name, "1");
  EXPECT_EQ(s.nics[1].ipv4_pools, Strings{"b4"});
}

TEST_F(SelectionTest, Rule1SubnetAnnotationAutoPools) {
  api::SpiderIPPool& auto4 = Add("auto4-web-eth0-12345");
  auto4.metadata.labels = {{"ipam.spidernet.io/owner-spider-subnet", "subnet-a"},
                           {"ipam.spidernet.io/owner-application-gv", "apps_v1"},
                           {"ipam.spidernet.io/owner-application-kind", "Deployment"},
                           {"ipam.spidernet.io/owner-application-namespace", "default"},
                           {"ipam.spidernet.io/owner-application-name", "web"},
                           {"ipam.spidernet.io/owner-application-uid",
                            "aaaa-bbbb-cccc-dddd-123456789abc"},
                           {"ipam.spidernet.io/interface", "eth0"},
                           {"ipam.spidernet.io/ip-version", "IPv4"}};
  auto4.spec.pod_affinity = api::LabelSelector{
      .match_labels = {{"ipam.spidernet.io/app-api-group", "apps"},
                       {"ipam.spidernet.io/app-api-version", "v1"},
                       {"ipam.spidernet.io/app-kind", "Deployment"},
                       {"ipam.spidernet.io/app-namespace", "default"},
                       {"ipam.spidernet.io/app-name", "web"}}};
  Add("pod4");
  req_.pod.annotations = {{"ipam.spidernet.io/subnet", R"({"ipv4":["subnet-a"]})"},
                          {"ipam.spidernet.io/ippool", R"({"ipv4":["pod4"]})"}};
  Selection s = MustSelect();
  EXPECT_EQ(s.rule, SelectionRule::kSubnetAnnotation);
  EXPECT_EQ(s.nics[0].ipv4_pools, Strings{"auto4-web-eth0-12345"});

  // The refs the agent would wait for / create.
  auto refs = AutoPoolRefsForPod(req_, cfg_);
  ASSERT_TRUE(refs.ok()) << refs.status();
  ASSERT_EQ(refs->size(), 1u);
  EXPECT_EQ((*refs)[0].pool_name, "auto4-web-eth0-12345");
  EXPECT_EQ((*refs)[0].subnet, "subnet-a");
  EXPECT_FALSE((*refs)[0].desired_ip_number.has_value());  // replicas unknown

  // Size check: 3 replicas + 1 flexible = 4 <= 100 IPs -> fine; 200 -> not yet.
  req_.pod.owner.replicas = 3;
  EXPECT_EQ(*AutoPoolRefsForPod(req_, cfg_)->at(0).desired_ip_number, 4);
  EXPECT_TRUE(Select().ok());
  req_.pod.owner.replicas = 200;
  auto small = Select();
  EXPECT_EQ(small.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(Err(small.status()),
            "auto-created IPPool auto4-web-eth0-12345 does not have the desired 201 IPs yet");

  // Another app: no pool yet -> Unavailable (retry).
  req_.pod.owner.replicas.reset();
  req_.pod.owner.name = "api";
  auto missing = Select();
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(Err(missing.status()).rfind(
                "no matching auto-created IPPool candidate with matchLables 'map[", 0),
            0u);

  // Bare pods cannot use subnets.
  req_.pod.owner = {.api_version = "v1", .kind = "Pod", .namespace_ = "default",
                    .name = "web-1", .uid = "pod-uid"};
  EXPECT_EQ(Err(Select().status()), "SpiderSubnet feature doesn't support no-controller pod");

  // Auto pools off: the annotation is an error; subnet feature off: it is ignored.
  cfg_.enable_auto_pool_for_application = false;
  EXPECT_EQ(Err(Select().status()),
            "it's invalid to use 'ipam.spidernet.io/subnets' or 'ipam.spidernet.io/subnet' "
            "annotation when Auto-Pool feature is disabled");
  cfg_.enable_spider_subnet = false;
  EXPECT_EQ(MustSelect().rule, SelectionRule::kPodIPPoolAnnotation);
}

TEST_F(SelectionTest, AutoPoolAffinityFilter) {
  api::SpiderIPPool& p = Add("auto-ish");
  p.metadata.labels = {{"ipam.spidernet.io/owner-application-name", "other"}};
  p.spec.pod_affinity = api::LabelSelector{.match_labels = {{"ipam.spidernet.io/app-name", "other"}}};
  req_.default_ipv4_pools = {"auto-ish"};
  EXPECT_EQ(Err(Select().status()),
            "no IPPool available, all IPv4 IPPools [auto-ish] of eth0 filtered out: unmatched "
            "Pod annifity of auto-created IPool auto-ish");
}

TEST_F(SelectionTest, AutoPoolNames) {
  EXPECT_EQ(AutoPoolName("Web", 4, "eth0", "a-b-c-d-123456789abc"), "auto4-web-eth0-12345");
  EXPECT_EQ(AutoPoolName("test-name", 6, "test-nic", "a-b-c-d"), "auto6-test-name-test-nic-d");
  std::string long_name(300, 'x');
  std::string n = AutoPoolName(long_name, 4, "eth0", "u-abcdefgh");
  EXPECT_EQ(n.size(), 253u);
  EXPECT_EQ(n.substr(n.size() - 11), "-eth0-abcde");
  EXPECT_EQ(ApplicationLabelGV("apps/v1"), "apps_v1");
  EXPECT_EQ(ApplicationLabelGV("v1"), "v1");
  EXPECT_TRUE(IsBuiltinController({.api_version = "batch/v1", .kind = "CronJob"}));
  EXPECT_FALSE(IsBuiltinController({.api_version = "apps.kruise.io/v1alpha1", .kind = "CloneSet"}));
}

TEST_F(SelectionTest, ThirdPartyNeedsFixedIPNumber) {
  req_.pod.owner = {.api_version = "apps.kruise.io/v1alpha1", .kind = "CloneSet",
                    .namespace_ = "default", .name = "cs", .uid = "u-1"};
  req_.pod.annotations = {{"ipam.spidernet.io/subnet", R"({"ipv4":["s"]})"}};
  EXPECT_EQ(Err(AutoPoolRefsForPod(req_, cfg_).status()),
            "CloneSet/default/cs only supports fixed auto-created IPPool IP Number");
  req_.pod.annotations["ipam.spidernet.io/ippool-ip-number"] = "2";
  auto refs = AutoPoolRefsForPod(req_, cfg_);
  ASSERT_TRUE(refs.ok()) << refs.status();
  EXPECT_EQ((*refs)[0].desired_ip_number, 2);
  EXPECT_EQ((*refs)[0].match_labels.count("ipam.spidernet.io/owner-application-uid"), 0u);
  // A reclaimable pool of a previous app with the same name is skipped.
  api::SpiderIPPool& old = Add("old");
  old.metadata.labels = (*refs)[0].match_labels;
  old.metadata.labels["ipam.spidernet.io/ippool-reclaim"] = "true";
  old.metadata.labels["ipam.spidernet.io/owner-application-uid"] = "u-0";
  EXPECT_EQ(*FindAutoPool((*refs)[0], req_.pod.owner, Pools()), nullptr);
  old.metadata.labels["ipam.spidernet.io/ippool-reclaim"] = "false";
  EXPECT_EQ(*FindAutoPool((*refs)[0], req_.pod.owner, Pools()), &old);
}

// ---- Wildcards ------------------------------------------------------------------------------

TEST(Wildcard, GoFilepathMatch) {
  EXPECT_TRUE(*WildcardMatch("pool-*", "pool-a"));
  EXPECT_TRUE(*WildcardMatch("pool-?", "pool-a"));
  EXPECT_FALSE(*WildcardMatch("pool-?", "pool-ab"));
  EXPECT_TRUE(*WildcardMatch("pool-[a-c]", "pool-b"));
  EXPECT_FALSE(*WildcardMatch("pool-[^a-c]", "pool-b"));
  EXPECT_TRUE(*WildcardMatch("pool-[!]", "pool-!"));  // '!' is not negation in Go
  EXPECT_TRUE(*WildcardMatch("a\\*b", "a*b"));
  EXPECT_FALSE(*WildcardMatch("a\\*b", "axb"));
  EXPECT_TRUE(*WildcardMatch("*", ""));
  EXPECT_FALSE(*WildcardMatch("*", "a/b"));
  EXPECT_TRUE(*WildcardMatch("*-v4-*", "x-v4-y-v4-z"));
  EXPECT_TRUE(*WildcardMatch("*a*b", "xaybzb"));
  EXPECT_FALSE(*WildcardMatch("*a*b", "xaybzbc"));
  EXPECT_TRUE(*WildcardMatch("p[*]*", "p*x"));  // '*' inside a class is a character
  // Go's chunk-at-a-time matching: no exponential backtracking on hostile patterns.
  EXPECT_FALSE(*WildcardMatch("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", std::string(250, 'a')));
  for (const char* bad : {"[", "pool-[", "[]", "[a-]", "a\\", "[^]", "x[z-"}) {
    EXPECT_EQ(Err(WildcardMatch(bad, "x").status()), "syntax error in pattern") << bad;
  }
  EXPECT_TRUE(HasWildcard("a*"));
  EXPECT_TRUE(HasWildcard("a?"));
  EXPECT_TRUE(HasWildcard("a[b]"));
  EXPECT_FALSE(HasWildcard("a[b"));
  EXPECT_FALSE(HasWildcard("plain"));
}

TEST_F(SelectionTest, WildcardsExpandAgainstPoolsOfTheFamily) {
  Add("pool-b");
  Add("pool-a");
  Add("pool-c6", 6);
  Add("other");
  req_.pod.annotations = {{"ipam.spidernet.io/ippool", R"({"ipv4":["other","pool-*"],"ipv6":["pool-*"]})"}};
  Selection s = MustSelect();
  EXPECT_EQ(s.nics[0].ipv4_pools, (Strings{"other", "pool-a", "pool-b"}));
  EXPECT_EQ(s.nics[0].ipv6_pools, Strings{"pool-c6"});
  req_.pod.annotations = {{"ipam.spidernet.io/ippool", R"({"ipv4":["pool-[*"]})"}};
  EXPECT_EQ(Err(Select().status()),
            "failed to match wildcard: IPv4 PoolName pattern 'pool-[*', character 'other', "
            "error: syntax error in pattern");
  // A pattern and a name that overlap make a duplicate.
  req_.pod.annotations = {{"ipam.spidernet.io/ippool", R"({"ipv4":["pool-a","pool-*"]})"}};
  EXPECT_EQ(Err(Select().status()), "wrong input, duplicate IPPool pool-a specified for NIC eth0");
}

// ---- Prechecks and families -----------------------------------------------------------------

TEST_F(SelectionTest, FamiliesSwitchedOffAreDroppedSilently) {
  Add("p4");
  Add("p6", 6);
  req_.default_ipv4_pools = {"p4"};
  req_.default_ipv6_pools = {"p6"};
  cfg_.enable_ipv6 = false;
  Selection s = MustSelect();
  EXPECT_EQ(s.nics[0].ipv4_pools, Strings{"p4"});
  EXPECT_TRUE(s.nics[0].ipv6_pools.empty());
  cfg_.enable_ipv6 = true;
  cfg_.enable_ipv4 = false;
  s = MustSelect();
  EXPECT_TRUE(s.nics[0].ipv4_pools.empty());
  EXPECT_EQ(s.nics[0].ipv6_pools, Strings{"p6"});
}

TEST_F(SelectionTest, UnknownPool) {
  req_.default_ipv4_pools = {"ghost"};
  auto s = Select();
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Err(s.status()),
            "failed to get original IPPool ghost: spiderippools.spiderpool.spidernet.io "
            "\"ghost\" not found");
}

// ---- Filters (upstream selectByPod order and messages) --------------------------------------

TEST_F(SelectionTest, EachFilterWithItsReason) {
  struct Case {
    std::function<void(api::SpiderIPPool&)> set;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {[](api::SpiderIPPool& p) { p.metadata.deletion_timestamp = api::Time{}; },
       "terminating IPPool p"},
      {[](api::SpiderIPPool& p) { p.spec.disable = true; }, "disabled IPPool p"},
      {[](api::SpiderIPPool& p) { p.spec.ip_version = 6; },
       "expect an IPv4 IPPool, but the version of the IPPool p is IPv6"},
      {[](api::SpiderIPPool& p) { p.spec.node_name = {"node2"}; }, "unmatched Node name of IPPool p"},
      {[](api::SpiderIPPool& p) {
         p.spec.node_affinity = api::LabelSelector{.match_labels = {{"zone", "z2"}}};
       },
       "unmatched Node affinity of IPPool p"},
      {[](api::SpiderIPPool& p) { p.spec.namespace_name = {"kube-system"}; },
       "unmatched Namespace name of IPPool p"},
      {[](api::SpiderIPPool& p) {
         p.spec.namespace_affinity = api::LabelSelector{
             .match_expressions = {{.key = "team", .op = "NotIn", .values = {"a"}}}};
       },
       "unmatched Namespace affinity of IPPool p"},
      {[](api::SpiderIPPool& p) {
         p.spec.pod_affinity = api::LabelSelector{
             .match_expressions = {{.key = "app", .op = "DoesNotExist"}}};
       },
       "unmatched Pod affinity of IPPool p"},
      {[](api::SpiderIPPool& p) { p.spec.multus_name = {"other-nad"}; },
       "interface eth0 IPPool p specified multusName [other-nad] unmacthed multusCR "
       "kube-system/macvlan"},
  };
  req_.pod.annotations = {{"v1.multus-cni.io/default-network", "macvlan"}};
  for (const Case& c : cases) {
    storage_.clear();
    c.set(Add("p"));
    req_.default_ipv4_pools = {"p"};
    auto s = Select();
    EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(Err(s.status()),
              "no IPPool available, all IPv4 IPPools [p] of eth0 filtered out: " + c.reason);
  }
}

TEST_F(SelectionTest, FiltersThatPass) {
  api::SpiderIPPool& p = Add("p");
  p.spec.node_name = {"node0", "node1"};
  p.spec.node_affinity = api::LabelSelector{.match_labels = {{"zone", "nowhere"}}};  // ignored
  p.spec.namespace_affinity = api::LabelSelector{
      .match_expressions = {{.key = "team", .op = "In", .values = {"a", "b"}}}};
  p.spec.pod_affinity = api::LabelSelector{.match_expressions = {{.key = "app", .op = "Exists"}}};
  p.spec.multus_name = {"kube-system/macvlan", "x/y"};
  api::SpiderIPPool& q = Add("q");
  q.spec.namespace_name = {"default"};
  q.spec.namespace_affinity = api::LabelSelector{.match_labels = {{"team", "zzz"}}};  // ignored
  q.spec.multus_name = {"macvlan"};  // bare name: the agent namespace
  req_.pod.annotations = {{"v1.multus-cni.io/default-network", "macvlan"}};
  req_.default_ipv4_pools = {"q", "p"};
  Selection s = MustSelect();
  EXPECT_EQ(s.nics[0].ipv4_pools, (Strings{"p", "q"}));  // p has podAffinity
}

TEST_F(SelectionTest, AllFilteredOutListsEveryReason) {
  Add("a").spec.disable = true;
  Add("b").spec.node_name = {"elsewhere"};
  Add("c").spec.disable = true;
  req_.default_ipv4_pools = {"a", "b", "c"};
  EXPECT_EQ(Err(Select().status()),
            "no IPPool available, all IPv4 IPPools [a b c] of eth0 filtered out: [disabled "
            "IPPool a, unmatched Node name of IPPool b, disabled IPPool c]");
  // Some survive: only they are returned.
  Add("d");
  req_.default_ipv4_pools = {"a", "d", "b"};
  EXPECT_EQ(MustSelect().nics[0].ipv4_pools, Strings{"d"});
}

TEST_F(SelectionTest, MultusNameUsesTheNADOfEachNIC) {
  Add("p1").spec.multus_name = {"default/mv1"};
  Add("p2").spec.multus_name = {"default/mv2"};
  req_.pod.annotations = {
      {"k8s.v1.cni.cncf.io/networks", "mv1, mv2"},
      {"ipam.spidernet.io/ippools", R"([{"ipv4":["p1"]},{"ipv4":["p1"]},{"ipv4":["p2"]}])"}};
  req_.nad_by_nic = {{"0", "default/mv1"}};  // the caller's value wins over the annotations
  Selection s = MustSelect();
  ASSERT_EQ(s.nics.size(), 3u);
  EXPECT_EQ(s.nics[1].ipv4_pools, Strings{"p1"});  // NIC "1" -> net1 -> mv1
  EXPECT_EQ(s.nics[2].ipv4_pools, Strings{"p2"});
  // eth0 with neither default-network nor cluster network.
  req_.nad_by_nic.clear();
  EXPECT_EQ(Err(Select().status()),
            "no IPPool available, all IPv4 IPPools [p1] of 0 filtered out: cluster-network "
            "multus isn't set, the IPPool p1 specified multusName [default/mv1] unmatched");
  cfg_.multus_cluster_network = "default/mv1";
  EXPECT_TRUE(Select().ok());
}

// ---- Sorting (ByPoolPriority) ---------------------------------------------------------------

TEST_F(SelectionTest, SortKeys) {
  Add("plain");
  Add("multus").spec.multus_name = {"kube-system/macvlan"};
  Add("ns-aff").spec.namespace_affinity = api::LabelSelector{.match_labels = {{"team", "a"}}};
  Add("ns-name").spec.namespace_name = {"default"};
  Add("node-aff").spec.node_affinity = api::LabelSelector{.match_labels = {{"zone", "z1"}}};
  Add("node-name").spec.node_name = {"node1"};
  Add("pod-aff").spec.pod_affinity = api::LabelSelector{.match_labels = {{"app", "web"}}};
  Add("plain2");
  req_.pod.annotations = {{"v1.multus-cni.io/default-network", "macvlan"}};
  req_.default_ipv4_pools = {"plain", "multus", "ns-aff", "ns-name", "node-aff", "node-name",
                             "pod-aff", "plain2"};
  EXPECT_EQ(MustSelect().nics[0].ipv4_pools,
            (Strings{"pod-aff", "node-name", "node-aff", "ns-name", "ns-aff", "multus", "plain",
                     "plain2"}));
  // Later keys only break ties.
  api::SpiderIPPool x, y;
  x.spec.node_name = {"n"};
  y.spec.namespace_name = {"ns"};
  y.spec.multus_name = {"m"};
  EXPECT_TRUE(PoolPriorityLess(x, y));
  EXPECT_FALSE(PoolPriorityLess(y, x));
  EXPECT_FALSE(PoolPriorityLess(x, x));
}

}  // namespace
}  // namespace spiderpool::ipam
