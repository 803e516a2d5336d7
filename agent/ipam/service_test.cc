// IpamService against the loopback API server (or a real cluster through
// SPIDERPOOL_TEST_KUBECONFIG): the whole request flow without the network parts — pods,
// pools, records, SpiderEndpoints, several agents at once, failures that must leave nothing.
#include "agent/ipam/service.h"
#include "agent/ipam/test_agent.h"

#include <atomic>
#include <set>
#include <thread>

#include "agent/dra/node_devices.h"
#include "base/clock.h"
#include "base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "api/apps.h"
#include "api/kubevirt.h"
#include "kube/events/recorder.h"
#include "kube/testing/test_cluster.h"

namespace spiderpool::agent::ipam {
namespace {

using ::testing::HasSubstr;

constexpr char kCrdDir[] = "charts/spiderpool/crds";

// Every case runs twice: node reservations off (each ADD writes its record before it returns)
// and on (blocks.h: most ADDs take an IP this node reserved earlier).
class ServiceTest : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override {
    auto c = kube::testing::TestCluster::Start();
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
    absl::Status crds = cluster_->ApplyCRDs(kCrdDir);
    ASSERT_TRUE(crds.ok()) << crds;
    ns_ = cluster_->ns();
    for (const char* n : {"a", "b"}) {
      api::Node node;
      node.metadata.name = Node(n);
      node.metadata.labels["zone"] = n;
      ASSERT_TRUE(kube::Client<api::Node>(cluster_->rest()).Create(node).ok());
    }
  }

  void TearDown() override {
    services_.clear();
    if (cluster_ == nullptr) return;
    if (cluster_->loopback() != nullptr) cluster_->loopback()->ClearFaults();
    kube::Client<api::SpiderIPPool> pools(cluster_->rest());
    for (const std::string& p : pools_) (void)pools.Delete("", p);
    for (const char* n : {"a", "b"}) (void)kube::Client<api::Node>(cluster_->rest()).Delete("", Node(n));
  }

  std::string Node(std::string_view n) const { return base::StrCat(ns_, "-node-", n); }
  std::string Pool(std::string_view n) const { return base::StrCat(ns_, "-", n); }

  void CreatePool(std::string_view name, std::string subnet, std::vector<std::string> ips,
                  std::function<void(api::SpiderIPPool&)> edit = nullptr) {
    api::SpiderIPPool pool;
    pool.metadata.name = Pool(name);
    pool.spec.subnet = std::move(subnet);
    pool.spec.ips = std::move(ips);
    if (edit) edit(pool);
    auto created = kube::Client<api::SpiderIPPool>(cluster_->rest()).Create(pool);
    ASSERT_TRUE(created.ok()) << created.status();
    pools_.push_back(pool.metadata.name);
  }

  api::Pod CreatePod(std::string_view name, std::string_view node,
                     std::map<std::string, std::string> annotations = {}) {
    api::Pod pod;
    pod.metadata.name = std::string(name);
    pod.metadata.namespace_ = ns_;
    pod.metadata.annotations = std::move(annotations);
    pod.spec.node_name = Node(node);
    pod.spec.containers.push_back({.name = "c", .image = "busybox"});
    auto created = kube::Client<api::Pod>(cluster_->rest()).Create(pod);
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? *created : pod;
  }

  IpamService& Agent(std::string_view node, IPAMConfig config = {}) {
    auto rest = cluster_->NewRest();
    EXPECT_TRUE(rest.ok());
    config.node_ip_block_size = GetParam();
    auto s = std::make_unique<TestAgent>(
        *rest, ServiceOptions{.node_name = Node(node), .config = config});
    EXPECT_TRUE(s->service.WaitForSync(absl::Seconds(30)));
    services_.push_back(std::move(s));
    return services_.back()->service;
  }

  ipamapi::IpamAddArgs Add(const api::Pod& pod, std::string container = "c1",
                           std::string if_name = "eth0") {
    return {.container_id = std::move(container), .if_name = std::move(if_name),
            .net_namespace = "/var/run/netns/x", .pod_namespace = pod.metadata.namespace_,
            .pod_name = pod.metadata.name, .pod_uid = pod.metadata.uid};
  }
  ipamapi::IpamDelArgs Del(const api::Pod& pod, std::string container = "c1") {
    return {.container_id = std::move(container), .if_name = "eth0",
            .pod_namespace = pod.metadata.namespace_, .pod_name = pod.metadata.name,
            .pod_uid = pod.metadata.uid};
  }

  // The pool's pod records (node reservations left out), once every agent has written what
  // it handed out from its reservations.
  api::PoolIPAllocations Records(std::string_view pool) {
    for (const auto& agent : services_) {
      EXPECT_TRUE(agent->service.FlushReservations(Deadline()).ok());
    }
    auto p = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", Pool(pool));
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return {};
    auto recs = p->AllocatedIPs();
    EXPECT_TRUE(recs.ok());
    std::erase_if(*recs, [](const auto& kv) { return api::IsNodeReservation(kv.second); });
    EXPECT_EQ(p->status.allocated_ip_count.value_or(0), static_cast<int64_t>(recs->size()))
        << "allocatedIPCount must equal the number of pod records";
    return *recs;
  }

  absl::StatusOr<api::SpiderEndpoint> Endpoint(std::string_view pod) {
    return kube::Client<api::SpiderEndpoint>(cluster_->rest()).Get(ns_, pod);
  }

  absl::Time Deadline() const { return absl::Now() + absl::Seconds(30); }

  std::unique_ptr<kube::testing::TestCluster> cluster_;
  std::string ns_;
  std::vector<std::string> pools_;
  std::vector<std::unique_ptr<TestAgent>> services_;
};

TEST_P(ServiceTest, AllocatesFromTheDefaultPoolAndReleasesOnDel) {
  CreatePool("v4", "172.18.0.0/16", {"172.18.30.131-172.18.30.140"}, [](api::SpiderIPPool& p) {
    p.spec.gateway = "172.18.0.1";
    p.spec.default_ = true;
  });
  IpamService& agent = Agent("a");
  api::Pod pod = CreatePod("p1", "a");
  auto r = agent.Allocate(Add(pod), Deadline());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->ips.size(), 1u);
  EXPECT_EQ(r->ips[0].address, "172.18.30.131/16");
  EXPECT_EQ(r->ips[0].gateway, "172.18.0.1");
  EXPECT_EQ(r->ips[0].nic, "eth0");
  EXPECT_EQ(r->ips[0].ip_pool, Pool("v4"));
  ASSERT_EQ(r->routes.size(), 1u);
  EXPECT_EQ(r->routes[0].dst, "0.0.0.0/0");
  EXPECT_EQ(r->routes[0].gw, "172.18.0.1");

