// PoolCache against the loopback API server (or a real cluster through
// SPIDERPOOL_TEST_KUBECONFIG): which writes of a pool make it read the pool again, and which
// only reach it as metadata.

#include "agent/ipam/pool_cache.h"

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/strings.h"
#include "gtest/gtest.h"
#include "kube/controller/manager.h"
#include "kube/rest/client.h"
#include "base/testing/wait.h"
#include "kube/testing/spider_cluster.h"

namespace spiderpool::agent::ipam {
namespace {

using base::testing::WaitUntil;

class PoolCacheTest : public kube::testing::SpiderClusterTest {
 protected:
  void SetUp() override {
    SpiderClusterTest::SetUp();
    if (HasFatalFailure()) return;
    absl::StatusOr<std::string> pool = CreatePool("cache", "10.9.0.0/24", {"10.9.0.1-10.9.0.20"});
    ASSERT_TRUE(pool.ok()) << pool.status();
    name_ = *pool;
  }
  void TearDown() override {
    stop_.request_stop();
    threads_.clear();
    cache_.reset();
    SpiderClusterTest::TearDown();
  }
  // Starts a PoolCache's runnables and waits for it to sync.
  PoolCache& Start(PoolCacheOptions options,
                   std::function<void(PoolCache&)> before_run = nullptr) {
    cache_ = std::make_unique<PoolCache>(cluster_->rest(), options);
    if (before_run) before_run(*cache_);
    for (auto& r : cache_->Runnables()) {
      std::shared_ptr<kube::Runnable> runnable = std::move(r);
      threads_.emplace_back([runnable, stop = stop_.get_token()] { (void)runnable->Run(stop); });
    }
    EXPECT_TRUE(WaitUntil([&] { return cache_->HasSynced(); })) << "did not sync";
    return *cache_;
  }
  // Another agent's status write: one more record.
  std::string WriteStatus(const std::string& ip) {
    kube::Client<api::SpiderIPPool> pools(cluster_->rest());
    auto p = pools.Get("", name_);
    EXPECT_TRUE(p.ok()) << p.status();
    api::PoolIPAllocations recs = p->AllocatedIPs().value_or(api::PoolIPAllocations{});
    recs[ip] = api::PoolIPAllocation{.pod = "ns/p-" + ip, .pod_uid = "uid-" + ip};
    p->SetAllocatedIPs(recs);
    auto w = pools.UpdateStatus(*p);
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? w->metadata.resource_version : "";
  }
  // A spec change (the pool's IP range becomes `ips`), and whether `cache` read it.
  bool PatchIpsAndSeeIt(const PoolCache& cache, const std::string& ips) {
    auto patched = kube::Client<api::SpiderIPPool>(cluster_->rest())
                       .Patch("", name_, kube::PatchType::kMerge, {{"spec", {{"ips", {ips}}}}});
    EXPECT_TRUE(patched.ok()) << patched.status();
    return patched.ok() && WaitUntil([&] {
             auto p = cache.Get(name_);
             return p != nullptr && p->spec.ips == std::vector<std::string>{ips};
           });
  }
  bool MetaAt(const PoolCache& cache, const std::string& rv) {
    return WaitUntil([&] {
      auto m = cache.Meta(name_);
      return m != nullptr && m->metadata.resource_version == rv;
    });
  }

  std::string name_;
  std::unique_ptr<PoolCache> cache_;
  std::stop_source stop_;
  std::vector<std::jthread> threads_;  // stopped and joined before cache_ goes
};

TEST_F(PoolCacheTest, AnotherAgentsStatusWriteIsMetadataUntilSomeoneNeedsIt) {
  PoolCache& cache = Start({.status_refresh = absl::Hours(1)});
  std::shared_ptr<const api::SpiderIPPool> first = cache.Get(name_);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->spec.subnet, "10.9.0.0/24");
  const int64_t reads = cache.reads();

  const std::string rv = WriteStatus("10.9.0.1");
  ASSERT_TRUE(MetaAt(cache, rv)) << "the metadata watch did not see the write";
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(cache.reads(), reads) << "a status write made the cache read the pool";
  EXPECT_EQ(cache.Get(name_)->metadata.resource_version, first->metadata.resource_version);

  absl::StatusOr<std::shared_ptr<const api::SpiderIPPool>> fresh = cache.Fresh(name_);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  ASSERT_NE(*fresh, nullptr);
  EXPECT_EQ((*fresh)->metadata.resource_version, rv);
  EXPECT_EQ((*fresh)->AllocatedIPs()->count("10.9.0.1"), 1u);
  EXPECT_EQ(cache.reads(), reads + 1);
  EXPECT_EQ(cache.Get(name_)->metadata.resource_version, rv) << "the read is kept";
  ASSERT_TRUE(cache.Fresh(name_).ok());
  EXPECT_EQ(cache.reads(), reads + 1) << "an up-to-date copy was read again";

