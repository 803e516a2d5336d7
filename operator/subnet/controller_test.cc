// AutoPoolController against the loopback API server (or, unchanged, a real cluster through
// SPIDERPOOL_TEST_KUBECONFIG), together with operator/ipam's PoolController (which removes the
// finalizer of an empty pool being deleted, as in the binary). On the loopback server every
// write of an auto pool also goes through upstream's admission rules (api/validation, with live
// lists of pools and subnets): the pools the controller writes must be what the webhooks accept.
// All waits are bounded polls of API state.

#include "operator/subnet/controller.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>

#include "api/validation/validation.h"
#include "base/strings.h"
#include "ipam/selection.h"
#include "kube/controller/manager.h"
#include "kube/rest/errors.h"
#include "kube/testing/apiserver.h"
#include "operator/ipam/pool_controller.h"
#include "operator/ipam/test_env.h"

namespace spiderpool::op::subnet {
namespace {

using base::StrCat;
using op::ipam::testing::kOwnerLabel;
using op::ipam::testing::TestEnv;
using op::ipam::testing::WaitUntil;
namespace dipam = ::spiderpool::ipam;
namespace kt = ::spiderpool::kube::testing;

// Upstream's SpiderIPPool webhooks on the loopback server, for auto pools: the object must be
// in mutated form already (MutateIPPool changes nothing) and pass ValidateIPPool{Create,Update}.
class PoolAdmission : public kt::Admission {
 public:
  explicit PoolAdmission(std::shared_ptr<kube::RestClient> rest) : rest_(std::move(rest)) {}

  std::optional<kt::ApiStatus> Validate(const kt::AdmissionAttributes& a,
                                        const base::Json& object) override {
    if (a.resource.plural != "spiderippools" || !a.subresource.empty() ||
        a.operation == kt::AdmissionOperation::kDelete) {
      return std::nullopt;
    }
    auto pool = api::Decode<api::SpiderIPPool>(object);
    if (!pool.ok() || !dipam::IsAutoCreatedPool(*pool) || pool->metadata.IsDeleting()) {
      return std::nullopt;
    }
    auto pools = kube::Client<api::SpiderIPPool>(rest_).List("");
    auto subnets = kube::Client<api::SpiderSubnet>(rest_).List("");
    if (!pools.ok() || !subnets.ok()) return Deny("cannot list pools or subnets");
    api::validation::Context ctx;
    ctx.config.enable_ipv6 = true;
    ctx.ippools = api::validation::Refs<api::SpiderIPPool>(pools->items);
    ctx.subnets = api::validation::Refs<api::SpiderSubnet>(subnets->items);
    api::SpiderIPPool mutated = *pool;
    (void)api::validation::MutateIPPool(&mutated, ctx);
    if (api::Encode(mutated) != api::Encode(*pool)) {
      return Deny(StrCat("the mutating webhook would change pool ", pool->metadata.name));
    }
    api::validation::Result r;
    if (a.operation == kt::AdmissionOperation::kCreate) {
      r = api::validation::ValidateIPPoolCreate(*pool, ctx);
    } else {
      auto old_pool = api::Decode<api::SpiderIPPool>(a.old_object);
      if (!old_pool.ok()) return std::nullopt;
      r = api::validation::ValidateIPPoolUpdate(*old_pool, *pool, ctx);
    }
    if (!r.ok()) {
      const api::Status st = r.ToStatus();  // 422 Invalid, 403 Forbidden or 409 AlreadyExists
      if (st.reason == "AlreadyExists") {
        // A create from a stale cache: the API server answers 409, and so does the webhook.
        return kt::ApiStatus{.code = st.code, .reason = st.reason, .message = st.message};
      }
      return Deny(st.message, st.code, st.reason);
    }
    return std::nullopt;
  }

  std::vector<std::string> violations() {
    std::lock_guard<std::mutex> l(mu_);
    return violations_;
  }

 private:
  std::optional<kt::ApiStatus> Deny(std::string message, int code = 422,
                                    std::string reason = "Invalid") {
    std::lock_guard<std::mutex> l(mu_);
    violations_.push_back(message);
    return kt::ApiStatus{.code = code, .reason = std::move(reason), .message = std::move(message)};
  }
  std::shared_ptr<kube::RestClient> rest_;
  std::mutex mu_;
  std::vector<std::string> violations_;
};

std::vector<base::IPRange> Ranges(const std::vector<std::string>& texts) {
  auto r = base::ParseIPRanges(texts);
  return r.ok() ? base::MergeIPRanges(*r) : std::vector<base::IPRange>{};
}
std::vector<std::string> Canon(const std::vector<std::string>& texts) {
  return base::FormatIPRanges(Ranges(texts));
}

class AutoPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto env = TestEnv::Start();
    ASSERT_TRUE(env.ok()) << env.status();
    env_ = std::move(*env);
    if (env_->cluster().loopback() != nullptr) {
      admission_ = std::make_shared<PoolAdmission>(env_->rest());
      env_->cluster().loopback()->SetAdmission(admission_);
    }
    recorder_ = std::make_unique<kube::EventRecorder>(
        env_->rest(), kube::EventRecorderOptions{.component = "spiderpool-controller",
                                                 .registry = &env_->registry()});
  }

  AutoPoolOptions Options() {
    AutoPoolOptions o;
    o.namespace_ = env_->ns();
    o.workers = 4;
    o.registry = &env_->registry();
    o.recorder = recorder_.get();
    o.extra_pool_labels = {{kOwnerLabel, env_->ns()}};
    o.wait_requeue = absl::Seconds(2);
    return o;
  }

  void Start(AutoPoolOptions o) {
    op::ipam::Caches c = env_->caches();
    ctrl_ = std::make_unique<AutoPoolController>(
        std::move(o), env_->rest(),
        Informers{.pools = c.pools, .subnets = c.subnets, .reserved_ips = c.reserved_ips,
                  .pods = c.pods});
    pool_ctrl_ = std::make_unique<op::ipam::PoolController>(
        op::ipam::PoolControllerOptions{.registry = &env_->registry()}, env_->rest(), c);
    informers_ = env_->RunInformers();
    ASSERT_TRUE(env_->WaitSynced());
    run_ = std::jthread([this](std::stop_token s) { run_status_ = ctrl_->Run(s); });
    pool_run_ = std::jthread([this](std::stop_token s) { pool_run_status_ = pool_ctrl_->Run(s); });
  }
  void Start() { Start(Options()); }

