// The pure decisions of the auto-pool controller: applications, wanted pools, the pool object
// (checked against ipam's selection and the admission rules), and the IP planning.

#include "operator/subnet/plan.h"

#include <gtest/gtest.h>

#include "api/validation/validation.h"
#include "ipam/selection.h"

namespace spiderpool::op::subnet {
namespace {

using base::IPRange;

std::vector<IPRange> R(const std::vector<std::string>& texts) {
  auto r = base::ParseIPRanges(texts);
  EXPECT_TRUE(r.ok()) << r.status();
  return base::MergeIPRanges(r.ok() ? *r : std::vector<IPRange>{});
}

std::vector<std::string> F(const std::vector<IPRange>& r) { return base::FormatIPRanges(r); }

api::Deployment Deploy(const std::string& name, std::optional<int32_t> replicas,
                       std::map<std::string, std::string> annotations) {
  api::Deployment d;
  d.metadata.namespace_ = "ns1";
  d.metadata.name = name;
  d.metadata.uid = "6b1f0c3a-1111-2222-3333-abcdef987654";
  d.spec.replicas = replicas;
  d.spec.template_.metadata.annotations = std::move(annotations);
  return d;
}

const std::string kSubnetAnno = R"({"interface":"eth0","ipv4":["s4"],"ipv6":["s6"]})";

// ---- Applications ---------------------------------------------------------------------------

TEST(ApplicationTest, ReplicasOfEveryKind) {
  EXPECT_EQ(ApplicationOf(Deploy("d", 3, {})).replicas, 3);
  EXPECT_EQ(ApplicationOf(Deploy("d", std::nullopt, {})).replicas, 1);  // API default
  api::StatefulSet sts;
  sts.spec.replicas = 0;
  EXPECT_EQ(ApplicationOf(sts).replicas, 0);
  EXPECT_EQ(ApplicationOf(sts).kind, "StatefulSet");
  api::DaemonSet ds;
  ds.status.desired_number_scheduled = 7;
  EXPECT_EQ(ApplicationOf(ds).replicas, 7);
  api::ReplicaSet rs;
  rs.spec.replicas = 4;
  EXPECT_EQ(ApplicationOf(rs).replicas, 4);
  api::Job job;
  job.spec.parallelism = 2;
  job.spec.completions = 5;
  EXPECT_EQ(ApplicationOf(job).replicas, 5);
  EXPECT_EQ(ApplicationOf(job).api_version, "batch/v1");
  api::CronJob cj;
  cj.spec.job_template.spec.parallelism = 3;
  cj.spec.job_template.spec.template_.metadata.annotations["k"] = "v";
  EXPECT_EQ(ApplicationOf(cj).replicas, 3);
  EXPECT_EQ(ApplicationOf(cj).pod_annotations.at("k"), "v");
}

TEST(ApplicationTest, JobPodNumberFollowsUpstream) {
  EXPECT_EQ(JobPodNumber(std::nullopt, std::nullopt), 1);
  EXPECT_EQ(JobPodNumber(4, std::nullopt), 4);
  EXPECT_EQ(JobPodNumber(0, std::nullopt), 1);
  EXPECT_EQ(JobPodNumber(std::nullopt, 6), 6);
  EXPECT_EQ(JobPodNumber(std::nullopt, 0), 1);
  EXPECT_EQ(JobPodNumber(2, 9), 9);  // completions wins when both are set
  EXPECT_EQ(JobPodNumber(2, 0), 1);
  EXPECT_EQ(JobPodNumber(-3, std::nullopt), 0);
}

TEST(ApplicationTest, SkipReasons) {
  api::Deployment d = Deploy("d", 1, {{"ipam.spidernet.io/subnet", kSubnetAnno}});
  EXPECT_EQ(SkipReason(ApplicationOf(d)), "");
  EXPECT_NE(SkipReason(ApplicationOf(Deploy("d", 1, {}))), "");
  d.spec.template_.spec.host_network = true;
  EXPECT_EQ(SkipReason(ApplicationOf(d)), "HostNetwork mode");

  api::ReplicaSet rs;
  rs.spec.template_.metadata.annotations = {{"ipam.spidernet.io/subnets", "[]"}};
  EXPECT_EQ(SkipReason(ApplicationOf(rs)), "");
  rs.metadata.owner_references.push_back({.api_version = "apps/v1",
                                          .kind = "Deployment",
                                          .name = "d",
                                          .uid = "u",
                                          .controller = true});
  EXPECT_EQ(SkipReason(ApplicationOf(rs)), "controlled by a Deployment");
  api::Job job;
  job.spec.template_.metadata.annotations = {{"ipam.spidernet.io/subnet", kSubnetAnno}};
  job.metadata.owner_references.push_back(
      {.api_version = "batch/v1", .kind = "CronJob", .name = "c", .uid = "u", .controller = true});
  EXPECT_EQ(SkipReason(ApplicationOf(job)), "controlled by a CronJob");
  // A non-controller owner reference does not count.
  job.metadata.owner_references[0].controller = false;
  EXPECT_EQ(SkipReason(ApplicationOf(job)), "");
}

TEST(ApplicationTest, ApplicationStringAndIdentity) {
  EXPECT_EQ(ApplicationString("apps/v1", "Deployment", "ns1", "web"), "apps_v1_Deployment_ns1_web");
  EXPECT_EQ(ApplicationString("v1", "Pod", "ns1", "p"), "v1_Pod_ns1_p");
  EXPECT_EQ(IdentityKey(ApplicationOf(Deploy("web", 1, {}))), "apps_v1/Deployment/ns1/web");
  EXPECT_EQ(ReleasingKey("auto4-web-eth0-98765"), "auto4-web-eth0-98765/releasing");
  EXPECT_EQ(PoolOfKey("auto4-web-eth0-98765/releasing"), "auto4-web-eth0-98765");
  EXPECT_EQ(PoolOfKey("auto4-web-eth0-98765"), "auto4-web-eth0-98765");
}

// ---- Wanted pools ---------------------------------------------------------------------------

TEST(WantedAutoPoolsTest, SingleSubnetDefaultsToFlexibleOne) {
  Application app = ApplicationOf(Deploy("web", 3, {{"ipam.spidernet.io/subnet", kSubnetAnno}}));
  auto w = WantedAutoPools(app, {.enable_ipv4 = true, .enable_ipv6 = true});
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->size(), 2u);
  EXPECT_EQ((*w)[0].subnet, "s4");
  EXPECT_EQ((*w)[0].ip_version, 4);
  EXPECT_EQ((*w)[0].if_name, "eth0");
  EXPECT_EQ((*w)[0].ip_number, 4);
  EXPECT_EQ((*w)[0].ip_number_annotation, "+1");
  EXPECT_TRUE((*w)[0].reclaim);
  EXPECT_EQ((*w)[1].subnet, "s6");
  EXPECT_EQ((*w)[1].ip_version, 6);

