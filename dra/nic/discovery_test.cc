// NetlinkNicSource against the real kernel, inside a private network namespace (root).
//
// How the namespace is used: the test creates it with `ip netns add sp-nic-<pid>-<n>` and
// configures it with `ip -n <ns> ...` from the test thread, which itself stays in the host
// namespace. List() and Watch() run on their own threads that first call
// setns(open("/var/run/netns/<ns>"), CLONE_NEWNET) (net namespaces are per thread), so their
// netlink sockets are created, and stay, in the test namespace. The namespace is deleted in
// TearDown, pass or fail. Waits are on a condition variable for the expected list; the
// timeout is only a guard against hanging when the expectation is never met.

#include "dra/nic/discovery.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/cleanup/cleanup.h"
#include "absl/synchronization/mutex.h"
#include "base/subprocess.h"

namespace spiderpool::dra::nic {
namespace {

namespace fs = std::filesystem;

constexpr absl::Duration kGuard = absl::Seconds(30);

std::string FindIp() {
  for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

base::IPPrefix P(const char* text) { return *base::IPPrefix::Parse(text); }

const Nic* Find(const std::vector<Nic>& nics, const std::string& name) {
  for (const Nic& n : nics) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

std::string Describe(const std::vector<Nic>& nics) {
  std::string out = "[";
  for (const Nic& n : nics) {
    out += " " + n.name + "#" + std::to_string(n.ifindex) + (n.up ? " up" : " down") +
           " mtu=" + std::to_string(n.mtu) + " mac=" + n.mac + " kind=" + n.kind;
    for (const auto& p : n.ipv4) out += " " + p.ToString();
    for (const auto& p : n.ipv6) out += " " + p.ToString();
    out += " pci=" + n.pci_address + ";";
  }
  return out + " ]";
}

// Collects the lists a Watch delivers; waits for one that satisfies a predicate.
class Recorder {
 public:
  void Add(const std::vector<Nic>& nics) {
    absl::MutexLock l(&mu_);
    lists_.push_back(nics);
  }
  // Waits until the latest delivered list satisfies `pred`.
  bool WaitFor(const std::function<bool(const std::vector<Nic>&)>& pred) {
    absl::MutexLock l(&mu_);
    auto ready = [&] { return !lists_.empty() && pred(lists_.back()); };
    return mu_.AwaitWithTimeout(absl::Condition(&ready), kGuard);
  }
  std::vector<std::vector<Nic>> lists() {
    absl::MutexLock l(&mu_);
    return lists_;
  }
  std::string Last() {
    absl::MutexLock l(&mu_);
    return lists_.empty() ? "(nothing delivered)" : Describe(lists_.back());
  }

 private:
  absl::Mutex mu_;
  std::vector<std::vector<Nic>> lists_;
};

class NetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (creates a network namespace and links)";
    ip_ = FindIp();
    if (ip_.empty()) GTEST_SKIP() << "no `ip` binary (iproute2)";
    static std::atomic<int> counter{0};
    ns_ = "sp-nic-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
    Ip({"netns", "del", ns_}, /*quiet=*/true);  // a leftover of a crashed run with this pid
    ASSERT_TRUE(Ip({"netns", "add", ns_}));
    ns_fd_ = open(("/var/run/netns/" + ns_).c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(ns_fd_, 0) << "open /var/run/netns/" << ns_;
    ASSERT_TRUE(InNs({"link", "set", "lo", "up"}));
  }

  void TearDown() override {
    if (ns_fd_ >= 0) close(ns_fd_);
    if (!ns_.empty()) Ip({"netns", "del", ns_}, /*quiet=*/true);
  }

  bool Ip(std::vector<std::string> args, bool quiet = false, std::string* out = nullptr) {
    args.insert(args.begin(), ip_);
    auto r = base::RunProcess({.argv = args, .env = {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}}});
    if (!r.ok()) {
      ADD_FAILURE() << r.status();
      return false;
    }
    if (out != nullptr) *out = r->stdout_data;
    if (r->exit_code != 0 && !quiet) {
      ADD_FAILURE() << "ip " << ::testing::PrintToString(args) << " exited " << r->exit_code
                    << ": " << r->stderr_data;
    }
    return r->exit_code == 0;
  }
  // `ip -n <ns> args...`
  bool InNs(std::vector<std::string> args, std::string* out = nullptr) {
    args.insert(args.begin(), {"-n", ns_});
    return Ip(std::move(args), false, out);
  }
  bool InNsBatch(const std::string& commands) {
    auto r = base::RunProcess({.argv = {ip_, "-n", ns_, "-batch", "-"},
                               .env = {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}},
                               .stdin_data = commands});
    return r.ok() && r->exit_code == 0;
  }

