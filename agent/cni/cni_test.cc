#include "agent/cni/cni.h"
#include "agent/cni/ipam_conf.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/ipamapi/ipamapi.h"
#include "base/json.h"

namespace spiderpool::agent::cni {
namespace {

Json MustParse(std::string_view text) {
  auto j = base::ParseJson(text);
  EXPECT_TRUE(j.ok()) << j.status();
  return j.ok() ? *j : Json();
}

ipamapi::IpamAddResponse DualStackTwoNics() {
  ipamapi::IpamAddResponse r;
  r.ips = {
      {.version = 4, .address = "10.6.0.10/16", .ip_pool = "p4", .gateway = "10.6.0.1",
       .nic = "eth0"},
      {.version = 6, .address = "fd00:0:0::a/64", .ip_pool = "p6", .gateway = "fd00::1",
       .nic = "eth0"},
      {.version = 4, .address = "172.16.1.5/24", .ip_pool = "n1", .nic = "net1"},
  };
  r.routes = {
      {.if_name = "eth0", .dst = "10.7.0.9/16", .gw = "10.6.0.1"},
      {.if_name = "net1", .dst = "192.168.0.0/16", .gw = "172.16.1.1"},
  };
  r.dns = ipamapi::DNS{.nameservers = {"10.96.0.10"}, .domain = "cluster.local"};
  return r;
}

TEST(BuildResult, V1FiltersByNicAndOmitsVersion) {
  auto r = BuildResult(DualStackTwoNics(), "eth0", "1.0.0");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, MustParse(R"({
    "cniVersion": "1.0.0",
    "ips": [{"address": "10.6.0.10/16", "gateway": "10.6.0.1"},
            {"address": "fd00::a/64", "gateway": "fd00::1"}],
    "routes": [{"dst": "10.7.0.0/16", "gw": "10.6.0.1"}],
    "dns": {"nameservers": ["10.96.0.10"], "domain": "cluster.local"}})"))
      << r->dump();
}

TEST(BuildResult, V0xHasVersionStrings) {
  for (const char* v : {"0.3.0", "0.3.1", "0.4.0"}) {
    auto r = BuildResult(DualStackTwoNics(), "eth0", v);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)["cniVersion"], v);
    EXPECT_EQ((*r)["ips"][0]["version"], "4");
    EXPECT_EQ((*r)["ips"][1]["version"], "6");
  }
}

TEST(BuildResult, SecondNicNoGatewayEmptyDns) {
  ipamapi::IpamAddResponse resp = DualStackTwoNics();
  resp.dns.reset();
  auto r = BuildResult(resp, "net1", "0.4.0");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, MustParse(R"({
    "cniVersion": "0.4.0",
    "ips": [{"version": "4", "address": "172.16.1.5/24"}],
    "routes": [{"dst": "192.168.0.0/16", "gw": "172.16.1.1"}],
    "dns": {}})"))
      << r->dump();
}

TEST(BuildResult, UnknownNicHasNoIps) {
  auto r = BuildResult(DualStackTwoNics(), "net9", "1.0.0");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->contains("ips"));
  EXPECT_FALSE(r->contains("routes"));
}

TEST(BuildResult, VersionMismatchIsAnError) {
  ipamapi::IpamAddResponse resp;
  resp.ips = {{.version = 6, .address = "10.0.0.1/24", .nic = "eth0"}};
  auto r = BuildResult(resp, "eth0", "1.0.0");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("is not IPv6"), std::string::npos);
}

TEST(Errors, Format) {
  EXPECT_EQ(FormatError({11, "try", "later"}, "0.4.0"),
            R"({"cniVersion":"0.4.0","code":11,"details":"later","msg":"try"})");
  EXPECT_EQ(FormatError({7, "bad", ""}, ""), R"({"cniVersion":"1.0.0","code":7,"msg":"bad"})");
}