  api::PoolIPAllocations recs = Records("v4");
  ASSERT_EQ(recs.size(), 1u);
  const api::PoolIPAllocation& rec = recs.at("172.18.30.131");
  EXPECT_EQ(rec.pod, ns_ + "/p1");
  EXPECT_EQ(rec.pod_uid, pod.metadata.uid);
  auto ep = Endpoint("p1");
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->status->current.uid, pod.metadata.uid);
  EXPECT_EQ(ep->status->current.node, Node("a"));
  ASSERT_EQ(ep->status->current.ips.size(), 1u);
  EXPECT_EQ(ep->status->current.ips[0].ipv4.value_or(""), "172.18.30.131/16");
  EXPECT_THAT(ep->metadata.finalizers, ::testing::Contains("spiderpool.spidernet.io"));

  // A repeated ADD of the same container: same answer, no new record.
  auto again = agent.Allocate(Add(pod), Deadline());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *r);
  EXPECT_EQ(Records("v4").size(), 1u);

  ASSERT_TRUE(agent.Release(Del(pod), Deadline()).ok());
  EXPECT_TRUE(Records("v4").empty());
  EXPECT_TRUE(kube::IsNotFound(Endpoint("p1").status()));
  // DEL is idempotent.
  EXPECT_TRUE(agent.Release(Del(pod), Deadline()).ok());
}

TEST_P(ServiceTest, ALateDelOfAnOldSandboxDoesNotFreeTheNewOne) {
  CreatePool("v4", "10.20.0.0/24", {"10.20.0.10-10.20.0.20"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  IpamService& agent = Agent("a");
  api::Pod pod = CreatePod("p1", "a");
  auto first = agent.Allocate(Add(pod, "sandbox-1"), Deadline());
  ASSERT_TRUE(first.ok()) << first.status();
  // The runtime made a new sandbox before tearing down the old one.
  auto second = agent.Allocate(Add(pod, "sandbox-2"), Deadline());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->ips[0].address, first->ips[0].address);
  ASSERT_TRUE(agent.Release(Del(pod, "sandbox-1"), Deadline()).ok());
  api::PoolIPAllocations recs = Records("v4");
  ASSERT_EQ(recs.size(), 1u) << "the DEL of the old sandbox freed the new sandbox's IP";
  EXPECT_EQ(recs.begin()->second.container_id.value_or(""), "sandbox-2");
  ASSERT_TRUE(agent.Release(Del(pod, "sandbox-2"), Deadline()).ok());
  EXPECT_TRUE(Records("v4").empty());
}

TEST_P(ServiceTest, RejectsUnknownPodsAndPodsOfOtherNodes) {
  CreatePool("v4", "10.20.0.0/24", {"10.20.0.10-10.20.0.20"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  IpamService& agent = Agent("a");
  api::Pod other = CreatePod("elsewhere", "b");
  auto r = agent.Allocate(Add(other), Deadline());
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("not on this node"));

  api::Pod ghost = other;
  ghost.metadata.name = "ghost";
  r = agent.Allocate(Add(ghost), Deadline());
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("ghost"));

  api::Pod stale = CreatePod("stale", "a");
  stale.metadata.uid = "not-the-uid";
  r = agent.Allocate(Add(stale), Deadline());
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
  EXPECT_TRUE(Records("v4").empty());
}

TEST_P(ServiceTest, ExhaustedPoolNamesThePoolsAndDualStackFailureLeavesNothing) {
  CreatePool("v4", "10.20.0.0/24", {"10.20.0.10-10.20.0.11"});
  CreatePool("v6", "fd00:20::/64", {"fd00:20::10"});
  IPAMConfig config;
  config.enable_ipv6 = true;
  IpamService& agent = Agent("a", config);
  const std::string anno = base::StrCat(R"({"ipv4":[")", Pool("v4"), R"("],"ipv6":[")", Pool("v6"), R"("]})");
  api::Pod p1 = CreatePod("p1", "a", {{"ipam.spidernet.io/ippool", anno}});
  auto r1 = agent.Allocate(Add(p1), Deadline());
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_EQ(r1->ips.size(), 2u);
  // p2 gets the second IPv4 but no IPv6: nothing may remain allocated to it.
  api::Pod p2 = CreatePod("p2", "a", {{"ipam.spidernet.io/ippool", anno}});
  auto r2 = agent.Allocate(Add(p2), Deadline());
  ASSERT_FALSE(r2.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(r2.status())) << r2.status();
  EXPECT_THAT(std::string(r2.status().message()), HasSubstr(Pool("v6")));
  EXPECT_EQ(Records("v4").size(), 1u) << "the IPv4 half of a failed dual-stack ADD leaked";
  EXPECT_EQ(Records("v6").size(), 1u);
  EXPECT_TRUE(kube::IsNotFound(Endpoint("p2").status()));
}

TEST_P(ServiceTest, FailedAddRecordsOneRateLimitedWarningEventOnThePod) {
  CreatePool("v4", "10.20.0.0/24", {"10.20.0.10"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  base::SimulatedClock event_clock;  // the recorder's time only: moved by hand past the limit
  kube::metrics::Registry registry;
  kube::EventRecorder recorder(cluster_->rest(), {.component = "spiderpool-agent",
                                                  .host = Node("a"),
                                                  .min_interval = absl::Seconds(30),
                                                  .clock = &event_clock,
                                                  .registry = &registry});
  IPAMConfig config;
  config.node_ip_block_size = GetParam();
  TestAgent running(cluster_->rest(), {.node_name = Node("a"), .config = config,
                                       .recorder = &recorder});
  IpamService& agent = running.service;
  ASSERT_TRUE(agent.WaitForSync(absl::Seconds(30)));

  // The pod's events, and only those written by this agent (the namespace may hold others).
  auto events_of = [&](const api::Pod& pod) {
    recorder.Flush();
    std::vector<api::Event> out;
    auto list = kube::Client<api::Event>(cluster_->rest()).List(ns_);
    EXPECT_TRUE(list.ok()) << list.status();
    if (!list.ok()) return out;
    for (const api::Event& e : list->items) {
      if (e.involved_object.kind == "Pod" && e.involved_object.uid == pod.metadata.uid &&
          e.source.component == "spiderpool-agent") {
        out.push_back(e);
      }
    }
    return out;
  };

  api::Pod p1 = CreatePod("p1", "a");
  ASSERT_TRUE(agent.Allocate(Add(p1), Deadline()).ok());
  EXPECT_TRUE(events_of(p1).empty()) << "a successful ADD records no event";

  api::Pod p2 = CreatePod("p2", "a");
  auto r = agent.Allocate(Add(p2), Deadline());
  ASSERT_TRUE(absl::IsResourceExhausted(r.status())) << r.status();
  std::vector<api::Event> events = events_of(p2);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, "Warning");
  EXPECT_EQ(events[0].reason, kEventReasonIPPoolExhausted);
  EXPECT_EQ(events[0].count, 1);
  EXPECT_EQ(events[0].involved_object.name, "p2");
  EXPECT_EQ(events[0].involved_object.namespace_, ns_);
  EXPECT_THAT(events[0].message, HasSubstr("IPAM ADD for NIC eth0 failed"));
  EXPECT_THAT(events[0].message, HasSubstr(base::StrCat("candidate IPPools: ", Pool("v4"))));

  // The runtime retries: within the 30 s limit, no new Event and no write.
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(agent.Allocate(Add(p2, "c" + std::to_string(i + 2)), Deadline()).ok());
  }
  events = events_of(p2);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].count, 1);
  // Past the limit: the same Event, its count covering every failure.
  event_clock.Advance(absl::Seconds(31));
  EXPECT_FALSE(agent.Allocate(Add(p2, "c9"), Deadline()).ok());
  events = events_of(p2);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].count, 5);

  // A pod that does not exist gets no event (there is no object to attach it to), and a
  // failure that is not exhaustion has the generic reason.
  api::Pod ghost;
  ghost.metadata.namespace_ = ns_;
  ghost.metadata.name = "ghost";
  ghost.metadata.uid = "no-such-uid";
  EXPECT_FALSE(agent.Allocate(Add(ghost), Deadline()).ok());
  EXPECT_TRUE(events_of(ghost).empty());
  api::Pod p3 = CreatePod("p3", "a", {{"ipam.spidernet.io/ippool", R"({"ipv4":["no-such-pool"]})"}});
  EXPECT_FALSE(agent.Allocate(Add(p3), Deadline()).ok());
  events = events_of(p3);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, kEventReasonAllocationFailed);
  EXPECT_THAT(events[0].message, HasSubstr("no-such-pool"));
  EXPECT_EQ(recorder.dropped(), 0u);
  agent.Stop();
}

