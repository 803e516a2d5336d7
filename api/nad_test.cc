// NetworkAttachmentDefinition: ResourceInfo and fields against the CRD in
// charts/spiderpool/crds, and a round trip of a typical object (a Multus config in a string).

#include "api/nad.h"

#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "base/json.h"
#include "base/yaml.h"

namespace spiderpool::api {
namespace {

constexpr const char* kCrdFile =
    "charts/spiderpool/crds/k8s.cni.cncf.io_network-attachment-definitions.yaml";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The FieldTree as a JSON object of names, for easy comparison.
Json Names(const FieldTree& t) {
  Json out = Json::object();
  for (const auto& [name, child] : t.children) out[name] = Names(child);
  return out;
}

// The same shape from an openAPIV3Schema (objects only; NAD has no arrays).
Json SchemaNames(const Json& schema) {
  Json out = Json::object();
  if (!schema.is_object() || !schema.contains("properties")) return out;
  for (const auto& [name, sub] : schema["properties"].items()) out[name] = SchemaNames(sub);
  return out;
}

TEST(NAD, ResourceMatchesCrd) {
  auto crd = base::ParseYaml(ReadFile(kCrdFile));
  ASSERT_TRUE(crd.ok()) << crd.status();
  const Json& spec = (*crd)["spec"];
  const ResourceInfo& r = NetworkAttachmentDefinition::Resource();
  EXPECT_EQ(r.group, spec["group"]);
  EXPECT_EQ(r.ApiVersion(), kNADApiVersion);
  EXPECT_EQ(r.kind, spec["names"]["kind"]);
  EXPECT_EQ(r.plural, spec["names"]["plural"]);
  EXPECT_EQ(r.singular, spec["names"]["singular"]);
  EXPECT_EQ(Json(r.short_names), spec["names"]["shortNames"]);
  EXPECT_EQ(r.namespaced, spec["scope"] == "Namespaced");
  EXPECT_FALSE(r.has_status);
  EXPECT_EQ(r.GroupResource(), "network-attachment-definitions.k8s.cni.cncf.io");
  ASSERT_EQ(spec["versions"].size(), 1u);
  EXPECT_EQ(spec["versions"][0]["name"], r.version);

  Json want = SchemaNames(spec["versions"][0]["schema"]["openAPIV3Schema"]);
  want.erase("metadata");
  Json got = Names(ListFields<NetworkAttachmentDefinition>());
  got.erase("metadata");
  EXPECT_EQ(got, want);
}

TEST(NAD, RoundTrip) {
  const char* text = R"({
    "apiVersion": "k8s.cni.cncf.io/v1",
    "kind": "NetworkAttachmentDefinition",
    "metadata": {
      "name": "macvlan-conf", "namespace": "kube-system",
      "annotations": {"k8s.v1.cni.cncf.io/resourceName": "spidernet.io/sriov"},
      "ownerReferences": [{"apiVersion": "spiderpool.spidernet.io/v2beta1",
        "kind": "SpiderMultusConfig", "name": "macvlan-conf", "uid": "u-1",
        "controller": true, "blockOwnerDeletion": true}]
    },
    "spec": {"config": "{\"cniVersion\":\"0.3.1\",\"name\":\"macvlan-conf\",\"plugins\":[]}"}
  })";
  auto j = base::ParseJson(text);
  ASSERT_TRUE(j.ok());
  auto nad = Decode<NetworkAttachmentDefinition>(*j);
  ASSERT_TRUE(nad.ok()) << nad.status();
  EXPECT_EQ(nad->metadata.Key(), "kube-system/macvlan-conf");
  EXPECT_EQ(nad->spec.config, R"({"cniVersion":"0.3.1","name":"macvlan-conf","plugins":[]})");
  EXPECT_EQ(Encode(*nad), *j);

  // A NAD without spec (legal: Multus then reads the config file with that name).
  auto bare = DecodeJson<NetworkAttachmentDefinition>(R"({"metadata": {"name": "x"}})");
  ASSERT_TRUE(bare.ok());
  EXPECT_TRUE(bare->spec.config.empty());
  // A config that is not a string is a decode error with its path.
  auto bad = DecodeJson<NetworkAttachmentDefinition>(R"({"spec": {"config": {"a": 1}}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("spec.config"), std::string::npos)
      << bad.status();
}

TEST(NAD, SetTypeMeta) {
  NetworkAttachmentDefinition nad;
  nad.SetTypeMeta();
  EXPECT_EQ(nad.api_version, "k8s.cni.cncf.io/v1");
  EXPECT_EQ(nad.kind, "NetworkAttachmentDefinition");
}

}  // namespace
}  // namespace spiderpool::api