  void TearDown() override {
    for (std::jthread* t : {&run_, &pool_run_}) {
      if (t->joinable()) {
        t->request_stop();
        t->join();
      }
    }
    EXPECT_TRUE(run_status_.ok()) << run_status_;
    EXPECT_TRUE(pool_run_status_.ok()) << pool_run_status_;
    if (admission_ != nullptr) {
      EXPECT_TRUE(admission_->violations().empty())
          << "first admission denial: " << admission_->violations()[0];
    }
    informers_.reset();
    ctrl_.reset();
    pool_ctrl_.reset();
    recorder_.reset();
    env_.reset();
  }

  // ---- builders ----
  std::string SubnetName(const std::string& s) { return env_->Name(s); }

  void CreateSubnet(const std::string& name, const std::string& cidr, std::vector<std::string> ips,
                    std::vector<std::string> exclude = {},
                    std::optional<std::string> gateway = std::nullopt) {
    api::SpiderSubnet s;
    s.metadata = env_->ClusterMeta(name);
    s.metadata.finalizers.push_back(std::string(api::kSpiderFinalizer));
    s.spec.ip_version = 4;
    s.spec.subnet = cidr;
    s.spec.ips = std::move(ips);
    s.spec.exclude_ips = std::move(exclude);
    s.spec.gateway = std::move(gateway);
    auto out = kube::Client<api::SpiderSubnet>(env_->rest()).Create(s);
    ASSERT_TRUE(out.ok()) << out.status();
  }

  static void Template(api::PodTemplateSpec* t, const std::string& app,
                       std::map<std::string, std::string> annotations) {
    t->metadata.labels = {{"app", app}};
    t->metadata.annotations = std::move(annotations);
    t->spec.containers.push_back({.name = "c", .image = "registry.k8s.io/pause:3.9"});
    // Never scheduled on a real cluster: the pods stay Pending and need no IP.
    t->spec.unknown = {{"nodeSelector", {{"spiderpool.test/never", "true"}}}};
  }
  static std::map<std::string, std::string> SubnetAnno(
      const std::string& subnet, std::map<std::string, std::string> more = {}) {
    more["ipam.spidernet.io/subnet"] = StrCat(R"({"ipv4":[")", subnet, R"("]})");
    return more;
  }
  api::Deployment CreateDeployment(const std::string& name, int32_t replicas,
                                   std::map<std::string, std::string> annotations,
                                   bool host_network = false) {
    api::Deployment d;
    d.metadata.namespace_ = env_->ns();
    d.metadata.name = name;
    d.spec.replicas = replicas;
    d.spec.selector = api::LabelSelector{.match_labels = {{"app", name}}};
    Template(&d.spec.template_, name, std::move(annotations));
    d.spec.template_.spec.host_network = host_network;
    auto out = kube::Client<api::Deployment>(env_->rest()).Create(d);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : d;
  }
  void Scale(const std::string& name, int32_t replicas) {
    auto out =
        kube::Client<api::Deployment>(env_->rest())
            .Patch(env_->ns(), name, kube::PatchType::kMerge, {{"spec", {{"replicas", replicas}}}});
    ASSERT_TRUE(out.ok()) << out.status();
  }
  void DeleteDeployment(const std::string& name) {
    ASSERT_TRUE(kube::Client<api::Deployment>(env_->rest())
                    .Delete(env_->ns(), name, {.propagation_policy = "Background"})
                    .ok());
  }

  // ---- observations ----
  std::vector<api::SpiderIPPool> AppPools(const std::string& app) {
    auto list = kube::Client<api::SpiderIPPool>(env_->rest())
                    .List("", {.label_selector =
                                   StrCat(api::kLabelOwnerApplicationName, "=", app, ",",
                                          api::kLabelOwnerApplicationNamespace, "=", env_->ns())});
    return list.ok() ? list->items : std::vector<api::SpiderIPPool>{};
  }
  // The single pool of `app` once it lists exactly `ips` (canonical ranges), else nullopt.
  std::optional<api::SpiderIPPool> WaitPool(const std::string& app, std::vector<std::string> ips) {
    std::optional<api::SpiderIPPool> got;
    const std::vector<std::string> want = Canon(ips);
    WaitUntil([&] {
      auto pools = AppPools(app);
      if (pools.size() != 1 || Canon(pools[0].spec.ips) != want) return false;
      got = pools[0];
      return true;
    });
    return got;
  }
  std::optional<api::SpiderIPPool> WaitPoolSize(const std::string& app, uint64_t n) {
    std::optional<api::SpiderIPPool> got;
    WaitUntil([&] {
      auto pools = AppPools(app);
      if (pools.size() != 1 || base::CountIPs(Ranges(pools[0].spec.ips)) != n) return false;
      got = pools[0];
      return true;
    });
    return got;
  }
  std::string PoolsDump(const std::string& app) {
    std::string out;
    for (const auto& p : AppPools(app)) {
      out += StrCat(p.metadata.name, " ", base::DumpJson(api::Encode(p.spec)), "\n");
    }
    return out.empty() ? "(no pool)" : out;
  }
  api::SpiderSubnet GetSubnet(const std::string& name) {
    auto s = kube::Client<api::SpiderSubnet>(env_->rest()).Get("", name);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : api::SpiderSubnet{};
  }
  api::PoolIPPreAllocations Records(const std::string& subnet) {
    auto c = GetSubnet(subnet).ControlledIPPools();
    EXPECT_TRUE(c.ok());
    return c.ok() ? *c : api::PoolIPPreAllocations{};
  }

