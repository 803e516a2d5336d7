// MatchRules / Filter (fnmatch globs on the interface name) and the FakeNicSource contract.

#include <stop_token>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "dra/nic/discovery.h"
#include "dra/nic/fake_source.h"

namespace spiderpool::dra::nic {
namespace {

std::vector<std::string> Names(const std::vector<Nic>& nics) {
  std::vector<std::string> out;
  for (const Nic& n : nics) out.push_back(n.name);
  return out;
}

std::vector<Nic> Nics(std::vector<std::string> names) {
  std::vector<Nic> out;
  int i = 2;
  for (auto& n : names) out.push_back(Nic{.name = std::move(n), .ifindex = i++});
  return out;
}

using Strings = std::vector<std::string>;

TEST(Filter, EmptyRulesKeepEverything) {
  auto nics = Nics({"eth0", "ens1f0", "veth1"});
  EXPECT_EQ(Filter(nics, {}), nics);
}

TEST(Filter, IncludeThenExclude) {
  auto nics = Nics({"eth0", "eth1", "ens1f0", "ens1f0v3", "veth12ab", "cni0", "eth10"});
  EXPECT_EQ(Names(Filter(nics, {.include = {"eth*"}})), (Strings{"eth0", "eth1", "eth10"}));
  EXPECT_EQ(Names(Filter(nics, {.include = {"eth?", "ens*"}})),
            (Strings{"eth0", "eth1", "ens1f0", "ens1f0v3"}));
  EXPECT_EQ(Names(Filter(nics, {.include = {"e*"}, .exclude = {"*v[0-9]*", "eth1*"}})),
            (Strings{"eth0", "ens1f0"}));
  EXPECT_EQ(Names(Filter(nics, {.exclude = {"veth*", "cni*"}})),
            (Strings{"eth0", "eth1", "ens1f0", "ens1f0v3", "eth10"}));
  // Exclude wins over include; an exact name is a glob too.
  EXPECT_EQ(Names(Filter(nics, {.include = {"eth0"}, .exclude = {"eth0"}})), Strings{});
  EXPECT_EQ(Names(Filter(nics, {.include = {"cni0"}})), Strings{"cni0"});
  EXPECT_EQ(Names(Filter(nics, {.include = {"nomatch*"}})), Strings{});
}

TEST(Filter, MalformedGlobsMatchLiterallyOrNothing) {
  EXPECT_TRUE(Matches({.include = {"eth["}}, "eth["));
  EXPECT_FALSE(Matches({.include = {"eth["}}, "eth0"));
  EXPECT_FALSE(Matches({.include = {""}}, "eth0"));
  EXPECT_TRUE(Matches({.exclude = {""}}, "eth0"));
}

TEST(FakeNicSource, ListAndError) {
  FakeNicSource src(Nics({"eth0"}));
  EXPECT_EQ(Names(*src.List()), Strings{"eth0"});
  src.SetListError(absl::UnavailableError("boom"));
  EXPECT_EQ(src.List().status(), absl::UnavailableError("boom"));
  src.SetListError(absl::OkStatus());
  src.Set(Nics({"eth1"}));
  EXPECT_EQ(Names(*src.List()), Strings{"eth1"});
}

TEST(FakeNicSource, WatchDeliversInitialThenChangesOnly) {
  FakeNicSource src(Nics({"eth0"}));
  absl::Mutex mu;
  std::vector<Strings> seen;
  absl::Status result = absl::UnknownError("not returned");
  std::jthread watcher([&](std::stop_token stop) {
    absl::Status s = src.Watch(stop, [&](const std::vector<Nic>& nics) {
      absl::MutexLock l(&mu);
      seen.push_back(Names(nics));
    });
    absl::MutexLock l(&mu);
    result = s;
  });
  auto wait_count = [&](size_t n) {
    absl::MutexLock l(&mu);
    auto ready = [&] { return seen.size() >= n; };
    return mu.AwaitWithTimeout(absl::Condition(&ready), absl::Seconds(30));
  };
  ASSERT_TRUE(wait_count(1));
  src.Set(Nics({"eth0"}));  // the same list: no call
  src.Set(Nics({"eth0", "eth1"}));
  ASSERT_TRUE(wait_count(2));
  watcher.request_stop();
  watcher.join();
  absl::MutexLock l(&mu);
  EXPECT_TRUE(result.ok()) << result;
  // The unchanged Set() may have been coalesced or seen; it never produced a call.
  EXPECT_EQ(seen, (std::vector<Strings>{{"eth0"}, {"eth0", "eth1"}}));
  EXPECT_EQ(src.watchers(), 0);
}

}  // namespace
}  // namespace spiderpool::dra::nic