TEST_P(ServiceTest, FallsBackThroughThePoolListAndHonoursNodeAffinity) {
  CreatePool("full", "10.21.0.0/24", {"10.21.0.1"});
  CreatePool("next", "10.22.0.0/24", {"10.22.0.1-10.22.0.5"});
  CreatePool("zone-b", "10.23.0.0/24", {"10.23.0.1-10.23.0.5"}, [](api::SpiderIPPool& p) {
    p.spec.node_affinity = api::LabelSelector{.match_labels = {{"zone", "b"}}};
  });
  IpamService& agent = Agent("a");
  const std::string anno = base::StrCat(R"({"ipv4":[")", Pool("zone-b"), R"(",")", Pool("full"),
                                        R"(",")", Pool("next"), R"("]})");
  api::Pod p1 = CreatePod("p1", "a", {{"ipam.spidernet.io/ippool", anno}});
  api::Pod p2 = CreatePod("p2", "a", {{"ipam.spidernet.io/ippool", anno}});
  auto r1 = agent.Allocate(Add(p1), Deadline());
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_EQ(r1->ips[0].ip_pool, Pool("full"));
  auto r2 = agent.Allocate(Add(p2), Deadline());
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(r2->ips[0].ip_pool, Pool("next"));
  EXPECT_TRUE(Records("zone-b").empty());
}

TEST_P(ServiceTest, MultiNICAnnotationAllocatesEveryNICOnTheFirstAdd) {
  CreatePool("eth0", "10.30.0.0/24", {"10.30.0.1-10.30.0.9"}, [](api::SpiderIPPool& p) { p.spec.gateway = "10.30.0.254"; });
  CreatePool("net1", "10.31.0.0/24", {"10.31.0.1-10.31.0.9"}, [](api::SpiderIPPool& p) { p.spec.gateway = "10.31.0.254"; });
  IpamService& agent = Agent("a");
  const std::string anno = base::StrCat(R"([{"interface":"eth0","ipv4":[")", Pool("eth0"),
                                        R"("]},{"interface":"net1","ipv4":[")", Pool("net1"),
                                        R"("],"cleangateway":true}])");
  api::Pod pod = CreatePod("p1", "a", {{"ipam.spidernet.io/ippools", anno}});
  auto r = agent.Allocate(Add(pod, "c1", "eth0"), Deadline());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->ips.size(), 2u);
  EXPECT_EQ(Records("net1").size(), 1u);
  // The second NIC's ADD is answered from the endpoint: same IPs, no new record.
  auto r2 = agent.Allocate(Add(pod, "c1", "net1"), Deadline());
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(r2->ips, r->ips);
  EXPECT_EQ(Records("net1").size(), 1u);
  // cleangateway: no default route on net1.
  for (const auto& route : r->routes) {
    if (route.if_name == "net1") {
      EXPECT_NE(route.dst, "0.0.0.0/0");
    }
  }
  ASSERT_TRUE(agent.Release(Del(pod), Deadline()).ok());
  EXPECT_TRUE(Records("eth0").empty());
  EXPECT_TRUE(Records("net1").empty());
}