  // "" when the subnet's records and its auto pools agree: one record per pool equal to its
  // spec.ips, no releasing record left, no IP in two records, allocatedIPCount the sum.
  std::string Inconsistency(const std::string& subnet) {
    api::SpiderSubnet s = GetSubnet(subnet);
    auto records = s.ControlledIPPools();
    if (!records.ok()) return "records do not parse";
    auto pools =
        kube::Client<api::SpiderIPPool>(env_->rest())
            .List("", {.label_selector = StrCat(api::kLabelOwnerSpiderSubnet, "=", subnet)});
    if (!pools.ok()) return "cannot list pools";
    std::set<std::string> names;
    for (const auto& p : pools->items) {
      names.insert(p.metadata.name);
      auto it = records->find(p.metadata.name);
      if (it == records->end()) return StrCat("no record for ", p.metadata.name);
      if (Canon(it->second.ips) != Canon(p.spec.ips)) {
        return StrCat("record of ", p.metadata.name, " differs from its spec.ips");
      }
    }
    std::vector<base::IPRange> all;
    uint64_t sum = 0;
    for (const auto& [k, e] : *records) {
      if (names.count(k) == 0) return StrCat("record ", k, " without a pool");
      auto r = Ranges(e.ips);
      sum += static_cast<uint64_t>(base::CountIPs(r));
      all.insert(all.end(), r.begin(), r.end());
    }
    if (base::CountIPs(base::MergeIPRanges(all)) != sum) return "an IP is in two records";
    if (s.status.allocated_ip_count != static_cast<int64_t>(sum)) {
      return StrCat("allocatedIPCount ", s.status.allocated_ip_count.value_or(-1), " != ", sum);
    }
    return "";
  }
  bool WaitConsistent(const std::string& subnet) {
    return WaitUntil([&] { return Inconsistency(subnet).empty(); });
  }

  bool WaitEvent(const std::string& app, const std::string& reason, std::string* message) {
    return WaitUntil([&] {
      auto events = kube::Client<api::Event>(env_->rest()).List(env_->ns());
      if (!events.ok()) return false;
      for (const auto& e : events->items) {
        if (e.involved_object.name == app && e.reason == reason) {
          *message = e.message;
          return true;
        }
      }
      return false;
    });
  }

  // rule 1 of the agent's selection for a pod of Deployment `d` on eth0.
  absl::StatusOr<dipam::Selection> SelectForPod(const api::Deployment& d) {
    dipam::SelectionRequest req;
    req.pod = {.namespace_ = env_->ns(),
               .name = d.metadata.name + "-abc",
               .uid = "pod-uid",
               .annotations = d.spec.template_.metadata.annotations,
               .owner = {.api_version = "apps/v1",
                         .kind = "Deployment",
                         .namespace_ = env_->ns(),
                         .name = d.metadata.name,
                         .uid = d.metadata.uid,
                         .replicas = d.spec.replicas}};
    req.node.name = "node-1";
    req.if_name = "eth0";
    auto pools = kube::Client<api::SpiderIPPool>(env_->rest()).List("");
    if (!pools.ok()) return pools.status();
    std::vector<const api::SpiderIPPool*> refs;
    for (const auto& p : pools->items) refs.push_back(&p);
    return dipam::SelectPools(req, dipam::SelectionConfig{}, refs);
  }

  std::unique_ptr<TestEnv> env_;
  std::shared_ptr<PoolAdmission> admission_;
  std::unique_ptr<kube::EventRecorder> recorder_;
  std::unique_ptr<AutoPoolController> ctrl_;
  std::unique_ptr<op::ipam::PoolController> pool_ctrl_;
  std::unique_ptr<TestEnv::Running> informers_;
  std::jthread run_, pool_run_;
  absl::Status run_status_, pool_run_status_;
};

TEST_F(AutoPoolTest, DeploymentGetsAPoolTheAgentSelects) {
  const std::string subnet = SubnetName("s1");
  CreateSubnet(subnet, "10.252.1.0/24", {"10.252.1.10-10.252.1.40"}, {"10.252.1.12"}, "10.252.1.1");
  ASSERT_TRUE(env_->CreateReservedIP(env_->Name("r1"), {"10.252.1.11"}).ok());
  Start();
  api::Deployment d = CreateDeployment("web", 2, SubnetAnno(subnet));

  // replicas + 1, the lowest free IPs: .11 reserved, .12 excluded.
  auto pool = WaitPool("web", {"10.252.1.10", "10.252.1.13-10.252.1.14"});
  ASSERT_TRUE(pool.has_value()) << PoolsDump("web");
  EXPECT_EQ(pool->metadata.name, dipam::AutoPoolName("web", 4, "eth0", d.metadata.uid));
  const auto& l = pool->metadata.labels;
  EXPECT_EQ(l.at("ipam.spidernet.io/owner-spider-subnet"), subnet);
  EXPECT_EQ(l.at("ipam.spidernet.io/owner-application-gv"), "apps_v1");
  EXPECT_EQ(l.at("ipam.spidernet.io/owner-application-kind"), "Deployment");
  EXPECT_EQ(l.at("ipam.spidernet.io/owner-application-namespace"), env_->ns());
  EXPECT_EQ(l.at("ipam.spidernet.io/owner-application-uid"), d.metadata.uid);
  EXPECT_EQ(l.at("ipam.spidernet.io/interface"), "eth0");
  EXPECT_EQ(l.at("ipam.spidernet.io/ip-version"), "IPv4");
  EXPECT_EQ(l.at("ipam.spidernet.io/ippool-reclaim"), "true");
  EXPECT_EQ(l.at("ipam.spidernet.io/ippool-cidr"), "10-252-1-0-24");
  EXPECT_EQ(pool->metadata.annotations.at("ipam.spidernet.io/ippool-ip-number"), "+1");
  ASSERT_NE(pool->metadata.ControllerRef(), nullptr);
  EXPECT_EQ(pool->metadata.ControllerRef()->name, subnet);
  EXPECT_TRUE(pool->metadata.HasFinalizer(api::kSpiderFinalizer));
  EXPECT_EQ(pool->spec.gateway, "10.252.1.1");
  EXPECT_EQ(pool->spec.ip_version, 4);

  ASSERT_TRUE(WaitConsistent(subnet)) << Inconsistency(subnet);
  api::PoolIPPreAllocations rec = Records(subnet);
  EXPECT_EQ(rec.at(pool->metadata.name).application,
            StrCat("apps_v1_Deployment_", env_->ns(), "_web"));
  ASSERT_TRUE(WaitUntil([&] {
    api::SpiderSubnet s = GetSubnet(subnet);
    return s.status.total_ip_count == 30 && s.status.allocated_ip_count == 3 &&
           s.status.free_ip_count == 26;
  })) << base::DumpJson(api::Encode(GetSubnet(subnet).status));

  auto sel = SelectForPod(d);
  ASSERT_TRUE(sel.ok()) << sel.status();
  EXPECT_EQ(sel->rule, dipam::SelectionRule::kSubnetAnnotation);
  ASSERT_EQ(sel->nics.size(), 1u);
  EXPECT_EQ(sel->nics[0].ipv4_pools, std::vector<std::string>{pool->metadata.name});
}

