#include "ipam/pool.h"

#include <random>
#include <set>

#include "gtest/gtest.h"

namespace spiderpool::ipam {
namespace {

using base::IPAddress;
using base::IPRange;

IPAddress IP(std::string_view s) { return *IPAddress::Parse(s); }
IPRange R(std::string_view s) { return *IPRange::Parse(s); }

api::SpiderIPPool Pool(std::string name, std::string subnet, std::vector<std::string> ips,
                       std::vector<std::string> exclude = {}) {
  api::SpiderIPPool p;
  p.metadata.name = std::move(name);
  p.spec.subnet = std::move(subnet);
  p.spec.ips = std::move(ips);
  p.spec.exclude_ips = std::move(exclude);
  return p;
}

PoolState MustBuild(const api::SpiderIPPool& p, const std::vector<IPRange>& reserved = {},
                    PoolOptions o = {}) {
  auto st = PoolState::Build(p, reserved, o);
  EXPECT_TRUE(st.ok()) << st.status();
  return std::move(st).value();
}

TEST(PoolState, BuildAndCounts) {
  api::SpiderIPPool p = Pool("p4", "10.0.0.0/24", {"10.0.0.1-10.0.0.10"}, {"10.0.0.2"});
  p.spec.gateway = "10.0.0.254";
  p.spec.routes = std::vector<api::Route>{{.dst = "10.1.0.0/16", .gw = "10.0.0.253"}};
  api::PoolIPAllocations recs;
  recs["10.0.0.1"] = {.pod = "ns/a", .pod_uid = "ua"};
  recs["10.0.0.3"] = {.pod = "ns/b", .pod_uid = "ub"};  // reserved below, still a record
  p.SetAllocatedIPs(recs);
  PoolState st = MustBuild(p, {R("10.0.0.3-10.0.0.4"), R("fd00::1")});
  EXPECT_EQ(st.name(), "p4");
  EXPECT_EQ(st.ip_version(), 4);
  EXPECT_EQ(st.subnet().ToString(), "10.0.0.0/24");
  EXPECT_EQ(st.gateway(), IP("10.0.0.254"));
  ASSERT_EQ(st.routes().size(), 1u);
  EXPECT_FALSE(st.disabled());
  // total = |ips − exclude| = 9; usable = 9 − 2 reserved = 7; free = 7 − 1 (10.0.0.1).
  PoolCounts c = st.Counts();
  EXPECT_EQ(c.total, 9);
  EXPECT_EQ(c.allocated, 2);
  EXPECT_EQ(c.reserved, 1);  // 10.0.0.4; 10.0.0.3 is b's (reserving does not evict)
  EXPECT_EQ(c.free, 6);
  auto cc = ComputePoolCounts(p, {R("10.0.0.3-10.0.0.4")});
  ASSERT_TRUE(cc.ok());
  EXPECT_EQ(*cc, c);
  EXPECT_EQ(st.Records(), recs);
}

TEST(PoolState, BuildErrors) {
  auto bad = [](api::SpiderIPPool p) {
    auto st = PoolState::Build(p, {});
    EXPECT_FALSE(st.ok());
    return std::string(st.status().message());
  };
  EXPECT_EQ(bad(Pool("x", "10.0.0.0/33", {})),
            "IPPool x: spec.subnet: \"10.0.0.0/33\" is not a CIDR");
  EXPECT_EQ(bad(Pool("x", "10.0.0.0/24", {"fd00::1"})),
            "IPPool x: spec.ips[0]: \"fd00::1\" is not IPv4");
  EXPECT_EQ(bad(Pool("x", "10.0.0.0/24", {}, {"10.0.0.x"})),
            "IPPool x: spec.excludeIPs[0]: \"10.0.0.x\" is not an IP");
  api::SpiderIPPool p = Pool("x", "10.0.0.0/24", {});
  p.spec.ip_version = 6;
  EXPECT_EQ(bad(p), "IPPool x: spec.ipVersion: 6 does not match spec.subnet \"10.0.0.0/24\"");
  p = Pool("x", "10.0.0.0/24", {});
  p.spec.gateway = "fd00::1";
  EXPECT_EQ(bad(p), "IPPool x: spec.gateway: \"fd00::1\" is not IPv4");
  p = Pool("x", "10.0.0.0/24", {});
  p.status.allocated_ips = R"({"10.0.0.1":{"pod":"a"}})";
  EXPECT_EQ(bad(p), "IPPool x: status.allocatedIPs[10.0.0.1].podUid: Required value");
}

TEST(PoolState, AllocateLowestSkippingRecordsExcludesReserved) {
  api::SpiderIPPool p = Pool("p", "10.0.0.0/24", {"10.0.0.1-10.0.0.6"}, {"10.0.0.2"});
  api::PoolIPAllocations recs;
  recs["10.0.0.1"] = {.pod = "ns/a", .pod_uid = "ua"};
  p.SetAllocatedIPs(recs);
  PoolState st = MustBuild(p, {R("10.0.0.3")});
  auto a = st.Allocate({.pod = "ns/b", .pod_uid = "ub", .node = "n1", .container_id = "c1",
                        .interface_ = "eth0"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->ip, IP("10.0.0.4"));
  EXPECT_FALSE(a->reused);
  const api::PoolIPAllocation* rec = st.RecordOf(IP("10.0.0.4"));
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->pod, "ns/b");
  EXPECT_EQ(rec->node, "n1");
  EXPECT_EQ(rec->container_id, "c1");
  EXPECT_EQ(rec->interface_, "eth0");
  // Empty request fields are not written.
  auto b = st.Allocate({.pod = "ns/c", .pod_uid = "uc"});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->ip, IP("10.0.0.5"));
  EXPECT_FALSE(st.RecordOf(b->ip)->node.has_value());
  EXPECT_FALSE(st.RecordOf(b->ip)->interface_.has_value());
  api::SpiderIPPool out = p;
  st.WriteStatus(&out);
  EXPECT_EQ(out.status.allocated_ips,
            R"({"10.0.0.1":{"pod":"ns/a","podUid":"ua"},)"
            R"("10.0.0.4":{"containerID":"c1","interface":"eth0","node":"n1","pod":"ns/b","podUid":"ub"},)"
            R"("10.0.0.5":{"pod":"ns/c","podUid":"uc"}})");
  EXPECT_EQ(out.status.allocated_ip_count, 3);
  EXPECT_EQ(out.status.total_ip_count, 5);
  EXPECT_EQ(out.status.reserved_ip_count, 1);  // 10.0.0.3 (SpiderReservedIP)
  EXPECT_EQ(out.status.free_ip_count, 1);
}

TEST(PoolState, IdempotentPerUIDAndInterface) {
  PoolState st = MustBuild(Pool("p", "10.0.0.0/24", {"10.0.0.1-10.0.0.9"}));
  auto a = st.Allocate({.pod = "ns/a", .pod_uid = "u", .interface_ = "eth0"});
  auto again = st.Allocate({.pod = "ns/a", .pod_uid = "u", .interface_ = "eth0"});
  ASSERT_TRUE(a.ok() && again.ok());
  EXPECT_EQ(again->ip, a->ip);
  EXPECT_TRUE(again->reused);
  // Another NIC of the same pod gets its own IP.
  auto net1 = st.Allocate({.pod = "ns/a", .pod_uid = "u", .interface_ = "net1"});
  ASSERT_TRUE(net1.ok());
  EXPECT_NE(net1->ip, a->ip);
  EXPECT_FALSE(net1->reused);
  // A request without interface matches any record (upstream: UID only).
  auto any = st.Allocate({.pod = "ns/a", .pod_uid = "u"});
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->ip, a->ip);
  EXPECT_EQ(st.record_count(), 2u);
  // An old record without interface matches a request with one.
  api::SpiderIPPool p = Pool("p", "10.0.0.0/24", {"10.0.0.1-10.0.0.9"});
  api::PoolIPAllocations recs;
  recs["10.0.0.7"] = {.pod = "ns/a", .pod_uid = "u"};
  p.SetAllocatedIPs(recs);
  PoolState old = MustBuild(p);
  auto r = old.Allocate({.pod = "ns/a", .pod_uid = "u", .interface_ = "eth0"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ip, IP("10.0.0.7"));
  EXPECT_TRUE(r->reused);
}

TEST(PoolState, FullPoolCapAndDisable) {
  api::SpiderIPPool p = Pool("p", "10.0.0.0/24", {"10.0.0.1-10.0.0.2"});
  PoolState st = MustBuild(p);
  ASSERT_TRUE(st.Allocate({.pod = "ns/a", .pod_uid = "ua"}).ok());
  ASSERT_TRUE(st.Allocate({.pod = "ns/b", .pod_uid = "ub"}).ok());
  auto full = st.Allocate({.pod = "ns/c", .pod_uid = "uc"});
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(full.status().message(), "all IP addresses used out");
  // #2517: full, but the same ns/name + UID holds a record -> reused.
  auto same = st.Allocate({.pod = "ns/b", .pod_uid = "ub"});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->ip, IP("10.0.0.2"));
  EXPECT_TRUE(same->reused);