TEST(Versions, CompareAndSupported) {
  EXPECT_EQ(CompareVersions("0.4.0", "1.0.0"), -1);
  EXPECT_EQ(CompareVersions("1.0.0", "1.0.0"), 0);
  EXPECT_EQ(CompareVersions("0.10.0", "0.4.0"), 1);
  EXPECT_EQ(CompareVersions("1.0", "1.0.0"), std::nullopt);
  EXPECT_EQ(CompareVersions("a.b.c", "1.0.0"), std::nullopt);
  EXPECT_EQ(CompareVersions("1.0.0-rc1", "1.0.0"), std::nullopt);
  EXPECT_TRUE(IsSupportedVersion("0.3.1"));
  EXPECT_FALSE(IsSupportedVersion("0.2.0"));
  EXPECT_FALSE(IsSupportedVersion("1.1.0"));
  EXPECT_EQ(VersionInfoJson(),
            R"({"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0"]})");
}

TEST(Names, ContainerIfNetwork) {
  EXPECT_FALSE(ValidateContainerID("a51debf7e1eb"));
  EXPECT_EQ(ValidateContainerID("")->code, kErrUnknownContainer);
  EXPECT_EQ(ValidateContainerID("-abc")->code, kErrInvalidEnv);
  EXPECT_EQ(ValidateContainerID("1234%%%")->details, "1234%%%");
  EXPECT_FALSE(ValidateInterfaceName("eth0"));
  EXPECT_FALSE(ValidateInterfaceName("123456789012345"));
  EXPECT_EQ(ValidateInterfaceName("1234567890123456")->msg, "interface name is too long");
  EXPECT_EQ(ValidateInterfaceName("..")->code, kErrInvalidEnv);
  EXPECT_EQ(ValidateInterfaceName("eth0:1")->code, kErrInvalidEnv);
  EXPECT_EQ(ValidateInterfaceName("et h")->code, kErrInvalidEnv);
  EXPECT_EQ(ValidateNetworkName("")->code, kErrInvalidNetworkConfig);
  EXPECT_EQ(ValidateNetworkName("a b")->code, kErrInvalidNetworkConfig);
}

TEST(Stdin, ParseErrorsSayWhere) {
  Json j;
  std::string v, n;
  auto e = ParseStdin(R"({"cniVersion": "1.0.0", "name": "x",, })", &j, &v, &n);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, kErrDecoding);
  EXPECT_NE(e->msg.find("column"), std::string::npos) << e->msg;
  e = ParseStdin("[]", &j, &v, &n);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, kErrDecoding);
  e = ParseStdin(R"({"cniVersion": 1, "name": "x"})", &j, &v, &n);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, kErrDecoding);
  EXPECT_NE(e->msg.find("cniVersion"), std::string::npos);
  e = ParseStdin(R"({"cniVersion": "1.0.0"})", &j, &v, &n);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, kErrInvalidNetworkConfig);
  EXPECT_FALSE(ParseStdin(R"({"name": "x"})", &j, &v, &n));
  EXPECT_EQ(v, "0.1.0");  // skel's reading of an absent cniVersion
}

