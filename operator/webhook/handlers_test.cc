// The Spider handlers through AdmissionServer::Handle (the server's request handling without
// TLS), with in-memory sources: what each webhook answers, which list it reads.

#include "operator/webhook/handlers.h"

#include <atomic>
#include <memory>
#include <string>

#include "api/admission.h"
#include "api/codec.h"
#include "api/spider.h"
#include "base/json.h"
#include "gtest/gtest.h"
#include "kube/webhook/server.h"
#include "operator/webhook/configurations.h"

namespace spiderpool::op::webhook {
namespace {

using base::Json;
namespace kw = ::spiderpool::kube::webhook;

Json P(const char* text) {
  auto j = base::ParseJson(text);
  EXPECT_TRUE(j.ok()) << j.status() << text;
  return j.ok() ? *j : Json();
}

struct Answer {
  int http = 0;
  Json response;  // the review's response
  Json patched;   // the object with the patch applied (mutating)
  std::string message() const { return response["status"].value("message", ""); }
  int code() const { return response["status"].value("code", 0); }
};

Answer Call(const kw::AdmissionServer& s, const std::string& path, const std::string& kind,
            const std::string& op, Json object, Json old = nullptr) {
  Json name_src = object.is_object() ? object : old;
  Json req = {{"uid", "uid-1"},
              {"kind", {{"group", "spiderpool.spidernet.io"}, {"version", "v2beta1"},
                        {"kind", kind}}},
              {"resource", {{"group", "spiderpool.spidernet.io"}, {"version", "v2beta1"},
                            {"resource", "x"}}},
              {"name", name_src["metadata"].value("name", "")},
              {"operation", op},
              {"userInfo", {{"username", "admin"}}}};
  if (!object.is_null()) req["object"] = object;
  if (!old.is_null()) req["oldObject"] = old;
  Json review = {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"},
                 {"request", req}};
  kw::HttpReply r = s.Handle({.path = path, .body = base::DumpJson(review)});
  Answer a;
  a.http = r.status;
  auto body = base::ParseJson(r.body);
  if (!body.ok()) return a;
  a.response = (*body)["response"];
  if (a.response.is_object()) {
    EXPECT_EQ(a.response["uid"], "uid-1");
  }
  a.patched = object;
  if (a.response.contains("patch")) {
    auto resp = api::Decode<api::AdmissionResponse>(a.response);
    EXPECT_TRUE(resp.ok());
    auto patch = api::ResponsePatch(*resp);
    EXPECT_TRUE(patch.ok());
    auto applied = base::ApplyJsonPatch(object, *patch);
    EXPECT_TRUE(applied.ok()) << applied.status();
    if (applied.ok()) a.patched = *applied;
  }
  return a;
}

Json Pool(const std::string& name, const std::string& subnet, Json ips = Json::array()) {
  return {{"apiVersion", "spiderpool.spidernet.io/v2beta1"},
          {"kind", "SpiderIPPool"},
          {"metadata", {{"name", name}}},
          {"spec", {{"subnet", subnet}, {"ips", ips}}}};
}

template <typename T>
std::shared_ptr<const T> Typed(const Json& j) {
  auto t = api::Decode<T>(j);
  EXPECT_TRUE(t.ok()) << t.status();
  return std::make_shared<const T>(t.ok() ? *t : T{});
}

class HandlersTest : public ::testing::Test {
 protected:
  void SetUp() override { Register(); }

  void Register() {
    server_ = std::make_unique<kw::AdmissionServer>(kw::ServerOptions{});
    options_.sources.ippools = [this]() -> absl::StatusOr<std::vector<
                                            std::shared_ptr<const api::SpiderIPPool>>> {
      ++cache_reads_;
      return cached_pools_;
    };
    options_.sources.subnets = [this]() -> absl::StatusOr<std::vector<
                                            std::shared_ptr<const api::SpiderSubnet>>> {
      ++subnet_cache_reads_;
      return cached_subnets_;
    };
    RegisterHandlers(server_.get(), options_);
  }