  // Remember keeps only what is newer than the copy.
  api::SpiderIPPool old = *first;
  cache.Remember(old);
  EXPECT_EQ(cache.Get(name_)->metadata.resource_version, rv);
}

TEST_F(PoolCacheTest, ASpecChangeIsReadAtOnceAndAStatusChangeWithinTheRefresh) {
  std::atomic<int> updates{0};
  PoolCache& cache = Start({.status_refresh = absl::Milliseconds(300)}, [&](PoolCache& c) {
    c.AddHandlers({.on_update = [&](const api::SpiderIPPool&, const api::SpiderIPPool&) {
      updates.fetch_add(1);
    }});
  });
  ASSERT_TRUE(PatchIpsAndSeeIt(cache, "10.9.0.1-10.9.0.30")) << "the spec change was not read";

  const std::string rv = WriteStatus("10.9.0.2");
  ASSERT_TRUE(WaitUntil([&] {
    return cache.Get(name_)->metadata.resource_version == rv;
  })) << "the status change was not read within the refresh";
  EXPECT_GE(updates.load(), 2);
}

// The agent stretches the background reads of a pool that many nodes share (the factor); the
// factor may use the cache (it is asked without the cache's lock).
TEST_F(PoolCacheTest, ARefreshFactorStretchesThePoolsBackgroundReads) {
  PoolCache& cache = Start({.status_refresh = absl::Milliseconds(100)}, [&](PoolCache& c) {
    c.SetRefreshFactor([&c, this](const std::string& pool) -> int64_t {
      return pool == name_ && c.Meta(pool) != nullptr ? 1'000'000 : 1;
    });
  });
  const int64_t reads = cache.reads();
  const std::string rv = WriteStatus("10.9.0.4");
  ASSERT_TRUE(MetaAt(cache, rv)) << "the metadata watch did not see the write";
  absl::SleepFor(absl::Milliseconds(600));
  EXPECT_EQ(cache.reads(), reads) << "read again at the plain refresh interval";

  cache.SetRefreshFactor(nullptr);  // back to one interval
  EXPECT_TRUE(WaitUntil([&] { return cache.Get(name_)->metadata.resource_version == rv; }))
      << "the status change was not read once the factor was gone";
}

// Only the pools the agent follows (its node may use them) are read again when their status
// changes; another pool's status writes stay metadata, its spec changes are still read.
TEST_F(PoolCacheTest, TheStatusOfAPoolNotFollowedIsNotReadAgain) {
  PoolCache& cache = Start(
      {.status_refresh = absl::Milliseconds(50),
       .follow_status = [&](const api::SpiderIPPool& p) { return p.metadata.name != name_; }});
  const int64_t reads = cache.reads();
  const std::string first_rv = cache.Get(name_)->metadata.resource_version;
  const std::string rv = WriteStatus("10.9.0.3");
  ASSERT_TRUE(MetaAt(cache, rv)) << "the metadata watch did not see the write";
  absl::SleepFor(absl::Milliseconds(500));  // ten refresh periods
  EXPECT_EQ(cache.reads(), reads) << "the status write of a pool not followed was read";
  EXPECT_EQ(cache.Get(name_)->metadata.resource_version, first_rv);

  EXPECT_TRUE(PatchIpsAndSeeIt(cache, "10.9.0.1-10.9.0.40"))
      << "the spec change of a pool not followed was not read";
}

TEST_F(PoolCacheTest, ADeletedPoolIsGone) {
  std::atomic<int> deletes{0};
  PoolCache& cache = Start({.status_refresh = absl::Hours(1)}, [&](PoolCache& c) {
    c.AddHandlers({.on_delete = [&](const api::SpiderIPPool& p) {
      if (p.metadata.name == name_) deletes.fetch_add(1);
    }});
  });
  ASSERT_NE(cache.Get(name_), nullptr);
  ASSERT_TRUE(kube::Client<api::SpiderIPPool>(cluster_->rest()).Delete("", name_).ok());
  ASSERT_TRUE(WaitUntil([&] { return cache.Get(name_) == nullptr && deletes.load() == 1; }));
  for (const auto& p : cache.List()) EXPECT_NE(p->metadata.name, name_);
}

// Many pools at start (a cluster of many pools): one LIST, not a GET per pool.
TEST_F(PoolCacheTest, ManyPoolsAtStartAreListedOnce) {
  std::vector<std::string> names = {name_};
  for (int i = 0; i < 11; ++i) {
    absl::StatusOr<std::string> pool = CreatePool(base::StrCat("many", i),
                                                  base::StrCat("10.7.", i, ".0/24"),
                                                  {base::StrCat("10.7.", i, ".1-10.7.", i, ".9")});
    ASSERT_TRUE(pool.ok()) << pool.status();
    names.push_back(*pool);
  }
  PoolCache& cache = Start({.status_refresh = absl::Hours(1)});
  for (const std::string& n : names) EXPECT_NE(cache.Get(n), nullptr) << n;
  EXPECT_LE(cache.reads(), 2) << "read the pools one by one";
}

// Deleted and created again under the same name (generation 1 again, a new UID): the new
// pool's spec is read at once, not after the status refresh. (When both events come between two
// passes of the refresher only the UID tells the pools apart; this test does not force that
// timing.)
TEST_F(PoolCacheTest, APoolCreatedAgainUnderItsNameIsReadAtOnce) {
  PoolCache& cache = Start({.status_refresh = absl::Hours(1)});
  std::shared_ptr<const api::SpiderIPPool> old = cache.Get(name_);
  ASSERT_NE(old, nullptr);
  kube::Client<api::SpiderIPPool> pools(cluster_->rest());
  ASSERT_TRUE(pools.Delete("", name_).ok());
  ASSERT_TRUE(WaitUntil([&] { return !pools.Get("", name_).ok(); }));  // not immediate everywhere
  api::SpiderIPPool again;
  again.metadata.name = name_;
  again.spec.subnet = "10.8.0.0/24";
  again.spec.ips = {"10.8.0.1-10.8.0.20"};
  auto created = pools.Create(again);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(WaitUntil([&] {
    auto p = cache.Get(name_);
    return p != nullptr && p->metadata.uid == created->metadata.uid;
  })) << "still the deleted pool's copy";
  EXPECT_EQ(cache.Get(name_)->spec.subnet, "10.8.0.0/24");
}

}  // namespace
}  // namespace spiderpool::agent::ipam