TEST_F(AutoPoolTest, ScalesUpAndDownNeverDroppingAllocatedIPs) {
  const std::string subnet = SubnetName("s2");
  CreateSubnet(subnet, "10.252.2.0/24", {"10.252.2.10-10.252.2.60"});
  Start();
  CreateDeployment("web", 2, SubnetAnno(subnet));
  auto pool = WaitPool("web", {"10.252.2.10-10.252.2.12"});
  ASSERT_TRUE(pool.has_value()) << PoolsDump("web");
  const std::string name = pool->metadata.name;

  Scale("web", 5);
  ASSERT_TRUE(WaitPool("web", {"10.252.2.10-10.252.2.15"}).has_value()) << PoolsDump("web");
  ASSERT_TRUE(WaitConsistent(subnet)) << Inconsistency(subnet);

  // Two pods hold .10 and .14; scaling to 0 keeps them (desired 1, but never an allocated IP).
  ASSERT_TRUE(env_->EditRecords(name,
                                [](api::PoolIPAllocations* r) {
                                  (*r)["10.252.2.10"] = {.pod = "ns/a", .pod_uid = "ua"};
                                  (*r)["10.252.2.14"] = {.pod = "ns/b", .pod_uid = "ub"};
                                })
                  .ok());
  Scale("web", 0);
  ASSERT_TRUE(WaitPool("web", {"10.252.2.10", "10.252.2.14"}).has_value()) << PoolsDump("web");
  ASSERT_TRUE(WaitConsistent(subnet)) << Inconsistency(subnet);

  // The pods go: the pool shrinks to its desired single IP (the lowest free one is dropped).
  ASSERT_TRUE(env_->EditRecords(name, [](api::PoolIPAllocations* r) { r->clear(); }).ok());
  ASSERT_TRUE(WaitPool("web", {"10.252.2.14"}).has_value()) << PoolsDump("web");
  ASSERT_TRUE(WaitConsistent(subnet)) << Inconsistency(subnet);

  // And grows again from the lowest free IPs.
  Scale("web", 2);
  ASSERT_TRUE(WaitPool("web", {"10.252.2.10-10.252.2.11", "10.252.2.14"}).has_value())
      << PoolsDump("web");
  ASSERT_TRUE(WaitConsistent(subnet)) << Inconsistency(subnet);
}

TEST_F(AutoPoolTest, FixedIPNumberIgnoresReplicas) {
  const std::string subnet = SubnetName("s3");
  CreateSubnet(subnet, "10.252.3.0/24", {"10.252.3.10-10.252.3.60"});
  Start();
  CreateDeployment("fixed", 1, SubnetAnno(subnet, {{"ipam.spidernet.io/ippool-ip-number", "5"}}));
  auto pool = WaitPoolSize("fixed", 5);
  ASSERT_TRUE(pool.has_value()) << PoolsDump("fixed");
  EXPECT_EQ(pool->metadata.annotations.at("ipam.spidernet.io/ippool-ip-number"), "5");
  Scale("fixed", 3);
  CreateDeployment("flex", 1, SubnetAnno(subnet, {{"ipam.spidernet.io/ippool-ip-number", "+3"}}));
  ASSERT_TRUE(WaitPoolSize("flex", 4).has_value()) << PoolsDump("flex");
  ASSERT_TRUE(WaitUntil([&] {
    auto d = ctrl_->informers().deployments->store().Get(StrCat(env_->ns(), "/fixed"));
    return d != nullptr && d->spec.replicas == 3;
  }));
  ASSERT_TRUE(ctrl_->Reconcile(AutoPoolController::AppKey("Deployment", env_->ns(), "fixed")).ok());
  EXPECT_EQ(base::CountIPs(Ranges(AppPools("fixed")[0].spec.ips)), 5u);
  ASSERT_TRUE(WaitConsistent(subnet)) << Inconsistency(subnet);
}

TEST_F(AutoPoolTest, ConcurrentAppsNeverShareAnIP) {
  const std::string subnet = SubnetName("s4");
  CreateSubnet(subnet, "10.252.4.0/24", {"10.252.4.1-10.252.4.250"});
  if (auto* lb = env_->cluster().loopback(); lb != nullptr) {
    // Extra conflicts on the subnet status on top of the natural ones.
    lb->FailNext(6, 409, {.verb = "update", .resource = "spidersubnets/status"});
  }
  Start();
  constexpr int kApps = 12;
  std::vector<std::jthread> creators;
  for (int i = 0; i < kApps; ++i) {
    creators.emplace_back(
        [&, i] { CreateDeployment(StrCat("app", i), i % 4 + 1, SubnetAnno(subnet)); });
  }
  creators.clear();  // joins
  for (int i = 0; i < kApps; ++i) {
    ASSERT_TRUE(WaitPoolSize(StrCat("app", i), i % 4 + 2).has_value())
        << PoolsDump(StrCat("app", i));
  }
  ASSERT_TRUE(WaitConsistent(subnet)) << Inconsistency(subnet);

  // Everyone rescales at once, some up, some down.
  std::vector<std::jthread> scalers;
  for (int i = 0; i < kApps; ++i) {
    scalers.emplace_back([&, i] { Scale(StrCat("app", i), (i * 7) % 5); });
  }
  scalers.clear();
  for (int i = 0; i < kApps; ++i) {
    ASSERT_TRUE(WaitPoolSize(StrCat("app", i), (i * 7) % 5 + 1).has_value())
        << PoolsDump(StrCat("app", i));
  }
  ASSERT_TRUE(WaitConsistent(subnet)) << Inconsistency(subnet);
}

