#include "dra/driver/params.h"

#include "base/json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spiderpool::dra::driver {
namespace {

using api::resource_v1::ResourceClaim;
using base::Json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

Json Params(std::string name) {
  return {{"apiVersion", "spiderpool.spidernet.io/v2beta1"},
          {"kind", "SpiderClaimParameter"},
          {"name", std::move(name)}};
}

TEST(ParseParameters, AcceptsExactlyTheDocumentedShape) {
  auto ref = ParseParameters(Params("scp-1"));
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(ref->name, "scp-1");

  EXPECT_THAT(ParseParameters(Json::array()).status().message(), HasSubstr("must be an object"));
  Json wrong = {{"apiVersion", "v1"}, {"kind", "Foo"}, {"name", "Bad_Name"}, {"extra", 1}};
  absl::Status s = ParseParameters(wrong).status();
  EXPECT_THAT(s.message(), HasSubstr("apiVersion: must be spiderpool.spidernet.io/v2beta1, got \"v1\""));
  EXPECT_THAT(s.message(), HasSubstr("kind: must be SpiderClaimParameter, got \"Foo\""));
  EXPECT_THAT(s.message(), HasSubstr("name: must be the name of a SpiderClaimParameter"));
  EXPECT_THAT(s.message(), HasSubstr("extra: unknown field"));
  EXPECT_THAT(ParseParameters(Json::object()).status().message(), HasSubstr("name: Required value"));
}

// (A vector, not a Json: `Json x = {one_object}` is an array for one compiler and a copy of
// the object for another, CWG 1467; Json(vector) is always an array.)
ResourceClaim Claim(std::vector<Json> configs) {
  Json j = {{"apiVersion", "resource.k8s.io/v1"},
            {"kind", "ResourceClaim"},
            {"metadata", {{"name", "c"}, {"namespace", "ns"}}},
            {"status",
             {{"allocation",
               {{"devices",
                 {{"results",
                   {{{"request", "a"}, {"driver", kDriverName}, {"pool", "n1"}, {"device", "eth1"}},
                    {{"request", "b/x"}, {"driver", kDriverName}, {"pool", "n1"}, {"device", "eth2"}},
                    {{"request", "g"}, {"driver", "gpu"}, {"pool", "n1"}, {"device", "gpu0"}}}},
                  {"config", Json(std::move(configs))}}}}}}}};
  auto c = api::resource_v1::DecodeResourceClaim(j);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

Json Config(std::string source, std::vector<std::string> requests, std::string driver, Json params) {
  Json c = {{"source", std::move(source)}, {"opaque", {{"driver", std::move(driver)}, {"parameters", std::move(params)}}}};
  if (!requests.empty()) c["requests"] = requests;
  return c;
}

TEST(ResolveParameters, ClaimConfigOverridesClassConfig) {
  ResourceClaim c = Claim({Config("FromClass", {}, kDriverName, Params("from-class")),
                           Config("FromClaim", {"a", "b"}, kDriverName, Params("from-claim")),
                           Config("FromClaim", {}, "gpu", Json{{"anything", 1}})});
  auto ref = ResolveParameters(c, kDriverName, c.ResultsFor(kDriverName));
  ASSERT_TRUE(ref.ok()) << ref.status();
  ASSERT_TRUE(ref->has_value());
  EXPECT_EQ((*ref)->name, "from-claim");
}

TEST(ResolveParameters, NoConfigOfOursIsNoParameter) {
  ResourceClaim c = Claim({Config("FromClaim", {}, "gpu", Json{{"x", 1}})});
  auto ref = ResolveParameters(c, kDriverName, c.ResultsFor(kDriverName));
  ASSERT_TRUE(ref.ok());
  EXPECT_FALSE(ref->has_value());
}

TEST(ResolveParameters, ErrorsNameTheConfig) {
  ResourceClaim bad = Claim({Config("FromClaim", {"a"}, kDriverName, Json{{"name", "x"}})});
  auto r = ResolveParameters(bad, kDriverName, bad.ResultsFor(kDriverName));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("status.allocation.devices.config[0].opaque.parameters: apiVersion: Required value"));
  // A config of ours that applies to no result of ours is not looked at.
  ResourceClaim unused = Claim({Config("FromClaim", {"zzz"}, kDriverName, Json{{"name", "x"}})});
  EXPECT_TRUE(ResolveParameters(unused, kDriverName, unused.ResultsFor(kDriverName)).ok());

  ResourceClaim two = Claim({Config("FromClaim", {"a"}, kDriverName, Params("one")),
                             Config("FromClaim", {"b"}, kDriverName, Params("two"))});
  auto t = ResolveParameters(two, kDriverName, two.ResultsFor(kDriverName));
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("config[0].opaque.parameters names SpiderClaimParameter one but "
                                              "status.allocation.devices.config[1].opaque.parameters names two"));
}

