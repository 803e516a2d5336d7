// Fuzz-style test (deterministic, in a gtest): random and mutated objects of every kind through
// every Validate*/Mutate* function. Properties:
//   - nothing crashes (run under --config=asan / ubsan too);
//   - every Result is well formed: errors have a body, a denial comes alone, the Status encodes,
//     Message() is empty exactly when ok();
//   - Mutate is idempotent: mutating a mutated object changes nothing (compared as JSON), and so
//     validating the mutated object gives the same verdict as validating it mutated twice.
// Inputs: the api/testdata seeds decoded as each kind after JSON-structure mutations (wrong
// types, deleted and grafted subtrees, IP-ish strings), plus generated pools/subnets/reserved IPs
// whose IP fields are drawn from small address spaces so overlaps and containment really happen.

#include <cstdint>
#include <deque>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/codec.h"
#include "api/validation/validation.h"
#include "base/ip.h"
#include "base/json.h"
#include "base/yaml.h"

namespace spiderpool::api::validation {
namespace {

namespace fs = std::filesystem;
using base::Json;

constexpr uint64_t kSeed = 0xa11e7707ULL;
constexpr int kMutatedIterations = 1500;
constexpr int kGeneratedIterations = 1000;

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  size_t Pick(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(gen_);
  }
  bool Chance(int percent) { return static_cast<int>(Pick(100)) < percent; }
  template <typename T>
  const T& Of(const std::vector<T>& v) {
    return v[Pick(v.size())];
  }

