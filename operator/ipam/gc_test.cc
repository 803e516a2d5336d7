// IPGarbageCollector against the loopback API server (or a real cluster through
// SPIDERPOOL_TEST_KUBECONFIG; the fault-injection part skips there). Time-dependent cases move
// a SimulatedClock (started at the real time, so the API server's timestamps compare).

#include "operator/ipam/gc.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "api/kubevirt.h"
#include "kube/controller/manager.h"
#include "kube/leaderelection/lease_lock.h"
#include "kube/rest/errors.h"
#include "operator/ipam/test_env.h"

namespace spiderpool::op::ipam {
namespace {

using testing::TestEnv;
using testing::WaitUntil;

class GCTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto env = TestEnv::Start();
    ASSERT_TRUE(env.ok()) << env.status();
    env_ = std::move(*env);
    auto node = env_->CreateNode(env_->Name("n1"));
    ASSERT_TRUE(node.ok()) << node.status();
    node_ = node->metadata.name;
    pool_ = env_->Name("pool");
    ASSERT_TRUE(env_->CreatePool(pool_, "10.253.0.0/16", {"10.253.0.1-10.253.3.254"}).ok());
  }
  void StartGC(GCOptions options = {}) {
    options.clock = &clock_;
    options.registry = &env_->registry();
    gc_ = std::make_unique<IPGarbageCollector>(options, env_->rest(), env_->caches());
    informers_ = env_->RunInformers();
    ASSERT_TRUE(env_->WaitSynced());
    run_ = std::jthread([this](std::stop_token s) { run_status_ = gc_->Run(s); });
    ASSERT_TRUE(WaitUntil([&] { return gc_->scans() >= 1; }));
  }
  void TearDown() override {
    if (run_.joinable()) {
      run_.request_stop();
      run_.join();
      EXPECT_TRUE(run_status_.ok()) << run_status_;
    }
    informers_.reset();
    gc_.reset();
    env_.reset();
  }

  // A pod on node_ with one record (ip -> pod, its uid) and, unless `endpoint` is false, its
  // SpiderEndpoint.
  api::Pod PodWithIP(const std::string& name, const std::string& ip, bool endpoint = true,
                     TestEnv::PodSpec spec = {}) {
    if (spec.node.empty()) spec.node = node_;
    auto pod = env_->CreatePod(name, spec);
    EXPECT_TRUE(pod.ok()) << pod.status();
    if (!pod.ok()) return {};
    AddRecord(ip, name, pod->metadata.uid);
    if (endpoint) {
      auto ep = env_->CreateEndpoint(name, pod->metadata.uid, spec.node, ip + "/16", pool_);
      EXPECT_TRUE(ep.ok()) << ep.status();
    }
    return *pod;
  }
  void AddRecord(const std::string& ip, const std::string& pod, const std::string& uid) {
    ASSERT_TRUE(env_->EditRecords(pool_, [&](api::PoolIPAllocations* r) {
                      (*r)[ip] = {.pod = env_->ns() + "/" + pod, .pod_uid = uid};
                    }).ok());
  }
  bool HasRecord(const std::string& ip) {
    auto r = env_->Records(pool_);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() && r->count(ip) > 0;
  }
  bool HasEndpoint(const std::string& name) {
    auto ep = env_->GetEndpoint(name);
    EXPECT_TRUE(ep.ok()) << ep.status();
    return ep.ok() && ep->has_value();
  }
  // Waits until the GC's pool cache holds the record for `ip` (scans read the cache).
  bool WaitCached(const std::string& ip) {
    return WaitUntil([&] {
      auto pool = env_->caches().pools->store().Get(pool_);
      if (pool == nullptr) return false;
      auto r = pool->AllocatedIPs();
      return r.ok() && r->count(ip) > 0;
    });
  }
  bool WaitReclaimed(const std::string& ip) {
    return WaitUntil([&] { return !HasRecord(ip); });
  }
  // Waits until the pod cache agrees with `pred` (the informer caught up).
  bool WaitPodCache(const std::string& name,
                    const std::function<bool(const api::Pod*)>& pred) {
    return WaitUntil([&] {
      auto p = env_->caches().pods->store().Get(env_->ns() + "/" + name);
      return pred(p.get());
    });
  }
  std::string Metric(const std::string& series) {
    const std::string text = "\n" + env_->registry().Expose();
    const std::string head = "\n" + series + " ";
    size_t at = text.find(head);
    if (at == std::string::npos) return "absent";
    at += head.size();
    return text.substr(at, text.find('\n', at) - at);
  }

