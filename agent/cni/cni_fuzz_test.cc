// Fuzz-style test of the plugin's decoders of untrusted input: the stdin network config
// (ParseStdin + DecodeNetConf + ValidatePrevResult), CNI_ARGS (ParseCniArgs) and the agent's
// answer (IpamAddResponse -> BuildResult). Deterministic random mutations (byte flips,
// truncation, splicing, insertion/deletion, and JSON-structure mutations that reach the typed
// decoders). Nothing may crash (tools/test.sh runs it under --config=sanitizers), and two
// properties hold: every result we build validates as a prevResult of the same version, and
// CNI_ARGS that parse keep their values.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "agent/cni/cni.h"
#include "agent/cni/ipam_conf.h"
#include "agent/ipamapi/ipamapi.h"
#include "base/json.h"

namespace spiderpool::agent::cni {
namespace {

constexpr uint64_t kSeed = 0xc1f0a2b3ULL;
constexpr int kIterations = 15000;

class Mutator {
 public:
  explicit Mutator(std::vector<std::string> seeds) : seeds_(std::move(seeds)), rng_(kSeed) {
    for (const auto& s : seeds_) {
      auto j = base::ParseJson(s);
      if (j.ok()) trees_.push_back(*j);
    }
  }
  size_t Pick(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng_() % n); }

  std::string Next() {
    const std::string& text = seeds_[Pick(seeds_.size())];
    switch (Pick(7)) {
      case 0: {
        std::string t = text;
        for (int i = 0, n = 1 + static_cast<int>(Pick(4)); i < n && !t.empty(); ++i) {
          t[Pick(t.size())] ^= static_cast<char>(1u << Pick(8));
        }
        return t;
      }
      case 1:
        return text.substr(0, Pick(text.size() + 1));
      case 2: {
        const std::string& o = seeds_[Pick(seeds_.size())];
        return text.substr(0, Pick(text.size() + 1)) + o.substr(Pick(o.size() + 1));
      }
      case 3: {
        std::string t = text;
        static const char kBytes[] = "{}[]\":,;=0123456789.-eE tfnul\\/abxX:%";
        if (Pick(2) || t.empty()) {
          t.insert(Pick(t.size() + 1), 1, kBytes[Pick(sizeof(kBytes) - 1)]);
        } else {
          t.erase(Pick(t.size()), 1 + Pick(4));
        }
        return t;
      }
      default: {
        if (trees_.empty()) return text;
        base::Json j = trees_[Pick(trees_.size())];
        for (int i = 0, n = 1 + static_cast<int>(Pick(3)); i < n; ++i) MutateTree(&j);
        return base::DumpJson(j);
      }
    }
  }

 private:
  base::Json RandomValue() {
    switch (Pick(9)) {
      case 0: return nullptr;
      case 1: return Pick(2) == 1;
      case 2: return static_cast<int64_t>(rng_()) >> Pick(64);
      case 3: return -1.5e300;
      case 4: return "10.0.0.300/24";
      case 5: return "fd00::1";
      case 6: return base::Json::array({"a", 4, nullptr});
      case 7: return base::Json::object({{"x", "y"}});
      default: return std::string(Pick(40), static_cast<char>('a' + Pick(26)));
    }
  }
  // Replaces, deletes or adds one random node.
  void MutateTree(base::Json* j) {
    base::Json* node = j;
    for (int depth = 0; depth < 6; ++depth) {
      if (!(node->is_object() || node->is_array()) || node->empty() || Pick(3) == 0) break;
      auto it = node->begin();
      std::advance(it, static_cast<long>(Pick(node->size())));
      node = &*it;
    }
    switch (Pick(3)) {
      case 0:
        *node = RandomValue();
        break;
      case 1:
        if (node->is_object() && !node->empty()) {
          node->erase(node->begin().key());
        } else if (node->is_array() && !node->empty()) {
          node->erase(node->begin());
        }
        break;
      default:
        if (node->is_object()) (*node)[std::string("k") + std::to_string(Pick(5))] = RandomValue();
        if (node->is_array()) node->push_back(RandomValue());
        break;
    }
  }