TEST(NetConf, DecodeDefaultsAndErrors) {
  NetConf c;
  auto e = DecodeNetConf(MustParse(R"({"cniVersion":"1.0.0","name":"n","type":"macvlan",
      "ipam":{"type":"spiderpool","default_ipv4_ippool":["a","b"],"clean_gateway":true,
              "match_master_subnet":true}})"),
                         &c);
  ASSERT_FALSE(e) << e->msg;
  EXPECT_EQ(c.ipam->ipam_unix_socket_path, "/var/run/spidernet/spiderpool.sock");
  EXPECT_EQ(c.ipam->log_file_path, "/var/log/spidernet/spiderpool.log");
  EXPECT_EQ(c.ipam->log_level, "debug");
  EXPECT_EQ(c.ipam->default_ipv4_ippool, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(c.ipam->clean_gateway);
  EXPECT_TRUE(c.ipam->match_master_subnet);
  EXPECT_EQ(c.timeout_seconds, kDefaultTimeoutSeconds);

  e = DecodeNetConf(MustParse(R"({"name":"n","ipam":{"type":"s","clean_gateway":"yes",
      "default_ipv6_ippool":"p"}})"),
                    &c);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, kErrDecoding);
  EXPECT_NE(e->msg.find("ipam.clean_gateway: expected boolean"), std::string::npos) << e->msg;
  EXPECT_NE(e->msg.find("ipam.default_ipv6_ippool: expected array"), std::string::npos);

  e = DecodeNetConf(MustParse(R"({"name":"n"})"), &c);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, kErrInvalidNetworkConfig);
  e = DecodeNetConf(MustParse(R"({"name":"n","ipam":{}})"), &c);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, kErrInvalidNetworkConfig);
  EXPECT_NE(e->msg.find("ipam.type"), std::string::npos);
  e = DecodeNetConf(MustParse(R"({"name":"n","ipam":{"type":"s","log_level":"loud"}})"), &c);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, kErrInvalidNetworkConfig);
  EXPECT_FALSE(DecodeNetConf(MustParse(R"({"name":"n","ipam":{"type":"s","log_level":"INFO"}})"),
                             &c));
  e = DecodeNetConf(MustParse(R"({"name":"n","ipam":{"type":"s","ipam_timeout_seconds":0}})"),
                    &c);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, kErrInvalidNetworkConfig);
  EXPECT_FALSE(DecodeNetConf(
      MustParse(R"({"name":"n","ipam":{"type":"s","ipam_timeout_seconds":2.5}})"), &c));
  EXPECT_EQ(c.timeout_seconds, 2.5);
  e = DecodeNetConf(MustParse(R"({"name":"n","ipam":{"type":"s","ipam_unix_socket_path":")" +
                              std::string(200, 'x') + R"("}})"),
                    &c);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, kErrInvalidNetworkConfig);
}

// A NAD's spec.config, as the agent's prewarm reads it: one plugin or a conflist.
TEST(SpiderpoolIpamOf, FindsTheSpiderpoolSectionOfAPluginOrAConflist) {
  auto one = SpiderpoolIpamOf(R"({"cniVersion":"0.3.1","type":"macvlan",
      "ipam":{"type":"spiderpool","default_ipv4_ippool":["v4"],"clean_gateway":true}})");
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(one->has_value());
  EXPECT_EQ((*one)->default_ipv4_ippool, std::vector<std::string>{"v4"});
  EXPECT_TRUE((*one)->default_ipv6_ippool.empty());
  EXPECT_TRUE((*one)->clean_gateway);

  auto list = SpiderpoolIpamOf(R"({"cniVersion":"1.0.0","name":"n","plugins":[
      {"type":"tuning"},{"type":"ipvlan","ipam":{"type":"host-local"}},
      {"type":"macvlan","ipam":{"type":"spiderpool","default_ipv6_ippool":["v6"]}},
      {"type":"coordinator"}]})");
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_TRUE(list->has_value());
  EXPECT_EQ((*list)->default_ipv6_ippool, std::vector<std::string>{"v6"});

  auto other = SpiderpoolIpamOf(R"({"type":"macvlan","ipam":{"type":"whereabouts"}})");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_FALSE(other->has_value());

  for (const auto& [text, field] : std::vector<std::pair<std::string, std::string>>{
           {"{", "config"},
           {"[]", "config"},
           {R"({"plugins":{}})", "config.plugins"},
           {R"({"plugins":[{"ipam":{"type":"spiderpool","default_ipv4_ippool":"v4"}}]})",
            "config.plugins[0].ipam: default_ipv4_ippool"},
           {R"({"ipam":{"type":"spiderpool","clean_gateway":"yes"}})",
            "config.ipam: clean_gateway"}}) {
    auto bad = SpiderpoolIpamOf(text);
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_THAT(std::string(bad.status().message()), ::testing::StartsWith(field)) << text;
  }
}