api::SpiderClaimParameter Scp() {
  api::SpiderClaimParameter scp;
  scp.metadata.name = "scp";
  scp.metadata.namespace_ = "ns";
  scp.spec.default_nic = api::ClaimNic{.multus_name = "macvlan-eth1", .namespace_ = ""};
  scp.spec.secondary_nics = {{.multus_name = "ipvlan-eth2", .namespace_ = "kube-system"},
                             {.multus_name = "macvlan-eth1", .namespace_ = "ns"}};
  return scp;
}

std::map<std::string, api::SpiderMultusConfig> Smcs() {
  api::SpiderMultusConfig mac, ipv;
  mac.spec.macvlan = api::SpiderMacvlanCniConfig{.master = {"eth1"}};
  ipv.spec.ipvlan = api::SpiderIPvlanCniConfig{.master = {"eth2", "eth1"}};
  return {{"ns/macvlan-eth1", mac}, {"kube-system/ipvlan-eth2", ipv}};
}

TEST(BuildClaimSpec, NetworkFactsInTheEnvironment) {
  ResourceClaim c = Claim({});
  api::SpiderClaimParameter scp = Scp();
  scp.spec.enable_rdma = true;
  EXPECT_THAT(MultusConfigKeys(scp), ElementsAre("ns/macvlan-eth1", "kube-system/ipvlan-eth2"));
  SpecInputs in{.claim_uid = "uid-1",
                .claim_namespace = "ns",
                .claim_name = "c",
                .results = c.ResultsFor(kDriverName),
                .parameters = &scp,
                .multus_configs = Smcs()};
  auto spec = BuildClaimSpec(in);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->claim_uid, "uid-1");
  EXPECT_THAT(spec->env,
              ElementsAre(Pair("SPIDERPOOL_DRA_CLAIM", "ns/c"),
                          Pair("SPIDERPOOL_DRA_DEVICES", "n1/eth1,n1/eth2"),
                          Pair("SPIDERPOOL_DRA_CLAIM_PARAMETER", "ns/scp"),
                          Pair("SPIDERPOOL_DRA_DEFAULT_NETWORK", "ns/macvlan-eth1"),
                          Pair("SPIDERPOOL_DRA_NETWORKS", "kube-system/ipvlan-eth2,ns/macvlan-eth1"),
                          Pair("SPIDERPOOL_DRA_MASTER_NICS", "eth1,eth2"),
                          Pair("SPIDERPOOL_DRA_RDMA", "true")));
  EXPECT_TRUE(spec->mounts.empty());
  EXPECT_EQ(spec->version_pin, "");

  // Without parameters: the claim and device facts only.
  SpecInputs bare{.claim_uid = "u", .claim_namespace = "ns", .claim_name = "c",
                  .results = c.ResultsFor(kDriverName)};
  auto b = BuildClaimSpec(bare);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->env.size(), 2u);
}

TEST(BuildClaimSpec, RdmaAccMountsAndPreloadsTheLibrary) {
  api::SpiderClaimParameter scp = Scp();
  scp.spec.rdma_acc = true;
  scp.metadata.annotations["dra.spidernet.io/cdi-version"] = "0.5.0";
  SpecInputs in{.claim_uid = "u", .claim_namespace = "ns", .claim_name = "c",
                .parameters = &scp, .multus_configs = Smcs()};
  auto missing = BuildClaimSpec(in);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(missing.status().message(), HasSubstr("SpiderClaimParameter ns/scp sets rdmaAcc"));
  in.rdma_library_path = "relative.so";
  EXPECT_THAT(BuildClaimSpec(in).status().message(), HasSubstr("must be absolute"));

  in.rdma_library_path = "/opt/rdma/librdma_acc.so";
  auto spec = BuildClaimSpec(in);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->version_pin, "0.5.0");
  EXPECT_THAT(spec->env, ::testing::Contains(Pair("LD_PRELOAD", "librdma_acc.so")));
  ASSERT_EQ(spec->mounts.size(), 2u);
  EXPECT_EQ(spec->mounts[0].host_path, "/opt/rdma/librdma_acc.so");
  EXPECT_EQ(spec->mounts[0].container_path, "/usr/lib/librdma_acc.so");
  EXPECT_EQ(spec->mounts[1].container_path, "/usr/lib64/librdma_acc.so");
  EXPECT_THAT(spec->mounts[0].options, ElementsAre("ro", "nosuid", "nodev", "bind"));
  // The whole thing is a valid CDI spec.
  auto built = cdi::BuildSpec(*spec);
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(built->version, "0.5.0");
  EXPECT_EQ(built->device_id, "k8s.netresources.spidernet.io/claim=u");
}

}  // namespace
}  // namespace spiderpool::dra::driver