// An agent keeps allocating from pool "a" (lowest IP its live spec.ips lists, status update on
// the read resourceVersion) while "a" shrinks and "b" grows from the same subnet: no IP allocated
// in "a" may ever be handed to "b".
TEST_F(AutoPoolTest, ShrinkRacingAnAgentNeverHandsAnAllocatedIPAway) {
  const std::string subnet = SubnetName("s13");
  CreateSubnet(subnet, "10.252.13.0/24", {"10.252.13.10-10.252.13.29"});
  Start();
  CreateDeployment("a", 15, SubnetAnno(subnet));
  CreateDeployment("b", 0, SubnetAnno(subnet));
  auto pa = WaitPoolSize("a", 16);
  ASSERT_TRUE(pa.has_value()) << PoolsDump("a");
  ASSERT_TRUE(WaitPoolSize("b", 1).has_value()) << PoolsDump("b");
  const std::string a = pa->metadata.name;

  constexpr int kAllocations = 8;
  kube::Client<api::SpiderIPPool> pools(env_->rest());
  // One allocation: the lowest IP the live pool lists and no record holds (none when full).
  auto allocate = [&](int i) {
    return kube::RetryOnConflict(
        {.initial = absl::Milliseconds(1), .max = absl::Milliseconds(20), .steps = 500},
        [&]() -> absl::Status {
          auto p = pools.Get("", a);
          if (!p.ok()) return p.status();
          auto recs = p->AllocatedIPs();
          if (!recs.ok()) return recs.status();
          for (const base::IPRange& r : Ranges(p->spec.ips)) {
            for (const base::IPAddress& ip : r) {
              if (recs->count(ip.ToString()) > 0) continue;
              (*recs)[ip.ToString()] = {.pod = StrCat("ns/a-", i), .pod_uid = StrCat("u", i)};
              p->SetAllocatedIPs(*recs);
              return pools.UpdateStatus(*p).status();
            }
          }
          return absl::OkStatus();
        });
  };
  ASSERT_TRUE(allocate(0).ok());
  std::jthread agent([&] {
    for (int i = 1; i < kAllocations; ++i) EXPECT_TRUE(allocate(i).ok());
  });
  Scale("a", 0);
  Scale("b", 10);
  agent.join();

  auto allocated = [&]() -> std::set<std::string> {
    auto recs = env_->Records(a);
    std::set<std::string> out;
    if (recs.ok()) {
      for (const auto& [ip, r] : *recs) out.insert(ip);
    }
    return out;
  };
  const std::set<std::string> held = allocated();
  ASSERT_GE(held.size(), 1u);  // the racing ones may have found the pool already shrunk
  ASSERT_LE(held.size(), static_cast<size_t>(kAllocations));
  std::vector<std::string> held_list(held.begin(), held.end());
  // "a" ends with exactly its allocated IPs (desired 1), "b" with 11.
  ASSERT_TRUE(WaitPool("a", held_list).has_value()) << PoolsDump("a");
  auto pb = WaitPoolSize("b", 11);
  ASSERT_TRUE(pb.has_value()) << PoolsDump("b");
  for (const base::IPRange& r : Ranges(pb->spec.ips)) {
    for (const base::IPAddress& ip : r) EXPECT_EQ(held.count(ip.ToString()), 0u) << ip.ToString();
  }
  ASSERT_TRUE(WaitConsistent(subnet)) << Inconsistency(subnet);
}

TEST_F(AutoPoolTest, ReclaimDeletesThePoolAndFreesItsIPsOnceEmpty) {
  const std::string subnet = SubnetName("s5");
  CreateSubnet(subnet, "10.252.5.0/24", {"10.252.5.10-10.252.5.60"});
  Start();
  CreateDeployment("web", 1, SubnetAnno(subnet));
  auto pool = WaitPool("web", {"10.252.5.10-10.252.5.11"});
  ASSERT_TRUE(pool.has_value()) << PoolsDump("web");
  const std::string name = pool->metadata.name;
  ASSERT_TRUE(env_->EditRecords(name,
                                [](api::PoolIPAllocations* r) {
                                  (*r)["10.252.5.11"] = {.pod = "ns/a", .pod_uid = "ua"};
                                })
                  .ok());

  DeleteDeployment("web");
  ASSERT_TRUE(WaitUntil([&] {
    auto p = env_->GetPool(name);
    return p.ok() && p->metadata.IsDeleting();
  })) << PoolsDump("web");
  // Still holding an allocated IP: the pool stays (finalizer) and so does its record.
  EXPECT_TRUE(env_->GetPool(name).ok());
  EXPECT_EQ(Records(subnet).count(name), 1u);

  ASSERT_TRUE(env_->EditRecords(name, [](api::PoolIPAllocations* r) { r->clear(); }).ok());
  ASSERT_TRUE(WaitUntil([&] { return kube::IsNotFound(env_->GetPool(name).status()); }));
  ASSERT_TRUE(WaitUntil([&] {
    api::SpiderSubnet s = GetSubnet(subnet);
    auto rec = s.ControlledIPPools();
    return rec.ok() && rec->empty() && s.status.allocated_ip_count == 0;
  })) << base::DumpJson(api::Encode(GetSubnet(subnet).status));
}

