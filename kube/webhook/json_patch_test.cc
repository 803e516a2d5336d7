#include "kube/webhook/json_patch.h"

#include <cstdint>
#include <random>
#include <string>

#include "base/json.h"
#include "gtest/gtest.h"

namespace spiderpool::kube::webhook {
namespace {

using base::Json;

Json P(const char* text) { return *base::ParseJson(text); }

void ExpectRoundTrip(const Json& from, const Json& to) {
  Json patch = CreateJsonPatch(from, to);
  absl::StatusOr<Json> applied = base::ApplyJsonPatch(from, patch);
  ASSERT_TRUE(applied.ok()) << applied.status() << "\npatch " << base::DumpJson(patch);
  EXPECT_EQ(*applied, to) << "from " << base::DumpJson(from) << "\nto " << base::DumpJson(to)
                          << "\npatch " << base::DumpJson(patch);
}

TEST(JsonPatchTest, EqualDocumentsGiveAnEmptyPatch) {
  EXPECT_EQ(CreateJsonPatch(P(R"({"a":1,"b":[1,2]})"), P(R"({"b":[1,2],"a":1})")),
            Json::array());
  // Numbers compare by value.
  EXPECT_EQ(CreateJsonPatch(P(R"({"a":4})"), P(R"({"a":4.0})")), Json::array());
}

TEST(JsonPatchTest, ObjectMembers) {
  EXPECT_EQ(CreateJsonPatch(P(R"({"a":1,"b":2,"c":{"d":1}})"),
                            P(R"({"a":1,"c":{"d":2},"e":[1]})")),
            P(R"([{"op":"remove","path":"/b"},
                  {"op":"replace","path":"/c/d","value":2},
                  {"op":"add","path":"/e","value":[1]}])"));
}

TEST(JsonPatchTest, KeysAreEscaped) {
  EXPECT_EQ(EscapeJsonPointerToken("ipam.spidernet.io/ippool-cidr"),
            "ipam.spidernet.io~1ippool-cidr");
  EXPECT_EQ(EscapeJsonPointerToken("a~b/c"), "a~0b~1c");
  Json from = P(R"({"metadata":{"labels":{"x":"1"}}})");
  Json to = P(R"({"metadata":{"labels":{"x":"1","ipam.spidernet.io/ippool-cidr":"10-0-0-0-24"}}})");
  EXPECT_EQ(CreateJsonPatch(from, to),
            P(R"([{"op":"add","path":"/metadata/labels/ipam.spidernet.io~1ippool-cidr",
                   "value":"10-0-0-0-24"}])"));
  ExpectRoundTrip(from, to);
  ExpectRoundTrip(P(R"({"~":1,"/":2,"":3})"), P(R"({"~":2,"":4,"a/b~":5})"));
}

TEST(JsonPatchTest, Arrays) {
  // Shrinking: removals from the end backwards.
  EXPECT_EQ(CreateJsonPatch(P(R"({"ips":["a","b","c","d"]})"), P(R"({"ips":["a-b"]})")),
            P(R"([{"op":"replace","path":"/ips/0","value":"a-b"},
                  {"op":"remove","path":"/ips/3"},
                  {"op":"remove","path":"/ips/2"},
                  {"op":"remove","path":"/ips/1"}])"));
  // Growing: appended by index.
  EXPECT_EQ(CreateJsonPatch(P(R"([1])"), P(R"([1,2,3])")),
            P(R"([{"op":"add","path":"/1","value":2},{"op":"add","path":"/2","value":3}])"));
  ExpectRoundTrip(P(R"({"a":[{"x":1},{"y":[1,2]},3]})"), P(R"({"a":[{"x":2},{"y":[2]}]})"));
}

TEST(JsonPatchTest, TypeChangesAndRoot) {
  EXPECT_EQ(CreateJsonPatch(P(R"({"a":[1]})"), P(R"({"a":{"b":1}})")),
            P(R"([{"op":"replace","path":"/a","value":{"b":1}}])"));
  EXPECT_EQ(CreateJsonPatch(P("1"), P("[1]")), P(R"([{"op":"replace","path":"","value":[1]}])"));
  ExpectRoundTrip(P(R"({"a":null})"), P(R"({"a":false})"));
  ExpectRoundTrip(P("null"), P(R"({"a":1})"));
}

TEST(JsonPatchTest, DropRoundTripOperations) {
  // The request object has an unknown field and an empty list the types drop on re-encoding.
  Json raw = P(R"({"spec":{"subnet":"10.0.0.0/24","ips":[],"future":1},"metadata":{}})");
  Json round_trip = P(R"({"spec":{"subnet":"10.0.0.0/24"},"metadata":{}})");
  Json mutated = P(R"({"spec":{"subnet":"10.0.0.0/24","ipVersion":4},
                       "metadata":{"finalizers":["f"]}})");
  Json patch = DropRoundTripOperations(CreateJsonPatch(raw, mutated),
                                       CreateJsonPatch(raw, round_trip));
  EXPECT_EQ(patch, P(R"([{"op":"add","path":"/metadata/finalizers","value":["f"]},
                         {"op":"add","path":"/spec/ipVersion","value":4}])"));
  absl::StatusOr<Json> applied = base::ApplyJsonPatch(raw, patch);
  ASSERT_TRUE(applied.ok());
  EXPECT_EQ((*applied)["spec"]["future"], 1);
  EXPECT_EQ((*applied)["spec"]["ips"], Json::array());
  EXPECT_EQ((*applied)["spec"]["ipVersion"], 4);
  // A mutation of a field the round trip also touches, to a different value, is kept.
  Json mutated2 = P(R"({"spec":{"subnet":"10.0.0.0/24","ips":["10.0.0.1"]},"metadata":{}})");
  Json patch2 = DropRoundTripOperations(CreateJsonPatch(raw, mutated2),
                                        CreateJsonPatch(raw, round_trip));
  EXPECT_EQ(patch2, P(R"([{"op":"add","path":"/spec/ips/0","value":"10.0.0.1"}])"));
}

