// Fuzz-style test of spec building (deterministic random inputs in a gtest, as in
// api/decode_fuzz_test.cc): BuildSpec never crashes on arbitrary claim data, and every spec it
// produces is valid under its own cdiVersion and re-parses (YAML and JSON) to the same object.
// Random JSON trees also go through MinimumVersion and ToYaml. Run under --config=asan too.

#include <random>
#include <string>

#include "base/json.h"
#include "base/yaml.h"
#include "dra/cdi/spec.h"
#include "gtest/gtest.h"

namespace spiderpool::dra::cdi {
namespace {

using base::Json;

constexpr int kIterations = 20000;

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  size_t Below(size_t n) { return n == 0 ? 0 : rng_() % n; }
  bool Chance(int percent) { return static_cast<int>(Below(100)) < percent; }

  // Strings biased towards the interesting: valid names, separators, digits first, UTF-8,
  // invalid bytes, NUL, long runs.
  std::string Str(size_t max_len = 24) {
    static const std::vector<std::string> pieces = {
        "a", "Z", "0", "9", "-", "_", ".", "/", "=", " ", ":", "\n", "\"", "\\", "'", "#",
        "yes", "null", "~", "\xc3\xa9", "\xf0\x9f\x98\x80", "\xe2\x80\xa8", "\xc2\x85",
        "\xef\xbb\xbf", "\xff", "\xc3", "\xed\xa0\x80", std::string("\0", 1), "\x7f", "\t",
        "claim", "ETH0", "/usr/lib", "{", "[", "&", "*", "!", "%", "@", "`"};
    std::string s;
    const size_t n = Below(max_len + 1);
    for (size_t i = 0; i < n; ++i) {
      if (Chance(70)) {
        s += "abcxyz0123456789ABC"[Below(19)];
      } else {
        s += pieces[Below(pieces.size())];
      }
    }
    if (Chance(2)) s.assign(Below(300), 'a');
    return s;
  }

  std::string Alnum(size_t max_len) {
    std::string s;
    for (size_t n = Below(max_len + 1); n > 0; --n) s += "abcxyz0123456789ABC-_."[Below(22)];
    return s + "0";
  }

  ClaimSpec Claim() {
    ClaimSpec c;
    c.claim_uid = Chance(60) ? "u" + Alnum(12) : Str(40);
    for (size_t i = Below(4); i > 0; --i) c.env.emplace_back(Chance(80) ? "E" + Alnum(6) : Str(6), Str());
    for (size_t i = Below(3); i > 0; --i) {
      Mount m{.host_path = Chance(80) ? "/" + Str() : Str(), .container_path = Chance(80) ? "/" + Str() : Str()};
      for (size_t k = Below(4); k > 0; --k) m.options.push_back(Chance(80) ? "ro" : Str(5));
      if (Chance(20)) m.type = Str(5);
      c.mounts.push_back(std::move(m));
    }
    if (Chance(10)) c.net_devices.push_back({.host_interface_name = Str(17), .name = Str(17)});
    if (Chance(10)) c.device_annotations[Str(8)] = Str();
    if (Chance(20)) {
      const auto& v = KnownVersions();
      c.version_pin = Chance(80) ? v[Below(v.size())] : Str(6);
    }
    return c;
  }

  Json Tree(int depth) {
    switch (Below(depth > 3 ? 4 : 7)) {
      case 0: return nullptr;
      case 1: return Chance(50);
      case 2: return static_cast<int64_t>(rng_()) >> Below(64);
      case 3: {
        // Only valid UTF-8 strings: the JSON library rejects the rest at parse time anyway.
        std::string s = Str();
        auto ok = BuildSpec({.claim_uid = "x", .env = {{"V", s}}});
        return ok.ok() ? Json(s) : Json("plain");
      }
      case 4: case 5: {
        Json o = Json::object();
        static const char* keys[] = {"devices", "containerEdits", "name", "annotations", "mounts",
                                     "type", "netDevices", "intelRdt", "schemata", "kind",
                                     "deviceNodes", "hostPath", "additionalGids", "enableMonitoring"};
        for (size_t i = Below(5); i > 0; --i) o[keys[Below(std::size(keys))]] = Tree(depth + 1);
        return o;
      }
      default: {
        Json a = Json::array();
        for (size_t i = Below(4); i > 0; --i) a.push_back(Tree(depth + 1));
        return a;
      }
    }
  }

 private:
  std::mt19937_64 rng_;
};

TEST(SpecFuzzTest, BuildNeverCrashesAndOutputReparses) {
  Gen g(0xcd15eedULL);
  int built = 0;
  for (int it = 0; it < kIterations; ++it) {
    ClaimSpec c = g.Claim();
    BuildOptions o;
    if (g.Chance(20)) o.max_version = KnownVersions()[g.Below(KnownVersions().size())];
    auto s = BuildSpec(c, o);
    if (!s.ok()) {
      ASSERT_FALSE(s.status().message().empty());
      continue;
    }
    ++built;
    SCOPED_TRACE(s->json.dump(-1, ' ', true, Json::error_handler_t::replace));
    ASSERT_EQ(s->json["cdiVersion"], s->version);
    ASSERT_LE(CompareVersions(MinimumVersion(s->json).version, s->version), 0);
    if (c.version_pin.empty()) {
      ASSERT_LE(CompareVersions(s->version, o.max_version), 0);
      ASSERT_EQ(MinimumVersion(s->json).version, s->version);
    }
    ASSERT_TRUE(ValidateKind(s->json["kind"].get<std::string>(), s->version).ok());
    ASSERT_TRUE(ValidateDeviceName(c.claim_uid, s->version).ok());
    ASSERT_EQ(s->json["devices"][0]["containerEdits"]["env"][0], "DRA_CLAIM_UID=" + c.claim_uid);
    for (const auto& e : s->json["devices"][0]["containerEdits"]["env"]) {
      const std::string& kv = e.get_ref<const std::string&>();
      ASSERT_GT(kv.find('='), 0u);
      ASSERT_NE(kv.find('='), std::string::npos);
    }
    const std::string yaml = ToYaml(s->json);
    auto y = base::ParseYaml(yaml);
    ASSERT_TRUE(y.ok()) << y.status() << "\n" << yaml;
    ASSERT_EQ(*y, s->json) << yaml;
    auto j = base::ParseJson(base::DumpJson(s->json));
    ASSERT_TRUE(j.ok());
    ASSERT_EQ(*j, s->json);
  }
  // The generator must reach the success path often enough to mean something.
  EXPECT_GT(built, kIterations / 20);
}

TEST(SpecFuzzTest, RandomDocumentsThroughMinimumVersionAndYaml) {
  Gen g(0x5eed2ULL);
  for (int it = 0; it < kIterations / 4; ++it) {
    // Wrapped: a bare top-level null is an empty YAML document, which base::ParseYaml skips.
    Json t = {{"doc", g.Tree(0)}};
    MinVersion m = MinimumVersion(t);
    ASSERT_TRUE(ParseVersion(m.version).ok());
    const std::string yaml = ToYaml(t);
    auto y = base::ParseYaml(yaml);
    ASSERT_TRUE(y.ok()) << y.status() << "\n" << yaml;
    ASSERT_EQ(*y, t) << yaml;
  }
}

}  // namespace
}  // namespace spiderpool::dra::cdi
