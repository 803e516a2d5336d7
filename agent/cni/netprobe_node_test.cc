// Detection on real links (root only; skips otherwise). A "node" namespace whose eth0 is one end
// of a veth pair; the other end is eth0 of a "peer" namespace that holds (or not) the pod's IP or
// the gateway. The real macvlan plugin from /usr/lib/cni runs in the node namespace, creates the
// pod's NIC in the pod namespace and execs our `spiderpool` binary, which talks to a fake agent
// on a unix socket and probes from the pod NIC.

#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "agent/cni/fake_agent.h"
#include "agent/cni/netprobe.h"
#include "agent/ipamapi/ipamapi.h"
#include "base/json.h"
#include "base/strings.h"
#include "base/subprocess.h"
#include "base/testing/temp_dir.h"

namespace spiderpool::agent::cni {
namespace {

using base::Json;

constexpr char kMacvlan[] = "/usr/lib/cni/macvlan";

std::string IpPath() { return access("/usr/sbin/ip", X_OK) == 0 ? "/usr/sbin/ip" : "/sbin/ip"; }

// The e2e/node convention (NodeTestSkipReason): why this cannot run here, "" when it can.
std::string SkipReason() {
  if (geteuid() != 0) return "needs root (network namespaces, veth, macvlan)";
  if (access(IpPath().c_str(), X_OK) != 0) return "iproute2 (`ip`) is not installed";
  if (access(kMacvlan, X_OK) != 0) {
    return "the CNI plugins are not installed (apt-get install containernetworking-plugins)";
  }
  return "";
}

absl::StatusOr<std::string> Ip(std::vector<std::string> args) {
  args.insert(args.begin(), IpPath());
  auto r = base::RunProcess({.argv = args, .inherit_env = true, .timeout = absl::Seconds(30)});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    std::string cmd;
    for (const auto& a : args) cmd += a + " ";
    return absl::InternalError(base::StrCat(cmd, "failed: ", r->stderr_data));
  }
  return r->stdout_data;
}

std::string PluginDir() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return std::string(srcdir ? srcdir : ".") + "/spiderpool/agent/cni";
}

// Receives, inside `netns`, the packets of `ethertype` arriving on `ifname` until `match`
// accepts one or `timeout` passes. Started before the action that should cause the packet.
class Capture {
 public:
  Capture(const std::string& netns, const std::string& ifname, uint16_t ethertype,
          std::function<bool(std::string_view)> match, std::chrono::milliseconds timeout) {
    std::promise<void> ready;
    auto ready_f = ready.get_future();
    thread_ = std::thread([this, netns, ifname, ethertype, match, timeout,
                           ready = std::move(ready)]() mutable {
      int ns = open(("/var/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
      bool entered = ns >= 0 && setns(ns, CLONE_NEWNET) == 0;
      if (ns >= 0) close(ns);
      int fd = entered ? socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ethertype)) : -1;
      if (fd >= 0) {
        sockaddr_ll sll{};
        sll.sll_family = AF_PACKET;
        sll.sll_protocol = htons(ethertype);
        sll.sll_ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
        if (bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof(sll)) != 0) {
          close(fd);
          fd = -1;
        }
      }
      ready.set_value();
      if (fd < 0) return;
      auto deadline = std::chrono::steady_clock::now() + timeout;
      char buf[2048];
      while (!matched_ && std::chrono::steady_clock::now() < deadline) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0) continue;
        ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n > 0 && match(std::string_view(buf, static_cast<size_t>(n)))) matched_ = true;
      }
      close(fd);
    });
    ready_f.wait();
  }
  // Waits for the end of the capture; true when a packet matched.
  bool Wait() {
    if (thread_.joinable()) thread_.join();
    return matched_;
  }
  ~Capture() { Wait(); }

 private:
  std::atomic<bool> matched_{false};
  std::thread thread_;
};

class NetprobeNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = SkipReason(); !why.empty()) GTEST_SKIP() << why;
    std::random_device rd;
    prefix_ = "spnp";
    for (int i = 0; i < 4; ++i) prefix_ += "abcdefghijklmnopqrstuvwxyz"[rd() % 26];
    node_ = prefix_ + "-node";
    peer_ = prefix_ + "-peer";
    pod_ = prefix_ + "-pod";
    for (const std::string& ns : {node_, peer_, pod_}) {
      ASSERT_TRUE(Ip({"netns", "add", ns}).ok());
      created_.push_back(ns);
    }
    std::string a = prefix_ + "a", b = prefix_ + "b";
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"link", "add", a, "type", "veth", "peer", "name", b},
             {"link", "set", a, "netns", node_, "name", "eth0"},
             {"link", "set", b, "netns", peer_, "name", "eth0"},
             {"-n", node_, "link", "set", "eth0", "up"},
             {"-n", peer_, "link", "set", "eth0", "up"}}) {
      auto r = Ip(args);
      ASSERT_TRUE(r.ok()) << r.status();
    }
    auto mac = LinkMac(peer_);
    ASSERT_TRUE(mac.ok()) << mac.status();
    peer_mac_ = *mac;

    dir_ = tmp_.path();
    agent_ = std::make_unique<FakeAgent>(dir_ + "/agent.sock");
  }
  void TearDown() override {
    agent_.reset();
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) (void)Ip({"netns", "del", *it});
  }

  absl::StatusOr<std::string> LinkMac(const std::string& ns) {
    auto out = Ip({"-n", ns, "-j", "link", "show", "eth0"});
    if (!out.ok()) return out.status();
    auto j = base::ParseJson(*out);
    if (!j.ok() || !j->is_array() || j->empty()) return absl::InternalError("ip -j: " + *out);
    return (*j)[0].value("address", "");
  }

  void PeerAddress(const std::string& cidr) {
    std::vector<std::string> args = {"-n", peer_, "addr", "add", cidr, "dev", "eth0"};
    if (cidr.find(':') != std::string::npos) args.push_back("nodad");
    auto r = Ip(args);
    ASSERT_TRUE(r.ok()) << r.status();
  }

  void Answer(const std::string& cidr, const std::string& gateway, bool conflict, bool gw) {
    ipamapi::IpamAddResponse r;
    r.ips = {{.version = cidr.find(':') == std::string::npos ? 4 : 6,
              .address = cidr,
              .gateway = gateway,
              .nic = "eth0",
              .enable_gateway_detection = gw,
              .enable_ip_conflict_detection = conflict}};
    agent_->post_body = ipamapi::ToJson(r);
  }

  // The first address of an ADD result ("" when there is none).
  static std::string FirstAddress(const Json& r) {
    if (!r.is_object() || !r.contains("ips") || !r["ips"].is_array() || r["ips"].empty()) {
      return "";
    }
    return r["ips"][0].value("address", "");
  }

  // macvlan 1.1.1 leaves its link in the pod when IPAM fails (the runtime's DEL removes it).
  void RemovePodLink() { (void)Ip({"-n", pod_, "link", "del", "eth0"}); }

  // ADD through the real macvlan plugin running in the node namespace.
  Json Add(const std::string& container_id, int* exit_code) {
    Json conf = {{"cniVersion", "1.0.0"},
                 {"name", "macvlan-net"},
                 {"type", "macvlan"},
                 {"master", "eth0"},
                 {"mode", "bridge"},
                 {"ipam",
                  {{"type", "spiderpool"},
                   {"ipam_unix_socket_path", dir_ + "/agent.sock"},
                   {"log_file_path", dir_ + "/spiderpool.log"}}}};
    auto r = base::RunProcess(
        {.argv = {IpPath(), "netns", "exec", node_, kMacvlan},
         .env = {{"CNI_COMMAND", "ADD"},
                 {"CNI_CONTAINERID", container_id},
                 {"CNI_NETNS", "/var/run/netns/" + pod_},
                 {"CNI_IFNAME", "eth0"},
                 {"CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0"},
                 {"CNI_PATH", PluginDir() + ":/usr/lib/cni"}},
         .stdin_data = conf.dump(),
         .timeout = absl::Seconds(60)});
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return Json();
    *exit_code = r->exit_code;
    auto j = base::ParseJson(r->stdout_data);
    EXPECT_TRUE(j.ok()) << "stdout: " << r->stdout_data << " stderr: " << r->stderr_data;
    return j.ok() ? *j : Json();
  }

  // The containerIDs of the DELETE /v1/ipam/ip requests the agent saw.
  std::vector<std::string> Released() {
    std::vector<std::string> out;
    for (const auto& req : agent_->requests()) {
      if (req.method != "DELETE" || req.path != "/v1/ipam/ip") continue;
      auto a = ipamapi::FromJson<ipamapi::IpamDelArgs>(req.body);
      EXPECT_TRUE(a.ok()) << req.body;
      if (a.ok()) out.push_back(a->container_id);
    }
    return out;
  }

  base::testing::TempDir tmp_{"np"};  // before agent_, whose socket is in it
  std::string prefix_, node_, peer_, pod_, peer_mac_, dir_;
  std::vector<std::string> created_;
  std::unique_ptr<FakeAgent> agent_;
};