// Random documents and random edits of them: applying the patch always gives the target.
class RandomJson {
 public:
  explicit RandomJson(uint64_t seed) : rng_(seed) {}
  uint64_t Pick(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  std::string Key() {
    static const char* kKeys[] = {"a", "b", "ips", "x/y", "t~0", "", "metadata", "0", "-"};
    return kKeys[Pick(9)];
  }
  Json Value(int depth) {
    switch (depth <= 0 ? Pick(4) : Pick(7)) {
      case 0: return nullptr;
      case 1: return static_cast<int64_t>(Pick(5)) - 2;
      case 2: return Pick(2) == 1;
      case 3: return Key();
      case 4:
      case 5: {
        Json o = Json::object();
        for (uint64_t i = 0, n = Pick(4); i < n; ++i) o[Key()] = Value(depth - 1);
        return o;
      }
      default: {
        Json a = Json::array();
        for (uint64_t i = 0, n = Pick(5); i < n; ++i) a.push_back(Value(depth - 1));
        return a;
      }
    }
  }
  // Edits a copy in a few random places.
  Json Edit(Json j, int depth) {
    if (depth <= 0 || Pick(4) == 0) return Pick(2) == 0 ? j : Value(2);
    if (j.is_object()) {
      for (uint64_t i = 0, n = 1 + Pick(3); i < n; ++i) {
        std::string k = Key();
        switch (Pick(3)) {
          case 0: j.erase(k); break;
          case 1: j[k] = Value(2); break;
          default:
            if (j.contains(k)) j[k] = Edit(j[k], depth - 1);
        }
      }
    } else if (j.is_array()) {
      if (!j.empty() && Pick(2) == 0) j.erase(j.begin() + static_cast<int64_t>(Pick(j.size())));
      if (Pick(2) == 0) j.push_back(Value(1));
      if (!j.empty()) {
        size_t i = Pick(j.size());
        j[i] = Edit(j[i], depth - 1);
      }
    }
    return j;
  }

 private:
  std::mt19937_64 rng_;
};

TEST(JsonPatchTest, RandomDocumentsRoundTrip) {
  RandomJson r(0x5eedULL);
  for (int i = 0; i < 3000; ++i) {
    Json from = r.Value(4);
    Json to = r.Edit(from, 4);
    ExpectRoundTrip(from, to);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace spiderpool::kube::webhook