  // IPv6 off: no IPv6 pool; the cluster default flexible number applies.
  w = WantedAutoPools(
      app,
      {.enable_ipv4 = true, .enable_ipv6 = false, .cluster_subnet_default_flexible_ip_number = 3});
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(w->size(), 1u);
  EXPECT_EQ((*w)[0].ip_number, 6);
  EXPECT_EQ((*w)[0].ip_number_annotation, "+3");
}

TEST(WantedAutoPoolsTest, FixedFlexibleReclaimAndMultipleNICs) {
  Application app = ApplicationOf(Deploy(
      "web", 3,
      {{"ipam.spidernet.io/subnets",
        R"([{"interface":"eth0","ipv4":["a4","b4"]},{"interface":"net1","ipv4":["c4"],"ipv6":["c6"]}])"},
       {"ipam.spidernet.io/subnet", kSubnetAnno},  // ignored: "subnets" wins
       {"ipam.spidernet.io/ippool-ip-number", "5"},
       {"ipam.spidernet.io/ippool-reclaim", "false"}}));
  auto w = WantedAutoPools(app, {.enable_ipv4 = true, .enable_ipv6 = true});
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->size(), 3u);
  EXPECT_EQ((*w)[0].subnet, "a4");  // only the first subnet of a family
  EXPECT_EQ((*w)[1].if_name, "net1");
  EXPECT_EQ((*w)[2].subnet, "c6");
  for (const AutoPoolWant& x : *w) {
    EXPECT_EQ(x.ip_number, 5);
    EXPECT_EQ(x.ip_number_annotation, "5");
    EXPECT_FALSE(x.reclaim);
  }
  app.pod_annotations["ipam.spidernet.io/ippool-ip-number"] = "+2";
  w = WantedAutoPools(app, {});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)[0].ip_number, 5);
  EXPECT_EQ((*w)[0].ip_number_annotation, "+2");
}