  PoolState capped = MustBuild(Pool("capped", "10.0.0.0/24", {"10.0.0.1-10.0.0.9"}), {},
                               PoolOptions{.max_allocated_ips = 1});
  ASSERT_TRUE(capped.Allocate({.pod = "ns/a", .pod_uid = "ua"}).ok());
  auto over = capped.Allocate({.pod = "ns/b", .pod_uid = "ub"});
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(over.status().message(),
            "all IP addresses used out, threshold of IP records(<=1) for IPPool capped exceeded");
  EXPECT_EQ(capped.record_count(), 1u);
  EXPECT_EQ(capped.Counts().free, 8);  // nothing was taken by the failed call

  p.spec.disable = true;
  PoolState off = MustBuild(p);
  auto d = off.Allocate({.pod = "ns/a", .pod_uid = "ua"});
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(d.status().message(), "disabled IPPool p");
  EXPECT_EQ(off.Allocate({.pod = "", .pod_uid = "u"}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PoolState, ReleaseOnlyMatchingUID) {
  PoolState st = MustBuild(Pool("p", "fd00::/64", {"fd00::1-fd00::9"}));
  EXPECT_EQ(st.ip_version(), 6);
  auto a = *st.Allocate({.pod = "ns/a", .pod_uid = "ua", .container_id = "c1",
                         .interface_ = "eth0"});
  auto b = *st.Allocate({.pod = "ns/a", .pod_uid = "ua", .container_id = "c1",
                         .interface_ = "net1"});
  EXPECT_EQ(a.ip, IP("fd00::1"));
  EXPECT_EQ(b.ip, IP("fd00::2"));
  EXPECT_FALSE(st.Release(a.ip, "other-uid"));
  EXPECT_EQ(st.record_count(), 2u);
  EXPECT_EQ(st.ReleasePod("ua", {.interface_ = "net1"}), std::vector<IPAddress>{b.ip});
  EXPECT_EQ(st.ReleasePod("ua", {.container_id = "c2"}), std::vector<IPAddress>{});
  EXPECT_EQ(st.IPsOf("ua"), std::vector<IPAddress>{a.ip});
  EXPECT_TRUE(st.Release(a.ip, "ua"));
  EXPECT_FALSE(st.Release(a.ip, "ua"));
  EXPECT_EQ(st.record_count(), 0u);
  // Released IPs come back lowest first.
  EXPECT_EQ(st.Allocate({.pod = "ns/z", .pod_uid = "uz"})->ip, IP("fd00::1"));
}

TEST(PoolState, ReleaseOfRecordOutsideUsableSet) {
  // A record on an IP that was reserved later: it is released, but never handed out again.
  api::SpiderIPPool p = Pool("p", "10.0.0.0/24", {"10.0.0.1-10.0.0.2"});
  api::PoolIPAllocations recs;
  recs["10.0.0.1"] = {.pod = "ns/a", .pod_uid = "ua"};
  p.SetAllocatedIPs(recs);
  PoolState st = MustBuild(p, {R("10.0.0.1")});
  EXPECT_TRUE(st.Release(IP("10.0.0.1"), "ua"));
  EXPECT_EQ(st.Allocate({.pod = "ns/b", .pod_uid = "ub"})->ip, IP("10.0.0.2"));
  EXPECT_EQ(st.Allocate({.pod = "ns/c", .pod_uid = "uc"}).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(PoolState, ReassignUIDForStatefulSet) {
  api::SpiderIPPool p = Pool("p", "10.0.0.0/24", {"10.0.0.1-10.0.0.9"});
  api::PoolIPAllocations recs;
  recs["10.0.0.1"] = {.pod = "ns/web-0", .pod_uid = "old", .node = "n1"};
  recs["10.0.0.2"] = {.pod = "ns/web-1", .pod_uid = "u1"};
  p.SetAllocatedIPs(recs);
  PoolState st = MustBuild(p);
  auto r = st.ReassignUID({.pod = "ns/web-0", .pod_uid = "new", .node = "n2",
                           .container_id = "c9"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->updated, 1);
  EXPECT_TRUE(r->missing.empty());
  const api::PoolIPAllocation* rec = st.RecordOf(IP("10.0.0.1"));
  EXPECT_EQ(rec->pod_uid, "new");
  EXPECT_EQ(rec->node, "n2");
  EXPECT_EQ(rec->container_id, "c9");
  EXPECT_EQ(st.IPsOf("new"), std::vector<IPAddress>{IP("10.0.0.1")});
  EXPECT_TRUE(st.IPsOf("old").empty());
  // Idempotent: nothing changes the second time.
  EXPECT_EQ(st.ReassignUID({.pod = "ns/web-0", .pod_uid = "new"})->updated, 0);
  // Explicit IPs: a missing record is reported, a foreign one is an error (and nothing
  // changes).
  auto m = st.ReassignUID({.pod = "ns/web-0", .pod_uid = "newer"}, {IP("10.0.0.1"), IP("10.0.0.5")});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->updated, 1);
  EXPECT_EQ(m->missing, std::vector<IPAddress>{IP("10.0.0.5")});
  auto broken = st.ReassignUID({.pod = "ns/web-0", .pod_uid = "x"}, {IP("10.0.0.1"), IP("10.0.0.2")});
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(broken.status().message(),
            "failed to update allocated IP because of data broken: IPPool p IP 10.0.0.2 "
            "allocation detail {ns/web-1 u1} mistach namespacedName ns/web-0");
  EXPECT_EQ(st.RecordOf(IP("10.0.0.1"))->pod_uid, "newer");
  // The pod restarts with its IP: Allocate is idempotent for the new UID.
  auto again = st.Allocate({.pod = "ns/web-0", .pod_uid = "newer"});
  EXPECT_EQ(again->ip, IP("10.0.0.1"));
  EXPECT_TRUE(again->reused);
}

TEST(PoolState, ReservedRanges) {
  api::SpiderReservedIP r1, r2;
  r1.metadata.name = "r1";
  r1.spec.ips = {"10.0.0.1-10.0.0.3", "fd00::1"};
  r2.metadata.name = "r2";
  r2.spec.ips = {"10.0.0.x"};
  auto ok = ReservedRanges({r1});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->size(), 2u);
  auto bad = ReservedRanges({r1, r2});
  EXPECT_EQ(bad.status().message(), "SpiderReservedIP r2: spec.ips[0]: \"10.0.0.x\" is not an IP");
}

// Random allocate/release through PoolState against a std::set model, with records always
// equal to the model and the status counts consistent.
TEST(PoolState, PropertyRecordsMatchModel) {
  std::mt19937 rng(7);
  PoolState st = MustBuild(Pool("p", "10.0.0.0/24", {"10.0.0.1-10.0.0.60"}, {"10.0.0.30-10.0.0.35"}),
                           {R("10.0.0.40")});
  std::map<std::string, IPAddress> by_uid;  // model: uid -> ip
  std::set<IPAddress> used;
  for (int step = 0; step < 4000; ++step) {
    std::string uid = "u" + std::to_string(rng() % 80);
    if (rng() % 2) {
      auto a = st.Allocate({.pod = "ns/" + uid, .pod_uid = uid});
      if (by_uid.count(uid)) {
        ASSERT_TRUE(a.ok());
        ASSERT_EQ(a->ip, by_uid[uid]);
      } else if (used.size() == 53) {
        ASSERT_EQ(a.status().code(), absl::StatusCode::kResourceExhausted);
      } else {
        ASSERT_TRUE(a.ok()) << a.status();
        ASSERT_TRUE(used.insert(a->ip).second) << "duplicate " << a->ip.ToString();
        // Lowest-first: no lower usable IP is free.
        for (uint32_t v = static_cast<uint32_t>(IP("10.0.0.1").value()); v < a->ip.value(); ++v) {
          IPAddress lower = IPAddress::V4(v);
          ASSERT_TRUE(used.count(lower) || !st.allocator().IsUsable(lower));
        }
        by_uid[uid] = a->ip;
      }
    } else {
      std::vector<IPAddress> rel = st.ReleasePod(uid);
      if (by_uid.count(uid)) {
        ASSERT_EQ(rel, std::vector<IPAddress>{by_uid[uid]});
        used.erase(by_uid[uid]);
        by_uid.erase(uid);
      } else {
        ASSERT_TRUE(rel.empty());
      }
    }
    ASSERT_EQ(st.record_count(), used.size());
    PoolCounts c = st.Counts();
    ASSERT_EQ(c.allocated, static_cast<int64_t>(used.size()));
    ASSERT_EQ(c.free, 53 - static_cast<int64_t>(used.size()));
    ASSERT_EQ(c.reserved, 1);  // 10.0.0.40
    ASSERT_EQ(c.total, 54);
  }
}


// The repair of an IP a node handed out whose reservation vanished: only a free usable IP.
TEST(PoolState, AssignFreeTakesOnlyAFreeUsableIP) {
  PoolState st = MustBuild(Pool("p", "10.0.0.0/24", {"10.0.0.1-10.0.0.4"}));
  ASSERT_TRUE(st.Allocate({.pod = "ns/a", .pod_uid = "ua"}).ok());  // 10.0.0.1
  ASSERT_EQ(*st.Reserve("n1", 1), std::vector<IPAddress>{IP("10.0.0.2")});
  const AllocationRequest b{.pod = "ns/b", .pod_uid = "ub", .node = "n2", .interface_ = "eth0"};
  EXPECT_EQ(st.AssignFree(IP("10.0.0.1"), b).code(), absl::StatusCode::kFailedPrecondition);  // a pod's
  EXPECT_EQ(st.AssignFree(IP("10.0.0.2"), b).code(), absl::StatusCode::kFailedPrecondition);  // n1's
  EXPECT_EQ(st.AssignFree(IP("10.0.0.9"), b).code(), absl::StatusCode::kFailedPrecondition);  // not in the pool
  EXPECT_EQ(st.AssignFree(IP("10.0.0.3"), {.pod = "ns/b"}).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(st.AssignFree(IP("10.0.0.3"), b).ok());
  EXPECT_EQ(st.RecordOf(IP("10.0.0.3"))->pod_uid, "ub");
  EXPECT_EQ(st.IPsOf("ub"), std::vector<IPAddress>{IP("10.0.0.3")});
  EXPECT_EQ(st.Counts(), (PoolCounts{.total = 4, .allocated = 2, .reserved = 1, .free = 1}));
  // The next allocation skips it.
  EXPECT_EQ(st.Allocate({.pod = "ns/c", .pod_uid = "uc"})->ip, IP("10.0.0.4"));
}

TEST(PoolState, NodeReservationsAssignAndRelease) {
  PoolState st = MustBuild(Pool("p", "10.0.0.0/24", {"10.0.0.1-10.0.0.10"}));
  ASSERT_TRUE(st.Allocate({.pod = "ns/a", .pod_uid = "ua"}).ok());  // 10.0.0.1
  auto r = st.Reserve("n1", 3);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, (std::vector<IPAddress>{IP("10.0.0.2"), IP("10.0.0.3"), IP("10.0.0.4")}));
  ASSERT_EQ(*st.Reserve("n2", 1), std::vector<IPAddress>{IP("10.0.0.5")});
  // Reservations are neither allocated (no pod) nor free but reserved; the next pod skips them.
  EXPECT_EQ(st.Counts(), (PoolCounts{.total = 10, .allocated = 1, .reserved = 4, .free = 5}));
  EXPECT_EQ(st.Allocate({.pod = "ns/b", .pod_uid = "ub"})->ip, IP("10.0.0.6"));
  EXPECT_EQ(st.reservation_count(), 4u);
  EXPECT_EQ(st.reserving_nodes(), 2u);

  // Only n1 may turn its reservation into a pod record; repeating it is a no-op.
  const AllocationRequest c{.pod = "ns/c", .pod_uid = "uc", .node = "n1", .interface_ = "eth0"};
  EXPECT_EQ(st.AssignReserved(IP("10.0.0.5"), "n1", c).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.AssignReserved(IP("10.0.0.6"), "n1", c).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.AssignReserved(IP("10.0.0.9"), "n1", c).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(st.AssignReserved(IP("10.0.0.3"), "n1", c).ok());
  ASSERT_TRUE(st.AssignReserved(IP("10.0.0.3"), "n1", c).ok());
  EXPECT_EQ(st.RecordOf(IP("10.0.0.3"))->pod, "ns/c");
  EXPECT_EQ(st.IPsOf("uc"), std::vector<IPAddress>{IP("10.0.0.3")});
  EXPECT_EQ(st.ReservedFor("n1"), (std::vector<IPAddress>{IP("10.0.0.2"), IP("10.0.0.4")}));
  // An idempotent ADD of the same pod finds its assigned IP.
  EXPECT_EQ(st.Allocate({.pod = "ns/c", .pod_uid = "uc", .interface_ = "eth0"})->ip, IP("10.0.0.3"));

  // Releasing by pod UID never touches reservations; Unreserve is per node.
  EXPECT_FALSE(st.Release(IP("10.0.0.2"), ""));
  EXPECT_TRUE(st.ReleasePod("").empty());
  EXPECT_FALSE(st.Unreserve(IP("10.0.0.2"), "n2"));
  EXPECT_TRUE(st.Unreserve(IP("10.0.0.2"), "n1"));
  EXPECT_EQ(st.Allocate({.pod = "ns/d", .pod_uid = "ud"})->ip, IP("10.0.0.2"));

  // The status round trip keeps reservations as {"pod":"","podUid":"","node":...}.
  api::SpiderIPPool pool = Pool("p", "10.0.0.0/24", {"10.0.0.1-10.0.0.10"});
  st.WriteStatus(&pool);
  EXPECT_NE(pool.status.allocated_ips->find(R"("10.0.0.4":{"node":"n1","pod":"","podUid":""})"),
            std::string::npos) << *pool.status.allocated_ips;
  EXPECT_EQ(pool.status.allocated_ip_count, 4);  // a, b, c, d; reservations do not count
  EXPECT_EQ(pool.status.reserved_ip_count, 2);   // n1's 10.0.0.4, n2's 10.0.0.5
  EXPECT_EQ(pool.status.free_ip_count, 4);
  EXPECT_EQ(pool.status.total_ip_count, 10);     // 4 + 2 + 4
  api::SpiderIPPool broken = pool;
  broken.status.allocated_ips = R"({"10.0.0.1":{"pod":"","podUid":""}})";
  EXPECT_EQ(PoolState::Build(broken, {}).status().code(), absl::StatusCode::kInvalidArgument);
  PoolState back = MustBuild(pool);
  EXPECT_EQ(back.ReservedFor("n1"), std::vector<IPAddress>{IP("10.0.0.4")});
  EXPECT_EQ(back.ReservedFor("n2"), std::vector<IPAddress>{IP("10.0.0.5")});
  EXPECT_EQ(back.Counts().allocated, 4);
}

TEST(PoolState, ReserveLimits) {
  PoolState st = MustBuild(Pool("p", "10.0.0.0/24", {"10.0.0.1-10.0.0.3"}), {}, {.max_allocated_ips = 2});
  EXPECT_EQ(st.Reserve("", 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.Reserve("n1", 5)->size(), 2u);  // the record cap, not the 3 free IPs
  EXPECT_EQ(st.Reserve("n1", 1).status().code(), absl::StatusCode::kResourceExhausted);
  PoolState full = MustBuild(Pool("p", "10.0.0.0/24", {"10.0.0.1"}));
  ASSERT_EQ(full.Reserve("n1", 4)->size(), 1u);
  EXPECT_EQ(full.Reserve("n2", 1).status().message(), "all IP addresses used out");
  api::SpiderIPPool off = Pool("p", "10.0.0.0/24", {"10.0.0.1"});
  off.spec.disable = true;
  EXPECT_EQ(MustBuild(off).Reserve("n1", 1).status().code(), absl::StatusCode::kFailedPrecondition);
}

// Random pod allocations, releases, node reservations, assignments and unreservations
// against a model: never two owners for one IP, counts always equal the records.
TEST(PoolState, PropertyReservationsMatchModel) {
  std::mt19937 rng(11);
  PoolState st = MustBuild(Pool("p", "10.0.0.0/24", {"10.0.0.1-10.0.0.40"}));
  std::map<IPAddress, std::string> owner;  // model: ip -> "pod:<uid>" | "node:<n>"
  for (int step = 0; step < 6000; ++step) {
    const std::string node = "n" + std::to_string(rng() % 3);
    const std::string uid = "u" + std::to_string(rng() % 60);
    switch (rng() % 5) {
      case 0: {
        auto r = st.Reserve(node, 1 + rng() % 4);
        if (owner.size() == 40) {
          ASSERT_FALSE(r.ok());
          break;
        }
        ASSERT_TRUE(r.ok()) << r.status();
        for (const IPAddress& ip : *r) ASSERT_TRUE(owner.emplace(ip, "node:" + node).second);
        break;
      }
      case 1: {  // a node hands one of its reservations to a pod
        std::vector<IPAddress> mine = st.ReservedFor(node);
        bool holds = false;
        for (const auto& [ip, o] : owner) holds |= o == "pod:" + uid;
        if (mine.empty() || holds) break;
        const IPAddress ip = mine[rng() % mine.size()];
        ASSERT_TRUE(st.AssignReserved(ip, node, {.pod = "ns/" + uid, .pod_uid = uid, .node = node}).ok());
        owner[ip] = "pod:" + uid;
        break;
      }
      case 2: {
        std::vector<IPAddress> mine = st.ReservedFor(node);
        if (mine.empty()) break;
        const IPAddress ip = mine[rng() % mine.size()];
        ASSERT_TRUE(st.Unreserve(ip, node));
        owner.erase(ip);
        break;
      }
      case 3: {
        for (const IPAddress& ip : st.ReleasePod(uid)) {
          ASSERT_EQ(owner[ip], "pod:" + uid);
          owner.erase(ip);
        }
        break;
      }
      default: {
        auto a = st.Allocate({.pod = "ns/" + uid, .pod_uid = uid});
        if (!a.ok()) {
          ASSERT_EQ(owner.size(), 40u);
          break;
        }
        if (!a->reused) {
          ASSERT_TRUE(owner.emplace(a->ip, "pod:" + uid).second);
        }
        ASSERT_EQ(owner[a->ip], "pod:" + uid);
      }
    }
    size_t reservations = 0;
    for (const auto& [ip, o] : owner) {
      const api::PoolIPAllocation* rec = st.RecordOf(ip);
      ASSERT_NE(rec, nullptr);
      if (o.rfind("node:", 0) == 0) {
        ASSERT_TRUE(api::IsNodeReservation(*rec));
        ASSERT_EQ(*rec->node, o.substr(5));
        ++reservations;
      } else {
        ASSERT_EQ(rec->pod_uid, o.substr(4));
      }
    }
    ASSERT_EQ(st.record_count(), owner.size());
    ASSERT_EQ(st.reservation_count(), reservations);
    const PoolCounts c = st.Counts();
    ASSERT_EQ(c.allocated, static_cast<int64_t>(owner.size() - reservations));
    ASSERT_EQ(c.reserved, static_cast<int64_t>(reservations));
    ASSERT_EQ(c.free, 40 - static_cast<int64_t>(owner.size()));
    ASSERT_EQ(c.allocated + c.reserved + c.free, c.total);
  }
}

}  // namespace
}  // namespace spiderpool::ipam
