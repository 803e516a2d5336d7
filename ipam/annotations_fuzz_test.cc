// Every parser of pod/namespace annotations reads user text. Feed them deterministic random
// mutations of realistic values (byte flips, insertions, truncations, JSON-structure swaps)
// and check they never crash or throw, and that errors are InvalidArgument (or the documented
// codes). SelectPools runs on the mutated annotations too.

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ipam/annotations.h"
#include "ipam/selection.h"

namespace spiderpool::ipam {
namespace {

const std::vector<std::string> kSeeds = {
    R"({"ipv4":["pool-a","pool-*"],"ipv6":["v6-?"]})",
    R"([{"interface":"eth0","ipv4":["a"],"cleangateway":true},{"interface":"net1","ipv6":["b"]}])",
    R"([{"ipv4":["a"]},{"ipv4":["b[0-9]"]}])",
    R"({"interface":"eth0","ipv4":["subnet-a"],"ipv6":["subnet-b"]})",
    R"([{"interface":"eth0","ipv4":["s4"]},{"interface":"net1","ipv6":["s6"]}])",
    R"([{"dst":"10.1.0.0/16","gw":"10.0.0.1"},{"dst":"fd01::/64","gw":"fd00::1"}])",
    R"(["ns-pool-a","ns-pool-b"])",
    R"([{"name":"mv","namespace":"kube-system","interface":"net1","ips":["10.0.0.5/24"],"mac":"02:00:00:00:00:01"}])",
    "mv-a, other/mv-b@net7 ,mv-c",
    "+3",
    "null",
    "",
};

const std::vector<std::string> kFragments = {
    "{", "}", "[", "]", ",", ":", "\"", "null", "true", "1e999", "-0", "\\u0000", "/", "@",
    "*", "?", "[^", "\\", "\"ipv4\"", "\"interface\"", "[{\"", "{\"ipv4\":{}}", "\xff\xfe",
};

std::string Mutate(std::string s, std::mt19937& rng) {
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    const size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 5) {
      case 0:
        if (!s.empty() && pos < s.size()) s[pos] = static_cast<char>(rng() % 256);
        break;
      case 1:
        s.insert(pos, kFragments[rng() % kFragments.size()]);
        break;
      case 2:
        if (pos < s.size()) s.erase(pos, 1 + rng() % 8);
        break;
      case 3:
        s = s.substr(0, pos);
        break;
      default:
        s += kFragments[rng() % kFragments.size()];
        break;
    }
  }
  return s;
}

void ExpectInvalidOrOk(const absl::Status& s, const std::string& input) {
  EXPECT_TRUE(s.ok() || s.code() == absl::StatusCode::kInvalidArgument ||
              s.code() == absl::StatusCode::kNotFound ||
              s.code() == absl::StatusCode::kFailedPrecondition ||
              s.code() == absl::StatusCode::kUnavailable)
      << s << " for input " << input;
}

TEST(AnnotationsFuzz, RandomMutationsNeverCrash) {
  std::mt19937 rng(20261121);
  api::SpiderIPPool pool_a;
  pool_a.metadata.name = "pool-a";
  pool_a.spec.ip_version = 4;
  pool_a.spec.subnet = "10.0.0.0/24";
  pool_a.spec.default_ = true;
  std::vector<const api::SpiderIPPool*> pools = {&pool_a};
  SelectionConfig cfg;
  cfg.enable_ipv6 = true;

  for (int i = 0; i < 5000; ++i) {
    const std::string v = Mutate(kSeeds[rng() % kSeeds.size()], rng);
    ExpectInvalidOrOk(ParsePodIPPoolAnnotation(v).status(), v);
    auto items = ParsePodIPPoolsAnnotation(v);
    ExpectInvalidOrOk(items.status(), v);
    if (items.ok()) ExpectInvalidOrOk(ValidateAndMutateMultiNIC(*items, "eth0"), v);
    Annotations pod = {{"ipam.spidernet.io/ippools", v},
                       {"ipam.spidernet.io/routes", v},
                       {"ipam.spidernet.io/subnet", v},
                       {"k8s.v1.cni.cncf.io/networks", v},
                       {"v1.multus-cni.io/default-network", v}};
    (void)IsMultipleNicWithNoName(pod);
    ExpectInvalidOrOk(ParsePodRoutesAnnotation(pod).status(), v);
    ExpectInvalidOrOk(ParseSubnetAnnotation(pod, 1).status(), v);
    ExpectInvalidOrOk(ParseNamespaceDefaultPools({{"ipam.spidernet.io/default-ipv4-ippool", v}})
                          .status(),
                      v);
    ExpectInvalidOrOk(ParsePoolIPNumber(v).status(), v);
    ExpectInvalidOrOk(ParseNetworksAnnotation(v, "ns").status(), v);
    ExpectInvalidOrOk(NetworkForNIC(pod, "ns", "net1", std::nullopt, "kube-system").status(), v);
    ExpectInvalidOrOk(NetworkForNIC(pod, "ns", "eth0", std::nullopt, "kube-system").status(), v);
    (void)WildcardMatch(v, "pool-a");

    // The whole selection on mutated pod and namespace annotations.
    SelectionRequest req;
    req.pod = {.namespace_ = "ns", .name = "p", .uid = "u",
               .owner = {.api_version = "apps/v1", .kind = "Deployment", .namespace_ = "ns",
                         .name = "d", .uid = "x-y"}};
    req.if_name = (i % 2) ? "eth0" : "net1";
    const char* keys[] = {"ipam.spidernet.io/ippools", "ipam.spidernet.io/ippool",
                          "ipam.spidernet.io/subnets", "ipam.spidernet.io/routes"};
    req.pod.annotations[keys[rng() % 4]] = v;
    req.namespace_.annotations["ipam.spidernet.io/default-ipv6-ippool"] = v;
    ExpectInvalidOrOk(SelectPools(req, cfg, pools).status(), v);
  }
}

}  // namespace
}  // namespace spiderpool::ipam