  // A KubeVirt VM `name` and its VMI; returns the owner reference its launcher pods carry.
  api::OwnerReference CreateVM(const std::string& name) {
    EXPECT_TRUE(env_->cluster()
                    .ApplyCRDs("kube/testing/testdata/kubevirt-crds", {.keep_existing = true})
                    .ok());
    kube::DynamicClient vms(env_->rest(), api::kubevirt::VMResource());
    kube::DynamicClient vmis(env_->rest(), api::kubevirt::VMIResource());
    auto vm = vms.Create({{"apiVersion", "kubevirt.io/v1"}, {"kind", "VirtualMachine"},
                          {"metadata", {{"name", name}, {"namespace", env_->ns()}}},
                          {"spec", base::Json::object()}});
    EXPECT_TRUE(vm.ok()) << vm.status();
    if (!vm.ok()) return {};
    auto vmi = vmis.Create(
        {{"apiVersion", "kubevirt.io/v1"}, {"kind", "VirtualMachineInstance"},
         {"metadata", {{"name", name}, {"namespace", env_->ns()},
                       {"ownerReferences", {{{"apiVersion", "kubevirt.io/v1"},
                                             {"kind", "VirtualMachine"}, {"name", name},
                                             {"uid", (*vm)["metadata"]["uid"]},
                                             {"controller", true}}}}}},
         {"spec", base::Json::object()}});
    EXPECT_TRUE(vmi.ok()) << vmi.status();
    if (!vmi.ok()) return {};
    return {.api_version = "kubevirt.io/v1", .kind = "VirtualMachineInstance", .name = name,
            .uid = (*vmi)["metadata"]["uid"].get<std::string>(), .controller = true};
  }
  // Deletes VM `name` and its VMI and waits until both are gone.
  void DeleteVM(const std::string& name) {
    kube::DynamicClient vms(env_->rest(), api::kubevirt::VMResource());
    kube::DynamicClient vmis(env_->rest(), api::kubevirt::VMIResource());
    ASSERT_TRUE(vms.Delete(env_->ns(), name).ok());
    absl::Status vmi_deleted = vmis.Delete(env_->ns(), name);  // the GC may be at it already
    ASSERT_TRUE(vmi_deleted.ok() || kube::IsNotFound(vmi_deleted)) << vmi_deleted;
    ASSERT_TRUE(WaitUntil([&] {
      return !vms.Get(env_->ns(), name).ok() && !vmis.Get(env_->ns(), name).ok();
    }));
  }

  std::unique_ptr<TestEnv> env_;
  std::string node_;
  std::string pool_;
  base::SimulatedClock clock_{absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()))};
  std::unique_ptr<IPGarbageCollector> gc_;
  std::unique_ptr<TestEnv::Running> informers_;
  std::jthread run_;
  absl::Status run_status_;
};