  std::vector<std::string> seeds_;
  std::vector<base::Json> trees_;
  std::mt19937_64 rng_;
};

TEST(CniFuzz, NetConf) {
  std::vector<std::string> seeds = {
      R"({"cniVersion":"1.0.0","name":"macvlan-net","type":"macvlan","master":"eth0",
          "ipam":{"type":"spiderpool","log_level":"debug","log_file_path":"/tmp/x.log",
                  "default_ipv4_ippool":["a","b"],"default_ipv6_ippool":["c"],
                  "clean_gateway":false,"match_master_subnet":true,
                  "ipam_unix_socket_path":"/var/run/spidernet/spiderpool.sock",
                  "ipam_timeout_seconds":30}})",
      R"({"cniVersion":"0.4.0","name":"n","ipam":{"type":"spiderpool"},
          "prevResult":{"cniVersion":"0.4.0","interfaces":[{"name":"eth0","sandbox":"/x"}],
          "ips":[{"version":"4","address":"10.0.0.5/24","gateway":"10.0.0.1","interface":0}],
          "routes":[{"dst":"0.0.0.0/0","gw":"10.0.0.1"}],"dns":{"nameservers":["1.1.1.1"]}}})",
      R"({"cniVersion":"1.0.0","name":"n","ipam":{"type":"s"},
          "prevResult":{"ips":[{"address":"fd00::5/64","interface":0}],
          "interfaces":[{"name":"net1"}]}})",
      "{}", "[]", "null", R"({"name":null,"cniVersion":null,"ipam":null})"};
  Mutator m(seeds);
  int decoded = 0, validated = 0;
  for (int i = 0; i < kIterations; ++i) {
    std::string text = m.Next();
    base::Json j;
    std::string version, name;
    if (ParseStdin(text, &j, &version, &name)) continue;
    NetConf conf;
    if (DecodeNetConf(j, &conf)) continue;
    ++decoded;
    ASSERT_TRUE(conf.ipam.has_value());
    EXPECT_FALSE(conf.ipam->type.empty());
    EXPECT_FALSE(conf.ipam->ipam_unix_socket_path.empty());
    EXPECT_GT(conf.timeout_seconds, 0);
    if (conf.prev_result.has_value()) {
      for (std::string_view v : kSupportedVersions) {
        if (!ValidatePrevResult(*conf.prev_result, v)) ++validated;
      }
    }
  }
  // The mutations must reach the typed decoders, not only the JSON parser.
  EXPECT_GT(decoded, kIterations / 20);
  EXPECT_GT(validated, 0);
}

TEST(CniFuzz, CniArgs) {
  std::vector<std::string> seeds = {
      "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;"
      "K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=4f1e-11",
      "K8S_POD_NAMESPACE=a;K8S_POD_NAME=b", "IP=10.0.0.1;IgnoreUnknown=true;X=y", "", ";", "="};
  Mutator m(seeds);
  int parsed = 0;
  for (int i = 0; i < kIterations; ++i) {
    std::string text = m.Next();
    K8sArgs a;
    auto e = ParseCniArgs(text, &a);
    if (e) {
      EXPECT_EQ(e->code, kErrInvalidEnv);
      continue;
    }
    ++parsed;
    // Whatever parsed is in the text as K=V.
    if (!a.pod_name.empty()) {
      EXPECT_NE(text.find("K8S_POD_NAME=" + a.pod_name), std::string::npos) << text;
    }
    if (!a.pod_namespace.empty()) {
      EXPECT_NE(text.find("K8S_POD_NAMESPACE=" + a.pod_namespace), std::string::npos) << text;
    }
  }
  EXPECT_GT(parsed, kIterations / 20);
}

TEST(CniFuzz, AgentResponseToResult) {
  ipamapi::IpamAddResponse r;
  r.ips = {{.version = 4, .address = "10.6.0.10/16", .gateway = "10.6.0.1", .nic = "eth0"},
           {.version = 6, .address = "fd00::a/64", .gateway = "fd00::1", .nic = "eth0"},
           {.version = 4, .address = "172.16.1.5/24", .nic = "net1"}};
  r.routes = {{.if_name = "eth0", .dst = "10.7.0.9/16", .gw = "10.6.0.1"}};
  r.dns = ipamapi::DNS{.nameservers = {"10.96.0.10"}, .search = {"svc"}};
  Mutator m({ipamapi::ToJson(r), R"({"ips":[]})", R"({"ips":null,"routes":[{}]})"});
  int built = 0;
  for (int i = 0; i < kIterations; ++i) {
    auto resp = ipamapi::FromJson<ipamapi::IpamAddResponse>(m.Next());
    if (!resp.ok()) continue;
    for (std::string_view v : kSupportedVersions) {
      for (const char* nic : {"eth0", "net1"}) {
        auto result = BuildResult(*resp, nic, v);
        if (!result.ok()) continue;
        ++built;
        auto e = ValidatePrevResult(*result, v);
        EXPECT_FALSE(e) << e->msg << " for " << result->dump();
      }
    }
  }
  EXPECT_GT(built, kIterations / 10);
}

}  // namespace
}  // namespace spiderpool::agent::cni
