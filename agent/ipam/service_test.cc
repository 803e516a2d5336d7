// IpamService against the loopback API server (or a real cluster through
// SPIDERPOOL_TEST_KUBECONFIG): the whole request flow without the network parts — pods,
// pools, records, SpiderEndpoints, several agents at once, failures that must leave nothing.
// The fixture is service_test_fixture.h.
#include <set>

#include "agent/ipam/service_test_fixture.h"
#include "base/clock.h"
#include "gmock/gmock.h"
#include "kube/events/recorder.h"

namespace spiderpool::agent::ipam {
namespace {

using ::testing::HasSubstr;

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

// An earlier DEL freed the pod's record but the delete of its SpiderEndpoint never landed: the
// pod's next ADD must not fail for ever on the endpoint's IP (bench/chaos: a pod never addressed
// after 30 ADDs, each "SpiderIPPool ... no longer holds <ip>"). The pool is the truth.
TEST_P(ServiceTest, AnEndpointNamingAFreedIPDoesNotBlockThePodsNextAdd) {
  CreatePool("v4", "10.21.0.0/24", {"10.21.0.10-10.21.0.20"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  IpamService& agent = Agent("a");
  api::Pod pod = CreatePod("p1", "a");
  auto first = agent.Allocate(Add(pod, "sandbox-1"), Deadline());
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(Records("v4").size(), 1u);
  // The record goes, the endpoint stays.
  kube::Client<api::SpiderIPPool> pools(cluster_->rest());
  auto p = pools.Get("", Pool("v4"));
  ASSERT_TRUE(p.ok()) << p.status();
  auto recs = p->AllocatedIPs();
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(std::erase_if(*recs, [&](const auto& kv) { return kv.second.pod_uid == pod.metadata.uid; }), 1u);
  p->SetAllocatedIPs(*recs);
  ASSERT_TRUE(pools.UpdateStatus(*p).ok());
  ASSERT_TRUE(Endpoint("p1").ok());

  auto second = agent.Allocate(Add(pod, "sandbox-2"), Deadline());
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_EQ(second->ips.size(), 1u);
  api::PoolIPAllocations now = Records("v4");
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now.begin()->second.pod_uid, pod.metadata.uid);
  EXPECT_EQ(base::StrCat(now.begin()->first, "/24"), second->ips[0].address);
  auto ep = Endpoint("p1");
  ASSERT_TRUE(ep.ok()) << ep.status();
  ASSERT_TRUE(ep->status.has_value());
  ASSERT_EQ(ep->status->current.ips.size(), 1u);
  EXPECT_EQ(ep->status->current.ips[0].ipv4.value_or(""), second->ips[0].address);
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
  // Each agent caches its own node's endpoints only (the CRD's selectableFields).
  ASSERT_EQ(services_.size(), 2u);
  for (size_t n = 0; n < services_.size(); ++n) {
    const TestAgent* agent = services_[n].get();
    const std::string node = Node(n == 0 ? "a" : "b");
    for (int i = 0; i < 300 && agent->caches.endpoints.store().Size() < kPerNode; ++i) {
      absl::SleepFor(absl::Milliseconds(100));
    }
    std::vector<std::shared_ptr<const api::SpiderEndpoint>> cached =
        agent->caches.endpoints.store().List();
    EXPECT_EQ(cached.size(), static_cast<size_t>(kPerNode)) << node;
    for (const auto& ep : cached) {
      ASSERT_TRUE(ep->status.has_value());
      EXPECT_EQ(ep->status->current.node, node) << ep->metadata.name;
    }
  }
  // The pool is now full: one more pod fails with a message naming it, and leaves nothing.
  api::Pod extra = CreatePod("extra", "a");
  auto r = a.Allocate(Add(extra), Deadline());
  EXPECT_TRUE(absl::IsResourceExhausted(r.status())) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(Pool("shared")));
  EXPECT_EQ(Records("shared").size(), pods.size());
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

INSTANTIATE_TEST_SUITE_P(NodeReservations, ServiceTest, ::testing::Values(0, 16),
                         NodeReservationsName);

}  // namespace
}  // namespace spiderpool::agent::ipam