TEST_F(GCTest, DeletedPodIsReclaimedUnderAnElectedManager) {
  PodWithIP("a", "10.253.0.10");
  PodWithIP("b", "10.253.0.11");

  // The shape of the controller binary: informers on every replica, the GC on the leader.
  GCOptions options;
  options.clock = &clock_;
  options.registry = &env_->registry();
  gc_ = std::make_unique<IPGarbageCollector>(options, env_->rest(), env_->caches());
  kube::ManagerOptions mopts;
  mopts.name = "spiderpool-controller";
  kube::LeaderElectionConfig le;
  le.identity = "replica-1";
  mopts.leader_election = le;
  mopts.lease_lock = [&] {
    return std::make_unique<kube::KubeLeaseLock>(env_->rest(), env_->ns(),
                                                 "spiderpool-controller-leases");
  };
  kube::Manager mgr(std::move(mopts));
  mgr.Add(std::make_unique<kube::FuncRunnable>("informers", false, [&](std::stop_token s) {
    auto running = env_->RunInformers();
    while (base::RealClock::Get().SleepFor(absl::Seconds(1), s)) {
    }
    return absl::OkStatus();
  }));
  mgr.Add(std::make_unique<kube::FuncRunnable>(
      gc_->Name(), gc_->NeedsLeaderElection(), [&](std::stop_token s) { return gc_->Run(s); }));
  absl::Status result;
  std::jthread run([&](std::stop_token s) { result = mgr.Run(s); });
  ASSERT_TRUE(WaitUntil([&] { return gc_->scans() >= 1; }));
  EXPECT_TRUE(mgr.IsLeader());

  ASSERT_TRUE(env_->DeletePod("a").ok());
  ASSERT_TRUE(WaitReclaimed("10.253.0.10"));
  ASSERT_TRUE(WaitUntil([&] { return !HasEndpoint("a"); }));
  EXPECT_TRUE(HasRecord("10.253.0.11"));
  EXPECT_TRUE(HasEndpoint("b"));
  auto pool = env_->GetPool(pool_);
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ(pool->status.allocated_ip_count, 1);
  EXPECT_EQ(pool->status.total_ip_count, 1022);  // the GC keeps the counts PoolController would
  EXPECT_EQ(pool->status.reserved_ip_count, 0);
  EXPECT_EQ(pool->status.free_ip_count, 1021);

  run.request_stop();
  run.join();
  EXPECT_TRUE(result.ok()) << result;
  EXPECT_EQ(Metric("spiderpool_ip_gc_counts_total"), "1");
  // On a real cluster the pod may first be seen Terminating (grace 0).
  if (!env_->cluster().real_cluster()) {
    EXPECT_EQ(Metric("spiderpool_ip_gc_total{reason=\"pod_missing\"}"), "1");
    EXPECT_EQ(Metric("spiderpool_endpoint_gc_total{reason=\"pod_missing\"}"), "1");
  }
  EXPECT_EQ(Metric("spiderpool_ip_gc_failure_counts_total"), "0");
}

TEST_F(GCTest, PodRecreatedWithANewUIDLosesTheOldRecord) {
  // While the GC is not running, pod d is deleted and created again: same name, new UID.
  api::Pod old_pod = PodWithIP("d", "10.253.0.20");
  PodWithIP("e", "10.253.0.21");
  ASSERT_TRUE(env_->DeletePod("d").ok());
  ASSERT_TRUE(WaitUntil([&] {
    return kube::IsNotFound(kube::Client<api::Pod>(env_->rest()).Get(env_->ns(), "d").status());
  }));
  auto new_pod = env_->CreatePod("d", {.node = node_});
  ASSERT_TRUE(new_pod.ok()) << new_pod.status();
  ASSERT_NE(new_pod->metadata.uid, old_pod.metadata.uid);
  AddRecord("10.253.0.22", "d", new_pod->metadata.uid);  // the new pod's own IP

  StartGC();  // the initial scan finds the stale record
  ASSERT_TRUE(WaitReclaimed("10.253.0.20"));
  ASSERT_TRUE(WaitUntil([&] { return !HasEndpoint("d"); }));  // it held the old UID
  EXPECT_TRUE(HasRecord("10.253.0.22"));
  EXPECT_TRUE(HasRecord("10.253.0.21"));
  EXPECT_EQ(Metric("spiderpool_ip_gc_total{reason=\"pod_uid_mismatch\"}"), "1");
}

TEST_F(GCTest, PodOnADeletedNodeIsReclaimed) {
  const std::string n2 = env_->Name("n2");
  ASSERT_TRUE(env_->CreateNode(n2).ok());
  PodWithIP("f", "10.253.0.30", true, {.node = n2});
  ASSERT_TRUE(env_->SetPodPhase("f", "Running").ok());
  PodWithIP("g", "10.253.0.31");
  StartGC();
  EXPECT_TRUE(HasRecord("10.253.0.30"));

  ASSERT_TRUE(kube::Client<api::Node>(env_->rest()).Delete("", n2).ok());
  ASSERT_TRUE(WaitReclaimed("10.253.0.30"));
  ASSERT_TRUE(WaitUntil([&] { return !HasEndpoint("f"); }));
  EXPECT_TRUE(HasRecord("10.253.0.31"));
  if (!env_->cluster().real_cluster()) {  // a real cluster's pod GC may delete the pod first
    EXPECT_EQ(Metric("spiderpool_ip_gc_total{reason=\"node_missing\"}"), "1");
  }
}

