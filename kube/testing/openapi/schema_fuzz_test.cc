// Fuzz-style property tests (deterministic seeds): random and schema-guided JSON against the
// real CRD schemas, and random schema documents, must never crash, and the operations must
// keep their invariants (pruning and defaulting are idempotent, a validated object stays valid,
// every error is well formed).

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/yaml.h"
#include "gtest/gtest.h"
#include "kube/testing/openapi/schema.h"

namespace spiderpool::kube::testing::openapi {
namespace {

using base::Json;

const std::vector<std::string> kWords = {"spec",        "status",
                                         "metadata",    "subnet",
                                         "ips",         "gateway",
                                         "routes",      "dst",
                                         "gw",          "ipVersion",
                                         "macvlan",     "master",
                                         "mtu",         "vlanID",
                                         "bond",        "mode",
                                         "name",        "cniType",
                                         "current",     "uid",
                                         "node",        "ippools",
                                         "ipv4",        "matchLabels",
                                         "podAffinity", "matchExpressions",
                                         "key",         "operator",
                                         "values",      "coordinator",
                                         "x",           "",
                                         "default",     "enableRdma",
                                         "defaultNic",  "config",
                                         "trunk",       "id",
                                         "vlan",        "sriov"};

class Gen {
 public:
  explicit Gen(uint32_t seed) : rng_(seed) {}

  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(int percent) { return Int(0, 99) < percent; }

  std::string Word() { return kWords[Int(0, static_cast<int>(kWords.size()) - 1)]; }

  std::string String() {
    switch (Int(0, 6)) {
      case 0:
        return Word();
      case 1:
        return "172.18.30." + std::to_string(Int(0, 300));
      case 2:
        return "10.0.0.0/" + std::to_string(Int(0, 40));
      case 3:
        return std::string(static_cast<size_t>(Int(0, 300)), 'a');
      case 4:
        return "h\xC3\xA9llo\n\t\"q\"";
      case 5:
        return "auto";
      default:
        return std::to_string(Int(-5, 5000));
    }
  }

  Json Scalar() {
    switch (Int(0, 7)) {
      case 0:
        return nullptr;
      case 1:
        return Chance(50);
      case 2:
        return Int(-10, 5000);
      case 3:
        return static_cast<int64_t>(Int(0, 1 << 30)) * 100000;
      case 4:
        return Int(-100, 100) / 4.0;
      case 5:
        return 18446744073709551615ull;
      default:
        return String();
    }
  }

  Json Random(int depth) {
    if (depth <= 0 || Chance(40)) return Scalar();
    if (Chance(50)) {
      Json a = Json::array();
      for (int i = Int(0, 4); i > 0; --i) a.push_back(Random(depth - 1));
      return a;
    }
    Json o = Json::object();
    for (int i = Int(0, 5); i > 0; --i) o[Word()] = Random(depth - 1);
    return o;
  }

  // Mostly well-typed values following the schema, with random corruption.
  Json Guided(const SchemaNode& s, int depth) {
    if (depth <= 0 || Chance(5)) return Random(2);
    if (s.enum_values && !s.enum_values->empty() && Chance(70)) {
      return (*s.enum_values)[Int(0, static_cast<int>(s.enum_values->size()) - 1)];
    }
    if (s.default_value && Chance(10)) return *s.default_value;
    if (s.type == "object") {
      Json o = Json::object();
      for (const auto& [k, p] : s.properties) {
        if (Chance(70)) o[k] = Guided(*p, depth - 1);
      }
      if (s.additional_properties && Chance(60)) {
        for (int i = Int(0, 3); i > 0; --i) o[Word()] = Guided(*s.additional_properties, depth - 1);
      }
      if (Chance(15)) o[Word()] = Random(2);
      return o;
    }
    if (s.type == "array") {
      Json a = Json::array();
      for (int i = Int(0, 4); i > 0; --i) {
        a.push_back(s.items ? Guided(*s.items, depth - 1) : Random(1));
      }
      return a;
    }
    if (s.type == "string") return String();
    if (s.type == "integer") return Chance(90) ? Json(Int(-2, 5000)) : Json(Int(-5, 5) / 2.0);
    if (s.type == "number") return Int(-100, 100) / 3.0;
    if (s.type == "boolean") return Chance(50);
    return Scalar();
  }