TEST_F(AutoPoolTest, KeptPoolIsAdoptedByTheNextAppOfTheSameName) {
  const std::string subnet = SubnetName("s6");
  CreateSubnet(subnet, "10.252.6.0/24", {"10.252.6.10-10.252.6.60"});
  Start();
  const auto anno = SubnetAnno(subnet, {{"ipam.spidernet.io/ippool-reclaim", "false"}});
  api::Deployment first = CreateDeployment("db", 2, anno);
  auto pool = WaitPool("db", {"10.252.6.10-10.252.6.12"});
  ASSERT_TRUE(pool.has_value()) << PoolsDump("db");
  EXPECT_EQ(pool->metadata.labels.at("ipam.spidernet.io/ippool-reclaim"), "false");

  DeleteDeployment("db");
  ASSERT_TRUE(WaitUntil([&] {
    return ctrl_->informers().deployments->store().Get(StrCat(env_->ns(), "/db")) == nullptr;
  }));
  // The app is gone (as the cache sees it): one reconcile, and the pool is still there.
  ASSERT_TRUE(ctrl_->Reconcile(AutoPoolController::AppKey("Deployment", env_->ns(), "db")).ok());
  auto kept = env_->GetPool(pool->metadata.name);
  ASSERT_TRUE(kept.ok());
  EXPECT_FALSE(kept->metadata.IsDeleting());
  EXPECT_EQ(Records(subnet).count(pool->metadata.name), 1u);

  api::Deployment second = CreateDeployment("db", 3, anno);
  ASSERT_NE(second.metadata.uid, first.metadata.uid);
  ASSERT_TRUE(WaitUntil([&] {
    auto p = env_->GetPool(pool->metadata.name);
    return p.ok() &&
           p->metadata.labels.at("ipam.spidernet.io/owner-application-uid") ==
               second.metadata.uid &&
           base::CountIPs(Ranges(p->spec.ips)) == 4;
  })) << PoolsDump("db");
  auto adopted = env_->GetPool(pool->metadata.name);
  ASSERT_TRUE(adopted.ok());
  EXPECT_EQ(adopted->metadata.uid, pool->metadata.uid) << "the same object, adopted";
  EXPECT_EQ(AppPools("db").size(), 1u);
  auto sel = SelectForPod(second);
  ASSERT_TRUE(sel.ok()) << sel.status();
  EXPECT_EQ(sel->nics[0].ipv4_pools, std::vector<std::string>{pool->metadata.name});
  ASSERT_TRUE(WaitConsistent(subnet)) << Inconsistency(subnet);
}

TEST_F(AutoPoolTest, ExhaustedSubnetIsAnEventAndNoPartialPool) {
  const std::string subnet = SubnetName("s7");
  CreateSubnet(subnet, "10.252.7.0/24", {"10.252.7.10-10.252.7.13"});
  Start();
  CreateDeployment("a", 2, SubnetAnno(subnet));
  ASSERT_TRUE(WaitPool("a", {"10.252.7.10-10.252.7.12"}).has_value()) << PoolsDump("a");

  CreateDeployment("b", 1, SubnetAnno(subnet));  // wants 2, one is left
  std::string message;
  ASSERT_TRUE(WaitEvent("b", "InsufficientSubnetIPs", &message));
  EXPECT_NE(message.find("insufficient subnet FreeIPs, required '2' but only left '1'"),
            std::string::npos)
      << message;
  EXPECT_TRUE(AppPools("b").empty()) << PoolsDump("b");
  EXPECT_EQ(Records(subnet).size(), 1u);
  ASSERT_TRUE(WaitConsistent(subnet)) << Inconsistency(subnet);

  // "a" shrinks: the subnet change wakes "b" up.
  Scale("a", 0);
  ASSERT_TRUE(WaitPool("a", {"10.252.7.12"}).has_value()) << PoolsDump("a");
  ASSERT_TRUE(WaitPool("b", {"10.252.7.10-10.252.7.11"}).has_value()) << PoolsDump("b");
  ASSERT_TRUE(WaitConsistent(subnet)) << Inconsistency(subnet);
}

TEST_F(AutoPoolTest, EveryWorkloadKind) {
  const std::string s1 = SubnetName("s8a");
  const std::string s2 = SubnetName("s8b");
  CreateSubnet(s1, "10.252.8.0/24", {"10.252.8.1-10.252.8.200"});
  CreateSubnet(s2, "10.252.9.0/24", {"10.252.9.1-10.252.9.200"});
  Start();
  const std::string ns = env_->ns();
  auto rest = env_->rest();
  const auto anno = SubnetAnno(s1);

  api::StatefulSet sts;
  sts.metadata = {.name = "sts", .namespace_ = ns};
  sts.spec.replicas = 3;
  sts.spec.service_name = "sts";
  sts.spec.selector = api::LabelSelector{.match_labels = {{"app", "sts"}}};
  Template(&sts.spec.template_, "sts", anno);
  ASSERT_TRUE(kube::Client<api::StatefulSet>(rest).Create(sts).ok());

  api::DaemonSet ds;  // no node matches: desiredNumberScheduled 0
  ds.metadata = {.name = "ds", .namespace_ = ns};
  ds.spec.selector = api::LabelSelector{.match_labels = {{"app", "ds"}}};
  Template(&ds.spec.template_, "ds", anno);
  ASSERT_TRUE(kube::Client<api::DaemonSet>(rest).Create(ds).ok());

  api::Job job;
  job.metadata = {.name = "job", .namespace_ = ns};
  job.spec.parallelism = 2;
  job.spec.completions = 4;
  Template(&job.spec.template_, "job", anno);
  job.spec.template_.spec.restart_policy = "Never";
  ASSERT_TRUE(kube::Client<api::Job>(rest).Create(job).ok());

  api::CronJob cj;
  cj.metadata = {.name = "cron", .namespace_ = ns};
  cj.spec.schedule = "0 0 1 1 *";
  cj.spec.suspend = true;
  cj.spec.job_template.spec.parallelism = 3;
  Template(&cj.spec.job_template.spec.template_, "cron", anno);
  cj.spec.job_template.spec.template_.spec.restart_policy = "Never";
  ASSERT_TRUE(kube::Client<api::CronJob>(rest).Create(cj).ok());

  api::ReplicaSet rs;
  rs.metadata = {.name = "rs", .namespace_ = ns};
  rs.spec.replicas = 2;
  rs.spec.selector = api::LabelSelector{.match_labels = {{"app", "rs"}}};
  Template(&rs.spec.template_, "rs", anno);
  ASSERT_TRUE(kube::Client<api::ReplicaSet>(rest).Create(rs).ok());

  // Two NICs from two subnets.
  CreateDeployment("multi", 1,
                   {{"ipam.spidernet.io/subnets",
                     StrCat(R"([{"interface":"eth0","ipv4":[")", s1,
                            R"("]},{"interface":"net1","ipv4":[")", s2, R"("]}])")}});

  ASSERT_TRUE(WaitPoolSize("sts", 4).has_value()) << PoolsDump("sts");
  ASSERT_TRUE(WaitPoolSize("ds", 1).has_value()) << PoolsDump("ds");
  ASSERT_TRUE(WaitPoolSize("job", 5).has_value()) << PoolsDump("job");
  ASSERT_TRUE(WaitPoolSize("cron", 4).has_value()) << PoolsDump("cron");
  ASSERT_TRUE(WaitPoolSize("rs", 3).has_value()) << PoolsDump("rs");
  EXPECT_EQ(AppPools("job")[0].metadata.labels.at("ipam.spidernet.io/owner-application-gv"),
            "batch_v1");
  ASSERT_TRUE(WaitUntil([&] { return AppPools("multi").size() == 2; })) << PoolsDump("multi");
  std::set<std::string> nics;
  for (const auto& p : AppPools("multi")) {
    nics.insert(p.metadata.labels.at("ipam.spidernet.io/interface") + "@" +
                p.metadata.labels.at("ipam.spidernet.io/owner-spider-subnet"));
  }
  EXPECT_EQ(nics, (std::set<std::string>{"eth0@" + s1, "net1@" + s2}));

  // No pool: a ReplicaSet of a Deployment (its pods belong to the Deployment) and a
  // hostNetwork app.
  api::Deployment owner = CreateDeployment("owner", 1, {});
  api::ReplicaSet child = rs;
  child.metadata = {.name = "owned-rs", .namespace_ = ns};
  child.metadata.owner_references.push_back({.api_version = "apps/v1",
                                             .kind = "Deployment",
                                             .name = "owner",
                                             .uid = owner.metadata.uid,
                                             .controller = true});
  ASSERT_TRUE(kube::Client<api::ReplicaSet>(rest).Create(child).ok());
  CreateDeployment("hostnet", 1, anno, /*host_network=*/true);
  ASSERT_TRUE(WaitUntil([&] {
    return ctrl_->informers().replicasets->store().Get(ns + "/owned-rs") != nullptr &&
           ctrl_->informers().deployments->store().Get(ns + "/hostnet") != nullptr;
  }));
  ASSERT_TRUE(ctrl_->Reconcile(AutoPoolController::AppKey("ReplicaSet", ns, "owned-rs")).ok());
  ASSERT_TRUE(ctrl_->Reconcile(AutoPoolController::AppKey("Deployment", ns, "hostnet")).ok());
  EXPECT_TRUE(AppPools("owned-rs").empty());
  EXPECT_TRUE(AppPools("hostnet").empty());
  ASSERT_TRUE(WaitConsistent(s1)) << Inconsistency(s1);
  ASSERT_TRUE(WaitConsistent(s2)) << Inconsistency(s2);
}