TEST(WantedAutoPoolsTest, BadAnnotationsAreInvalidArgument) {
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"ipam.spidernet.io/subnet", "{"},
           {"ipam.spidernet.io/subnet", R"({"interface":"eth0"})"},
           {"ipam.spidernet.io/ippool-ip-number", "-1"},
           {"ipam.spidernet.io/ippool-ip-number", "x"},
           {"ipam.spidernet.io/ippool-reclaim", "maybe"}}) {
    ipam::Annotations a = {{"ipam.spidernet.io/subnet", kSubnetAnno}};
    a[k] = v;
    Application app = ApplicationOf(Deploy("web", 1, a));
    auto w = WantedAutoPools(app, {});
    EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument) << k << "=" << v;
  }
  EXPECT_TRUE(WantedAutoPools(ApplicationOf(Deploy("web", 1, {})), {})->empty());
}

// ---- The pool object ------------------------------------------------------------------------

api::SpiderSubnet Subnet() {
  api::SpiderSubnet s;
  s.SetTypeMeta();
  s.metadata.name = "s4";
  s.metadata.uid = "subnet-uid";
  s.spec.ip_version = 4;
  s.spec.subnet = "10.6.0.0/24";
  s.spec.ips = {"10.6.0.10-10.6.0.100"};
  s.spec.gateway = "10.6.0.1";
  s.spec.routes = std::vector<api::Route>{{.dst = "10.7.0.0/16", .gw = "10.6.0.2"}};
  return s;
}

TEST(NewAutoPoolTest, FoundAndSelectedForAPodOfTheApp) {
  api::Deployment d = Deploy("web", 2, {{"ipam.spidernet.io/subnet", kSubnetAnno}});
  Application app = ApplicationOf(d);
  auto wants = WantedAutoPools(app, {});
  ASSERT_TRUE(wants.ok());
  const AutoPoolWant& want = (*wants)[0];
  const std::string name = ipam::AutoPoolName(app.name, 4, "eth0", app.uid);
  EXPECT_EQ(name, "auto4-web-eth0-abcde");
  auto pool = NewAutoPool(name, app, want, Subnet(), {"10.6.0.10-10.6.0.12"});
  ASSERT_TRUE(pool.ok()) << pool.status();
  EXPECT_EQ(pool->metadata.labels.at("ipam.spidernet.io/ippool-cidr"), "10-6-0-0-24");
  EXPECT_EQ(pool->metadata.labels.at("ipam.spidernet.io/ippool-reclaim"), "true");
  EXPECT_EQ(pool->metadata.annotations.at("ipam.spidernet.io/ippool-ip-number"), "+1");
  ASSERT_NE(pool->metadata.ControllerRef(), nullptr);
  EXPECT_EQ(pool->metadata.ControllerRef()->kind, "SpiderSubnet");
  EXPECT_TRUE(pool->metadata.HasFinalizer(api::kSpiderFinalizer));
  EXPECT_EQ(pool->spec.gateway, "10.6.0.1");
  ASSERT_TRUE(pool->spec.routes.has_value());
  EXPECT_EQ(pool->spec.routes->size(), 1u);
  EXPECT_EQ(pool->spec.pod_affinity->match_labels.at("ipam.spidernet.io/app-api-group"), "apps");
  EXPECT_EQ(pool->spec.pod_affinity->match_labels.at("ipam.spidernet.io/app-api-version"), "v1");

  // The agent's side: a pod of this Deployment finds the pool by rule 1.
  ipam::SelectionRequest req;
  req.pod = {.namespace_ = "ns1",
             .name = "web-5d9c-x",
             .uid = "pod-uid",
             .annotations = d.spec.template_.metadata.annotations,
             .owner = {.api_version = "apps/v1",
                       .kind = "Deployment",
                       .namespace_ = "ns1",
                       .name = "web",
                       .uid = app.uid,
                       .replicas = 2}};
  req.node.name = "n1";
  req.if_name = "eth0";
  ipam::SelectionConfig config;
  auto refs = ipam::AutoPoolRefsForPod(req, config);
  ASSERT_TRUE(refs.ok()) << refs.status();
  ASSERT_EQ(refs->size(), 1u);
  EXPECT_EQ((*refs)[0].pool_name, name);
  auto found = ipam::FindAutoPool((*refs)[0], req.pod.owner, {&*pool});
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, &*pool);
  auto sel = ipam::SelectPools(req, config, {&*pool});
  ASSERT_TRUE(sel.ok()) << sel.status();
  EXPECT_EQ(sel->rule, ipam::SelectionRule::kSubnetAnnotation);
  ASSERT_EQ(sel->nics.size(), 1u);
  EXPECT_EQ(sel->nics[0].ipv4_pools, std::vector<std::string>{name});

  // A pod of another app with the same labels is not served.
  ipam::SelectionRequest other = req;
  other.pod.owner.name = "web2";
  EXPECT_NE(ipam::PoolFilterReason(*pool, 4, other, config, "eth0", std::string("ns/nad")), "");
}