  // The ifindex `ip` reports for `name` in the namespace ("7: spn0@spn0p: <...").
  int IfIndex(const std::string& name) {
    std::string out;
    if (!InNs({"-o", "link", "show", "dev", name}, &out)) return -1;
    return std::atoi(out.c_str());
  }

  // Moves the calling thread into the test namespace.
  bool EnterNs() { return setns(ns_fd_, CLONE_NEWNET) == 0; }

  // Runs `fn` on a fresh thread inside the test namespace.
  void RunInNs(const std::function<void()>& fn) {
    int err = 0;
    std::thread t([&] {
      if (!EnterNs()) {
        err = errno;
        return;
      }
      fn();
    });
    t.join();
    ASSERT_EQ(err, 0) << "setns: " << std::strerror(err);
  }

  absl::StatusOr<std::vector<Nic>> ListInNs(NetlinkNicSource& src) {
    absl::StatusOr<std::vector<Nic>> out = absl::UnknownError("not run");
    RunInNs([&] { out = src.List(); });
    return out;
  }

  // A veth pair: `nic` is the "host NIC" end, `peer` the other.
  void AddVeth(const std::string& nic, const std::string& peer) {
    ASSERT_TRUE(InNs({"link", "add", nic, "address", "02:00:5e:10:00:01", "type", "veth",
                      "peer", "name", peer}));
  }

