#include "operator/webhook/configurations.h"

#include <fstream>
#include <sstream>

#include "api/codec.h"
#include "base/json.h"
#include "gtest/gtest.h"

namespace spiderpool::op::webhook {
namespace {

using base::Json;

TEST(ConfigurationsTest, PathsAndNamesAsUpstream) {
  EXPECT_EQ(MutatePath(Kind::kIPPool), "/mutate-spiderpool-spidernet-io-v2beta1-spiderippool");
  EXPECT_EQ(ValidatePath(Kind::kIPPool), "/validate-spiderpool-spidernet-io-v2beta1-spiderippool");
  EXPECT_EQ(MutatePath(Kind::kSubnet), "/mutate-spiderpool-spidernet-io-v2beta1-spidersubnet");
  EXPECT_EQ(ValidatePath(Kind::kReservedIP),
            "/validate-spiderpool-spidernet-io-v2beta1-spiderreservedip");
  EXPECT_EQ(MutatePath(Kind::kCoordinator),
            "/mutate-spiderpool-spidernet-io-v2beta1-spidercoordinator");
  EXPECT_EQ(ValidatePath(Kind::kMultusConfig),
            "/validate-spiderpool-spidernet-io-v2beta1-spidermultusconfig");
  EXPECT_EQ(ValidatePath(Kind::kClaimParameter),
            "/validate-spiderpool-spidernet-io-v2beta1-spiderclaimparameter");
  EXPECT_EQ(WebhookName(Kind::kMultusConfig), "spidermultusconfig.spiderpool.spidernet.io");
}

TEST(ConfigurationsTest, RulesAndPolicies) {
  ConfigurationOptions o;
  o.service_namespace = "spiderpool";
  o.ca_bundle_pem = "PEM";
  auto m = MutatingConfiguration(o);
  auto v = ValidatingConfiguration(o);
  EXPECT_EQ(m.metadata.name, "spiderpool-controller");
  EXPECT_EQ(v.metadata.name, "spiderpool-controller");
  std::vector<std::string> names;
  for (const auto& w : m.webhooks) {
    names.push_back(w.name);
    EXPECT_EQ(w.failure_policy, "Fail");
    EXPECT_EQ(w.side_effects, "None");
    EXPECT_EQ(w.admission_review_versions, std::vector<std::string>{"v1"});
    EXPECT_EQ(w.client_config.service->name, "spiderpool-controller");
    EXPECT_EQ(w.client_config.service->namespace_, "spiderpool");
    EXPECT_EQ(w.client_config.service->port, 5722);
    EXPECT_EQ(*w.client_config.CABundlePEM(), "PEM");
    ASSERT_EQ(w.rules.size(), 1u);
    EXPECT_EQ(w.rules[0].operations, (std::vector<std::string>{"CREATE", "UPDATE"}));
    EXPECT_EQ(w.rules[0].api_groups, std::vector<std::string>{"spiderpool.spidernet.io"});
    EXPECT_EQ(w.rules[0].api_versions, std::vector<std::string>{"v2beta1"});
  }
  EXPECT_EQ(names, (std::vector<std::string>{
                       "spidersubnet.spiderpool.spidernet.io",
                       "spidermultusconfig.spiderpool.spidernet.io",
                       "spiderippool.spiderpool.spidernet.io",
                       "spiderreservedip.spiderpool.spidernet.io",
                       "spidercoordinator.spiderpool.spidernet.io"}));
  EXPECT_EQ(*m.webhooks[2].client_config.service->path,
            "/mutate-spiderpool-spidernet-io-v2beta1-spiderippool");
  EXPECT_EQ(m.webhooks[2].rules[0].resources, std::vector<std::string>{"spiderippools"});
  names.clear();
  for (const auto& w : v.webhooks) {
    names.push_back(w.name);
    bool with_delete = w.name == "spidersubnet.spiderpool.spidernet.io" ||
                       w.name == "spiderippool.spiderpool.spidernet.io";
    std::vector<std::string> want = {"CREATE", "UPDATE"};
    if (with_delete) want.push_back("DELETE");
    EXPECT_EQ(w.rules[0].operations, want) << w.name;
    EXPECT_EQ(w.failure_policy, "Fail");
    EXPECT_EQ(w.side_effects, "None");
  }
  EXPECT_EQ(names, (std::vector<std::string>{
                       "spidersubnet.spiderpool.spidernet.io",
                       "spiderippool.spiderpool.spidernet.io",
                       "spiderreservedip.spiderpool.spidernet.io",
                       "spidercoordinator.spiderpool.spidernet.io",
                       "spidermultusconfig.spiderpool.spidernet.io"}));
}

TEST(ConfigurationsTest, FeatureSwitches) {
  ConfigurationOptions o;
  o.enable_multus_config = false;
  o.enable_coordinator = false;
  o.enable_claim_parameter = true;
  EXPECT_EQ(MutatingKinds(o),
            (std::vector<Kind>{Kind::kSubnet, Kind::kIPPool, Kind::kReservedIP}));
  EXPECT_EQ(ValidatingKinds(o), (std::vector<Kind>{Kind::kSubnet, Kind::kIPPool,
                                                   Kind::kReservedIP, Kind::kClaimParameter}));
}

// The golden file is what `bazel run //operator/webhook:print-configurations -- kube-system`
// prints; regenerate it when the definitions change on purpose.
TEST(ConfigurationsTest, Golden) {
  std::ifstream in("operator/webhook/testdata/webhook_configurations.json");
  ASSERT_TRUE(in) << "missing golden file";
  std::stringstream ss;
  ss << in.rdbuf();
  auto golden = base::ParseJson(ss.str());
  ASSERT_TRUE(golden.ok()) << golden.status();
  ConfigurationOptions o;
  Json want = {{"apiVersion", "v1"},
               {"kind", "List"},
               {"items", {api::Encode(MutatingConfiguration(o)),
                          api::Encode(ValidatingConfiguration(o))}}};
  EXPECT_EQ(*golden, want) << base::DumpJsonPretty(want);
}

}  // namespace
}  // namespace spiderpool::op::webhook