TEST(NewAutoPoolTest, IsWhatTheWebhooksAccept) {
  Application app = ApplicationOf(Deploy("web", 2, {{"ipam.spidernet.io/subnet", kSubnetAnno}}));
  const AutoPoolWant want = (*WantedAutoPools(app, {}))[0];
  api::SpiderSubnet subnet = Subnet();
  const std::string name = ipam::AutoPoolName(app.name, 4, "eth0", app.uid);
  subnet.SetControlledIPPools(
      {{name, {.ips = {"10.6.0.10-10.6.0.12"}, .application = ApplicationString(app)}}});
  auto pool = NewAutoPool(name, app, want, subnet, {"10.6.0.10-10.6.0.12"});
  ASSERT_TRUE(pool.ok());
  api::validation::Context ctx;
  ctx.subnets = {&subnet};
  api::SpiderIPPool mutated = *pool;
  ASSERT_TRUE(api::validation::MutateIPPool(&mutated, ctx).ok());
  EXPECT_EQ(api::Encode(mutated), api::Encode(*pool)) << "already in mutated form";
  api::validation::Result r = api::validation::ValidateIPPoolCreate(*pool, ctx);
  EXPECT_TRUE(r.ok()) << r.ToAbslStatus();

  // spec.ips different from the record: the validating webhook refuses (why records go first).
  api::SpiderIPPool bigger = *pool;
  bigger.spec.ips = {"10.6.0.10-10.6.0.13"};
  EXPECT_FALSE(api::validation::ValidateIPPoolUpdate(*pool, bigger, ctx).ok());

  // Refresh: a new app (same kind/ns/name) adopts the pool.
  Application again = app;
  again.uid = "new-uid";
  AutoPoolWant keep = want;
  keep.reclaim = false;
  api::SpiderIPPool adopted = *pool;
  EXPECT_TRUE(RefreshAutoPool(&adopted, again, keep, pool->spec.ips));
  EXPECT_EQ(adopted.metadata.labels.at("ipam.spidernet.io/owner-application-uid"), "new-uid");
  EXPECT_EQ(adopted.metadata.labels.at("ipam.spidernet.io/ippool-reclaim"), "false");
  EXPECT_FALSE(RefreshAutoPool(&adopted, again, keep, pool->spec.ips));
}

// ---- Planning -------------------------------------------------------------------------------

PlanInput Input() {
  PlanInput in;
  in.subnet_usable = R({"10.0.0.10-10.0.0.29"});
  return in;
}

TEST(PlanPoolIPsTest, NewPoolTakesTheLowestFreeIPs) {
  PlanInput in = Input();
  in.reserved = R({"10.0.0.11", "192.168.0.0-192.168.0.255"});
  in.others = R({"10.0.0.12-10.0.0.13", "10.0.0.16"});
  in.desired = 4;
  auto p = PlanPoolIPs(in);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(F(p->target),
            (std::vector<std::string>{"10.0.0.10", "10.0.0.14-10.0.0.15", "10.0.0.17"}));
  EXPECT_EQ(p->claimed, p->target);
  EXPECT_TRUE(p->releasing.empty());
}

TEST(PlanPoolIPsTest, ExhaustedChangesNothing) {
  PlanInput in = Input();
  in.others = R({"10.0.0.10-10.0.0.27"});
  in.entry = R({"10.0.0.28"});
  in.pool = R({"10.0.0.28"});
  in.desired = 3;
  auto p = PlanPoolIPs(in);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(p.status().message(), "insufficient subnet FreeIPs, required '2' but only left '1'");
}

