// The C++ Spider types against the CRDs the chart installs (charts/spiderpool/crds): every JSON
// field of a type must be in the CRD's openAPIV3Schema and every schema property must be in the
// type, recursively (through `items` and `additionalProperties`; a subtree is skipped where the
// schema has x-kubernetes-preserve-unknown-fields or the type keeps unknown fields). The
// ResourceInfo (plural, singular, short names, scope, status subresource) must match too.
// Every mismatch is listed in the failure message.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_join.h"
#include "api/kinds.h"
#include "base/json.h"
#include "base/yaml.h"
#include "base/testing/temp_dir.h"

namespace spiderpool::api {
namespace {

using ::spiderpool::base::testing::ReadFile;

namespace fs = std::filesystem;

constexpr const char* kCrdDir = "charts/spiderpool/crds";

// kind -> CRD object, for every CRD of our group.
std::map<std::string, Json> LoadCrds() {
  std::map<std::string, Json> out;
  for (const auto& e : fs::directory_iterator(kCrdDir)) {
    if (e.path().extension() != ".yaml") continue;
    auto docs = base::ParseYamlDocuments(ReadFile(e.path()));
    EXPECT_TRUE(docs.ok()) << e.path() << ": " << docs.status();
    if (!docs.ok()) continue;
    for (Json& d : *docs) {
      if (d.value("kind", "") != "CustomResourceDefinition") continue;
      const Json& spec = d["spec"];
      if (!spec.is_object() || spec.value("group", "") != kSpiderGroup) continue;
      std::string kind = spec["names"].value("kind", "");
      EXPECT_FALSE(out.count(kind)) << "two CRDs for " << kind;
      out[kind] = d;
    }
  }
  return out;
}

bool PreservesUnknown(const Json& schema) {
  return schema.is_object() && schema.value("x-kubernetes-preserve-unknown-fields", false);
}

// Descends through arrays and maps to the schema that describes one element's fields.
const Json& ElementSchema(const Json& schema) {
  const Json* s = &schema;
  while (s->is_object()) {
    if (s->contains("items") && (*s)["items"].is_object()) {
      s = &(*s)["items"];
    } else if (s->contains("additionalProperties") && (*s)["additionalProperties"].is_object()) {
      s = &(*s)["additionalProperties"];
    } else {
      break;
    }
  }
  return *s;
}

void Compare(const FieldTree& tree, const Json& schema_in, const std::string& path,
             std::vector<std::string>* mismatches) {
  if (tree.preserves_unknown || PreservesUnknown(schema_in)) return;
  const Json& schema = ElementSchema(schema_in);
  if (PreservesUnknown(schema)) return;
  static const Json kEmpty = Json::object();
  const Json& props =
      schema.is_object() && schema.contains("properties") ? schema["properties"] : kEmpty;
  auto name_of = [&](const std::string& field) { return path.empty() ? field : path + "." + field; };
  for (const auto& [field, child] : tree.children) {
    if (!props.contains(field)) {
      mismatches->push_back(name_of(field) + ": in the C++ type, not in the CRD schema");
      continue;
    }
    Compare(child, props[field], name_of(field), mismatches);
  }
  for (auto it = props.begin(); it != props.end(); ++it) {
    if (!tree.children.count(it.key())) {
      mismatches->push_back(name_of(it.key()) + ": in the CRD schema, not in the C++ type");
    }
  }
}

template <typename T>
std::vector<std::string> CheckKind(const std::map<std::string, Json>& crds) {
  const ResourceInfo& r = T::Resource();
  std::vector<std::string> mismatches;
  auto it = crds.find(r.kind);
  if (it == crds.end()) return {r.kind + ": no CRD in " + kCrdDir};
  const Json& spec = it->second["spec"];
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) mismatches.push_back(what);
  };
  expect(it->second["metadata"].value("name", "") == r.GroupResource(),
         "metadata.name is not " + r.GroupResource());
  const Json& names = spec["names"];
  expect(names.value("plural", "") == r.plural, "names.plural is not " + r.plural);
  expect(names.value("singular", "") == r.singular, "names.singular is not " + r.singular);
  expect(names.value("listKind", "") == r.ListKind(), "names.listKind is not " + r.ListKind());
  expect(names.value("shortNames", Json::array()) == Json(r.short_names),
         "names.shortNames differ from the ResourceInfo");
  expect(names.value("categories", Json::array()) == Json::array({"spiderpool"}),
         "names.categories is not [spiderpool]");
  expect(spec.value("scope", "") == (r.namespaced ? "Namespaced" : "Cluster"),
         "scope differs from ResourceInfo.namespaced");
  const Json* version = nullptr;
  if (spec.contains("versions") && spec["versions"].is_array()) {
    for (const Json& v : spec["versions"]) {
      if (v.value("name", "") == r.version) version = &v;
    }
  }
  if (version == nullptr) {
    mismatches.push_back("no version " + r.version);
  } else {
    expect(version->value("served", false) && version->value("storage", false),
           r.version + " is not served and stored");
    bool has_status = version->contains("subresources") &&
                      (*version)["subresources"].is_object() &&
                      (*version)["subresources"].contains("status");
    expect(has_status == r.has_status, "status subresource differs from ResourceInfo.has_status");
    const Json& schema = (*version)["schema"]["openAPIV3Schema"];
    FieldTree tree = ListFields<T>();
    // metadata is ObjectMeta: the API server validates it, CRDs only say `type: object`.
    tree.children.erase("metadata");
    Json top = schema;
    if (top.is_object() && top.contains("properties")) top["properties"].erase("metadata");
    Compare(tree, top, "", &mismatches);
  }
  for (std::string& m : mismatches) m = r.kind + ": " + m;
  return mismatches;
}