TEST_F(NetprobeNodeTest, Ipv4ConflictFailsNamingIpAndMacAndReleases) {
  PeerAddress("10.77.0.10/24");
  Answer("10.77.0.10/24", "10.77.0.1", /*conflict=*/true, /*gw=*/true);
  int code = -1;
  Json e = Add("c1", &code);
  EXPECT_NE(code, 0);
  EXPECT_EQ(e.value("code", 0), 102) << e.dump();
  EXPECT_EQ(e.value("msg", ""), "IP conflict: 10.77.0.10 is already used by " + peer_mac_)
      << e.dump();
  EXPECT_EQ(Released(), std::vector<std::string>{"c1"});
}

TEST_F(NetprobeNodeTest, Ipv4GatewayAbsentFailsAndReleases) {
  PeerAddress("10.77.0.10/24");
  Answer("10.77.0.11/24", "10.77.0.1", true, true);
  int code = -1;
  Json e = Add("c2", &code);
  EXPECT_NE(code, 0);
  EXPECT_EQ(e.value("code", 0), 103) << e.dump();
  EXPECT_EQ(e.value("msg", ""), "gateway 10.77.0.1 is unreachable from 10.77.0.11 on eth0");
  EXPECT_EQ(Released(), std::vector<std::string>{"c2"});
}

TEST_F(NetprobeNodeTest, Ipv4GatewayPresentSucceedsAndAnnounces) {
  PeerAddress("10.77.0.1/24");
  Answer("10.77.0.11/24", "10.77.0.1", true, true);
  netprobe::Mac garp_sender{};
  Capture garp(peer_, "eth0", ETH_P_ARP,
               [&](std::string_view b) {
                 auto p = netprobe::ParseArp(b);
                 if (!p || p->sender_ip != 0x0a4d000b || p->target_ip != 0x0a4d000b) {
                   return false;
                 }
                 garp_sender = p->sender_mac;
                 return true;
               },
               std::chrono::seconds(20));
  int code = -1;
  Json r = Add("c3", &code);
  EXPECT_EQ(code, 0) << r.dump();
  EXPECT_EQ(FirstAddress(r), "10.77.0.11/24") << r.dump();
  EXPECT_TRUE(Released().empty());
  ASSERT_TRUE(garp.Wait()) << "no gratuitous ARP for 10.77.0.11 seen by the peer";
  auto pod_mac = LinkMac(pod_);
  ASSERT_TRUE(pod_mac.ok()) << pod_mac.status();
  EXPECT_EQ(netprobe::MacToString(garp_sender), *pod_mac);
}

TEST_F(NetprobeNodeTest, Ipv6ConflictGatewayAndAnnouncement) {
  PeerAddress("fd77::10/64");
  Answer("fd77::10/64", "fd77::1", true, false);
  int code = -1;
  Json e = Add("c4", &code);
  EXPECT_EQ(e.value("code", 0), 102) << e.dump();
  EXPECT_EQ(e.value("msg", ""), "IP conflict: fd77::10 is already used by " + peer_mac_);

  RemovePodLink();
  Answer("fd77::11/64", "fd77::1", true, true);
  e = Add("c5", &code);
  EXPECT_EQ(e.value("code", 0), 103) << e.dump();
  EXPECT_EQ(e.value("msg", ""), "gateway fd77::1 is unreachable from fd77::11 on eth0");
  EXPECT_EQ(Released(), (std::vector<std::string>{"c4", "c5"}));

  PeerAddress("fd77::1/64");
  RemovePodLink();
  const absl::uint128 pod_ip = absl::MakeUint128(0xfd77000000000000ULL, 0x11);
  Capture na(peer_, "eth0", ETH_P_IPV6,
             [&](std::string_view b) {
               auto p = netprobe::ParseNdp(b);
               return p && p->type == netprobe::kNeighborAdvertisement && p->target == pod_ip &&
                      !p->solicited && p->override_flag;
             },
             std::chrono::seconds(30));
  Json r = Add("c6", &code);
  EXPECT_EQ(code, 0) << r.dump();
  EXPECT_EQ(FirstAddress(r), "fd77::11/64") << r.dump();
  EXPECT_TRUE(na.Wait()) << "no unsolicited neighbour advertisement for fd77::11";
  EXPECT_EQ(Released().size(), 2u);
}

}  // namespace
}  // namespace spiderpool::agent::cni