TEST_F(AutoPoolTest, BadAnnotationIsAnEvent) {
  const std::string subnet = SubnetName("s10");
  CreateSubnet(subnet, "10.252.10.0/24", {"10.252.10.10-10.252.10.60"});
  Start();
  CreateDeployment("bad", 1, SubnetAnno(subnet, {{"ipam.spidernet.io/ippool-ip-number", "x"}}));
  CreateDeployment("nosubnet", 1, SubnetAnno(SubnetName("missing")));
  std::string message;
  ASSERT_TRUE(WaitEvent("bad", "InvalidSubnetAnnotation", &message));
  EXPECT_NE(message.find("invalid input 'x'"), std::string::npos) << message;
  ASSERT_TRUE(WaitEvent("nosubnet", "SubnetNotReady", &message));
  EXPECT_NE(message.find("not found"), std::string::npos) << message;
  EXPECT_TRUE(AppPools("bad").empty());

  // The subnet appears: the waiting app gets its pool.
  CreateSubnet(SubnetName("missing"), "10.252.11.0/24", {"10.252.11.10-10.252.11.60"});
  ASSERT_TRUE(WaitPool("nosubnet", {"10.252.11.10-10.252.11.11"}).has_value())
      << PoolsDump("nosubnet");
}

// A third-party controller (reference §2.7: OpenKruise CloneSet, ...): no informer of its kind,
// so its pods tell the controller what to create; only a fixed ippool-ip-number is accepted;
// the pool goes (reclaim) when no pod of the application is left.
TEST_F(AutoPoolTest, ThirdPartyAppGetsAFixedSizePoolFromItsPods) {
  const std::string subnet = SubnetName("s12");
  CreateSubnet(subnet, "10.252.12.0/24", {"10.252.12.10-10.252.12.60"});
  Start();
  kube::Client<api::Pod> pods(env_->rest());
  auto clone_pod = [&](const std::string& name, const std::string& app, const std::string& uid,
                       std::map<std::string, std::string> annotations) {
    api::Pod pod;
    pod.metadata.namespace_ = env_->ns();
    pod.metadata.name = name;
    pod.metadata.annotations = std::move(annotations);
    pod.metadata.owner_references.push_back({.api_version = "apps.kruise.io/v1alpha1",
                                             .kind = "CloneSet", .name = app, .uid = uid,
                                             .controller = true});
    pod.spec.containers.push_back({.name = "c", .image = "registry.k8s.io/pause:3.9"});
    pod.spec.unknown = {{"nodeSelector", {{"spiderpool.test/never", "true"}}}};
    auto out = pods.Create(pod);
    EXPECT_TRUE(out.ok()) << out.status();
  };
  const std::string uid = "5e7b0d1c-0000-4000-8000-00000000c10e";
  clone_pod("clone-a", "clone", uid, SubnetAnno(subnet, {{"ipam.spidernet.io/ippool-ip-number", "3"}}));
  clone_pod("clone-b", "clone", uid, SubnetAnno(subnet, {{"ipam.spidernet.io/ippool-ip-number", "3"}}));
  auto pool = WaitPool("clone", {"10.252.12.10-10.252.12.12"});
  ASSERT_TRUE(pool.has_value()) << PoolsDump("clone");
  EXPECT_EQ(pool->metadata.name, dipam::AutoPoolName("clone", 4, "eth0", uid));
  const auto& l = pool->metadata.labels;
  EXPECT_EQ(l.at("ipam.spidernet.io/owner-application-gv"), "apps.kruise.io_v1alpha1");
  EXPECT_EQ(l.at("ipam.spidernet.io/owner-application-kind"), "CloneSet");
  EXPECT_EQ(l.at("ipam.spidernet.io/owner-application-uid"), uid);
  EXPECT_EQ(pool->metadata.annotations.at("ipam.spidernet.io/ippool-ip-number"), "3");
  ASSERT_TRUE(WaitConsistent(subnet)) << Inconsistency(subnet);
  EXPECT_EQ(Records(subnet).at(pool->metadata.name).application,
            StrCat("apps.kruise.io_v1alpha1_CloneSet_", env_->ns(), "_clone"));

  // What the agent selects for such a pod is that pool (no UID label match for third parties).
  dipam::SelectionRequest req;
  req.pod = {.namespace_ = env_->ns(), .name = "clone-a", .uid = "pod-uid",
             .annotations = SubnetAnno(subnet, {{"ipam.spidernet.io/ippool-ip-number", "3"}}),
             .owner = {.api_version = "apps.kruise.io/v1alpha1", .kind = "CloneSet",
                       .namespace_ = env_->ns(), .name = "clone", .uid = uid}};
  req.node.name = "node-1";
  req.if_name = "eth0";
  auto all = kube::Client<api::SpiderIPPool>(env_->rest()).List("");
  ASSERT_TRUE(all.ok());
  std::vector<const api::SpiderIPPool*> refs;
  for (const auto& p : all->items) refs.push_back(&p);
  auto sel = dipam::SelectPools(req, dipam::SelectionConfig{}, refs);
  ASSERT_TRUE(sel.ok()) << sel.status();
  EXPECT_EQ(sel->nics[0].ipv4_pools, std::vector<std::string>{pool->metadata.name});

  // A flexible number cannot size a kind we cannot read: an Event, no pool.
  clone_pod("flex-a", "flex", "5e7b0d1c-0000-4000-8000-00000000f1e8", SubnetAnno(subnet));
  std::string message;
  ASSERT_TRUE(WaitEvent("flex", "InvalidSubnetAnnotation", &message));
  EXPECT_NE(message.find("only supports fixed auto-created IPPool IP Number"), std::string::npos)
      << message;
  EXPECT_TRUE(AppPools("flex").empty());

  // Every pod of the CloneSet is gone: the reclaimable pool goes and its IPs return.
  for (const char* name : {"clone-a", "clone-b"}) {
    ASSERT_TRUE(pods.Delete(env_->ns(), name, {.grace_period_seconds = 0}).ok());
  }
  ASSERT_TRUE(WaitUntil([&] { return AppPools("clone").empty(); })) << PoolsDump("clone");
  ASSERT_TRUE(WaitUntil([&] { return Records(subnet).empty(); }));
}

