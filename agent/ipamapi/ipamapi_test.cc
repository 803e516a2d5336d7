#include "agent/ipamapi/ipamapi.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/json.h"

namespace spiderpool::agent::ipamapi {
namespace {

IpamAddResponse SampleResponse() {
  IpamAddResponse r;
  r.ips.push_back({.version = 4,
                   .address = "10.6.0.10/16",
                   .ip_pool = "pool-v4",
                   .gateway = "10.6.0.1",
                   .nic = "eth0",
                   .vlan = 100,
                   .mac = "",
                   .enable_gateway_detection = true,
                   .enable_ip_conflict_detection = false});
  r.ips.push_back({.version = 6, .address = "fd00::a/64", .ip_pool = "pool-v6", .nic = "net1"});
  r.routes.push_back({.if_name = "eth0", .dst = "172.16.0.0/16", .gw = "10.6.0.1"});
  r.dns = DNS{.nameservers = {"10.96.0.10"}, .domain = "cluster.local", .search = {"a.b"}};
  return r;
}

TEST(IpamApi, AddArgsUpstreamFieldNames) {
  IpamAddArgs a{.container_id = "c1",
                .if_name = "eth0",
                .net_namespace = "/var/run/netns/x",
                .pod_namespace = "default",
                .pod_name = "p1",
                .pod_uid = "u1",
                .default_ipv4_ippool = {"v4"},
                .default_ipv6_ippool = {},
                .clean_gateway = true,
                .match_master_subnet = true};
  EXPECT_EQ(ToJson(a),
            R"({"cleanGateway":true,"containerID":"c1","defaultIPv4IPPool":["v4"],)"
            R"("ifName":"eth0","matchMasterSubnet":true,"netNamespace":"/var/run/netns/x",)"
            R"("podName":"p1","podNamespace":"default","podUID":"u1"})");
  auto back = FromJson<IpamAddArgs>(ToJson(a));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, a);
}

TEST(IpamApi, AddArgsRequiredFieldsAllReported) {
  auto r = FromJson<IpamAddArgs>(R"({"containerID":"c","ifName":"","defaultIPv4IPPool":"x"})");
  ASSERT_FALSE(r.ok());
  std::string m(r.status().message());
  for (const char* f : {"ifName: Required value", "netNamespace: Required value",
                        "podNamespace: Required value", "podName: Required value",
                        "podUID: Required value", "defaultIPv4IPPool: expected array"}) {
    EXPECT_NE(m.find(f), std::string::npos) << f << " in " << m;
  }
}

TEST(IpamApi, ResponseRoundTripAndShape) {
  IpamAddResponse r = SampleResponse();
  std::string text = ToJson(r);
  auto j = base::ParseJson(text);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["ips"][0]["ipPool"], "pool-v4");
  EXPECT_EQ((*j)["ips"][0]["enableGatewayDetection"], true);
  EXPECT_FALSE((*j)["ips"][0].contains("mac"));  // omitempty
  EXPECT_EQ((*j)["ips"][1]["version"], 6);
  EXPECT_EQ((*j)["routes"][0]["ifName"], "eth0");
  EXPECT_EQ((*j)["dns"]["nameservers"][0], "10.96.0.10");
  auto back = FromJson<IpamAddResponse>(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, r);
}

TEST(IpamApi, EmptyResponseStillHasIps) {
  EXPECT_EQ(ToJson(IpamAddResponse{}), R"({"ips":[]})");
}

TEST(IpamApi, ResponseValidation) {
  auto r = FromJson<IpamAddResponse>(
      R"({"ips":[{"version":5,"address":"10.0.0.300/24"}],"routes":[{"ifName":"eth0","dst":"x","gw":"1.2.3.4"}]})");
  ASSERT_FALSE(r.ok());
  std::string m(r.status().message());
  EXPECT_NE(m.find("ips[0].version: unsupported value 5"), std::string::npos) << m;
  EXPECT_NE(m.find("ips[0].address"), std::string::npos) << m;
  EXPECT_NE(m.find("ips[0].nic: Required value"), std::string::npos) << m;
  EXPECT_NE(m.find("routes[0].dst"), std::string::npos) << m;
  EXPECT_FALSE(FromJson<IpamAddResponse>("{}").ok());  // ips is required
}