TEST_P(ServiceTest, ManyAgentsAllocateInParallelWithoutDuplicates) {
  CreatePool("shared", "10.40.0.0/24", {"10.40.0.1-10.40.0.40"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  IpamService& a = Agent("a");
  IpamService& b = Agent("b");
  constexpr int kPerNode = 20;
  std::vector<api::Pod> pods;
  for (int i = 0; i < kPerNode; ++i) {
    pods.push_back(CreatePod(base::StrCat("a-", i), "a"));
    pods.push_back(CreatePod(base::StrCat("b-", i), "b"));
  }
  std::vector<absl::StatusOr<ipamapi::IpamAddResponse>> results(pods.size(), absl::UnknownError(""));
  {
    std::vector<std::jthread> threads;
    for (size_t i = 0; i < pods.size(); ++i) {
      threads.emplace_back([&, i] { results[i] = (i % 2 == 0 ? a : b).Allocate(Add(pods[i]), Deadline()); });
    }
  }
  std::set<std::string> ips;
  for (auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    ips.insert(r->ips[0].address);
  }
  EXPECT_EQ(ips.size(), pods.size()) << "duplicate IP handed out";
  EXPECT_EQ(Records("shared").size(), pods.size());
  // The pool is now full: one more pod fails with a message naming it, and leaves nothing.
  api::Pod extra = CreatePod("extra", "a");
  auto r = a.Allocate(Add(extra), Deadline());
  EXPECT_TRUE(absl::IsResourceExhausted(r.status())) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(Pool("shared")));
  EXPECT_EQ(Records("shared").size(), pods.size());
}

TEST_P(ServiceTest, StatefulSetPodGetsItsIPBackWhenRecreated) {
  CreatePool("v4", "10.60.0.0/24", {"10.60.0.1-10.60.0.9"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  IpamService& agent = Agent("a");
  kube::Client<api::StatefulSet> statefulsets(cluster_->rest());
  api::StatefulSet sts;
  sts.metadata.name = "web";
  sts.metadata.namespace_ = ns_;
  sts.spec.replicas = 2;
  sts.spec.selector = api::LabelSelector{.match_labels = {{"app", "web"}}};
  sts.spec.template_.metadata.labels["app"] = "web";
  sts.spec.template_.spec.containers.push_back({.name = "c", .image = "busybox"});
  auto created = statefulsets.Create(sts);
  ASSERT_TRUE(created.ok()) << created.status();
  auto sts_pod = [&](std::string name) {
    api::Pod pod;
    pod.metadata.name = std::move(name);
    pod.metadata.namespace_ = ns_;
    pod.metadata.owner_references.push_back(api::MakeOwnerReference(*created));
    pod.spec.node_name = Node("a");
    pod.spec.containers.push_back({.name = "c", .image = "busybox"});
    auto p = kube::Client<api::Pod>(cluster_->rest()).Create(pod);
    EXPECT_TRUE(p.ok()) << p.status();
    return *p;
  };
  // Another pod takes the lowest IP first, so "web-1" does not get it by luck later.
  api::Pod other = CreatePod("other", "a");
  ASSERT_TRUE(agent.Allocate(Add(other), Deadline()).ok());
  api::Pod web1 = sts_pod("web-1");
  auto first = agent.Allocate(Add(web1), Deadline());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->ips[0].address, "10.60.0.2/24");
  // The pod is deleted (a rolling restart): its DEL keeps the IP, the StatefulSet wants it.
  ASSERT_TRUE(agent.Release(Del(web1), Deadline()).ok());
  ASSERT_EQ(Records("v4").size(), 2u);
  // Deleted for good (grace 0: what the kubelet sends once the containers stopped).
  ASSERT_TRUE(kube::Client<api::Pod>(cluster_->rest())
                  .Delete(ns_, "web-1", {.grace_period_seconds = 0})
                  .ok());
  // Meanwhile "other" is gone and a new pod could take the lowest IP...
  ASSERT_TRUE(agent.Release(Del(other), Deadline()).ok());
  // ...but the re-created web-1 (new UID) gets 10.60.0.2 back.
  api::Pod again = sts_pod("web-1");
  ASSERT_NE(again.metadata.uid, web1.metadata.uid);
  auto second = agent.Allocate(Add(again, "c2"), Deadline());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->ips[0].address, "10.60.0.2/24");
  api::PoolIPAllocations recs = Records("v4");
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs.at("10.60.0.2").pod_uid, again.metadata.uid);
  auto ep = Endpoint("web-1");
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->status->current.uid, again.metadata.uid);
  EXPECT_TRUE(ep->metadata.owner_references.empty()) << "StatefulSet endpoints outlive their pod";

  // Scaled down below its ordinal: now the DEL frees the IP.
  auto cur = statefulsets.Get(ns_, "web");
  ASSERT_TRUE(cur.ok());
  cur->spec.replicas = 1;
  ASSERT_TRUE(statefulsets.Update(*cur).ok());
  ASSERT_TRUE(agent.Release(Del(again, "c2"), Deadline()).ok());
  EXPECT_TRUE(Records("v4").empty());
  EXPECT_TRUE(kube::IsNotFound(Endpoint("web-1").status()));
}