TEST(CrdFields, EverySpiderKindMatchesItsCrd) {
  ASSERT_TRUE(fs::is_directory(kCrdDir)) << kCrdDir;
  std::map<std::string, Json> crds = LoadCrds();
  std::vector<std::string> all;
  int checked = 0;
  SpiderKinds::ForEach([&]<typename T>() {
    std::vector<std::string> m = CheckKind<T>(crds);
    all.insert(all.end(), m.begin(), m.end());
    ++checked;
  });
  EXPECT_EQ(checked, 7);
  EXPECT_TRUE(all.empty()) << all.size() << " mismatches between api/ types and CRDs:"
                           << "\n  " << absl::StrJoin(all, "\n  ");
  // No CRD of our group without a C++ type.
  for (const auto& entry : crds) {
    const std::string& kind = entry.first;  // (a structured binding cannot be captured: clang 14)
    bool known = false;
    SpiderKinds::ForEach([&]<typename T>() { known = known || T::Resource().kind == kind; });
    EXPECT_TRUE(known) << "CRD for " << kind << " has no C++ type";
  }
}

struct Inner {
  std::string a;
  Json raw;
  template <typename V>
  void Visit(V& v) {
    v.Field("a", a);
    v.Field("raw", raw);
  }
};
struct Outer {
  std::vector<Inner> list;
  std::map<std::string, Inner> by_name;
  std::string only_cpp;
  template <typename V>
  void Visit(V& v) {
    v.Field("list", list);
    v.Field("byName", by_name);
    v.Field("onlyCpp", only_cpp);
  }
};

// The comparison itself finds mismatches in both directions.
TEST(CrdFields, CompareReportsBothDirections) {
  Json schema = Json::parse(R"({"type": "object", "properties": {
      "list": {"type": "array", "items": {"type": "object", "properties": {
          "a": {"type": "string"}, "b": {"type": "string"},
          "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
      "byName": {"type": "object", "additionalProperties": {"type": "object",
          "properties": {"a": {"type": "string"}}}},
      "onlySchema": {"type": "string"}}})");
  std::vector<std::string> m;
  Compare(ListFields<Outer>(), schema, "", &m);
  EXPECT_EQ(m, (std::vector<std::string>{
                   "byName.raw: in the C++ type, not in the CRD schema",
                   "list.b: in the CRD schema, not in the C++ type",
                   "onlyCpp: in the C++ type, not in the CRD schema",
                   "onlySchema: in the CRD schema, not in the C++ type",
               }));
}

}  // namespace
}  // namespace spiderpool::api
