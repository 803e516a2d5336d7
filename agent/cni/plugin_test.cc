// The ADD flow's detection step: Run() in-process against a fake agent (unix socket) with a fake
// prober. Which probes run in which order, the release through the agent on a conflict / an
// unreachable gateway / a probe failure, the error codes and messages, and no probing at all
// when no IP asks for it.

#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "agent/cni/cni.h"
#include "agent/cni/fake_agent.h"
#include "agent/cni/netprobe.h"
#include "agent/cni/plugin.h"
#include "agent/ipamapi/ipamapi.h"
#include "base/json.h"
#include "base/testing/temp_dir.h"

namespace spiderpool::agent::cni {
namespace {
namespace cni = ::spiderpool::agent::cni;

using base::Json;
using netprobe::Mac;

class FakeProber : public netprobe::Prober {
 public:
  absl::StatusOr<std::optional<netprobe::Conflict>> ProbeConflict(
      const netprobe::Link& link, const std::vector<base::IPAddress>& ips,
      const netprobe::Timing& timing) override {
    std::string c = "conflict " + link.netns_path + " " + link.ifname;
    for (const auto& ip : ips) c += " " + ip.ToString();
    calls.push_back(c);
    last_timing = timing;
    if (!conflict_status.ok()) return conflict_status;
    for (const auto& ip : ips) {
      if (ip.ToString() == conflict_ip) return netprobe::Conflict{.ip = ip, .mac = kPeer};
    }
    return std::optional<netprobe::Conflict>();
  }
  absl::StatusOr<std::optional<Mac>> ProbeGateway(const netprobe::Link& link,
                                                  const base::IPAddress& source,
                                                  const base::IPAddress& gateway,
                                                  const netprobe::Timing&) override {
    calls.push_back("gateway " + link.ifname + " " + source.ToString() + " " +
                    gateway.ToString());
    if (gateway.ToString() == missing_gateway) return std::optional<Mac>();
    return std::optional<Mac>(kPeer);
  }
  absl::Status Announce(const netprobe::Link& link,
                        const std::vector<base::IPAddress>& ips) override {
    std::string c = "announce " + link.ifname;
    for (const auto& ip : ips) c += " " + ip.ToString();
    calls.push_back(c);
    return announce_status;
  }

  static constexpr Mac kPeer = {0x02, 0x42, 0xac, 0x11, 0x00, 0x07};
  std::vector<std::string> calls;
  std::string conflict_ip;
  std::string missing_gateway;
  absl::Status conflict_status;
  absl::Status announce_status;
  netprobe::Timing last_timing;
};

class PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    agent_ = std::make_unique<FakeAgent>(dir_ + "/agent.sock");
    env_ = Env{.command = "ADD",
               .container_id = "a51debf7e1eb",
               .netns = "/var/run/netns/pod1",
               .ifname = "eth0",
               .args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;"
                       "K8S_POD_UID=uid-1",
               .path = "/opt/cni/bin"};
  }
  void TearDown() override {
    agent_.reset();
  }

  // Answer with eth0: 10.6.0.10/16 gw 10.6.0.1, fd00::a/64 gw fd00::1; net1: 172.16.1.5/24.
  void Answer(bool conflict4, bool gateway4, bool conflict6, bool gateway6) {
    ipamapi::IpamAddResponse r;
    r.ips = {{.version = 4, .address = "10.6.0.10/16", .gateway = "10.6.0.1", .nic = "eth0",
              .enable_gateway_detection = gateway4, .enable_ip_conflict_detection = conflict4},
             {.version = 6, .address = "fd00::a/64", .gateway = "fd00::1", .nic = "eth0",
              .enable_gateway_detection = gateway6, .enable_ip_conflict_detection = conflict6},
             {.version = 4, .address = "172.16.1.5/24", .gateway = "172.16.1.1", .nic = "net1",
              .enable_gateway_detection = true, .enable_ip_conflict_detection = true}};
    agent_->post_body = ipamapi::ToJson(r);
  }

  Outcome Add() {
    Json conf = {{"cniVersion", "1.0.0"},
                 {"name", "macvlan-net"},
                 {"type", "macvlan"},
                 {"ipam",
                  {{"type", "spiderpool"},
                   {"ipam_unix_socket_path", dir_ + "/agent.sock"},
                   {"log_file_path", dir_ + "/spiderpool.log"}}}};
    std::string text = conf.dump();
    RunHooks hooks;
    hooks.read_stdin = [text](std::string* out, std::string*) {
      *out = text;
      return true;
    };
    hooks.prober = &prober_;
    return cni::Run(env_, hooks);
  }

  Json ErrorOf(const Outcome& o) {
    auto j = base::ParseJson(o.stdout_text);
    EXPECT_TRUE(j.ok()) << o.stdout_text;
    return j.ok() ? *j : Json();
  }

  // The DELETE /v1/ipam/ip requests the agent saw, decoded.
  std::vector<ipamapi::IpamDelArgs> Releases() {
    std::vector<ipamapi::IpamDelArgs> out;
    for (const auto& r : agent_->requests()) {
      if (r.method != "DELETE") continue;
      EXPECT_EQ(r.path, "/v1/ipam/ip");
      auto a = ipamapi::FromJson<ipamapi::IpamDelArgs>(r.body);
      EXPECT_TRUE(a.ok()) << r.body;
      if (a.ok()) out.push_back(*a);
    }
    return out;
  }

  static const ipamapi::IpamDelArgs& WantRelease() {
    static const ipamapi::IpamDelArgs a{.container_id = "a51debf7e1eb",
                                        .if_name = "eth0",
                                        .net_namespace = "/var/run/netns/pod1",
                                        .pod_namespace = "default",
                                        .pod_name = "web-0",
                                        .pod_uid = "uid-1"};
    return a;
  }