// KubeVirt (reference §2.6): a VM keeps its IP across its pods (restart, live migration), kept
// under the VMI's name, and frees it once the VM is deleted.
TEST_P(ServiceTest, KubevirtVMKeepsItsIPAcrossPodsAndMigration) {
  ASSERT_TRUE(cluster_->ApplyCRDs("kube/testing/testdata/kubevirt-crds", {.keep_existing = true}).ok());
  CreatePool("v4", "10.61.0.0/24", {"10.61.0.1-10.61.0.9"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  IpamService& node_a = Agent("a", {.enable_ip_conflict_detection = true});
  IpamService& node_b = Agent("b", {.enable_ip_conflict_detection = true});
  kube::DynamicClient vms(cluster_->rest(), api::kubevirt::VMResource());
  kube::DynamicClient vmis(cluster_->rest(), api::kubevirt::VMIResource());
  kube::DynamicClient vmims(cluster_->rest(), api::kubevirt::VMIMResource());
  auto vm = vms.Create({{"apiVersion", "kubevirt.io/v1"}, {"kind", "VirtualMachine"},
                        {"metadata", {{"name", "vm1"}, {"namespace", ns_}}}, {"spec", base::Json::object()}});
  ASSERT_TRUE(vm.ok()) << vm.status();
  auto vmi = vmis.Create(
      {{"apiVersion", "kubevirt.io/v1"}, {"kind", "VirtualMachineInstance"},
       {"metadata", {{"name", "vm1"}, {"namespace", ns_},
                     {"ownerReferences", {{{"apiVersion", "kubevirt.io/v1"}, {"kind", "VirtualMachine"},
                                           {"name", "vm1"}, {"uid", (*vm)["metadata"]["uid"]},
                                           {"controller", true}}}}}},
       {"spec", base::Json::object()}});
  ASSERT_TRUE(vmi.ok()) << vmi.status();
  auto launcher = [&](std::string name, std::string_view node,
                      std::map<std::string, std::string> annotations = {}) {
    api::Pod pod;
    pod.metadata.name = std::move(name);
    pod.metadata.namespace_ = ns_;
    pod.metadata.annotations = std::move(annotations);
    pod.metadata.owner_references.push_back(
        {.api_version = "kubevirt.io/v1", .kind = "VirtualMachineInstance", .name = "vm1",
         .uid = (*vmi)["metadata"]["uid"].get<std::string>(), .controller = true});
    pod.spec.node_name = Node(node);
    pod.spec.containers.push_back({.name = "compute", .image = "virt-launcher"});
    auto p = kube::Client<api::Pod>(cluster_->rest()).Create(pod);
    EXPECT_TRUE(p.ok()) << p.status();
    return *p;
  };
  auto delete_pod = [&](const api::Pod& pod) {
    ASSERT_TRUE(kube::Client<api::Pod>(cluster_->rest())
                    .Delete(ns_, pod.metadata.name, {.grace_period_seconds = 0})
                    .ok());
  };

  api::Pod first = launcher("virt-launcher-vm1-aaaaa", "a");
  auto got = node_a.Allocate(Add(first), Deadline());
  ASSERT_TRUE(got.ok()) << got.status();
  const std::string ip = got->ips[0].address;
  EXPECT_TRUE(got->ips[0].enable_ip_conflict_detection) << "not a migration: detection stays on";
  auto ep = Endpoint("vm1");
  ASSERT_TRUE(ep.ok()) << "the endpoint carries the VMI's name: " << ep.status();
  EXPECT_EQ(ep->status->owner_controller_type, "VirtualMachineInstance");
  EXPECT_EQ(ep->status->owner_controller_name, "vm1");
  EXPECT_TRUE(ep->metadata.owner_references.empty()) << "a VM's endpoint outlives its pods";
  EXPECT_TRUE(kube::IsNotFound(Endpoint(first.metadata.name).status()));
  api::PoolIPAllocations recs = Records("v4");
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs.begin()->second.pod, ns_ + "/vm1");

  // The VM restarts: its pod goes (DEL keeps the IP: the VMI and the VM want it)...
  ASSERT_TRUE(node_a.Release(Del(first), Deadline()).ok());
  delete_pod(first);
  ASSERT_EQ(Records("v4").size(), 1u);
  // ...another pod could take the lowest free IP meanwhile...
  api::Pod other = CreatePod("other", "a");
  auto other_ip = node_a.Allocate(Add(other), Deadline());
  ASSERT_TRUE(other_ip.ok()) << other_ip.status();
  EXPECT_NE(other_ip->ips[0].address, ip);
  ASSERT_TRUE(node_a.Release(Del(other), Deadline()).ok());
  // ...and the VM's new pod, another name and UID, gets the same IP.
  api::Pod second = launcher("virt-launcher-vm1-bbbbb", "a");
  got = node_a.Allocate(Add(second, "c2"), Deadline());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->ips[0].address, ip);
  recs = Records("v4");
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs.begin()->second.pod_uid, second.metadata.uid);

  // Live migration to node b: the target pod gets the same IP, without conflict detection
  // (the source still answers for that IP until the switch-over).
  ASSERT_TRUE(vmims.Create({{"apiVersion", "kubevirt.io/v1"}, {"kind", "VirtualMachineInstanceMigration"},
                            {"metadata", {{"name", "mig1"}, {"namespace", ns_}}},
                            {"spec", {{"vmiName", "vm1"}}}}).ok());
  api::Pod target = launcher("virt-launcher-vm1-ccccc", "b",
                             {{std::string(api::kubevirt::kAnnotationMigrationJobName), "mig1"}});
  got = node_b.Allocate(Add(target, "c3"), Deadline());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->ips[0].address, ip);
  EXPECT_FALSE(got->ips[0].enable_ip_conflict_detection);
  ep = Endpoint("vm1");
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->status->current.uid, target.metadata.uid);
  EXPECT_EQ(ep->status->current.node, Node("b"));
  // The source pod ends: its DEL frees nothing (the IP is the target's now).
  ASSERT_TRUE(node_a.Release(Del(second, "c2"), Deadline()).ok());
  delete_pod(second);
  recs = Records("v4");
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs.begin()->second.pod_uid, target.metadata.uid);

  // The VM is deleted: the last pod's DEL frees the IP and the endpoint.
  ASSERT_TRUE(vms.Delete(ns_, "vm1").ok());
  // The garbage collector may already be deleting the VMI (the VM controls it).
  absl::Status vmi_deleted = vmis.Delete(ns_, "vm1");
  ASSERT_TRUE(vmi_deleted.ok() || kube::IsNotFound(vmi_deleted)) << vmi_deleted;
  for (int i = 0; i < 100 && (vms.Get(ns_, "vm1").ok() || vmis.Get(ns_, "vm1").ok()); ++i) {
    absl::SleepFor(absl::Milliseconds(100));  // a real server may take a moment
  }
  ASSERT_TRUE(node_b.Release(Del(target, "c3"), Deadline()).ok());
  EXPECT_TRUE(Records("v4").empty());
  for (int i = 0; i < 100 && Endpoint("vm1").ok(); ++i) absl::SleepFor(absl::Milliseconds(100));
  EXPECT_TRUE(kube::IsNotFound(Endpoint("vm1").status()));
  (void)vmims.Delete(ns_, "mig1");
}