// Node reservations (an agent's IPs held ahead, api::IsNodeReservation) are never a pod's: the
// scan leaves those of live nodes alone and frees those of deleted nodes.
TEST_F(GCTest, ReservationsOfDeletedNodesAreFreedOthersKept) {
  const std::string gone = env_->Name("gone");
  ASSERT_TRUE(env_->CreateNode(gone).ok());
  ASSERT_TRUE(env_->EditRecords(pool_, [&](api::PoolIPAllocations* r) {
                    (*r)["10.253.0.90"] = {.pod = "", .pod_uid = "", .node = node_};
                    (*r)["10.253.0.91"] = {.pod = "", .pod_uid = "", .node = gone};
                    (*r)["10.253.0.92"] = {.pod = "", .pod_uid = "", .node = gone};
                  }).ok());
  PodWithIP("h", "10.253.0.93");
  StartGC({.interval = absl::Seconds(600)});
  ASSERT_TRUE(WaitCached("10.253.0.92"));
  ASSERT_TRUE(kube::Client<api::Node>(env_->rest()).Delete("", gone).ok());
  ASSERT_TRUE(WaitUntil([&] { return env_->caches().nodes->store().Get(gone) == nullptr; }));
  clock_.Advance(absl::Seconds(600));
  ASSERT_TRUE(WaitReclaimed("10.253.0.91"));
  ASSERT_TRUE(WaitReclaimed("10.253.0.92"));
  EXPECT_TRUE(HasRecord("10.253.0.90")) << "a live node's reservation was freed";
  EXPECT_TRUE(HasRecord("10.253.0.93"));
  auto pool = kube::Client<api::SpiderIPPool>(env_->rest()).Get("", pool_);
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ(pool->status.allocated_ip_count, 1) << "reservations are not pods";
  // The GC writes the counts as PoolController does: the live node's reservation is reserved.
  EXPECT_EQ(pool->status.reserved_ip_count, 1);
  EXPECT_EQ(pool->status.free_ip_count, 1020);
  EXPECT_EQ(pool->status.total_ip_count, 1022);
}

TEST_F(GCTest, SucceededPodIsReclaimedPendingAndRunningPodsAreKept) {
  PodWithIP("h", "10.253.0.40");
  PodWithIP("pending", "10.253.0.41");
  PodWithIP("running", "10.253.0.42");
  ASSERT_TRUE(env_->SetPodPhase("running", "Running").ok());
  StartGC();

  ASSERT_TRUE(env_->SetPodPhase("h", "Succeeded", clock_.Now() - absl::Hours(1)).ok());
  ASSERT_TRUE(WaitReclaimed("10.253.0.40"));
  ASSERT_TRUE(WaitUntil([&] { return !HasEndpoint("h"); }));
  EXPECT_EQ(Metric("spiderpool_ip_gc_total{reason=\"pod_terminated\"}"), "1");

  for (const char* name : {"pending", "running"}) {
    auto r = gc_->ReconcilePod(env_->ns(), name);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->requeue_after, absl::ZeroDuration());
  }
  EXPECT_TRUE(HasRecord("10.253.0.41"));
  EXPECT_TRUE(HasRecord("10.253.0.42"));
  EXPECT_TRUE(HasEndpoint("pending"));
  EXPECT_TRUE(HasEndpoint("running"));
}

TEST_F(GCTest, TerminatingPodIsReclaimedOnlyAfterItsGracePeriod) {
  PodWithIP("t", "10.253.0.50", true, {.finalizers = {testing::kHoldFinalizer}});
  StartGC({.additional_grace_delay = absl::Seconds(120)});

  ASSERT_TRUE(env_->DeletePod("t").ok());
  ASSERT_TRUE(WaitPodCache("t", [](const api::Pod* p) {
    return p != nullptr && p->metadata.IsDeleting();
  }));
  auto pod = env_->caches().pods->store().Get(env_->ns() + "/t");
  const absl::Time deadline = pod->metadata.deletion_timestamp->value +
                              absl::Seconds(pod->metadata.deletion_grace_period_seconds.value_or(0)) +
                              absl::Seconds(120);
  // Within the grace period: kept, and asked back for the deadline.
  auto r = gc_->ReconcilePod(env_->ns(), "t");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->requeue_after, absl::ZeroDuration());
  EXPECT_LE(r->requeue_after, deadline - clock_.Now());
  EXPECT_TRUE(HasRecord("10.253.0.50"));
  EXPECT_TRUE(HasEndpoint("t"));

  clock_.SetTime(std::max(clock_.Now(), deadline) + absl::Seconds(1));
  ASSERT_TRUE(WaitReclaimed("10.253.0.50"));
  ASSERT_TRUE(WaitUntil([&] { return !HasEndpoint("t"); }));
  EXPECT_EQ(Metric("spiderpool_ip_gc_total{reason=\"pod_terminating\"}"), "1");
  ASSERT_TRUE(env_->ReleasePod("t").ok());
}