TEST(IpamApi, DelArgsNetNamespaceOptional) {
  auto r = FromJson<IpamDelArgs>(
      R"({"containerID":"c","ifName":"eth0","podNamespace":"ns","podName":"p","podUID":"u"})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->net_namespace, "");
  EXPECT_FALSE(FromJson<IpamDelArgs>(R"({"containerID":"c"})").ok());
}

CoordinatorConfig SampleCoordinatorConfig() {
  return CoordinatorConfig{.mode = "underlay",
                           .overlay_pod_cidr = {"10.233.64.0/18", "fd85:ee78:d8a6:8607::1:0/112"},
                           .service_cidr = {"10.233.0.0/18"},
                           .hijack_cidr = {"169.254.0.0/16"},
                           .policy_routes = {{.dst = "10.7.0.0/16", .gw = "10.6.0.1"}},
                           .pod_mac_prefix = "0a:1b",
                           .tune_pod_routes = false,
                           .pod_default_route_nic = "net1",
                           .host_rule_table = 600,
                           .pod_rp_filter = -1,
                           .tx_queue_len = 1000,
                           .veth_link_address = "169.254.100.1",
                           .veth_mtu = 9000};
}

TEST(IpamApi, GetCoordinatorArgsUpstreamFieldNames) {
  GetCoordinatorArgs a{.pod_name = "p1", .pod_namespace = "default"};
  EXPECT_EQ(ToJson(a), R"({"podName":"p1","podNamespace":"default"})");
  auto back = FromJson<GetCoordinatorArgs>(ToJson(a));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, a);
  // Both optional (upstream); a wrong type is still an error with its path.
  ASSERT_TRUE(FromJson<GetCoordinatorArgs>("{}").ok());
  auto bad = FromJson<GetCoordinatorArgs>(R"({"podName":7})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("podName"), std::string::npos) << bad.status();
}

TEST(IpamApi, CoordinatorConfigRoundTripAndShape) {
  CoordinatorConfig c = SampleCoordinatorConfig();
  std::string text = ToJson(c);
  auto j = base::ParseJson(text);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["mode"], "underlay");
  EXPECT_EQ((*j)["overlayPodCIDR"][1], "fd85:ee78:d8a6:8607::1:0/112");
  EXPECT_EQ((*j)["serviceCIDR"][0], "10.233.0.0/18");
  EXPECT_EQ((*j)["hijackCIDR"][0], "169.254.0.0/16");
  EXPECT_EQ((*j)["policyRoutes"][0]["gw"], "10.6.0.1");
  EXPECT_EQ((*j)["podMACPrefix"], "0a:1b");
  EXPECT_EQ((*j)["tunePodRoutes"], false);  // required: written although false
  EXPECT_EQ((*j)["podDefaultRouteNIC"], "net1");
  EXPECT_EQ((*j)["hostRuleTable"], 600);
  EXPECT_EQ((*j)["podRPFilter"], -1);
  EXPECT_EQ((*j)["txQueueLen"], 1000);
  EXPECT_EQ((*j)["vethLinkAddress"], "169.254.100.1");
  EXPECT_EQ((*j)["vethMTU"], 9000);
  auto back = FromJson<CoordinatorConfig>(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, c);
}

TEST(IpamApi, CoordinatorConfigMinimalAndUpstreamNulls) {
  CoordinatorConfig c{.mode = "auto"};
  EXPECT_EQ(ToJson(c), R"({"hostRuleTable":500,"mode":"auto","tunePodRoutes":true,"vethMTU":1500})");
  auto back = FromJson<CoordinatorConfig>(ToJson(c));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, c);
  // An upstream agent writes Go nil slices as null.
  auto upstream = FromJson<CoordinatorConfig>(
      R"({"mode":"disable","overlayPodCIDR":null,"serviceCIDR":null,"hijackCIDR":null,)"
      R"("tunePodRoutes":true,"hostRuleTable":500,"podRPFilter":0,"txQueueLen":0})");
  ASSERT_TRUE(upstream.ok()) << upstream.status();
  EXPECT_EQ(upstream->mode, "disable");
  EXPECT_TRUE(upstream->overlay_pod_cidr.empty());
  EXPECT_EQ(upstream->veth_mtu, 1500);  // absent: the default
}

TEST(IpamApi, CoordinatorConfigValidation) {
  auto r = FromJson<CoordinatorConfig>(
      R"({"overlayPodCIDR":["10.0.0.0/33"],"hijackCIDR":["1.2.3.4"],)"
      R"("policyRoutes":[{"dst":"10.7.0.0/16","gw":"x"}]})");
  ASSERT_FALSE(r.ok());
  std::string m(r.status().message());
  for (const char* f : {"mode: Required value", "tunePodRoutes: Required value",
                        "overlayPodCIDR[0]", "hijackCIDR[0]", "policyRoutes[0].gw"}) {
    EXPECT_NE(m.find(f), std::string::npos) << f << " in " << m;
  }
}

