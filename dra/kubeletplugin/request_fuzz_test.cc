// Deterministic random mutations of the DRA requests, sent as raw bytes over the real socket:
// the plugin must answer every one (or refuse it with a gRPC error), keep its contract for every
// request that decodes (one entry per claim, never an empty or duplicate UID to the Driver),
// and keep serving afterwards.
#include <grpcpp/grpcpp.h>

#include <random>
#include <set>

#include "base/testing/temp_dir.h"
#include "dra/kubeletplugin/plugin.h"
#include "dra/kubeletplugin/proto/dra_v1.grpc.pb.h"
#include "dra/kubeletplugin/proto/dra_v1beta1.grpc.pb.h"
#include "dra/kubeletplugin/testing/raw_requests.h"
#include "gtest/gtest.h"
#include "kube/metrics/metrics.h"

namespace spiderpool::dra::kubeletplugin {
namespace {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;
using testing::CheckingDriver;
using testing::DraCall;

// Mostly printable ASCII; sometimes arbitrary bytes (invalid UTF-8, which proto3 string
// fields refuse to decode).
std::string RandomString(std::mt19937& rng, int max_len) {
  std::uniform_int_distribution<int> len(0, max_len);
  const bool raw = rng() % 8 == 0;
  std::uniform_int_distribution<int> byte(raw ? 0 : 0x20, raw ? 255 : 0x7e);
  std::string s(len(rng), '\0');
  for (auto& c : s) c = static_cast<char>(byte(rng));
  return s;
}

template <typename Req>
std::string SeedRequest(std::mt19937& rng) {
  Req req;
  std::uniform_int_distribution<int> n(0, 6);
  const int claims = n(rng);
  for (int i = 0; i < claims; ++i) {
    auto* c = req.add_claims();
    c->set_namespace_(rng() % 4 == 0 ? RandomString(rng, 8) : "default");
    // Short UIDs so that empty and duplicate UIDs happen often.
    c->set_uid(rng() % 5 == 0 ? ""
                              : std::string(1 + rng() % 4, static_cast<char>('a' + rng() % 3)));
    c->set_name(RandomString(rng, 12));
  }
  return req.SerializeAsString();
}

std::string Mutate(std::mt19937& rng, std::string s) {
  const int edits = rng() % 4;
  for (int i = 0; i < edits; ++i) {
    switch (rng() % 4) {
      case 0:
        if (!s.empty()) s[rng() % s.size()] = static_cast<char>(rng());
        break;
      case 1:
        if (!s.empty()) s.erase(rng() % s.size(), 1 + rng() % 4);
        break;
      case 2:
        s.insert(s.empty() ? 0 : rng() % s.size(), RandomString(rng, 6));
        break;
      case 3:
        s.resize(s.size() / 2);
        break;
    }
  }
  return s;
}

TEST(RequestFuzzTest, RandomRequestsOverTheSocket) {
  base::testing::TempDir tmp("kp");  // before the plugin, whose sockets are in it
  kube::metrics::Registry metrics;
  CheckingDriver driver;
  PluginOptions o;
  o.registry_dir = tmp.Join("registry");
  o.plugin_dir = tmp.Join("plugin");
  o.metrics = &metrics;
  {
    Plugin plugin(o, &driver);
    ASSERT_TRUE(plugin.Start().ok());
    auto channel =
        grpc::CreateChannel("unix:" + plugin.sockets().dra, grpc::InsecureChannelCredentials());
    std::mt19937 rng(20240517);
    int answered = 0;
    for (int i = 0; i < 400; ++i) {
      const auto call = static_cast<DraCall>(i % testing::kDraCalls);
      std::string body;
      switch (call) {
        case DraCall::kPrepareV1:
          body = SeedRequest<drav1::NodePrepareResourcesRequest>(rng);
          break;
        case DraCall::kUnprepareV1:
          body = SeedRequest<drav1::NodeUnprepareResourcesRequest>(rng);
          break;
        case DraCall::kPrepareV1beta1:
          body = SeedRequest<drav1beta1::NodePrepareResourcesRequest>(rng);
          break;
        case DraCall::kUnprepareV1beta1:
          body = SeedRequest<drav1beta1::NodeUnprepareResourcesRequest>(rng);
          break;
      }
      if (i % 2 == 1) body = Mutate(rng, body);
      std::string reply;
      grpc::Status s = testing::RawCall(channel.get(), testing::MethodOf(call), body, &reply,
                                        absl::Seconds(45));
      if (!s.ok()) {
        // Undecodable bytes are refused by gRPC itself, never a crash or a hang.
        EXPECT_NE(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << i;
        continue;
      }
      ++answered;
      EXPECT_EQ(testing::ContractViolation(call, body, reply), std::nullopt) << "iteration " << i;
    }
    RecordProperty("answered", answered);
    EXPECT_GT(answered, 150);
    EXPECT_LT(answered, 400);  // some mutations must be refused, or the mutator is broken
    EXPECT_EQ(driver.violations(), 0);
    // Still serving.
    drav1::NodePrepareResourcesRequest req;
    auto* c = req.add_claims();
    c->set_uid("ab");
    c->set_name("n");
    drav1::NodePrepareResourcesResponse resp;
    grpc::ClientContext ctx;
    ASSERT_TRUE(drav1::DRAPlugin::NewStub(channel)->NodePrepareResources(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.claims().at("ab").devices_size(), 1);
  }
}

}  // namespace
}  // namespace spiderpool::dra::kubeletplugin