 private:
  std::mt19937_64 gen_;
};

// ---- Generated objects ----------------------------------------------------------------------

const std::vector<std::string> kSubnets = {
    "10.0.0.0/24", "10.0.0.0/24", "10.0.0.0/24", "10.0.0.0/25", "10.0.0.128/25", "10.0.0.0/16",
    "10.0.0.1/24", "fd00::/120",  "fd00::/120",  "fd00::/64",   "bad",           "",
    "0.0.0.0/0",   "::/0",        "10.0.0.0/32"};

std::string RandomIP(Rng& r, bool v6) {
  if (v6) {
    static const char* kHex = "0123456789abcdef";
    std::string s = "fd00::";
    s += kHex[r.Pick(16)];
    s += kHex[r.Pick(16)];
    return s;
  }
  if (r.Chance(90)) return "10.0.0." + std::to_string(1 + r.Pick(254));
  return "10.0." + std::to_string(r.Pick(3)) + "." + std::to_string(r.Pick(260));
}

// "a-b", usually in order.
std::string RandomPair(Rng& r, bool v6) {
  std::string a = RandomIP(r, v6), b = RandomIP(r, v6);
  if (r.Chance(85)) {
    auto pa = base::IPAddress::Parse(a), pb = base::IPAddress::Parse(b);
    if (pa.ok() && pb.ok() && *pb < *pa) std::swap(a, b);
  }
  return a + "-" + b;
}

std::string Gateway(Rng& r, bool v6) {
  if (r.Chance(70)) return v6 ? "fd00::1" : "10.0.0.1";
  return RandomIP(r, v6);
}

std::string RandomRange(Rng& r, bool v6) {
  switch (r.Pick(30)) {
    case 0: return "junk";
    case 1: return RandomIP(r, !v6);
    case 2: return RandomIP(r, v6) + "-" + RandomIP(r, v6) + "-" + RandomIP(r, v6);
    case 3: return RandomIP(r, v6) + "/24";
    case 4:
    case 5: return RandomIP(r, v6);
    default: return RandomPair(r, v6);
  }
}

std::vector<std::string> RandomRanges(Rng& r, bool v6, size_t max) {
  std::vector<std::string> out;
  size_t n = r.Pick(max + 1);
  for (size_t i = 0; i < n; ++i) out.push_back(RandomRange(r, v6));
  return out;
}

std::optional<std::vector<api::Route>> RandomRoutes(Rng& r, bool v6) {
  if (r.Chance(70)) return std::nullopt;
  std::vector<api::Route> routes;
  size_t n = r.Pick(4);
  static const std::vector<std::string> kDsts = {"0.0.0.0/0", "::/0", "10.9.0.0/16", "fd09::/64",
                                                 "x", "10.9.0.0/16"};
  for (size_t i = 0; i < n; ++i) routes.push_back({r.Of(kDsts), RandomIP(r, v6)});
  return routes;
}

std::optional<int64_t> RandomVersion(Rng& r, bool v6) {
  switch (r.Pick(8)) {
    case 0: return std::nullopt;
    case 1: return 5;
    case 2: return v6 ? 4 : 6;
    default: return v6 ? 6 : 4;
  }
}

api::SpiderSubnet RandomSubnet(Rng& r, int i) {
  api::SpiderSubnet s;
  s.metadata.name = "subnet" + std::to_string(i);
  s.metadata.uid = "uid-" + s.metadata.name;
  s.spec.subnet = r.Of(kSubnets);
  bool v6 = s.spec.subnet.find(':') != std::string::npos;
  s.spec.ip_version = RandomVersion(r, v6);
  s.spec.ips = RandomRanges(r, v6, 4);
  s.spec.exclude_ips = RandomRanges(r, v6, 2);
  if (r.Chance(60)) s.spec.gateway = Gateway(r, v6);
  s.spec.routes = RandomRoutes(r, v6);
  if (r.Chance(30)) {
    api::PoolIPPreAllocations pre;
    pre["pool" + std::to_string(r.Pick(4))].ips = RandomRanges(r, v6, 2);
    s.SetControlledIPPools(pre);
  }
  if (r.Chance(10)) s.status.controlled_ip_pools = "{broken";
  if (r.Chance(20)) s.status.allocated_ip_count = static_cast<int64_t>(r.Pick(5));
  if (r.Chance(10)) s.metadata.deletion_timestamp = api::Time{};
  if (r.Chance(50)) s.metadata.finalizers = {"spiderpool.spidernet.io"};
  if (r.Chance(50)) {
    auto label = CIDRLabelValue(s.spec.subnet);
    if (label.ok()) s.metadata.labels["ipam.spidernet.io/subnet-cidr"] = *label;
  }
  return s;
}

api::SpiderIPPool RandomPool(Rng& r, int i, int subnets) {
  api::SpiderIPPool p;
  p.metadata.name = "pool" + std::to_string(i);
  p.spec.subnet = r.Of(kSubnets);
  bool v6 = p.spec.subnet.find(':') != std::string::npos;
  p.spec.ip_version = RandomVersion(r, v6);
  p.spec.ips = RandomRanges(r, v6, 5);
  p.spec.exclude_ips = RandomRanges(r, v6, 2);
  if (r.Chance(60)) p.spec.gateway = Gateway(r, v6);
  p.spec.routes = RandomRoutes(r, v6);
  if (r.Chance(40)) {
    api::LabelSelector sel;
    if (r.Chance(60)) sel.match_labels[r.Chance(50) ? "app" : "bad key"] = r.Chance(80) ? "web" : "-";
    if (r.Chance(40)) {
      static const std::vector<std::string> kOps = {"In", "NotIn", "Exists", "DoesNotExist", "Gt"};
      api::LabelSelectorRequirement req{.key = "k", .op = r.Of(kOps)};
      if (r.Chance(50)) req.values = {"v"};
      sel.match_expressions.push_back(req);
    }
    p.spec.pod_affinity = sel;
  }
  if (r.Chance(20)) p.metadata.labels["ipam.spidernet.io/owner-application-name"] = "web";
  if (r.Chance(40) && subnets > 0) {
    std::string owner = "subnet" + std::to_string(r.Pick(static_cast<size_t>(subnets) + 1));
    p.metadata.owner_references.push_back({.api_version = "spiderpool.spidernet.io/v2beta1",
                                           .kind = r.Chance(90) ? "SpiderSubnet" : "Deployment",
                                           .name = owner,
                                           .uid = r.Chance(80) ? "uid-" + owner : "stale",
                                           .controller = r.Chance(90)});
    if (r.Chance(50)) p.metadata.labels["ipam.spidernet.io/owner-spider-subnet"] = owner;
  }
  if (r.Chance(40)) {
    api::PoolIPAllocations alloc;
    size_t n = r.Pick(4);
    for (size_t k = 0; k < n; ++k) {
      alloc[r.Chance(90) ? RandomIP(r, v6) : "not-an-ip"] = {.pod = "ns/pod" + std::to_string(k),
                                                             .pod_uid = "u"};
    }
    p.SetAllocatedIPs(alloc);
  }
  if (r.Chance(5)) p.status.allocated_ips = "[]";
  if (r.Chance(10)) p.metadata.deletion_timestamp = api::Time{};
  if (r.Chance(50)) p.metadata.finalizers = {"spiderpool.spidernet.io"};
  return p;
}

api::SpiderReservedIP RandomReservedIP(Rng& r) {
  api::SpiderReservedIP rip;
  rip.metadata.name = "rip";
  bool v6 = r.Chance(50);
  rip.spec.ip_version = RandomVersion(r, v6);
  rip.spec.ips = RandomRanges(r, v6, 4);
  if (r.Chance(10)) rip.metadata.deletion_timestamp = api::Time{};
  return rip;
}

// ---- Properties -----------------------------------------------------------------------------

void CheckResult(const Result& r, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_FALSE(r.kind.empty());
  EXPECT_EQ(r.group, "spiderpool.spidernet.io");
  if (r.denied.has_value()) {
    EXPECT_TRUE(r.errors.empty());
    EXPECT_TRUE(r.denied->code == 403 || r.denied->code == 409) << r.denied->code;
  }
  for (const FieldError& e : r.errors) {
    EXPECT_FALSE(e.Body().empty());
    EXPECT_FALSE(e.ToString().empty());
  }
  EXPECT_EQ(r.Message().empty(), r.ok());
  api::Status s = r.ToStatus();
  Json j = api::Encode(s);
  EXPECT_TRUE(j.is_object());
  if (!r.ok()) {
    EXPECT_EQ(s.status, "Failure");
    EXPECT_FALSE(r.ToAbslStatus().ok());
  }
}

std::vector<std::string> Verdict(const Result& r) {
  std::vector<std::string> out;
  if (r.denied.has_value()) out.push_back(r.denied->message);
  for (const FieldError& e : r.errors) out.push_back(e.ToString());
  return out;
}

// Mutating twice equals mutating once, and the verdicts on both agree.
template <typename T, typename MutateFn, typename ValidateFn>
void CheckMutate(const T& obj, const Context& ctx, MutateFn mutate, ValidateFn validate,
                 const std::string& what) {
  SCOPED_TRACE(what);
  T once = obj;
  (void)mutate(&once, ctx);
  T twice = once;
  (void)mutate(&twice, ctx);
  EXPECT_EQ(api::Encode(twice), api::Encode(once)) << base::DumpJson(api::Encode(obj));
  Result a = validate(once, ctx);
  Result b = validate(twice, ctx);
  CheckResult(a, what + " after mutate");
  EXPECT_EQ(Verdict(a), Verdict(b));
}

struct Objects {
  std::deque<api::SpiderIPPool> pools;
  std::deque<api::SpiderSubnet> subnets;
  Context ctx;
};

void RunIPKinds(const api::SpiderIPPool& pool, const api::SpiderIPPool& old_pool,
                const api::SpiderSubnet& subnet, const api::SpiderSubnet& old_subnet,
                const api::SpiderReservedIP& rip, const api::SpiderReservedIP& old_rip,
                const Context& ctx) {
  CheckResult(ValidateIPPoolCreate(pool, ctx), "pool create");
  CheckResult(ValidateIPPoolUpdate(old_pool, pool, ctx), "pool update");
  CheckResult(ValidateIPPoolDelete(pool, ctx), "pool delete");
  CheckMutate(pool, ctx, MutateIPPool, ValidateIPPoolCreate, "pool mutate");
  CheckResult(ValidateSubnetCreate(subnet, ctx), "subnet create");
  CheckResult(ValidateSubnetUpdate(old_subnet, subnet, ctx), "subnet update");
  CheckResult(ValidateSubnetDelete(subnet, ctx), "subnet delete");
  CheckMutate(subnet, ctx, MutateSubnet, ValidateSubnetCreate, "subnet mutate");
  CheckResult(ValidateReservedIPCreate(rip, ctx), "rip create");
  CheckResult(ValidateReservedIPUpdate(old_rip, rip, ctx), "rip update");
  CheckMutate(rip, ctx, MutateReservedIP, ValidateReservedIPCreate, "rip mutate");
}

TEST(ValidationFuzz, GeneratedPoolsSubnetsAndReservedIPs) {
  Rng r(kSeed);
  int not_ok = 0, ok = 0;
  for (int it = 0; it < kGeneratedIterations; ++it) {
    Objects w;
    int n_subnets = static_cast<int>(r.Pick(4));
    for (int i = 0; i < n_subnets; ++i) w.subnets.push_back(RandomSubnet(r, i));
    int n_pools = static_cast<int>(r.Pick(5));
    for (int i = 0; i < n_pools; ++i) w.pools.push_back(RandomPool(r, i, n_subnets));
    w.ctx.ippools = Refs<api::SpiderIPPool>(w.pools);
    w.ctx.subnets = Refs<api::SpiderSubnet>(w.subnets);
    w.ctx.config.enable_ipv4 = r.Chance(90);
    w.ctx.config.enable_ipv6 = r.Chance(90);
    w.ctx.config.enable_spider_subnet = r.Chance(80);
    w.ctx.config.enable_validating_resources_deleted_webhook = r.Chance(50);

    api::SpiderIPPool pool = RandomPool(r, static_cast<int>(r.Pick(6)), n_subnets);
    api::SpiderIPPool old_pool = r.Chance(50) ? pool : RandomPool(r, 0, n_subnets);
    api::SpiderSubnet subnet = RandomSubnet(r, static_cast<int>(r.Pick(5)));
    api::SpiderSubnet old_subnet = r.Chance(50) ? subnet : RandomSubnet(r, 0);
    api::SpiderReservedIP rip = RandomReservedIP(r);
    api::SpiderReservedIP old_rip = r.Chance(50) ? rip : RandomReservedIP(r);
    RunIPKinds(pool, old_pool, subnet, old_subnet, rip, old_rip, w.ctx);

    Result res = ValidateIPPoolCreate(pool, w.ctx);
    (res.ok() ? ok : not_ok)++;
    if (HasFailure()) break;
  }
  // The generator must reach both verdicts, or it tests nothing.
  EXPECT_GT(ok, kGeneratedIterations / 50);
  EXPECT_GT(not_ok, kGeneratedIterations / 10);
}

// ---- Mutated seeds ----------------------------------------------------------------------------

// The Spider objects of api/testdata; `malformed` adds the deliberately broken ones.
std::vector<Json> Seeds(bool malformed = true) {
  std::vector<Json> seeds;
  for (const auto& e : fs::recursive_directory_iterator("api/testdata")) {
    if (e.path().extension() != ".yaml") continue;
    if (!malformed && e.path().string().find("malformed") != std::string::npos) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    auto docs = base::ParseYamlDocuments(ss.str());
    if (!docs.ok()) continue;
    for (Json& d : *docs) {
      if (d.is_object() && d.value("apiVersion", "") == "spiderpool.spidernet.io/v2beta1") {
        seeds.push_back(std::move(d));
      }
    }
  }
  return seeds;
}

Json RandomValue(Rng& r) {
  static const std::vector<std::string> kStrings = {
      "", "10.0.0.1", "10.0.0.300", "10.0.0.0/24", "10.0.0.1/24", "10.0.0.1-10.0.0.9",
      "10.0.0.9-10.0.0.1", "fd00::1-fd00::ff", "::/0", "0.0.0.0/0", "4", "6", "macvlan", "ipvlan",
      "vlan", "sriov", "ovs", "ib-sriov", "ipoib", "custom", "auto", "manual", "{not json",
      "{\"type\":\"tuning\"}", "0a:1b", "0b:1b", "-1", "\xc3\xa9", "In", "Exists"};
  switch (r.Pick(9)) {
    case 0: return nullptr;
    case 1: return r.Chance(50);
    case 2: return static_cast<int64_t>(r.Pick(10000)) - 5000;
    case 3: return r.Of(kStrings);
    case 4: return Json::object();
    case 5: return Json::array({r.Of(kStrings)});
    case 6: return Json::array({r.Of(kStrings), r.Of(kStrings), r.Of(kStrings)});
    case 7: return Json::object({{"name", r.Of(kStrings)}});
    default: return static_cast<int64_t>(r.Pick(8));
  }
}

Json* RandomNode(Rng& r, Json* j, Json** parent, std::string* key, size_t* index) {
  Json* cur = j;
  *parent = nullptr;
  while ((cur->is_object() || cur->is_array()) && !cur->empty() && !r.Chance(25)) {
    *parent = cur;
    if (cur->is_object()) {
      auto it = cur->begin();
      std::advance(it, r.Pick(cur->size()));
      *key = it.key();
      cur = &it.value();
    } else {
      *index = r.Pick(cur->size());
      cur = &(*cur)[*index];
    }
  }
  return cur;
}

void MutateTree(Rng& r, const std::vector<Json>& seeds, Json* j) {
  Json* parent = nullptr;
  std::string key;
  size_t index = 0;
  Json* node = RandomNode(r, j, &parent, &key, &index);
  switch (r.Pick(4)) {
    case 0:
      if (parent != nullptr && parent->is_object()) {
        parent->erase(key);
        return;
      }
      if (parent != nullptr && parent->is_array()) {
        parent->erase(index);
        return;
      }
      *node = RandomValue(r);
      return;
    case 1:
      if (node->is_array() && !node->empty()) {
        node->push_back((*node)[r.Pick(node->size())]);
        return;
      }
      *node = RandomValue(r);
      return;
    case 2: {  // graft a subtree of another seed
      Json other = r.Of(seeds);
      Json* op = nullptr;
      std::string ok;
      size_t oi = 0;
      *node = *RandomNode(r, &other, &op, &ok, &oi);
      return;
    }
    default:
      *node = RandomValue(r);
  }
}

template <typename T>
T DecodeLoose(const Json& j) {
  DecodeErrors errs;
  return DecodeInto<T>(j, &errs);
}

TEST(ValidationFuzz, MutatedSeedsOfEveryKind) {
  std::vector<Json> seeds = Seeds();
  ASSERT_GE(seeds.size(), 6u);
  Rng r(kSeed ^ 0x5eed);
  Context nad_ctx;
  nad_ctx.net_attach_def_owners = [](std::string_view, std::string_view name)
      -> absl::StatusOr<std::optional<std::vector<api::OwnerReference>>> {
    if (name.empty()) return absl::UnavailableError("x");
    if (name.size() % 2 == 0) return std::nullopt;
    return std::vector<api::OwnerReference>{{.kind = "SpiderMultusConfig", .name = "other"}};
  };
  nad_ctx.multus_config_exists = [](std::string_view, std::string_view name)
      -> absl::StatusOr<bool> { return name.size() % 3 != 0; };
  for (int it = 0; it < kMutatedIterations; ++it) {
    Json j = r.Of(seeds);
    int n = 1 + static_cast<int>(r.Pick(4));
    for (int k = 0; k < n; ++k) MutateTree(r, seeds, &j);
    Json old_j = r.Chance(50) ? r.Of(seeds) : j;

    // Every kind from every input: a pool decoded from a coordinator is still an input.
    Objects w;
    for (int k = 0; k < 3; ++k) {
      w.pools.push_back(DecodeLoose<api::SpiderIPPool>(r.Of(seeds)));
      w.subnets.push_back(DecodeLoose<api::SpiderSubnet>(r.Of(seeds)));
    }
    w.pools.push_back(DecodeLoose<api::SpiderIPPool>(j));
    w.ctx = nad_ctx;
    w.ctx.ippools = Refs<api::SpiderIPPool>(w.pools);
    w.ctx.subnets = Refs<api::SpiderSubnet>(w.subnets);
    w.ctx.config.enable_validating_resources_deleted_webhook = true;

    RunIPKinds(DecodeLoose<api::SpiderIPPool>(j), DecodeLoose<api::SpiderIPPool>(old_j),
               DecodeLoose<api::SpiderSubnet>(j), DecodeLoose<api::SpiderSubnet>(old_j),
               DecodeLoose<api::SpiderReservedIP>(j), DecodeLoose<api::SpiderReservedIP>(old_j),
               w.ctx);

    auto coord = DecodeLoose<api::SpiderCoordinator>(j);
    CheckResult(ValidateCoordinatorCreate(coord, w.ctx), "coordinator create");
    CheckResult(ValidateCoordinatorUpdate(DecodeLoose<api::SpiderCoordinator>(old_j), coord, w.ctx),
                "coordinator update");
    CheckMutate(coord, w.ctx, MutateCoordinator, ValidateCoordinatorCreate, "coordinator mutate");

    auto smc = DecodeLoose<api::SpiderMultusConfig>(j);
    CheckResult(ValidateMultusConfigCreate(smc, w.ctx), "smc create");
    CheckResult(ValidateMultusConfigUpdate(DecodeLoose<api::SpiderMultusConfig>(old_j), smc, w.ctx),
                "smc update");

    auto scp = DecodeLoose<api::SpiderClaimParameter>(j);
    CheckResult(ValidateClaimParameterCreate(scp, w.ctx), "scp create");
    CheckResult(ValidateClaimParameterUpdate(DecodeLoose<api::SpiderClaimParameter>(old_j), scp,
                                             w.ctx),
                "scp update");
    if (HasFailure()) {
      ADD_FAILURE() << "input: " << base::DumpJson(j);
      break;
    }
  }
}

// The unmutated seeds are the realistic objects: after mutation they must be valid, with the
// other seeds as the existing objects (they are consistent with each other).
TEST(ValidationFuzz, SeedsAreValidAfterMutation) {
  Objects w;
  for (const Json& j : Seeds(false)) {
    std::string kind = j.value("kind", "");
    if (kind == "SpiderIPPool") w.pools.push_back(DecodeLoose<api::SpiderIPPool>(j));
    if (kind == "SpiderSubnet") w.subnets.push_back(DecodeLoose<api::SpiderSubnet>(j));
  }
  w.ctx.ippools = Refs<api::SpiderIPPool>(w.pools);
  w.ctx.subnets = Refs<api::SpiderSubnet>(w.subnets);
  ASSERT_FALSE(w.pools.empty());
  ASSERT_FALSE(w.subnets.empty());
  for (const Json& j : Seeds(false)) {
    std::string kind = j.value("kind", "");
    SCOPED_TRACE(base::DumpJson(j));
    const Context& ctx = w.ctx;
    if (kind == "SpiderIPPool") {
      auto p = DecodeLoose<api::SpiderIPPool>(j);
      ASSERT_TRUE(MutateIPPool(&p, ctx).ok());
      Result r = ValidateIPPoolUpdate(p, p, ctx);
      EXPECT_TRUE(r.ok()) << r.Message();
    } else if (kind == "SpiderSubnet") {
      auto s = DecodeLoose<api::SpiderSubnet>(j);
      ASSERT_TRUE(MutateSubnet(&s, ctx).ok());
      Result r = ValidateSubnetUpdate(s, s, ctx);
      EXPECT_TRUE(r.ok()) << r.Message();
    } else if (kind == "SpiderReservedIP") {
      auto s = DecodeLoose<api::SpiderReservedIP>(j);
      ASSERT_TRUE(MutateReservedIP(&s, ctx).ok());
      Result r = ValidateReservedIPCreate(s, ctx);
      EXPECT_TRUE(r.ok()) << r.Message();
    } else if (kind == "SpiderCoordinator") {
      auto c = DecodeLoose<api::SpiderCoordinator>(j);
      ASSERT_TRUE(MutateCoordinator(&c, ctx).ok());
      Result r = ValidateCoordinatorCreate(c, ctx);
      EXPECT_TRUE(r.ok()) << r.Message();
    } else if (kind == "SpiderMultusConfig") {
      auto m = DecodeLoose<api::SpiderMultusConfig>(j);
      Result r = ValidateMultusConfigCreate(m, ctx);
      EXPECT_TRUE(r.ok()) << r.Message();
    }
  }
}

}  // namespace
}  // namespace spiderpool::api::validation