  base::testing::TempDir tmp_{"cnit"};  // before agent_, whose socket is in it
  std::string dir_;
  std::unique_ptr<FakeAgent> agent_;
  Env env_;
  FakeProber prober_;
};

// net1's IP asks for both detections; ADD for eth0 does not look at it.
TEST_F(PluginTest, NoFlagsNoProbing) {
  Answer(false, false, false, false);
  Outcome o = Add();
  EXPECT_EQ(o.exit_code, 0) << o.stdout_text;
  EXPECT_TRUE(prober_.calls.empty());
  EXPECT_TRUE(Releases().empty());
}

TEST_F(PluginTest, ConflictThenGatewayThenAnnounce) {
  Answer(true, true, true, true);
  Outcome o = Add();
  ASSERT_EQ(o.exit_code, 0) << o.stdout_text;
  EXPECT_EQ(prober_.calls,
            (std::vector<std::string>{"conflict /var/run/netns/pod1 eth0 10.6.0.10 fd00::a",
                                      "gateway eth0 10.6.0.10 10.6.0.1",
                                      "gateway eth0 fd00::a fd00::1",
                                      "announce eth0 10.6.0.10 fd00::a"}));
  EXPECT_EQ(prober_.last_timing.tries, 3);
  EXPECT_EQ(prober_.last_timing.per_try, std::chrono::milliseconds(100));
  EXPECT_EQ(prober_.last_timing.dad_wait, std::chrono::seconds(10));
  EXPECT_TRUE(Releases().empty());
  EXPECT_NE(o.stdout_text.find("10.6.0.10/16"), std::string::npos);
}

TEST_F(PluginTest, OnlyFlaggedIpsAreProbedButAllAnnounced) {
  Answer(false, false, true, false);
  ASSERT_EQ(Add().exit_code, 0);
  EXPECT_EQ(prober_.calls,
            (std::vector<std::string>{"conflict /var/run/netns/pod1 eth0 fd00::a",
                                      "announce eth0 10.6.0.10 fd00::a"}));
  prober_.calls.clear();
  Answer(false, true, false, false);
  ASSERT_EQ(Add().exit_code, 0);
  EXPECT_EQ(prober_.calls, (std::vector<std::string>{"gateway eth0 10.6.0.10 10.6.0.1",
                                                     "announce eth0 10.6.0.10 fd00::a"}));
}

TEST_F(PluginTest, ConflictReleasesAndFails) {
  Answer(true, true, false, false);
  prober_.conflict_ip = "10.6.0.10";
  Outcome o = Add();
  EXPECT_EQ(o.exit_code, 1);
  Json e = ErrorOf(o);
  EXPECT_EQ(e.value("code", 0), kErrIPConflict) << o.stdout_text;
  EXPECT_EQ(e.value("msg", ""), "IP conflict: 10.6.0.10 is already used by 02:42:ac:11:00:07");
  EXPECT_NE(e.value("details", "").find("the pod's IPs were released"), std::string::npos)
      << o.stdout_text;
  EXPECT_EQ(Releases(), std::vector<ipamapi::IpamDelArgs>{WantRelease()});
  // Conflict detection runs first; nothing after it.
  EXPECT_EQ(prober_.calls.size(), 1u);
}

TEST_F(PluginTest, UnreachableGatewayReleasesAndFails) {
  Answer(true, true, true, true);
  prober_.missing_gateway = "fd00::1";
  Outcome o = Add();
  EXPECT_EQ(o.exit_code, 1);
  Json e = ErrorOf(o);
  EXPECT_EQ(e.value("code", 0), kErrGatewayUnreachable) << o.stdout_text;
  EXPECT_EQ(e.value("msg", ""), "gateway fd00::1 is unreachable from fd00::a on eth0");
  EXPECT_NE(e.value("details", "").find("no neighbour advertisement after 3 tries of 100ms"),
            std::string::npos)
      << o.stdout_text;
  EXPECT_EQ(Releases(), std::vector<ipamapi::IpamDelArgs>{WantRelease()});
  EXPECT_EQ(prober_.calls.back(), "gateway eth0 fd00::a fd00::1");  // no announcement
}

TEST_F(PluginTest, ProbeFailureReleasesAndFails) {
  Answer(true, false, false, false);
  prober_.conflict_status = absl::InternalError("eth0 in /var/run/netns/pod1: no such device");
  Outcome o = Add();
  Json e = ErrorOf(o);
  EXPECT_EQ(e.value("code", 0), kErrDetectionFailed) << o.stdout_text;
  EXPECT_NE(e.value("details", "").find("no such device"), std::string::npos);
  EXPECT_EQ(Releases().size(), 1u);
}

TEST_F(PluginTest, ReleaseFailureIsReportedInTheError) {
  Answer(true, false, false, false);
  prober_.conflict_ip = "10.6.0.10";
  agent_->del_status = 500;
  agent_->del_body = ipamapi::ErrorJson("apiserver down");
  Json e = ErrorOf(Add());
  EXPECT_EQ(e.value("code", 0), kErrIPConflict);
  EXPECT_NE(e.value("details", "").find("releasing the IPs failed (left to GC): HTTP 500: "
                                        "apiserver down"),
            std::string::npos)
      << e.dump();
}

TEST_F(PluginTest, AnnounceFailureIsOnlyLogged) {
  Answer(false, true, false, false);
  prober_.announce_status = absl::InternalError("send: network is down");
  EXPECT_EQ(Add().exit_code, 0);
  EXPECT_TRUE(Releases().empty());
}

}  // namespace
}  // namespace spiderpool::agent::cni