TEST_F(GCTest, StatefulSetPodIPsSurviveRecreationAndGoOnScaleDown) {
  auto sts = env_->CreateStatefulSet("web", 2, std::nullopt, node_);
  ASSERT_TRUE(sts.ok()) << sts.status();
  const api::OwnerReference owner = api::MakeOwnerReference(*sts);
  // The pods (a real cluster's StatefulSet controller makes them itself).
  auto ensure_pod = [&](const std::string& name) -> api::Pod {
    auto p = env_->CreatePod(name, {.node = node_, .owners = {owner}});
    if (!p.ok() && kube::IsAlreadyExists(p.status())) {
      p = kube::Client<api::Pod>(env_->rest()).Get(env_->ns(), name);
    }
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : api::Pod{};
  };
  api::Pod web0 = ensure_pod("web-0");
  api::Pod web1 = ensure_pod("web-1");
  AddRecord("10.253.0.60", "web-0", web0.metadata.uid);
  AddRecord("10.253.0.61", "web-1", web1.metadata.uid);
  for (const api::Pod* p : {&web0, &web1}) {
    ASSERT_TRUE(env_->CreateEndpoint(p->metadata.name, p->metadata.uid, node_,
                                     p == &web0 ? "10.253.0.60/16" : "10.253.0.61/16", pool_,
                                     "StatefulSet", "web")
                    .ok());
  }
  StartGC();

  // web-1 is deleted (and, by the StatefulSet controller, created again with a new UID).
  ASSERT_TRUE(env_->DeletePod("web-1").ok());
  ASSERT_TRUE(WaitPodCache("web-1", [&](const api::Pod* p) {
    return p == nullptr || p->metadata.uid != web1.metadata.uid;
  }));
  auto r = gc_->ReconcilePod(env_->ns(), "web-1");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(HasRecord("10.253.0.61"));
  EXPECT_TRUE(HasEndpoint("web-1"));
  api::Pod web1b = ensure_pod("web-1");
  ASSERT_NE(web1b.metadata.uid, web1.metadata.uid);
  ASSERT_TRUE(WaitPodCache("web-1", [&](const api::Pod* p) {
    return p != nullptr && p->metadata.uid == web1b.metadata.uid;
  }));
  gc_->TriggerScan();
  r = gc_->ReconcilePod(env_->ns(), "web-1");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(HasRecord("10.253.0.61"));  // the agent will move it to the new UID
  EXPECT_TRUE(HasEndpoint("web-1"));

  // Scale down to 1: ordinal 1 is no longer wanted. The StatefulSet event alone triggers the
  // GC (on the loopback server nobody deletes web-1: its record has the old UID).
  ASSERT_TRUE(env_->ScaleStatefulSet("web", 1).ok());
  ASSERT_TRUE(WaitReclaimed("10.253.0.61"));
  ASSERT_TRUE(WaitUntil([&] { return !HasEndpoint("web-1"); }));
  EXPECT_TRUE(HasRecord("10.253.0.60"));
  EXPECT_TRUE(HasEndpoint("web-0"));
}