namespace spiderpool::op::webhook {
namespace {

TEST(ConfigurationsTest, PodWebhookOnlyWhenPodResourceInjectIsEnabled) {
  ConfigurationOptions o;
  o.service_namespace = "spiderpool";
  for (const auto& w : MutatingConfiguration(o).webhooks) {
    EXPECT_NE(w.name, "pod.spiderpool.spidernet.io");
  }
  o.enable_pod_resource_inject = true;
  auto m = MutatingConfiguration(o);
  ASSERT_FALSE(m.webhooks.empty());
  const auto& w = m.webhooks.back();
  EXPECT_EQ(w.name, "pod.spiderpool.spidernet.io");
  ASSERT_TRUE(w.client_config.service.has_value());
  EXPECT_EQ(w.client_config.service->path, "/mutate--v1-pod");
  EXPECT_EQ(w.failure_policy, "Fail");
  ASSERT_EQ(w.rules.size(), 1u);
  EXPECT_EQ(w.rules[0].operations, std::vector<std::string>{"CREATE"});
  EXPECT_EQ(w.rules[0].api_groups, std::vector<std::string>{""});
  EXPECT_EQ(w.rules[0].resources, std::vector<std::string>{"pods"});
  ASSERT_TRUE(w.namespace_selector.has_value());
  ASSERT_EQ(w.namespace_selector->match_expressions.size(), 1u);
  EXPECT_EQ(w.namespace_selector->match_expressions[0].key, "kubernetes.io/metadata.name");
  EXPECT_EQ(w.namespace_selector->match_expressions[0].op, "NotIn");
  EXPECT_EQ(w.namespace_selector->match_expressions[0].values,
            (std::vector<std::string>{"kube-system", "spiderpool", "metallb-system",
                                      "istio-system"}));
  o.pod_namespaces_include = {"ai"};
  auto with_include = MutatingConfiguration(o).webhooks.back();
  ASSERT_EQ(with_include.namespace_selector->match_expressions.size(), 2u);
  EXPECT_EQ(with_include.namespace_selector->match_expressions[1].op, "In");
}

}  // namespace
}  // namespace spiderpool::op::webhook