  void UseLiveLists() {
    options_.sources.ippools_live = [this]() -> absl::StatusOr<std::vector<
                                                 std::shared_ptr<const api::SpiderIPPool>>> {
      ++live_reads_;
      if (!live_error_.ok()) return live_error_;
      return live_pools_;
    };
    options_.sources.subnets_live = [this]() -> absl::StatusOr<std::vector<
                                                 std::shared_ptr<const api::SpiderSubnet>>> {
      ++subnet_live_reads_;
      return std::vector<std::shared_ptr<const api::SpiderSubnet>>{};
    };
    Register();
  }

  std::unique_ptr<kw::AdmissionServer> server_;
  HandlerOptions options_;
  std::vector<std::shared_ptr<const api::SpiderIPPool>> cached_pools_;
  std::vector<std::shared_ptr<const api::SpiderSubnet>> cached_subnets_;
  std::vector<std::shared_ptr<const api::SpiderIPPool>> live_pools_;
  absl::Status live_error_;
  std::atomic<int> cache_reads_{0};
  std::atomic<int> live_reads_{0};
  std::atomic<int> subnet_cache_reads_{0};
  std::atomic<int> subnet_live_reads_{0};
};

TEST_F(HandlersTest, PathsFollowTheFlags) {
  std::vector<std::string> paths = server_->Paths();
  auto has = [&](const std::string& p) {
    return std::find(paths.begin(), paths.end(), p) != paths.end();
  };
  for (Kind k : {Kind::kIPPool, Kind::kSubnet, Kind::kReservedIP, Kind::kCoordinator,
                 Kind::kMultusConfig}) {
    EXPECT_TRUE(has(MutatePath(k))) << MutatePath(k);
    EXPECT_TRUE(has(ValidatePath(k))) << ValidatePath(k);
  }
  EXPECT_FALSE(has(ValidatePath(Kind::kClaimParameter)));
  options_.enable_coordinator = false;
  options_.enable_multus_config = false;
  options_.enable_claim_parameter = true;
  Register();
  paths = server_->Paths();
  EXPECT_FALSE(has(MutatePath(Kind::kCoordinator)));
  EXPECT_FALSE(has(ValidatePath(Kind::kMultusConfig)));
  EXPECT_TRUE(has(ValidatePath(Kind::kClaimParameter)));
}

TEST_F(HandlersTest, IPPoolMutationDefaultsAndKeepsUnknownFields) {
  Json pool = Pool("p1", "10.0.0.0/24", {"10.0.0.3", "10.0.0.1-10.0.0.2", "10.0.0.5"});
  pool["spec"]["futureField"] = "kept";
  pool["spec"]["excludeIPs"] = Json::array();
  Answer a = Call(*server_, MutatePath(Kind::kIPPool), "SpiderIPPool", "CREATE", pool);
  ASSERT_EQ(a.http, 200);
  EXPECT_EQ(a.response["allowed"], true);
  EXPECT_EQ(a.response["patchType"], "JSONPatch");
  EXPECT_EQ(a.patched["spec"]["ipVersion"], 4);
  EXPECT_EQ(a.patched["spec"]["ips"], P(R"(["10.0.0.1-10.0.0.3","10.0.0.5"])"));
  EXPECT_EQ(a.patched["metadata"]["finalizers"], P(R"(["spiderpool.spidernet.io"])"));
  EXPECT_EQ(a.patched["metadata"]["labels"]["ipam.spidernet.io/ippool-cidr"], "10-0-0-0-24");
  EXPECT_EQ(a.patched["spec"]["futureField"], "kept");  // not modelled, not erased
  EXPECT_EQ(a.patched["spec"]["excludeIPs"], Json::array());
  // Mutating the mutated object changes nothing.
  Answer again = Call(*server_, MutatePath(Kind::kIPPool), "SpiderIPPool", "UPDATE", a.patched,
                      a.patched);
  EXPECT_FALSE(again.response.contains("patch")) << again.response;
}

TEST_F(HandlersTest, IPPoolMutationInheritsFromTheSubnetInTheCache) {
  cached_subnets_ = {Typed<api::SpiderSubnet>(P(R"({
      "metadata": {"name": "s1", "uid": "uid-s1"},
      "spec": {"subnet": "10.0.0.0/24", "ipVersion": 4, "ips": ["10.0.0.1-10.0.0.200"],
               "gateway": "10.0.0.254", "routes": [{"dst": "10.9.0.0/16", "gw": "10.0.0.254"}]}
  })"))};
  Answer a = Call(*server_, MutatePath(Kind::kIPPool), "SpiderIPPool", "CREATE",
                  Pool("p1", "10.0.0.0/24", {"10.0.0.10"}));
  EXPECT_EQ(a.patched["spec"]["gateway"], "10.0.0.254");
  EXPECT_EQ(a.patched["spec"]["routes"][0]["dst"], "10.9.0.0/16");
  EXPECT_EQ(a.patched["metadata"]["labels"]["ipam.spidernet.io/owner-spider-subnet"], "s1");
  EXPECT_EQ(a.patched["metadata"]["ownerReferences"][0]["uid"], "uid-s1");
  EXPECT_EQ(a.patched["metadata"]["ownerReferences"][0]["controller"], true);
}

TEST_F(HandlersTest, CreateOverlapReadsTheLiveListWhenThereIsOne) {
  // Only the cache knows p1.
  cached_pools_ = {Typed<api::SpiderIPPool>(Pool("p1", "10.0.0.0/24"))};
  Json p2 = Pool("p2", "10.0.0.0/16");
  p2["spec"]["ipVersion"] = 4;
  Answer a = Call(*server_, ValidatePath(Kind::kIPPool), "SpiderIPPool", "CREATE", p2);
  EXPECT_EQ(a.response["allowed"], false);
  EXPECT_EQ(a.code(), 422);
  EXPECT_EQ(a.message(),
            "SpiderIPPool.spiderpool.spidernet.io \"p2\" is invalid: spec.subnet: Invalid value: "
            "\"10.0.0.0/16\": overlap with IPPool p1 which 'spec.subnet' is 10.0.0.0/24");
  EXPECT_EQ(a.response["status"]["details"]["causes"][0]["field"], "spec.subnet");

  // With live lists, CREATE reads them (and not the stale cache).
  UseLiveLists();
  a = Call(*server_, ValidatePath(Kind::kIPPool), "SpiderIPPool", "CREATE", p2);
  EXPECT_EQ(a.response["allowed"], true) << a.response;
  live_pools_ = cached_pools_;
  cached_pools_.clear();
  a = Call(*server_, ValidatePath(Kind::kIPPool), "SpiderIPPool", "CREATE", p2);
  EXPECT_EQ(a.response["allowed"], false);
  EXPECT_EQ(live_reads_.load(), 2);
  // Mutation reads the cache, and only the subnets (for the owning SpiderSubnet).
  const int pools_before = cache_reads_.load();
  const int subnets_before = subnet_cache_reads_.load();
  const int live_subnets_before = subnet_live_reads_.load();
  Call(*server_, MutatePath(Kind::kIPPool), "SpiderIPPool", "CREATE", p2);
  EXPECT_EQ(subnet_cache_reads_.load(), subnets_before + 1);
  EXPECT_EQ(subnet_live_reads_.load(), live_subnets_before);
  EXPECT_EQ(cache_reads_.load(), pools_before);
  EXPECT_EQ(live_reads_.load(), 2);

  // A failing live read fails closed.
  live_error_ = absl::UnavailableError("connection refused");
  a = Call(*server_, ValidatePath(Kind::kIPPool), "SpiderIPPool", "CREATE", p2);
  EXPECT_EQ(a.response["allowed"], false);
  EXPECT_EQ(a.code(), 500);
  EXPECT_EQ(a.message(),
            "Internal error occurred: failed to list IPPools: connection refused");
}

TEST_F(HandlersTest, ValidationMessages) {
  Json gw = Pool("p1", "10.1.0.0/24", {"10.1.0.10-10.1.0.20", "10.2.0.1"});
  gw["spec"]["ipVersion"] = 4;
  gw["spec"]["gateway"] = "10.9.0.1";
  Answer a = Call(*server_, ValidatePath(Kind::kIPPool), "SpiderIPPool", "CREATE", gw);
  EXPECT_EQ(a.code(), 422);
  EXPECT_NE(a.message().find("spec.ips[1]: Invalid value: \"10.2.0.1\": not match base subnet"),
            std::string::npos) << a.message();
  EXPECT_NE(a.message().find("spec.gateway: Invalid value: \"10.9.0.1\": not pertains to the "
                             "'spec.subnet' 10.1.0.0/24 of IPPool"),
            std::string::npos) << a.message();

  // UPDATE of an immutable field.
  Json old = Pool("p1", "10.1.0.0/24");
  old["spec"]["ipVersion"] = 4;
  Json changed = old;
  changed["spec"]["subnet"] = "10.1.1.0/24";
  a = Call(*server_, ValidatePath(Kind::kIPPool), "SpiderIPPool", "UPDATE", changed, old);
  EXPECT_EQ(a.code(), 422);
  EXPECT_NE(a.message().find("spec.subnet: Forbidden: is not changeable"), std::string::npos)
      << a.message();
}

TEST_F(HandlersTest, ObjectsOurTypesCannotReadAreInvalid) {
  Json p = Pool("p1", "10.3.0.0/24");
  p["spec"]["ipVersion"] = 4;
  p["spec"]["disable"] = "yes";
  Answer a = Call(*server_, ValidatePath(Kind::kIPPool), "SpiderIPPool", "CREATE", p);
  EXPECT_EQ(a.response["allowed"], false);
  EXPECT_EQ(a.code(), 422);
  EXPECT_EQ(a.response["status"]["reason"], "Invalid");
  EXPECT_NE(a.message().find("SpiderIPPool.spiderpool.spidernet.io \"p1\" is invalid: "
                             "spec.disable: expected boolean"),
            std::string::npos) << a.message();
  // The mutating webhook neither fails nor erases the field it cannot read.
  Answer m = Call(*server_, MutatePath(Kind::kIPPool), "SpiderIPPool", "CREATE", p);
  EXPECT_EQ(m.response["allowed"], true);
  EXPECT_EQ(m.patched["spec"]["disable"], "yes");
  EXPECT_EQ(m.patched["metadata"]["finalizers"][0], "spiderpool.spidernet.io");
}

TEST_F(HandlersTest, DeleteIsCheckedOnlyWithTheFlag) {
  Json p = Pool("p1", "10.0.0.0/24");
  p["spec"]["ipVersion"] = 4;
  p["status"] = {{"allocatedIPCount", 3}};
  Answer a = Call(*server_, ValidatePath(Kind::kIPPool), "SpiderIPPool", "DELETE", nullptr, p);
  EXPECT_EQ(a.response["allowed"], true);
  options_.config.enable_validating_resources_deleted_webhook = true;
  Register();
  a = Call(*server_, ValidatePath(Kind::kIPPool), "SpiderIPPool", "DELETE", nullptr, p);
  EXPECT_EQ(a.response["allowed"], false);
  EXPECT_EQ(a.code(), 403);
  EXPECT_EQ(a.message(), "spiderippools.spiderpool.spidernet.io \"p1\" is forbidden: cannot "
                         "delete an IPPool with allocated IPs(3)");
  Json s = {{"metadata", {{"name", "s1"}}},
            {"spec", {{"subnet", "10.0.0.0/24"}, {"ipVersion", 4}}},
            {"status", {{"allocatedIPCount", 2}}}};
  a = Call(*server_, ValidatePath(Kind::kSubnet), "SpiderSubnet", "DELETE", nullptr, s);
  EXPECT_EQ(a.code(), 403);
  EXPECT_NE(a.message().find("cannot delete an Subnet with allocated IPs(2)"), std::string::npos);
  // CONNECT: nothing to check.
  a = Call(*server_, ValidatePath(Kind::kIPPool), "SpiderIPPool", "CONNECT", p);
  EXPECT_EQ(a.response["allowed"], true);
}

Json Smc(Json macvlan) {
  return {{"apiVersion", "spiderpool.spidernet.io/v2beta1"},
          {"kind", "SpiderMultusConfig"},
          {"metadata", {{"name", "m1"}, {"namespace", "default"}}},
          {"spec", {{"cniType", "macvlan"}, {"macvlan", macvlan}}}};
}

TEST_F(HandlersTest, MultusConfigDefaultsAndRules) {
  Answer a = Call(*server_, MutatePath(Kind::kMultusConfig), "SpiderMultusConfig", "CREATE",
                  Smc({{"master", {"eth0"}}}));
  EXPECT_EQ(a.response["allowed"], true);
  EXPECT_EQ(a.patched["spec"]["macvlan"]["vlanID"], 0);
  EXPECT_EQ(a.patched["spec"]["macvlan"]["mtu"], 0);

  a = Call(*server_, ValidatePath(Kind::kMultusConfig), "SpiderMultusConfig", "CREATE",
           Smc({{"master", {"eth0"}}, {"vlanID", 5000}}));
  EXPECT_EQ(a.code(), 422);
  EXPECT_NE(a.message().find("invalid vlanId 5000, please make sure vlanId in range [0,4094]"),
            std::string::npos) << a.message();
  a = Call(*server_, ValidatePath(Kind::kMultusConfig), "SpiderMultusConfig", "CREATE",
           Smc({{"master", {"eth0", "eth1"}}}));
  EXPECT_EQ(a.code(), 422);
  EXPECT_NE(a.message().find("the bond property is nil with multiple Interfaces"),
            std::string::npos) << a.message();
  a = Call(*server_, ValidatePath(Kind::kMultusConfig), "SpiderMultusConfig", "CREATE",
           Smc({{"master", {"eth0", "eth1"}}, {"bond", {{"name", "bond0"}, {"mode", 1}}}}));
  EXPECT_EQ(a.response["allowed"], true) << a.response;
}

TEST_F(HandlersTest, ReservedIPAndCoordinatorMutation) {
  Json rip = {{"metadata", {{"name", "r1"}}},
              {"spec", {{"ips", {"fd00::2", "fd00::1"}}}}};
  Answer a = Call(*server_, MutatePath(Kind::kReservedIP), "SpiderReservedIP", "CREATE", rip);
  EXPECT_EQ(a.patched["spec"]["ipVersion"], 6);
  EXPECT_EQ(a.patched["spec"]["ips"], P(R"(["fd00::1-fd00::2"])"));
  Json coord = {{"metadata", {{"name", "default"}}},
                {"spec", {{"podCIDRType", "auto"}, {"hijackCIDR", {"10.7.0.1"}}}}};
  a = Call(*server_, MutatePath(Kind::kCoordinator), "SpiderCoordinator", "CREATE", coord);
  EXPECT_EQ(a.patched["spec"]["mode"], "auto");
  EXPECT_EQ(a.patched["spec"]["vethMTU"], 1500);
  EXPECT_EQ(a.patched["spec"]["hijackCIDR"], P(R"(["10.7.0.1/32"])"));
  EXPECT_EQ(a.patched["metadata"]["finalizers"][0], "spiderpool.spidernet.io");
  // Missing podCIDRType: the defaults are still patched (upstream logs the error only)...
  coord["spec"].erase("podCIDRType");
  a = Call(*server_, MutatePath(Kind::kCoordinator), "SpiderCoordinator", "CREATE", coord);
  EXPECT_EQ(a.response["allowed"], true);
  EXPECT_EQ(a.patched["spec"]["tunePodRoutes"], true);
  // ... and the validating webhook rejects it.
  a = Call(*server_, ValidatePath(Kind::kCoordinator), "SpiderCoordinator", "CREATE",
           a.patched);
  EXPECT_EQ(a.response["allowed"], false);
  EXPECT_NE(a.message().find("spec.podCIDRType"), std::string::npos) << a.message();
}

}  // namespace
}  // namespace spiderpool::op::webhook