  std::string ip_;
  std::string ns_;
  int ns_fd_ = -1;
};

TEST_F(NetnsTest, ListShowsVethWithAddressesAndState) {
  AddVeth("spn0", "spn0p");
  ASSERT_TRUE(InNs({"link", "set", "spn0", "mtu", "1400"}));
  ASSERT_TRUE(InNs({"link", "set", "spn0", "up"}));
  ASSERT_TRUE(InNs({"link", "set", "spn0p", "up"}));
  ASSERT_TRUE(InNs({"addr", "add", "192.0.2.10/24", "dev", "spn0"}));
  ASSERT_TRUE(InNs({"addr", "add", "198.51.100.7/25", "dev", "spn0"}));
  ASSERT_TRUE(InNs({"addr", "add", "2001:db8::10/64", "dev", "spn0", "nodad"}));
  ASSERT_TRUE(InNs({"addr", "add", "127.0.0.9/8", "dev", "spn0", "scope", "host"}));
  // The kernel gives spn0 an fe80:: address once up; it must not be listed.
  std::string ll;
  ASSERT_TRUE(InNs({"-6", "-o", "addr", "show", "dev", "spn0", "scope", "link"}, &ll));
  EXPECT_NE(ll.find("fe80::"), std::string::npos) << "no link-local address to skip: " << ll;

  NetlinkNicSource src({.sysfs_root = ""});
  auto nics = ListInNs(src);
  ASSERT_TRUE(nics.ok()) << nics.status();
  ASSERT_EQ(nics->size(), 2u) << Describe(*nics);  // no lo
  const Nic& n = (*nics)[0];
  EXPECT_EQ(n.name, "spn0");
  EXPECT_EQ(n.ifindex, IfIndex("spn0"));
  EXPECT_EQ(n.mac, "02:00:5e:10:00:01");
  EXPECT_EQ(n.mtu, 1400);
  EXPECT_TRUE(n.up);
  EXPECT_EQ(n.kind, "veth");
  EXPECT_EQ(n.ipv4, (std::vector<base::IPPrefix>{P("192.0.2.10/24"), P("198.51.100.7/25")}));
  EXPECT_EQ(n.ipv6, std::vector<base::IPPrefix>{P("2001:db8::10/64")});
  EXPECT_EQ(n.pci_address, "");
  EXPECT_EQ(n.numa_node, -1);
  EXPECT_FALSE(n.sriov_vf || n.rdma);
  const Nic& p = (*nics)[1];
  EXPECT_EQ(p.name, "spn0p");
  EXPECT_EQ(p.mtu, 1500);
  EXPECT_TRUE(p.up);
  EXPECT_TRUE(p.ipv4.empty() && p.ipv6.empty());

  // Admin up but the peer down: operstate LOWERLAYERDOWN is not up.
  ASSERT_TRUE(InNs({"link", "set", "spn0p", "down"}));
  nics = ListInNs(src);
  ASSERT_TRUE(nics.ok()) << nics.status();
  EXPECT_FALSE(Find(*nics, "spn0")->up) << Describe(*nics);
  EXPECT_FALSE(Find(*nics, "spn0p")->up);
}

TEST_F(NetnsTest, ListInAnEmptyNamespaceIsEmpty) {
  NetlinkNicSource src;
  auto nics = ListInNs(src);
  ASSERT_TRUE(nics.ok()) << nics.status();
  EXPECT_TRUE(nics->empty()) << Describe(*nics);
}

TEST_F(NetnsTest, SysfsFactsOnlyWhenIfindexMatches) {
  AddVeth("spn0", "spn0p");
  int idx = IfIndex("spn0");
  ASSERT_GT(idx, 0);
  // A fake sysfs where spn0 is a PCI function and spn0p carries a wrong ifindex.
  const char* tmp = std::getenv("TEST_TMPDIR");
  fs::path root = fs::path(tmp != nullptr ? tmp : "/tmp") / ("sysfs-" + ns_);
  fs::remove_all(root);
  auto add = [&](const std::string& ifname, int ifindex, const std::string& pci) {
    fs::path dev = root / "devices/pci0000:5e" / pci;
    fs::create_directories(dev / "net" / ifname);
    std::ofstream(dev / "net" / ifname / "ifindex") << ifindex << "\n";
    std::ofstream(dev / "numa_node") << "1\n";
    fs::create_symlink("../../../" + pci, dev / "net" / ifname / "device");
    fs::create_directories(root / "class/net");
    fs::create_symlink("../../devices/pci0000:5e/" + pci + "/net/" + ifname,
                       root / "class/net" / ifname);
  };
  add("spn0", idx, "0000:5e:00.1");
  add("spn0p", idx + 1000, "0000:5e:00.2");

  NetlinkNicSource src({.sysfs_root = root.string()});
  auto nics = ListInNs(src);
  ASSERT_TRUE(nics.ok()) << nics.status();
  ASSERT_NE(Find(*nics, "spn0"), nullptr) << Describe(*nics);
  EXPECT_EQ(Find(*nics, "spn0")->pci_address, "0000:5e:00.1");
  EXPECT_EQ(Find(*nics, "spn0")->numa_node, 1);
  EXPECT_EQ(Find(*nics, "spn0p")->pci_address, "");
  EXPECT_EQ(Find(*nics, "spn0p")->numa_node, -1);
  fs::remove_all(root);
}

// Starts Watch on a thread inside the test namespace; stops and joins on destruction.
class NsWatcher {
 public:
  NsWatcher(int ns_fd, NetlinkNicSourceOptions options,
            std::function<void(const std::vector<Nic>&)> extra = nullptr)
      : src_(std::move(options)) {
    thread_ = std::jthread([this, ns_fd, extra](std::stop_token stop) {
      if (setns(ns_fd, CLONE_NEWNET) != 0) {
        absl::MutexLock l(&mu_);
        result_ = absl::ErrnoToStatus(errno, "setns");
        done_ = true;
        return;
      }
      absl::Status s = src_.Watch(stop, [&](const std::vector<Nic>& nics) {
        recorder_.Add(nics);
        if (extra) extra(nics);
      });
      absl::MutexLock l(&mu_);
      result_ = s;
      done_ = true;
    });
  }
  ~NsWatcher() { (void)Stop(); }
  absl::Status Stop() {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
    absl::MutexLock l(&mu_);
    return done_ ? result_ : absl::UnknownError("Watch did not return");
  }
  Recorder& recorder() { return recorder_; }