// KubeVirt (reference §2.6, §2.10): a VM's record names its VMI, not a pod; it is kept across
// the VM's pods while the VM exists, and reclaimed (with the endpoint) once the VM is deleted.
TEST_F(GCTest, KubevirtVMIPsAreKeptUntilTheVMIsDeleted) {
  const api::OwnerReference owner = CreateVM("vm1");
  if (HasFailure()) return;
  const std::string ns = env_->ns();
  auto first = env_->CreatePod("virt-launcher-vm1-aaaaa", {.node = node_, .owners = {owner}});
  ASSERT_TRUE(first.ok()) << first.status();
  AddRecord("10.253.0.70", "vm1", first->metadata.uid);
  ASSERT_TRUE(env_->CreateEndpoint("vm1", first->metadata.uid, node_, "10.253.0.70/16", pool_,
                                   "VirtualMachineInstance", "vm1")
                  .ok());
  StartGC();

  // No pod is named "vm1": the VM's record is kept all the same, also once its pod is gone.
  auto r = gc_->ReconcilePod(ns, "vm1");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(HasRecord("10.253.0.70"));
  ASSERT_TRUE(env_->DeletePod(first->metadata.name).ok());
  ASSERT_TRUE(WaitPodCache(first->metadata.name, [](const api::Pod* p) { return p == nullptr; }));
  r = gc_->ReconcilePod(ns, "vm1");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(HasRecord("10.253.0.70"));
  EXPECT_TRUE(HasEndpoint("vm1"));

  // The VM restarted (a new pod holds the record), then the VM is deleted: the pod's deletion
  // alone brings the GC to the VM's record, without waiting for a full scan.
  auto second = env_->CreatePod("virt-launcher-vm1-bbbbb", {.node = node_, .owners = {owner}});
  ASSERT_TRUE(second.ok()) << second.status();
  AddRecord("10.253.0.70", "vm1", second->metadata.uid);
  DeleteVM("vm1");
  const int64_t scans = gc_->scans();
  ASSERT_TRUE(env_->DeletePod(second->metadata.name).ok());
  ASSERT_TRUE(WaitReclaimed("10.253.0.70"));
  ASSERT_TRUE(WaitUntil([&] { return !HasEndpoint("vm1"); }));
  EXPECT_EQ(gc_->scans(), scans) << "reclaimed by the pod's event, not by a scan";
  EXPECT_EQ(Metric("spiderpool_ip_gc_total{reason=\"kubevirt_vm_gone\"}"), "1");
}

// The VM's record was rewritten for its new pod and the GC's pool cache has not seen that yet
// when the VM goes: the reconcile releases the live record, not only the one it cached (which
// nobody would release: removal requires the UID, and no later event points at "vm1"). The
// loopback holds watch events back to make the cache stale; a real cluster's may or may not be.
TEST_F(GCTest, AVMsRecordRewrittenAfterTheCacheSawItIsReleasedWhenTheVMGoes) {
  const api::OwnerReference owner = CreateVM("vm2");
  if (HasFailure()) return;
  const std::string ns = env_->ns();
  AddRecord("10.253.0.80", "vm2", "uid-first-launcher");
  ASSERT_TRUE(env_->CreateEndpoint("vm2", "uid-first-launcher", node_, "10.253.0.80/16", pool_,
                                   "VirtualMachineInstance", "vm2")
                  .ok());
  StartGC();
  ASSERT_TRUE(WaitCached("10.253.0.80"));
  ASSERT_TRUE(WaitUntil([&] {
    return env_->caches().endpoints->store().Get(ns + "/vm2") != nullptr;
  }));

  auto* lb = env_->cluster().loopback();
  if (lb != nullptr) lb->SetLatencyModel({.watch_delay = absl::Seconds(5)});
  auto second = env_->CreatePod("virt-launcher-vm2-bbbbb", {.node = node_, .owners = {owner}});
  ASSERT_TRUE(second.ok()) << second.status();
  AddRecord("10.253.0.80", "vm2", second->metadata.uid);
  DeleteVM("vm2");
  auto r = gc_->ReconcilePod(ns, "vm2");
  if (lb != nullptr) lb->SetLatencyModel({});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(HasRecord("10.253.0.80"));
  EXPECT_FALSE(HasEndpoint("vm2"));
  EXPECT_EQ(Metric("spiderpool_ip_gc_total{reason=\"kubevirt_vm_gone\"}"), "1");
}

TEST_F(GCTest, StatefulSetOrdinalsStartIsHonoured) {
  ASSERT_TRUE(env_->CreateStatefulSet("db", 1, 5, node_).ok());
  // Records of pods that are gone: db-5 is wanted (start 5, replicas 1), db-0 is not.
  AddRecord("10.253.0.65", "db-5", "uid-db-5-old");
  AddRecord("10.253.0.66", "db-0", "uid-db-0-old");
  ASSERT_TRUE(env_->CreateEndpoint("db-5", "uid-db-5-old", node_, "10.253.0.65/16", pool_,
                                   "StatefulSet", "db").ok());
  ASSERT_TRUE(env_->CreateEndpoint("db-0", "uid-db-0-old", node_, "10.253.0.66/16", pool_,
                                   "StatefulSet", "db").ok());
  StartGC();
  ASSERT_TRUE(WaitReclaimed("10.253.0.66"));
  ASSERT_TRUE(WaitUntil([&] { return !HasEndpoint("db-0"); }));
  auto r = gc_->ReconcilePod(env_->ns(), "db-5");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(HasRecord("10.253.0.65"));
  EXPECT_TRUE(HasEndpoint("db-5"));

  // Deleting the StatefulSet ends it.
  ASSERT_TRUE(kube::Client<api::StatefulSet>(env_->rest()).Delete(env_->ns(), "db").ok());
  ASSERT_TRUE(WaitReclaimed("10.253.0.65"));
  ASSERT_TRUE(WaitUntil([&] { return !HasEndpoint("db-5"); }));
}