// With enableKubevirtStaticIP off, a VM's pod is an ordinary pod: its own endpoint, freed on DEL.
TEST_P(ServiceTest, KubevirtStaticIPOffTreatsVMPodsAsStateless) {
  CreatePool("v4", "10.62.0.0/24", {"10.62.0.1-10.62.0.9"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  IpamService& agent = Agent("a", {.enable_kubevirt_static_ip = false});
  api::Pod pod;
  pod.metadata.name = "virt-launcher-vm2-aaaaa";
  pod.metadata.namespace_ = ns_;
  pod.metadata.owner_references.push_back({.api_version = "kubevirt.io/v1",
                                           .kind = "VirtualMachineInstance", .name = "vm2",
                                           .uid = "00000000-0000-0000-0000-000000000002",
                                           .controller = true});
  pod.spec.node_name = Node("a");
  pod.spec.containers.push_back({.name = "compute", .image = "virt-launcher"});
  auto created = kube::Client<api::Pod>(cluster_->rest()).Create(pod);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(agent.Allocate(Add(*created), Deadline()).ok());
  auto ep = Endpoint(pod.metadata.name);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_FALSE(ep->metadata.owner_references.empty());
  EXPECT_TRUE(kube::IsNotFound(Endpoint("vm2").status()));
  ASSERT_TRUE(agent.Release(Del(*created), Deadline()).ok());
  EXPECT_TRUE(Records("v4").empty());
}

TEST_P(ServiceTest, ApiServerFaultsDuringAddLoseNothing) {
  if (cluster_->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
  CreatePool("v4", "10.50.0.0/24", {"10.50.0.1-10.50.0.9"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  IpamService& agent = Agent("a");
  api::Pod pod = CreatePod("p1", "a");
  // The endpoint cannot be written: the ADD fails and its pool record is undone.
  cluster_->loopback()->FailNext(1, 422, {.verb = "create", .resource = "spiderendpoints"});
  auto r = agent.Allocate(Add(pod), Deadline());
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(Records("v4").empty()) << "a failed ADD left a record";
  // Conflicts and throttling on the pool are retried.
  cluster_->loopback()->FailNext(2, 409, {.verb = "update", .resource = "spiderippools/status"});
  cluster_->loopback()->FailNext(1, 429, {.verb = "update", .resource = "spiderippools/status"});
  r = agent.Allocate(Add(pod), Deadline());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Records("v4").size(), 1u);
}

// Reservations (blocks.h): most ADDs of a node need no pool write; the pod records appear in
// the background and the unused reservations go back.
// What only exists with node reservations on: run with a block size, never with them off
// (a skipped "Off" variant would say nothing).
class ReservationTest : public ServiceTest {
 protected:
  // Node "a"'s agent allocates for `pods` pods (most from its reservations), then "crashes":
  // nothing it writes to the pool reaches the server any more. Returns pod -> IP.
  std::map<std::string, std::string> AddThenCrash(int pods) {
    std::map<std::string, std::string> held;
    IpamService& agent = Agent("a");
    for (int i = 0; i < pods; ++i) {
      api::Pod pod = CreatePod(base::StrCat("p", i), "a");
      auto r = agent.Allocate(Add(pod), Deadline());
      EXPECT_TRUE(r.ok()) << r.status();
      if (!r.ok()) break;
      held[pod.metadata.name] = r->ips[0].address;
    }
    EXPECT_GE(agent.block_stats().taken, pods - 1) << "most ADDs should use the reservations";
    cluster_->loopback()->FailNext(100000, 500, {.verb = "update", .resource = "spiderippools/status"});
    services_.clear();
    cluster_->loopback()->ClearFaults();
    return held;
  }
  // Node reservations now recorded in `pool` (-1: cannot read it).
  int Reservations(std::string_view pool) {
    auto p = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", Pool(pool));
    if (!p.ok()) return -1;
    auto recs = p->AllocatedIPs();
    if (!recs.ok()) return -1;
    int n = 0;
    for (const auto& [ip, rec] : *recs) n += api::IsNodeReservation(rec);
    return n;
  }
};

TEST_P(ReservationTest, ReservationsServeMostAddsAndAreRecordedAndGivenBack) {
  CreatePool("v4", "10.70.0.0/24", {"10.70.0.1-10.70.0.100"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  IpamService& agent = Agent("a");
  std::set<std::string> ips;
  for (int i = 0; i < 10; ++i) {
    api::Pod pod = CreatePod(base::StrCat("p", i), "a");
    auto r = agent.Allocate(Add(pod), Deadline());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(ips.insert(r->ips[0].address).second) << "duplicate " << r->ips[0].address;
    // The endpoint (the record while the reservation is not converted) is there at once.
    auto ep = Endpoint(pod.metadata.name);
    ASSERT_TRUE(ep.ok()) << ep.status();
    EXPECT_EQ(*ep->status->current.ips[0].ipv4, r->ips[0].address);
  }
  // Only the first ADD writes the pool (and reserves the block); the rest need no write of
  // their own (the background writes' timing depends on the machine, so they are not counted).
  EXPECT_GE(agent.block_stats().taken, 8) << "the ADDs after the first should use the block";
  EXPECT_EQ(*ips.begin(), "10.70.0.1/24");  // lowest first, as without reservations
  // Lowest first also across the block: 10.70.0.1 .. 10.70.0.10.
  EXPECT_EQ(*ips.rbegin(), "10.70.0.9/24");  // (string order: .1, .10, .2, ... .9)
  // Written in the background: no flush by hand, only waiting — also when the first background
  // writes lose a race (they step back and come again).
  if (cluster_->loopback() != nullptr) {
    cluster_->loopback()->FailNext(2, 409, {.verb = "update", .resource = "spiderippools/status"});
  }
  auto records_settled = [&] {
    auto p = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", Pool("v4"));
    if (!p.ok()) return false;
    auto recs = p->AllocatedIPs();
    if (!recs.ok()) return false;
    size_t pods = 0, reservations = 0;
    for (const auto& [ip, rec] : *recs) (api::IsNodeReservation(rec) ? reservations : pods)++;
    return pods == 10 && reservations == 0 && p->status.allocated_ip_count == 10;
  };
  for (int i = 0; i < 400 && !records_settled(); ++i) absl::SleepFor(absl::Milliseconds(25));
  EXPECT_TRUE(records_settled()) << "pod records written and idle reservations given back";
  for (int i = 0; i < 10; ++i) {
    api::Pod pod = *kube::Client<api::Pod>(cluster_->rest()).Get(ns_, base::StrCat("p", i));
    ASSERT_TRUE(agent.Release(Del(pod), Deadline()).ok());
  }
  EXPECT_TRUE(Records("v4").empty());
}

// The DRA devices this node publishes are sized by agent::dra::PoolCapacities. Reserving a
// block takes IPs out of the pool's freeIPCount for this node's use; counted from freeIPCount
// alone, the node's device count dropped by a whole block at its first ADD (10 -> 5 with two
// pods starting, seen on a real node) and could make the scheduler refuse a claim that fits.
// Sampled all through ADDs and DELs, the capacity never falls below the IPs no pod holds.
TEST_P(ReservationTest, DeviceCapacityNeverDropsBelowWhatIsFree) {
  constexpr int kIPs = 10;
  CreatePool("v4", "10.72.0.0/24", {"10.72.0.1-10.72.0.10"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  IpamService& agent = Agent("a");
  const Caches& caches = services_.back()->caches;
  const std::string node = Node("a");
  auto capacity = [&]() -> int64_t {
    std::shared_ptr<const api::Node> n = caches.node.store().Get(node);
    std::vector<::spiderpool::dra::resourceslice::PoolCapacity> caps = agent::dra::PoolCapacities(
        caches.pools.store().List(), node, n != nullptr ? n->metadata.labels : api::Labels{},
        [&](const std::string& pool) { return agent.HandedOutReservations(pool); });
    for (const auto& c : caps) {
      if (c.name == Pool("v4")) return c.free_ips;
    }
    return -1;
  };
  for (int i = 0; i < 200 && capacity() != kIPs; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_EQ(capacity(), kIPs);

  std::atomic<int> held{0};  // at least the IPs pods hold: counted before an ADD, after a DEL
  std::atomic<bool> done{false};
  std::atomic<int> samples{0}, worst{kIPs};
  std::thread sampler([&] {
    while (!done.load()) {
      int before = held.load();
      int64_t cap = capacity();
      int free = kIPs - std::max(before, held.load());  // the fewest that can be free meanwhile
      worst.store(std::min<int>(worst.load(), static_cast<int>(cap) - free));
      samples.fetch_add(1);
      absl::SleepFor(absl::Microseconds(200));
    }
  });
  std::vector<api::Pod> pods;
  for (int i = 0; i < 4; ++i) {
    pods.push_back(CreatePod(base::StrCat("d", i), "a"));
    held.fetch_add(1);
    auto r = agent.Allocate(Add(pods.back()), Deadline());
    ASSERT_TRUE(r.ok()) << r.status();
    absl::SleepFor(absl::Milliseconds(50));  // let the status writes and watch events land
  }
  EXPECT_GE(agent.block_stats().reserved, 1) << "the case needs a reserved block";
  absl::SleepFor(absl::Seconds(3));  // flushes, idle reservations given back
  for (const api::Pod& pod : pods) {
    ASSERT_TRUE(agent.Release(Del(pod), Deadline()).ok());
    // A released IP shows once the pool's watch event is in (the samples hold `held` until
    // then): the capacity lags a release by the watch latency, it never runs ahead of one.
    const int want = kIPs - (held.load() - 1);
    for (int i = 0; i < 300 && capacity() < want; ++i) absl::SleepFor(absl::Milliseconds(10));
    EXPECT_GE(capacity(), want) << "the released IP of " << pod.metadata.name << " never showed";
    held.fetch_sub(1);
  }
  done.store(true);
  sampler.join();
  EXPECT_GT(samples.load(), 50);
  EXPECT_GE(worst.load(), 0) << "the capacity fell " << -worst.load()
                             << " below the IPs no pod holds";
  for (int i = 0; i < 300 && capacity() != kIPs; ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(capacity(), kIPs) << "every IP free again";
}

// The agent reserves what the pods waiting on its node need (their ADDs are still to come),
// not just a fair part of the pool: one write serves them all.
TEST_P(ReservationTest, ReservationsCoverThePodsWaitingOnTheNode) {
  // 20 IPs: a fair part would be half of the free ones (9 after the first pod's own IP).
  CreatePool("v4", "10.71.0.0/24", {"10.71.0.1-10.71.0.20"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  std::vector<api::Pod> pods;
  for (int i = 0; i < 12; ++i) pods.push_back(CreatePod(base::StrCat("w", i), "a"));
  IpamService& agent = Agent("a");  // its pod cache holds the 12 waiting pods
  ASSERT_TRUE(agent.Allocate(Add(pods[0]), Deadline()).ok());
  auto p = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", Pool("v4"));
  ASSERT_TRUE(p.ok()) << p.status();
  auto recs = p->AllocatedIPs();
  ASSERT_TRUE(recs.ok()) << recs.status();
  int reserved = 0;
  for (const auto& [ip, rec] : *recs) reserved += api::IsNodeReservation(rec);
  EXPECT_GE(reserved, 11) << "the first write should reserve for the 11 pods still waiting";
  EXPECT_LE(reserved, 12);
  std::set<std::string> ips;
  for (size_t i = 1; i < pods.size(); ++i) {
    auto r = agent.Allocate(Add(pods[i]), Deadline());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(ips.insert(r->ips[0].address).second) << "duplicate " << r->ips[0].address;
  }
  // 11, or 12 when the prewarm (blocks.h point 4) came before the first ADD.
  EXPECT_GE(agent.block_stats().taken, 11);
  EXPECT_EQ(Records("v4").size(), 12u);
}

// Pods scheduled to the node before the agent (re)starts: it reserves their IPs before their
// first ADD, in the pool the selection picks for them and in no other, so even the first ADD
// of the node needs no pool write of its own (issue 17 point 1).
TEST_P(ReservationTest, PrewarmsThePoolsOfTheWaitingPodsBeforeTheirFirstAdd) {
  CreatePool("v4", "10.73.0.0/24", {"10.73.0.1-10.73.0.40"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  CreatePool("other", "10.74.0.0/24", {"10.74.0.1-10.74.0.40"});  // no pod here selects it
  std::vector<api::Pod> pods;
  for (int i = 0; i < 6; ++i) pods.push_back(CreatePod(base::StrCat("w", i), "a"));
  IpamService& agent = Agent("a");
  // Bounded wait (the prewarm comes within prewarm_stagger, 1 s): a failure guard only.
  for (int i = 0; i < 400 && Reservations("v4") < 6; ++i) absl::SleepFor(absl::Milliseconds(25));
  EXPECT_EQ(Reservations("v4"), 6) << "one IP reserved for each waiting pod, before any ADD";
  EXPECT_EQ(Reservations("other"), 0) << "no pod is expected to use this pool";
  EXPECT_EQ(agent.block_stats().prewarmed, 1);
  std::set<std::string> ips;
  for (const api::Pod& pod : pods) {
    auto r = agent.Allocate(Add(pod), Deadline());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(ips.insert(r->ips[0].address).second) << "duplicate " << r->ips[0].address;
  }
  EXPECT_EQ(agent.block_stats().taken, 6) << "every ADD, the first included, used the block";
  EXPECT_EQ(Records("v4").size(), 6u);
}

// A DEL returns once the SpiderEndpoint is gone, without writing the pool: here every pool
// status write fails while it runs. The records are freed in the background once writes work
// again, without anyone flushing (issue 17 point 1).
TEST_P(ReservationTest, DelDoesNotWaitForThePoolWrite) {
  if (cluster_->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
  CreatePool("v4", "10.75.0.0/24", {"10.75.0.1-10.75.0.40"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  IpamService& agent = Agent("a");
  std::vector<api::Pod> pods;
  for (int i = 0; i < 4; ++i) {
    pods.push_back(CreatePod(base::StrCat("d", i), "a"));
    ASSERT_TRUE(agent.Allocate(Add(pods.back()), Deadline()).ok());
  }
  ASSERT_EQ(Records("v4").size(), 4u);  // written as pod records
  cluster_->loopback()->FailNext(100000, 500, {.verb = "update", .resource = "spiderippools/status"});
  for (const api::Pod& pod : pods) {
    ASSERT_TRUE(agent.Release(Del(pod), Deadline()).ok());
    EXPECT_TRUE(kube::IsNotFound(Endpoint(pod.metadata.name).status()));
  }
  EXPECT_EQ(agent.PendingReleases(), 4);
  cluster_->loopback()->ClearFaults();
  auto pod_records = [&] {
    auto p = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", Pool("v4"));
    if (!p.ok()) return -1;
    auto recs = p->AllocatedIPs();
    if (!recs.ok()) return -1;
    int n = 0;
    for (const auto& [ip, rec] : *recs) n += !api::IsNodeReservation(rec);
    return n;
  };
  // Bounded wait (the keeper retries a failed write after 1 s): a failure guard only.
  for (int i = 0; i < 400 && pod_records() != 0; ++i) absl::SleepFor(absl::Milliseconds(25));
  EXPECT_EQ(pod_records(), 0) << "the background write must free the released records";
  EXPECT_EQ(agent.PendingReleases(), 0);
  EXPECT_EQ(agent.block_stats().released_in_background, 4);
}

// Exhaustion is global (issue 17 point 2): a pool whose free IPs sit idle in another node's
// reservations is not full. Node a holds most of the pool for pods that wait there; node b's
// ADDs find no unreserved IP, ask, and get a's idle reservations. Only when no IP is free
// anywhere does an ADD fail, naming the pool and who holds its IPs.
TEST_P(ReservationTest, AFullPoolTakesOtherNodesIdleReservationsBeforeItFails) {
  CreatePool("v4", "10.76.0.0/24", {"10.76.0.1-10.76.0.10"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  for (int i = 0; i < 8; ++i) CreatePod(base::StrCat("wa", i), "a");  // never ADDed
  IpamService& a = Agent("a");
  for (int i = 0; i < 400 && Reservations("v4") < 8; ++i) absl::SleepFor(absl::Milliseconds(25));
  ASSERT_EQ(Reservations("v4"), 8) << "node a should hold 8 of the 10 IPs for its waiting pods";
  IpamService& b = Agent("b");
  std::set<std::string> ips;
  for (int i = 0; i < 10; ++i) {
    api::Pod pod = CreatePod(base::StrCat("b", i), "b");
    auto r = b.Allocate(Add(pod), Deadline());
    ASSERT_TRUE(r.ok()) << "ADD " << i << " on node b: " << r.status();
    EXPECT_TRUE(ips.insert(r->ips[0].address).second) << "duplicate " << r->ips[0].address;
  }
  EXPECT_GE(a.block_stats().released, 8) << "node a gave its idle reservations back";
  ASSERT_TRUE(b.FlushReservations(Deadline()).ok());  // b's pods' IPs as pod records
  api::Pod last = CreatePod("b10", "b");
  auto full = b.Allocate(Add(last), Deadline());
  ASSERT_FALSE(full.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(full.status())) << full.status();
  EXPECT_THAT(full.status().message(), HasSubstr(Pool("v4")));
  EXPECT_THAT(full.status().message(), HasSubstr("10 IPs, 10 held by pods")) << full.status();
}

// An agent that dies with IPs handed out from its reservations (pods running, records not yet
// converted): the next agent on the node recovers them from the SpiderEndpoints, writes them,
// never hands them out again, and gives the unused reservations back.
TEST_P(ReservationTest, ReservationsSurviveAnAgentCrash) {
  if (cluster_->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
  CreatePool("v4", "10.80.0.0/24", {"10.80.0.1-10.80.0.40"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  const std::map<std::string, std::string> held = AddThenCrash(4);  // pod -> ip
  ASSERT_EQ(held.size(), 4u);
  ASSERT_GE(Reservations("v4"), 3) << "the crash should have left reservations behind";

  IpamService& next = Agent("a");
  std::set<std::string> ips;
  for (const auto& [pod, ip] : held) ips.insert(ip);
  for (int i = 4; i < 12; ++i) {
    api::Pod pod = CreatePod(base::StrCat("p", i), "a");
    auto r = next.Allocate(Add(pod), Deadline());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(ips.insert(r->ips[0].address).second) << "handed out twice: " << r->ips[0].address;
  }
  api::PoolIPAllocations after = Records("v4");
  EXPECT_EQ(after.size(), 12u);
  for (const auto& [pod, ip] : held) {
    auto rec = after.find(ip.substr(0, ip.find('/')));
    ASSERT_NE(rec, after.end()) << pod << " lost its record";
    EXPECT_EQ(rec->second.pod, ns_ + "/" + pod);
  }
}

// Found by bench/chaos: an agent restarted (SIGKILL) while holding reservations recovered them
// only at its node's next ADD, so on a node where no pod started they stayed reserved for ever
// (IPs no other node could use). Now the restarted agent records what it had handed out and
// gives the rest back after its idle time, without any ADD.
TEST_P(ReservationTest, ACrashedAgentsReservationsGoBackWithoutAnAdd) {
  if (cluster_->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
  CreatePool("v4", "10.81.0.0/24", {"10.81.0.1-10.81.0.40"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  const std::map<std::string, std::string> held = AddThenCrash(4);  // pod -> ip
  ASSERT_EQ(held.size(), 4u);
  auto reservations = [&] { return Reservations("v4"); };
  ASSERT_GT(reservations(), 4) << "the crash should have left free reservations behind";

  Agent("a");  // restarted; no pod starts on the node
  // Bounded wait (idle_release is 2 s): a failure guard, not a timing assertion.
  for (int i = 0; i < 400 && reservations() != 0; ++i) absl::SleepFor(absl::Milliseconds(25));
  EXPECT_EQ(reservations(), 0) << "the restarted agent must give back what no pod holds";
  auto p = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", Pool("v4"));
  ASSERT_TRUE(p.ok());
  api::PoolIPAllocations recs = *p->AllocatedIPs();
  EXPECT_EQ(recs.size(), 4u);
  for (const auto& [pod, ip] : held) {
    auto rec = recs.find(ip.substr(0, ip.find('/')));
    ASSERT_NE(rec, recs.end()) << pod << " lost its IP";
    EXPECT_EQ(rec->second.pod, ns_ + "/" + pod);
  }
}

INSTANTIATE_TEST_SUITE_P(NodeReservations, ServiceTest, ::testing::Values(0, 16),
                         [](const ::testing::TestParamInfo<int64_t>& p) {
                           return p.param == 0 ? std::string("Off") : base::StrCat("Block", p.param);
                         });
INSTANTIATE_TEST_SUITE_P(NodeReservations, ReservationTest, ::testing::Values(16),
                         [](const ::testing::TestParamInfo<int64_t>& p) {
                           return base::StrCat("Block", p.param);
                         });

}  // namespace
}  // namespace spiderpool::agent::ipam