TEST(PlanPoolIPsTest, GrowKeepsTheOldIPsAndReusesOwnRecordFirst) {
  PlanInput in = Input();
  in.entry = R({"10.0.0.20-10.0.0.22"});  // recorded earlier, the pool update never happened
  in.pool = R({"10.0.0.20"});
  in.allocated = R({"10.0.0.20"});
  in.desired = 5;
  auto p = PlanPoolIPs(in);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(F(p->target), (std::vector<std::string>{"10.0.0.10-10.0.0.11", "10.0.0.20-10.0.0.22"}));
  EXPECT_EQ(F(p->claimed), (std::vector<std::string>{"10.0.0.10-10.0.0.11"}));
}

TEST(PlanPoolIPsTest, ShrinkDropsLowestFreeNeverAllocated) {
  PlanInput in = Input();
  in.entry = R({"10.0.0.10-10.0.0.15"});
  in.pool = in.entry;
  in.allocated = R({"10.0.0.10", "10.0.0.12"});
  in.desired = 3;
  auto p = PlanPoolIPs(in);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(F(p->target), (std::vector<std::string>{"10.0.0.10", "10.0.0.12", "10.0.0.15"}));
  EXPECT_EQ(F(p->releasing), (std::vector<std::string>{"10.0.0.11", "10.0.0.13-10.0.0.14"}));
  EXPECT_EQ(p->over_desired, 0);

  in.allocated = R({"10.0.0.10-10.0.0.14"});
  in.desired = 1;
  p = PlanPoolIPs(in);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(F(p->target), (std::vector<std::string>{"10.0.0.10-10.0.0.14"}));
  EXPECT_EQ(p->over_desired, 4);
}

TEST(PlanPoolIPsTest, AfterAnInterruptedShrinkTheReleasingRecordIsFreed) {
  PlanInput in = Input();
  in.entry = R({"10.0.0.12-10.0.0.13"});
  in.releasing = R({"10.0.0.10-10.0.0.11"});
  in.pool = R({"10.0.0.12-10.0.0.13"});  // the pool update went through
  in.desired = 2;
  auto p = PlanPoolIPs(in);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(F(p->target), (std::vector<std::string>{"10.0.0.12-10.0.0.13"}));
  // Still "releasing" in the plan; the controller frees it once the live pool confirms.
  EXPECT_EQ(F(p->releasing), (std::vector<std::string>{"10.0.0.10-10.0.0.11"}));

  in.pool = R({"10.0.0.10-10.0.0.13"});  // ... or it did not: the pool still lists them
  in.allocated = R({"10.0.0.10"});       // and one got allocated meanwhile
  p = PlanPoolIPs(in);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(F(p->target), (std::vector<std::string>{"10.0.0.10", "10.0.0.13"}));
  EXPECT_EQ(F(p->releasing), (std::vector<std::string>{"10.0.0.11-10.0.0.12"}));
}

TEST(PlanPoolIPsTest, RepairClaimsUnrecordedPoolIPsOrDropsForeignOnes) {
  PlanInput in = Input();
  in.pool = R({"10.0.0.10-10.0.0.12"});  // no record at all
  in.others = R({"10.0.0.11"});
  in.desired = 3;
  auto p = PlanPoolIPs(in);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(F(p->conflicts_dropped), (std::vector<std::string>{"10.0.0.11"}));
  EXPECT_EQ(F(p->target), (std::vector<std::string>{"10.0.0.10", "10.0.0.12-10.0.0.13"}));

  in.allocated = R({"10.0.0.11"});
  p = PlanPoolIPs(in);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(PlanPoolIPsTest, HugeIPv6Subnet) {
  PlanInput in;
  in.subnet_usable = R({"fd00::-fd00::ffff:ffff:ffff:ffff"});
  in.others = R({"fd00::-fd00::1"});
  in.desired = 3;
  auto p = PlanPoolIPs(in);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(F(p->target), (std::vector<std::string>{"fd00::2-fd00::4"}));
  EXPECT_EQ(F(TakeLowest(R({"10.0.0.1-10.0.0.3", "10.0.0.9"}), 4)),
            (std::vector<std::string>{"10.0.0.1-10.0.0.3", "10.0.0.9"}));
  EXPECT_TRUE(TakeLowest(R({"10.0.0.1"}), 0).empty());
}

}  // namespace
}  // namespace spiderpool::op::subnet