TEST(CniArgs, Parse) {
  K8sArgs a;
  EXPECT_FALSE(ParseCniArgs("", &a));
  ASSERT_FALSE(ParseCniArgs(
      "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=p1;K8S_POD_INFRA_CONTAINER_ID=c;"
      "K8S_POD_UID=u-1;FOO=bar",
      &a));
  EXPECT_EQ(a.pod_namespace, "default");
  EXPECT_EQ(a.pod_name, "p1");
  EXPECT_EQ(a.pod_uid, "u-1");
  EXPECT_EQ(a.infra_container_id, "c");
  EXPECT_TRUE(a.ignore_unknown);
  // IgnoreUnknown may come last.
  EXPECT_FALSE(ParseCniArgs("FOO=bar;IgnoreUnknown=true", &a));

  auto e = ParseCniArgs("K8S_POD_NAME=p;FOO=bar", &a);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, kErrInvalidEnv);
  EXPECT_NE(e->msg.find(R"(unknown args ["FOO=bar"])"), std::string::npos) << e->msg;
  e = ParseCniArgs("K8S_POD_NAME", &a);
  ASSERT_TRUE(e);
  EXPECT_NE(e->msg.find("invalid pair"), std::string::npos);
  EXPECT_TRUE(ParseCniArgs("A=b=c;IgnoreUnknown=1", &a));
  EXPECT_TRUE(ParseCniArgs("K8S_POD_NAME=p;", &a));  // an empty pair, as in LoadArgs
  EXPECT_TRUE(ParseCniArgs("IgnoreUnknown=yes", &a));
  EXPECT_TRUE(ParseCniArgs("IP=10.0.0.300", &a));
  EXPECT_FALSE(ParseCniArgs("IP=10.0.0.3", &a));
  EXPECT_FALSE(ParseCniArgs("IgnoreUnknown=0;K8S_POD_NAME=", &a));
}

TEST(PrevResult, Validate) {
  EXPECT_FALSE(ValidatePrevResult(MustParse(R"({"cniVersion":"1.0.0",
      "interfaces":[{"name":"eth0","sandbox":"/var/run/netns/x"}],
      "ips":[{"address":"10.0.0.5/24","gateway":"10.0.0.1","interface":0}],
      "routes":[{"dst":"0.0.0.0/0"}],"dns":{}})"),
                                  "1.0.0"));
  EXPECT_FALSE(ValidatePrevResult(
      MustParse(R"({"ips":[{"version":"4","address":"10.0.0.5/24"}]})"), "0.4.0"));
  auto e = ValidatePrevResult(MustParse(R"({"ips":[{"address":"10.0.0.5/24"}]})"), "0.4.0");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, kErrDecoding);
  EXPECT_NE(e->msg.find("prevResult.ips[0].version"), std::string::npos) << e->msg;
  e = ValidatePrevResult(MustParse(R"({"ips":[{"address":"10.0.0.500/24","interface":3}]})"),
                         "1.0.0");
  ASSERT_TRUE(e);
  EXPECT_NE(e->msg.find("prevResult.ips[0].address"), std::string::npos) << e->msg;
  e = ValidatePrevResult(MustParse(R"({"ips":[{"address":"10.0.0.5/24","interface":3}]})"),
                         "1.0.0");
  ASSERT_TRUE(e);
  EXPECT_NE(e->msg.find("out of range"), std::string::npos) << e->msg;
  EXPECT_TRUE(ValidatePrevResult(MustParse("[]"), "1.0.0"));
}

}  // namespace
}  // namespace spiderpool::agent::cni

namespace spiderpool::agent::cni {
namespace {

TEST(FillK8sArgsFromConfTest, FillsOnlyWhatCniArgsLeftEmpty) {
  NetConf conf;
  conf.args = Json::parse(R"({"cni":{"K8S_POD_NAMESPACE":"ns1","K8S_POD_NAME":"from-conf",
                                     "K8S_POD_UID":7}})");
  K8sArgs a;
  a.pod_name = "from-env";
  FillK8sArgsFromConf(conf, &a);
  EXPECT_EQ(a.pod_namespace, "ns1");
  EXPECT_EQ(a.pod_name, "from-env");
  EXPECT_EQ(a.pod_uid, "");  // not a string: ignored
  conf.args = Json::parse(R"({"cni":"nonsense"})");
  K8sArgs b;
  FillK8sArgsFromConf(conf, &b);
  EXPECT_EQ(b.pod_namespace, "");
}

}  // namespace
}  // namespace spiderpool::agent::cni