 private:
  std::mt19937 rng_;
};

std::vector<Schema> CrdSchemas() {
  std::vector<Schema> out;
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  std::filesystem::path dir = (srcdir && ws)
                                  ? std::filesystem::path(srcdir) / ws / "charts/spiderpool/crds"
                                  : std::filesystem::path("charts/spiderpool/crds");
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    auto docs = base::ParseYamlDocuments(text.str());
    if (!docs.ok()) continue;
    for (const auto& d : *docs) {
      auto s = Schema::Parse(d["spec"]["versions"][0]["schema"]["openAPIV3Schema"]);
      if (s.ok()) out.push_back(*std::move(s));
    }
  }
  return out;
}

void CheckWellFormed(const std::vector<FieldError>& errs) {
  static const std::set<std::string> kTypes = {
      "FieldValueRequired", "FieldValueInvalid", "FieldValueNotSupported", "FieldValueTypeInvalid",
      "FieldValueTooLong",  "FieldValueTooMany", "FieldValueDuplicate",    "FieldValueForbidden"};
  for (const auto& e : errs) {
    EXPECT_EQ(kTypes.count(e.type), 1u) << e.type;
    EXPECT_FALSE(e.message.empty());
  }
}

TEST(SchemaFuzzTest, RandomObjectsAgainstTheRealCrds) {
  std::vector<Schema> schemas = CrdSchemas();
  ASSERT_EQ(schemas.size(), 8u);
  Gen g(20240501);
  int valid = 0, invalid = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    const Schema& s = schemas[iter % schemas.size()];
    Json obj = iter % 3 == 0 ? g.Random(6) : g.Guided(s.root(), 8);
    if (obj.is_object() && g.Chance(50)) obj["metadata"] = Json{{"name", "n"}};

    Json pruned_once = obj;
    std::vector<std::string> paths;
    s.Prune(&pruned_once, &paths);
    EXPECT_TRUE(std::is_sorted(paths.begin(), paths.end()));
    Json pruned_twice = pruned_once;
    std::vector<std::string> again;
    s.Prune(&pruned_twice, &again);
    EXPECT_TRUE(again.empty()) << base::DumpJson(obj);
    EXPECT_EQ(pruned_twice, pruned_once);

    Json defaulted = pruned_once;
    s.Default(&defaulted);
    Json defaulted_twice = defaulted;
    s.Default(&defaulted_twice);
    EXPECT_EQ(defaulted_twice, defaulted) << base::DumpJson(obj);

    auto errs1 = s.Validate(defaulted);
    auto errs2 = s.Validate(defaulted);
    EXPECT_EQ(errs1, errs2);
    CheckWellFormed(errs1);

    Json full = obj;
    std::vector<FieldError> errs;
    absl::Status st = ValidateObject(s, &full, &errs);
    EXPECT_EQ(full, defaulted);
    EXPECT_EQ(st.ok(), errs.empty());
    EXPECT_EQ(errs, errs1);
    if (st.ok()) {
      ++valid;
      EXPECT_TRUE(s.Validate(full).empty());
    } else {
      ++invalid;
      EXPECT_EQ(FieldErrorsFromStatus(st), errs);
    }
  }
  // The generator must exercise both outcomes, or the test proves little.
  EXPECT_GT(valid, 100);
  EXPECT_GT(invalid, 100);
}

TEST(SchemaFuzzTest, RandomSchemasNeverCrash) {
  Gen g(7);
  const std::vector<std::string> kKeys = {"type",
                                          "properties",
                                          "items",
                                          "additionalProperties",
                                          "required",
                                          "enum",
                                          "default",
                                          "pattern",
                                          "format",
                                          "minimum",
                                          "maximum",
                                          "minLength",
                                          "maxItems",
                                          "nullable",
                                          "anyOf",
                                          "allOf",
                                          "oneOf",
                                          "not",
                                          "x-kubernetes-int-or-string",
                                          "x-kubernetes-preserve-unknown-fields",
                                          "x-kubernetes-list-type",
                                          "x-kubernetes-list-map-keys",
                                          "x-kubernetes-embedded-resource",
                                          "uniqueItems",
                                          "multipleOf",
                                          "exclusiveMinimum"};
  const std::vector<Json> kTypes = {"object", "array",   "string", "integer",
                                    "number", "boolean", "x",      3};
  std::function<Json(int)> schema = [&](int depth) -> Json {
    Json s = Json::object();
    for (int i = g.Int(0, 5); i > 0; --i) {
      const std::string& k = kKeys[g.Int(0, static_cast<int>(kKeys.size()) - 1)];
      if (k == "type") {
        s[k] = kTypes[g.Int(0, static_cast<int>(kTypes.size()) - 1)];
      } else if (k == "properties" && depth > 0) {
        Json p = Json::object();
        for (int j = g.Int(0, 3); j > 0; --j) p[g.Word()] = schema(depth - 1);
        s[k] = p;
      } else if ((k == "items" || k == "additionalProperties" || k == "not") && depth > 0) {
        s[k] = schema(depth - 1);
      } else if ((k == "anyOf" || k == "allOf" || k == "oneOf") && depth > 0) {
        s[k] = Json::array({schema(depth - 1), schema(depth - 1)});
      } else if (k == "pattern") {
        s[k] = g.Chance(50) ? Json("^[a-z]+$") : Json("(a|");
      } else if (k == "required" || k == "x-kubernetes-list-map-keys") {
        s[k] = Json::array({g.Word()});
      } else {
        s[k] = g.Random(1);
      }
    }
    return s;
  };
  int parsed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Json j = schema(4);
    if (g.Chance(70)) j["type"] = "object";
    ParseOptions opts;
    opts.allow_unique_items = g.Chance(50);
    auto s = Schema::Parse(j, opts);
    if (!s.ok()) {
      EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
      continue;
    }
    ++parsed;
    for (int k = 0; k < 5; ++k) {
      Json obj = g.Chance(50) ? g.Random(5) : g.Guided(s->root(), 5);
      std::vector<FieldError> errs;
      (void)ValidateObject(*s, &obj, &errs);
      CheckWellFormed(errs);
    }
  }
  EXPECT_GT(parsed, 50);
}

}  // namespace
}  // namespace spiderpool::kube::testing::openapi