// The one-call wiring: AddToManager on a Manager, informers made and run by the controller.
TEST(AddToManagerTest, WiresTheControllerIntoAManager) {
  auto env = TestEnv::Start();
  ASSERT_TRUE(env.ok()) << env.status();
  kube::metrics::Registry registry;  // outlives the manager and its runnables
  kube::Manager mgr(kube::ManagerOptions{.name = "test"});
  AutoPoolOptions off;
  off.enable_auto_pool_for_application = false;
  auto none = AddToManager(&mgr, (*env)->rest(), off);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  AutoPoolOptions bad;
  bad.enable_ipv4 = false;
  EXPECT_EQ(AddToManager(&mgr, (*env)->rest(), bad).status().code(),
            absl::StatusCode::kInvalidArgument);
  bad = {};
  bad.cluster_subnet_default_flexible_ip_number = -1;
  EXPECT_EQ(AddToManager(&mgr, (*env)->rest(), bad).status().code(),
            absl::StatusCode::kInvalidArgument);

  AutoPoolOptions o;
  o.namespace_ = (*env)->ns();
  o.registry = &registry;
  o.extra_pool_labels = {{kOwnerLabel, (*env)->ns()}};
  auto ctrl = AddToManager(&mgr, (*env)->rest(), o);
  ASSERT_TRUE(ctrl.ok()) << ctrl.status();
  ASSERT_NE(*ctrl, nullptr);
  EXPECT_TRUE((*ctrl)->NeedsLeaderElection());

  const std::string subnet = (*env)->Name("s12");
  api::SpiderSubnet s;
  s.metadata = (*env)->ClusterMeta(subnet);
  s.spec.subnet = "10.252.12.0/24";
  s.spec.ips = {"10.252.12.10-10.252.12.20"};
  ASSERT_TRUE(kube::Client<api::SpiderSubnet>((*env)->rest()).Create(s).ok());
  std::stop_source stop;
  absl::Status result;
  std::jthread run([&] { result = mgr.Run(stop.get_token()); });

  api::Deployment d;
  d.metadata = {.name = "web", .namespace_ = (*env)->ns()};
  d.spec.replicas = 1;
  d.spec.selector = api::LabelSelector{.match_labels = {{"app", "web"}}};
  d.spec.template_.metadata.labels = {{"app", "web"}};
  d.spec.template_.metadata.annotations = {
      {"ipam.spidernet.io/subnet", StrCat(R"({"ipv4":[")", subnet, R"("]})")}};
  d.spec.template_.spec.containers.push_back({.name = "c", .image = "registry.k8s.io/pause:3.9"});
  d.spec.template_.spec.unknown = {{"nodeSelector", {{"spiderpool.test/never", "true"}}}};
  ASSERT_TRUE(kube::Client<api::Deployment>((*env)->rest()).Create(d).ok());
  EXPECT_TRUE(WaitUntil([&] {
    auto list =
        kube::Client<api::SpiderIPPool>((*env)->rest())
            .List("", {.label_selector = StrCat(api::kLabelOwnerSpiderSubnet, "=", subnet)});
    return list.ok() && list->items.size() == 1 &&
           Canon(list->items[0].spec.ips) == Canon({"10.252.12.10-10.252.12.11"});
  }));
  stop.request_stop();
  run.join();
  EXPECT_TRUE(result.ok()) << result;
  EXPECT_NE(registry.Expose().find("controller=\"spidersubnet-application\""), std::string::npos);
}

}  // namespace
}  // namespace spiderpool::op::subnet