 private:
  NetlinkNicSource src_;
  Recorder recorder_;
  absl::Mutex mu_;
  absl::Status result_;
  bool done_ = false;
  std::jthread thread_;  // last: joined before the members above go away
};

TEST_F(NetnsTest, WatchFollowsLinkAndAddressChanges) {
  WatchStats stats;
  NsWatcher w(ns_fd_,
              {.sysfs_root = "",
               .quiet = absl::Milliseconds(20),
               .max_delay = absl::Milliseconds(200),
               .stats = &stats});
  Recorder& r = w.recorder();
  auto nic = [](const std::vector<Nic>& l) { return Find(l, "spn0"); };

  ASSERT_TRUE(r.WaitFor([](const auto& l) { return l.empty(); })) << r.Last();

  AddVeth("spn0", "spn0p");
  ASSERT_TRUE(InNs({"link", "set", "spn0p", "up"}));
  ASSERT_TRUE(InNs({"link", "set", "spn0", "up"}));
  ASSERT_TRUE(r.WaitFor([&](const auto& l) { return nic(l) && nic(l)->up; })) << r.Last();

  ASSERT_TRUE(InNs({"addr", "add", "192.0.2.10/24", "dev", "spn0"}));
  ASSERT_TRUE(r.WaitFor([&](const auto& l) {
    return nic(l) && nic(l)->ipv4 == std::vector<base::IPPrefix>{P("192.0.2.10/24")};
  })) << r.Last();

  ASSERT_TRUE(InNs({"addr", "add", "2001:db8::10/64", "dev", "spn0", "nodad"}));
  ASSERT_TRUE(r.WaitFor([&](const auto& l) {
    return nic(l) && nic(l)->ipv6 == std::vector<base::IPPrefix>{P("2001:db8::10/64")};
  })) << r.Last();

  ASSERT_TRUE(InNs({"addr", "del", "192.0.2.10/24", "dev", "spn0"}));
  ASSERT_TRUE(r.WaitFor([&](const auto& l) { return nic(l) && nic(l)->ipv4.empty(); }))
      << r.Last();

  ASSERT_TRUE(InNs({"addr", "del", "2001:db8::10/64", "dev", "spn0"}));
  ASSERT_TRUE(r.WaitFor([&](const auto& l) { return nic(l) && nic(l)->ipv6.empty(); }))
      << r.Last();

  ASSERT_TRUE(InNs({"link", "set", "spn0", "mtu", "1280"}));
  ASSERT_TRUE(r.WaitFor([&](const auto& l) { return nic(l) && nic(l)->mtu == 1280; }))
      << r.Last();

  ASSERT_TRUE(InNs({"link", "set", "spn0", "down"}));
  ASSERT_TRUE(r.WaitFor([&](const auto& l) { return nic(l) && !nic(l)->up; })) << r.Last();
  ASSERT_TRUE(InNs({"link", "set", "spn0", "up"}));
  ASSERT_TRUE(r.WaitFor([&](const auto& l) { return nic(l) && nic(l)->up; })) << r.Last();

  ASSERT_TRUE(InNs({"link", "del", "spn0"}));  // takes spn0p with it
  ASSERT_TRUE(r.WaitFor([](const auto& l) { return l.empty(); })) << r.Last();

  absl::Status s = w.Stop();
  EXPECT_TRUE(s.ok()) << s;
  // Every delivery is a change, and each is the full list (no loopback in any).
  auto lists = r.lists();
  for (size_t i = 1; i < lists.size(); ++i) {
    EXPECT_NE(lists[i], lists[i - 1]) << "delivery " << i << " repeats " << Describe(lists[i]);
  }
  for (const auto& l : lists) EXPECT_EQ(Find(l, "lo"), nullptr);
  EXPECT_EQ(stats.callbacks.load(), static_cast<int64_t>(lists.size()));
  EXPECT_GT(stats.events.load(), 0);
  EXPECT_GE(stats.relists.load(), stats.callbacks.load() - 1);
}

TEST_F(NetnsTest, WatchCoalescesABurst) {
  AddVeth("spn0", "spn0p");
  WatchStats stats;
  // A quiet period far longer than `ip -batch` needs: the burst is one re-list.
  NsWatcher w(ns_fd_,
              {.sysfs_root = "",
               .quiet = absl::Seconds(1),
               .max_delay = absl::Seconds(20),
               .stats = &stats});
  Recorder& r = w.recorder();
  ASSERT_TRUE(r.WaitFor([](const auto& l) { return Find(l, "spn0") != nullptr; })) << r.Last();
  std::string batch;
  for (int i = 1; i <= 20; ++i) batch += "addr add 10.77.0." + std::to_string(i) + "/24 dev spn0\n";
  ASSERT_TRUE(InNsBatch(batch));
  ASSERT_TRUE(r.WaitFor([](const auto& l) {
    const Nic* n = Find(l, "spn0");
    return n != nullptr && n->ipv4.size() == 20;
  })) << r.Last();
  EXPECT_TRUE(w.Stop().ok());
  EXPECT_GE(stats.events.load(), 20);
  EXPECT_EQ(stats.relists.load(), 1) << "20 notifications in one burst were not coalesced";
  EXPECT_EQ(r.lists().size(), 2u);
}

TEST_F(NetnsTest, WatchSurvivesNotificationOverrun) {
  AddVeth("spn0", "spn0p");
  WatchStats stats;
  // The smallest receive buffer the kernel allows, and a callback that stalls the watcher
  // while a burst arrives: notifications are dropped (ENOBUFS) and must be recovered by a
  // re-list.
  absl::Mutex gate_mu;
  bool stalled = false;
  bool release = false;
  int calls = 0;
  NsWatcher w(ns_fd_,
              {.sysfs_root = "",
               .quiet = absl::Milliseconds(10),
               .max_delay = absl::Milliseconds(100),
               .receive_buffer_bytes = 1,
               .stats = &stats},
              [&](const std::vector<Nic>&) {
                absl::MutexLock l(&gate_mu);
                if (++calls != 2) return;
                stalled = true;
                gate_mu.Await(absl::Condition(&release));
              });
  absl::Cleanup unstall = [&] {  // runs before `w` stops and joins, also on failure
    absl::MutexLock l(&gate_mu);
    release = true;
  };
  Recorder& r = w.recorder();
  ASSERT_TRUE(r.WaitFor([](const auto& l) { return Find(l, "spn0") != nullptr; })) << r.Last();
  ASSERT_TRUE(InNs({"link", "set", "spn0", "mtu", "1300"}));  // delivery 2 stalls
  {
    absl::MutexLock l(&gate_mu);
    ASSERT_TRUE(gate_mu.AwaitWithTimeout(absl::Condition(&stalled), kGuard));
  }
  std::string batch;
  for (int i = 1; i <= 60; ++i) batch += "addr add 10.78.0." + std::to_string(i) + "/24 dev spn0\n";
  ASSERT_TRUE(InNsBatch(batch));
  {
    absl::MutexLock l(&gate_mu);
    release = true;
  }
  ASSERT_TRUE(r.WaitFor([](const auto& l) {
    const Nic* n = Find(l, "spn0");
    return n != nullptr && n->ipv4.size() == 60;
  })) << r.Last();
  EXPECT_TRUE(w.Stop().ok());
  EXPECT_GE(stats.overruns.load(), 1) << "the burst did not overrun; the test proves nothing";
}

TEST_F(NetnsTest, WatchStopsWithoutEvents) {
  NsWatcher w(ns_fd_, {.sysfs_root = ""});
  ASSERT_TRUE(w.recorder().WaitFor([](const auto& l) { return l.empty(); }));
  EXPECT_TRUE(w.Stop().ok());
}

TEST(WatchErrors, ReturnsWhenStoppedBeforeStart) {
  // Needs no privileges: a netlink route socket is open to everybody.
  NetlinkNicSource src({.sysfs_root = ""});
  std::stop_source stop;
  stop.request_stop();
  int calls = 0;
  EXPECT_TRUE(src.Watch(stop.get_token(), [&](const auto&) { ++calls; }).ok());
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace spiderpool::dra::nic