TEST(IpamApi, ErrorBodies) {
  EXPECT_EQ(ErrorJson("pool \"a\" exhausted"), R"({"message":"pool \"a\" exhausted"})");
  EXPECT_EQ(ErrorMessageFromBody(ErrorJson("boom")), "boom");
  EXPECT_EQ(ErrorMessageFromBody(R"("upstream style")"), "upstream style");
  EXPECT_EQ(ErrorMessageFromBody("  plain text\n"), "plain text");
  EXPECT_EQ(ErrorMessageFromBody(""), "");
  EXPECT_EQ(ErrorMessageFromBody(R"({"other":1})"), R"({"other":1})");
  EXPECT_EQ(ErrorMessageFromBody(std::string(5000, 'x')).size(), 1024u + 3);
  auto e = FromJson<ErrorBody>(R"({"message":""})");
  ASSERT_TRUE(e.ok());
}

TEST(IpamApi, HttpStatusFor) {
  EXPECT_EQ(HttpStatusFor(absl::OkStatus()), 200);
  EXPECT_EQ(HttpStatusFor(absl::InvalidArgumentError("x")), 400);
  EXPECT_EQ(HttpStatusFor(absl::NotFoundError("x")), 404);
  EXPECT_EQ(HttpStatusFor(absl::UnavailableError("x")), 503);
  EXPECT_EQ(HttpStatusFor(absl::ResourceExhaustedError("pool full")), 500);
  EXPECT_EQ(HttpStatusFor(absl::InternalError("x")), 500);
}

// Deterministic byte mutations of valid bodies: decoding never crashes, and whatever decodes
// cleanly re-encodes to something that decodes to the same value.
template <typename T>
void FuzzOne(const std::string& text) {
  auto r = FromJson<T>(text);
  if (!r.ok()) return;
  auto again = FromJson<T>(ToJson(*r));
  ASSERT_TRUE(again.ok()) << text << " -> " << ToJson(*r) << ": " << again.status();
  EXPECT_EQ(ToJson(*again), ToJson(*r));
}

TEST(IpamApi, DecodeFuzz) {
  std::vector<std::string> seeds = {
      ToJson(SampleResponse()),
      ToJson(IpamAddArgs{.container_id = "c", .if_name = "eth0", .net_namespace = "/n",
                         .pod_namespace = "ns", .pod_name = "p", .pod_uid = "u",
                         .default_ipv4_ippool = {"a", "b"}, .default_ipv6_ippool = {"c"}}),
      ToJson(IpamDelArgs{.container_id = "c", .if_name = "eth0", .pod_namespace = "ns",
                         .pod_name = "p", .pod_uid = "u"}),
      ToJson(SampleCoordinatorConfig()),
      ToJson(GetCoordinatorArgs{.pod_name = "p", .pod_namespace = "ns"}),
      ErrorJson("x"), "\"s\"", "{}", "[]", "null"};
  std::mt19937_64 rng(0x1ba3a91ULL);
  auto pick = [&](size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); };
  const char kBytes[] = "{}[]\":,0123456789.-+eE tfnul\\/ab";
  for (int i = 0; i < 20000; ++i) {
    std::string t = seeds[pick(seeds.size())];
    int n = 1 + static_cast<int>(pick(4));
    for (int k = 0; k < n; ++k) {
      switch (pick(4)) {
        case 0: if (!t.empty()) t[pick(t.size())] = kBytes[pick(sizeof(kBytes) - 1)]; break;
        case 1: t = t.substr(0, pick(t.size() + 1)); break;
        case 2: t.insert(pick(t.size() + 1), 1, kBytes[pick(sizeof(kBytes) - 1)]); break;
        default: if (!t.empty()) t.erase(pick(t.size()), 1 + pick(3)); break;
      }
    }
    FuzzOne<IpamAddArgs>(t);
    FuzzOne<IpamAddResponse>(t);
    FuzzOne<IpamDelArgs>(t);
    FuzzOne<GetCoordinatorArgs>(t);
    FuzzOne<CoordinatorConfig>(t);
    (void)ErrorMessageFromBody(t);
  }
}

}  // namespace
}  // namespace spiderpool::agent::ipamapi
