// IpamService with node reservations (blocks.h): most ADDs need no pool write, the records
// appear in the background, unused reservations go back, prewarm, DEL without the pool write,
// a full pool taking other nodes' idle reservations, agent crashes. The fixture is
// service_test_fixture.h.
#include <atomic>
#include <set>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "agent/dra/node_devices.h"
#include "agent/ipam/service_test_fixture.h"
#include "base/testing/wait.h"
#include "ipam/pool.h"
#include "gmock/gmock.h"

namespace spiderpool::agent::ipam {
namespace {

using ::testing::HasSubstr;

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
    std::vector<::spiderpool::dra::resourceslice::PoolCapacity> caps = agent::dra::PoolCapacities(
        caches.pools.List(), node, caches.NodeLabels(),
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
  // The keeper counts a prewarm once its write has been answered, which can come after the
  // reservations are visible in the API.
  EXPECT_TRUE(base::testing::WaitUntil([&] { return agent.block_stats().prewarmed == 1; }))
      << "prewarmed: " << agent.block_stats().prewarmed;
  std::set<std::string> ips;
  for (const api::Pod& pod : pods) {
    auto r = agent.Allocate(Add(pod), Deadline());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(ips.insert(r->ips[0].address).second) << "duplicate " << r->ips[0].address;
  }
  EXPECT_EQ(agent.block_stats().taken, 6) << "every ADD, the first included, used the block";
  EXPECT_EQ(Records("v4").size(), 6u);
}

// Before any ADD the agent has seen no network configuration: the pools of pods whose pool
// comes from the CNI config (default_ipv4_ippool) are those of the NAD Multus will use, the
// cluster network or the pod's v1.multus-cni.io/default-network. The prewarm reads that NAD,
// so a node's first pods need no pool write there either (found by bench ipam_e2e: with the
// pool only in the CNI config, no agent prewarmed and every node's first batch wrote the pool).
TEST_P(ReservationTest, PrewarmsThePoolsOfTheWaitingPodsNetworks) {
  // The cluster's default pool: where the prediction went without the NAD.
  CreatePool("v4", "10.80.0.0/24", {"10.80.0.1-10.80.0.40"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  CreatePool("cluster", "10.81.0.0/24", {"10.81.0.1-10.81.0.40"});
  CreatePool("annotated", "10.82.0.0/24", {"10.82.0.1-10.82.0.40"});
  auto nad = [&](const std::string& name, const std::string& pool) {
    api::NetworkAttachmentDefinition n;
    n.metadata.name = name;
    n.metadata.namespace_ = ns_;
    n.spec.config = base::DumpJson(base::Json{
        {"cniVersion", "1.0.0"},
        {"name", name},
        {"plugins", base::Json::array({
                        base::Json{{"type", "macvlan"},
                                   {"master", "eth1"},
                                   {"ipam", {{"type", "spiderpool"},
                                             {"default_ipv4_ippool", base::Json::array({Pool(pool)})}}}},
                        base::Json{{"type", "coordinator"}},
                    })}});
    auto created = kube::Client<api::NetworkAttachmentDefinition>(cluster_->rest()).Create(n);
    ASSERT_TRUE(created.ok()) << created.status();
  };
  nad("macvlan-cluster", "cluster");
  nad("macvlan-annotated", "annotated");
  std::vector<api::Pod> pods;
  for (int i = 0; i < 4; ++i) pods.push_back(CreatePod(base::StrCat("w", i), "a"));
  for (int i = 0; i < 2; ++i) {
    pods.push_back(CreatePod(base::StrCat("n", i), "a",
                             {{"v1.multus-cni.io/default-network",
                               base::StrCat(ns_, "/macvlan-annotated")}}));
  }
  multus_cluster_network_ = base::StrCat(ns_, "/macvlan-cluster");
  IpamService& agent = Agent("a");
  // Bounded waits (the prewarm comes within prewarm_stagger, 1 s): failure guards only.
  for (int i = 0; i < 400 && (Reservations("cluster") < 4 || Reservations("annotated") < 2); ++i) {
    absl::SleepFor(absl::Milliseconds(25));
  }
  // Each pool's block is sized by the pods predicted to use it, not by every pod waiting here.
  EXPECT_EQ(Reservations("cluster"), 4) << "the cluster network's pool, for the 4 plain pods";
  EXPECT_EQ(Reservations("annotated"), 2) << "the annotated network's pool, for its 2 pods";
  EXPECT_EQ(Reservations("v4"), 0) << "no pod's network uses the cluster's default pool";
  // Counted once the write has been answered, which can come after the API shows it.
  EXPECT_TRUE(base::testing::WaitUntil([&] { return agent.block_stats().prewarmed == 2; }))
      << "prewarmed: " << agent.block_stats().prewarmed;
  // Their ADDs carry those NADs' configs and take the reserved IPs.
  for (size_t i = 0; i < pods.size(); ++i) {
    ipamapi::IpamAddArgs add = Add(pods[i]);
    add.default_ipv4_ippool = {Pool(i < 4 ? "cluster" : "annotated")};
    auto r = agent.Allocate(add, Deadline());
    ASSERT_TRUE(r.ok()) << r.status();
  }
  EXPECT_EQ(agent.block_stats().taken, 6) << "every ADD, the first included, used the block";
  EXPECT_EQ(Records("cluster").size(), 4u);
  EXPECT_EQ(Records("annotated").size(), 2u);
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
  // The keeper settles its books once the write has been answered, which can come after the
  // API shows the records gone.
  EXPECT_TRUE(base::testing::WaitUntil([&] {
    return agent.PendingReleases() == 0 && agent.block_stats().released_in_background == 4;
  })) << "pending: " << agent.PendingReleases()
      << ", released in background: " << agent.block_stats().released_in_background;
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
  EXPECT_TRUE(base::testing::WaitUntil([&] { return a.block_stats().released >= 8; }))
      << "node a gave its idle reservations back: " << a.block_stats().released;
  ASSERT_TRUE(b.FlushReservations(Deadline()).ok());  // b's pods' IPs as pod records
  api::Pod last = CreatePod("b10", "b");
  auto full = b.Allocate(Add(last), Deadline());
  ASSERT_FALSE(full.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(full.status())) << full.status();
  EXPECT_THAT(full.status().message(), HasSubstr(Pool("v4")));
  EXPECT_THAT(full.status().message(), HasSubstr("10 IPs, 10 held by pods")) << full.status();
}

// A pool write of this node's reservations that the agent saw fail but that landed leaves the
// pool naming IPs as this node's that its block does not track. ipam_e2e (50 nodes) found an
// ADD on such a node waiting its whole 30 s, then failing "all IP addresses used out ...
// (node-11: 92, ...)" with node-11 its own node. Such IPs are this node's: an ADD that finds
// the pool full takes them back and goes on at once.
TEST_P(ReservationTest, AFullPoolsUntrackedReservationsOfThisNodeServeItsAdds) {
  // Two IPs: the first ADD's write reserves nothing more (a fair part of one free IP is none),
  // so the keeper has no block to top up and would never adopt the untracked reservation.
  CreatePool("v4", "10.77.0.0/24", {"10.77.0.1-10.77.0.2"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  IpamService& a = Agent("a");
  api::Pod first = CreatePod("p0", "a");
  auto r0 = a.Allocate(Add(first), Deadline());
  ASSERT_TRUE(r0.ok()) << r0.status();
  // As if an earlier write of node a had landed after it was reported failed: the IP still
  // free in the pool becomes a reservation of node a that its block does not know of.
  kube::Client<api::SpiderIPPool> pools(cluster_->rest());
  for (int attempt = 0;; ++attempt) {
    auto p = pools.Get("", Pool("v4"));
    ASSERT_TRUE(p.ok()) << p.status();
    auto st = ::spiderpool::ipam::PoolState::Build(*p, {});
    ASSERT_TRUE(st.ok()) << st.status();
    auto reserved = st->Reserve(Node("a"), 100);
    ASSERT_TRUE(reserved.ok()) << reserved.status();
    ASSERT_EQ(reserved->size(), 1u);
    st->WriteStatus(&*p);
    auto w = pools.UpdateStatus(*p);
    if (w.ok()) break;
    ASSERT_TRUE(absl::IsAborted(w.status()) && attempt < 20) << w.status();  // the agent wrote
  }
  api::Pod second = CreatePod("p1", "a");
  auto r1 = a.Allocate(Add(second), Deadline());
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_NE(r1->ips[0].address, r0->ips[0].address);
  EXPECT_EQ(Records("v4").size(), 2u);
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

// Point 8 (issue 17: "a node has its first reservation before its first pod"): with no pod on
// the node, the agent reserves a standing block in the cluster's default pool; the first pods
// are served from it without a pool write of their own; once they are gone and the node is
// idle, the block is back to its standing size (not given back to nothing).
TEST_P(ReservationTest, AStandingBlockComesBeforeTheFirstPodAndStaysWhenIdle) {
  CreatePool("v4", "10.82.0.0/24", {"10.82.0.1-10.82.0.40"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  CreatePool("other", "10.83.0.0/24", {"10.83.0.1-10.83.0.40"});  // not a default pool
  standing_ = 4;
  IpamService& agent = Agent("a");
  // Bounded waits (the first standing write comes within prewarm_stagger, 1 s; idle_release is
  // 2 s, a refill at most every 5 s): failure guards only.
  for (int i = 0; i < 400 && Reservations("v4") < 4; ++i) absl::SleepFor(absl::Milliseconds(25));
  EXPECT_EQ(Reservations("v4"), 4) << "a standing block before any pod";
  EXPECT_EQ(Reservations("other"), 0) << "no pod without annotations would get this pool";
  std::vector<api::Pod> pods;
  for (int i = 0; i < 3; ++i) {
    pods.push_back(CreatePod(base::StrCat("s", i), "a"));
    auto r = agent.Allocate(Add(pods.back()), Deadline());
    ASSERT_TRUE(r.ok()) << r.status();
  }
  EXPECT_EQ(agent.block_stats().taken, 3) << "the first pods need no pool write of their own";
  for (const api::Pod& pod : pods) ASSERT_TRUE(agent.Release(Del(pod), Deadline()).ok());
  // Settled for a whole second: right after the DELs the pool can still show the standing
  // block before the top-up the ADDs started (the block ran low) lands, and the idle release
  // after it; no top-up starts later than flush_after (300 ms) after the last ADD.
  auto settled = [&] { return Reservations("v4") == 4 && Records("v4").empty(); };
  int settled_for = 0;
  for (int i = 0; i < 600 && settled_for < 40; ++i) {
    settled_for = settled() ? settled_for + 1 : 0;
    absl::SleepFor(absl::Milliseconds(25));
  }
  EXPECT_EQ(Reservations("v4"), 4) << "idle: back to the standing block, not to nothing";
  EXPECT_TRUE(Records("v4").empty());
}

// A standing block is not hoarding: when another node's ADD finds the pool full it is given
// back, it is not taken again while the pool has no unreserved IP, and it comes back once the
// pool has room again. And in a pool that is not roomy there is none.
TEST_P(ReservationTest, StandingBlocksGoBackWhenThePoolRunsOut) {
  // 20 IPs: roomy enough for a standing block of 4 with two nodes (2 x 4 per node).
  CreatePool("v4", "10.84.0.0/24", {"10.84.0.1-10.84.0.20"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  standing_ = 4;
  IpamService& a = Agent("a");
  for (int i = 0; i < 400 && Reservations("v4") < 4; ++i) absl::SleepFor(absl::Milliseconds(25));
  ASSERT_EQ(Reservations("v4"), 4) << "node a's standing block";
  standing_ = 0;
  IpamService& b = Agent("b");
  std::vector<api::Pod> pods;
  for (int i = 0; i < 20; ++i) {
    pods.push_back(CreatePod(base::StrCat("b", i), "b"));
    auto r = b.Allocate(Add(pods.back()), Deadline());
    ASSERT_TRUE(r.ok()) << "ADD " << i << " on node b: " << r.status();
  }
  EXPECT_TRUE(base::testing::WaitUntil([&] { return a.block_stats().released >= 4; }))
      << "node a gave its standing block back: " << a.block_stats().released;
  EXPECT_EQ(Records("v4").size(), 20u);
  absl::SleepFor(absl::Seconds(3));  // a's keeper must not take IPs of a full pool again
  EXPECT_EQ(Reservations("v4"), 0);
  for (const api::Pod& pod : pods) ASSERT_TRUE(b.Release(Del(pod), Deadline()).ok());
  for (int i = 0; i < 600 && Reservations("v4") < 4; ++i) absl::SleepFor(absl::Milliseconds(25));
  EXPECT_EQ(Reservations("v4"), 4) << "room again: node a's standing block is back";
}

// Standing blocks are for roomy pools: with 12 of 20 IPs free and two nodes (fewer than 2 x 4
// per node) node a keeps none (it may reserve once before it knows how many nodes share the
// pool, then gives it back when idle), so busy nodes never have to ask idle ones for them.
TEST_P(ReservationTest, NoStandingBlockInAPoolThatIsNotRoomy) {
  CreatePool("v4", "10.86.0.0/24", {"10.86.0.1-10.86.0.20"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  IpamService& b = Agent("b");
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(b.Allocate(Add(CreatePod(base::StrCat("b", i), "b")), Deadline()).ok());
  }
  ASSERT_EQ(Records("v4").size(), 8u);
  // Bounded wait (b's idle reservations go back after idle_release, 2 s): a guard only.
  for (int i = 0; i < 400 && Reservations("v4") != 0; ++i) absl::SleepFor(absl::Milliseconds(25));
  ASSERT_EQ(Reservations("v4"), 0);
  standing_ = 4;
  Agent("a");
  absl::SleepFor(absl::Seconds(1) + absl::Seconds(2) + absl::Seconds(2));  // stagger + idle + margin
  for (int i = 0; i < 400 && Reservations("v4") != 0; ++i) absl::SleepFor(absl::Milliseconds(25));
  EXPECT_EQ(Reservations("v4"), 0) << "no standing block in a pool this tight";
}

// A full pool whose only free IP in this node's block is one a SpiderReservedIP covers (made
// after the block reserved it): the ADD cannot take it and waits for another node's give-back.
// While it waits it must not go round its loop every 20 ms, rebuilding the pool each time,
// because its block "has IPs" it can never hand out.
TEST_P(ReservationTest, AReservedIPInTheBlockDoesNotMakeAFullPoolsWaitSpin) {
  CreatePool("v4", "10.78.0.0/24", {"10.78.0.1-10.78.0.2"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  api::Pod p0 = CreatePod("p0", "a");
  api::Pod p1 = CreatePod("p1", "a");
  IpamService& a = Agent("a");
  TestAgent& agent = *services_.back();
  ASSERT_TRUE(base::testing::WaitUntil([&] { return Reservations("v4") == 2; }))
      << "the prewarm should reserve both IPs for the two waiting pods";
  api::SpiderReservedIP r;
  r.metadata.name = ns_ + "-r";
  r.spec.ips = {"10.78.0.2"};
  kube::Client<api::SpiderReservedIP> reserved_ips(cluster_->rest());
  ASSERT_TRUE(reserved_ips.Create(r).ok());
  // Cluster-scoped: on a real cluster it would outlive the test's namespace.
  absl::Cleanup remove = [&] { (void)reserved_ips.Delete("", r.metadata.name); };
  ASSERT_TRUE(base::testing::WaitUntil(
      [&] { return agent.caches.reserved_ips.store().Get(r.metadata.name) != nullptr; }));
  auto r0 = a.Allocate(Add(p0), Deadline());
  ASSERT_TRUE(r0.ok()) << r0.status();
  EXPECT_EQ(r0->ips[0].address, "10.78.0.1/24");
  const int64_t batches = a.committer_stats().batches;
  auto r1 = a.Allocate(Add(p1), absl::Now() + absl::Seconds(3));
  EXPECT_FALSE(r1.ok()) << "10.78.0.2 is reserved: " << r1->ips[0].address;
  // About 2 s of waiting: a pass per change of the pool (an ask, a give-back), not one per
  // 20 ms (~100).
  EXPECT_LT(a.committer_stats().batches - batches, 30);
}

// ADDs of `pods[0]`, then, once `then()` holds (its write is on its way), of pods[1..n) at
// once; their answers, in that order.
std::vector<absl::StatusOr<ipamapi::IpamAddResponse>> FirstAddThenTheRest(
    IpamService& agent, const std::vector<ipamapi::IpamAddArgs>& adds,
    const std::function<bool()>& then, absl::Time deadline) {
  std::vector<absl::StatusOr<ipamapi::IpamAddResponse>> got(adds.size(),
                                                            absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  threads.emplace_back([&] { got[0] = agent.Allocate(adds[0], deadline); });
  EXPECT_TRUE(base::testing::WaitUntil(then));
  for (size_t i = 1; i < adds.size(); ++i) {
    threads.emplace_back([&, i] { got[i] = agent.Allocate(adds[i], deadline); });
  }
  for (std::thread& t : threads) t.join();
  return got;
}

// A node's first ADDs come in a kubelet batch; the first one writes the pool and reserves
// for the pods waiting here, the others queue behind that write. Once it has landed they
// take from the block it filled instead of writing the pool a second time (ipam_e2e: that
// second write lost races to the other nodes' first writes for up to 160 ms).
TEST_P(ReservationTest, AddsQueuedBehindTheWriteThatFillsTheBlockTakeFromIt) {
  if (cluster_->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
  CreatePool("v4", "10.79.0.0/24", {"10.79.0.1-10.79.0.40"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  prewarm_stagger_ = absl::Hours(1);  // the first ADD comes before any prewarm
  IpamService& agent = Agent("a");
  std::vector<api::Pod> pods;
  for (int i = 0; i < 8; ++i) pods.push_back(CreatePod(base::StrCat("q", i), "a"));
  // The first write stays in flight long enough for the others to queue behind it.
  cluster_->loopback()->InjectDelay(absl::Milliseconds(600),
                                    {.verb = "update", .resource = "spiderippools/status"});
  std::vector<ipamapi::IpamAddArgs> adds;
  for (const api::Pod& pod : pods) adds.push_back(Add(pod));
  // Once its batch has started, the others queue behind it.
  auto got = FirstAddThenTheRest(
      agent, adds, [&] { return agent.committer_stats().batches >= 1; }, Deadline());
  cluster_->loopback()->ClearFaults();
  std::set<std::string> ips;
  for (const auto& r : got) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(ips.insert(r->ips[0].address).second) << "duplicate " << r->ips[0].address;
  }
  EXPECT_GE(agent.block_stats().taken, 7) << "the queued ADDs should take from the block";
  EXPECT_EQ(Records("v4").size(), 8u);
}

// The first write of a node lost a race: while it reads the pool again, more ADDs of the
// node arrive and queue behind it. They will take from the block that write fills, so its
// top-up counts them as demand: a node whose top-up left them out was 5-7 IPs short, and its
// last pods then wrote the pool themselves behind 50 nodes' first writes (ipam_e2e, 100 nodes:
// 32 s).
TEST_P(ReservationTest, AddsQueuedWhileTheFirstWriteRetriesAreItsTopUpsDemand) {
  if (cluster_->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
  CreatePool("v4", "10.80.0.0/24", {"10.80.0.1-10.80.0.100"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  prewarm_stagger_ = absl::Hours(1);  // the first ADD comes before any prewarm
  IpamService& agent = Agent("a");
  std::vector<api::Pod> pods;
  for (int i = 0; i < 40; ++i) pods.push_back(CreatePod(base::StrCat("r", i), "a"));
  // The first write meets a 409; the pool's fresh read after it takes 600 ms.
  cluster_->loopback()->FailNext(1, 409, {.verb = "update", .resource = "spiderippools/status"});
  cluster_->loopback()->InjectDelay(absl::Milliseconds(600),
                                    {.verb = "get", .resource = "spiderippools", .name = Pool("v4")});
  std::vector<ipamapi::IpamAddArgs> adds;
  for (int i = 0; i < 8; ++i) adds.push_back(Add(pods[i]));
  auto got = FirstAddThenTheRest(
      agent, adds,
      [&] {
        if (agent.committer_stats().conflicts < 1) return false;
        absl::SleepFor(absl::Milliseconds(50));  // past the conflict's adoption of queued ADDs
        return true;
      },
      Deadline());
  cluster_->loopback()->ClearFaults();
  for (const auto& r : got) ASSERT_TRUE(r.ok()) << r.status();
  // The 39 pods still waiting when it wrote, the 7 queued ADDs among them.
  EXPECT_EQ(agent.block_stats().reserved, 39);
  EXPECT_GE(agent.block_stats().taken, 7);
}

INSTANTIATE_TEST_SUITE_P(NodeReservations, ReservationTest, ::testing::Values(16),
                         NodeReservationsName);

}  // namespace
}  // namespace spiderpool::agent::ipam