TEST_F(GCTest, PeriodicScanCatchesLeaks) {
  // A leak made while the controller was stopped: found by the scan at start.
  AddRecord("10.253.0.70", "ghost", "uid-ghost");
  PodWithIP("alive", "10.253.0.72");
  StartGC({.interval = absl::Seconds(600)});
  ASSERT_TRUE(WaitReclaimed("10.253.0.70"));
  const uint64_t scans = gc_->scans();

  // A leak no event points at (no pod, no endpoint, pools have no GC handler): the next
  // periodic scan finds it.
  AddRecord("10.253.0.71", "ghost2", "uid-ghost2");
  ASSERT_TRUE(WaitCached("10.253.0.71"));
  clock_.Advance(absl::Seconds(600));
  ASSERT_TRUE(WaitReclaimed("10.253.0.71"));
  EXPECT_GT(gc_->scans(), scans);
  EXPECT_TRUE(HasRecord("10.253.0.72"));
  EXPECT_EQ(Metric("spiderpool_ip_gc_total{reason=\"pod_missing\"}"), "2");
  EXPECT_NE(Metric("spiderpool_ip_gc_scans_total"), "absent");
}

TEST_F(GCTest, ConflictsDuringReleaseLoseNoOtherRecord) {
  api::Pod alive = PodWithIP("alive", "10.253.1.0");
  AddRecord("10.253.1.1", "ghost", "uid-ghost");
  if (auto* lb = env_->cluster().loopback()) {
    // The GC's first status writes of the pool get 409 Conflict.
    lb->FailNext(3, 409, {.verb = "update", .resource = "spiderippools/status", .name = pool_});
  }
  // Enough conflict retries that the concurrent "agent" below cannot exhaust them, however
  // slow the machine: this test is about losing no record, not about the default budget (a
  // release that runs out of retries is requeued and counted as a failure, which a cold CI
  // run once produced with the default 10 steps).
  GCOptions options;
  options.conflict_retry.steps = 200;
  StartGC(options);
  ASSERT_TRUE(WaitReclaimed("10.253.1.1"));
  EXPECT_TRUE(HasRecord("10.253.1.0"));

  // Concurrent writers: an "agent" allocates 40 IPs to the live pod one by one while leaks
  // appear and the GC releases them; every write is a read-modify-write on resourceVersion.
  std::atomic<bool> writer_ok{true};
  std::thread agent([&] {
    for (int i = 0; i < 40; ++i) {
      std::string ip = base::StrCat("10.253.2.", i + 1);
      absl::Status s = env_->EditRecords(pool_, [&](api::PoolIPAllocations* r) {
        (*r)[ip] = {.pod = env_->ns() + "/alive", .pod_uid = alive.metadata.uid};
      });
      if (!s.ok()) writer_ok = false;
    }
  });
  for (int i = 0; i < 10; ++i) {
    const std::string ip = base::StrCat("10.253.3.", i + 1);
    AddRecord(ip, base::StrCat("ghost-", i), "uid-x");
    ASSERT_TRUE(WaitCached(ip));
    gc_->TriggerScan();
  }
  agent.join();
  ASSERT_TRUE(writer_ok.load());
  ASSERT_TRUE(WaitUntil([&] {
    auto r = env_->Records(pool_);
    if (!r.ok()) return false;
    for (const auto& [ip, rec] : *r) {
      if (rec.pod != env_->ns() + "/alive") return false;
    }
    return true;
  }));
  auto pool = env_->GetPool(pool_);
  ASSERT_TRUE(pool.ok());
  auto records = pool->AllocatedIPs();
  ASSERT_TRUE(records.ok());
  EXPECT_EQ(records->size(), 41u);  // 10.253.1.0 and the 40 written concurrently
  EXPECT_EQ(pool->status.allocated_ip_count, 41);
  EXPECT_EQ(Metric("spiderpool_ip_gc_counts_total"), "11");
  EXPECT_EQ(Metric("spiderpool_ip_gc_failure_counts_total"), "0");
}

}  // namespace
}  // namespace spiderpool::op::ipam
