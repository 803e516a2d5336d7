// Deterministic random mutations of the DRA requests, sent as raw bytes over the real socket:
// the plugin must answer every one (or refuse it with a gRPC error), keep its contract for every
// request that decodes (one entry per claim, never an empty or duplicate UID to the Driver),
// and keep serving afterwards.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/client_unary_call.h>
#include <stdlib.h>

#include <filesystem>
#include <mutex>
#include <random>
#include <set>

#include "dra/kubeletplugin/plugin.h"
#include "dra/kubeletplugin/proto/dra_v1.grpc.pb.h"
#include "dra/kubeletplugin/proto/dra_v1beta1.grpc.pb.h"
#include "gtest/gtest.h"
#include "kube/metrics/metrics.h"

namespace spiderpool::dra::kubeletplugin {
namespace {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

class CheckingDriver : public Driver {
 public:
  std::map<std::string, PrepareResult> Prepare(const std::vector<ClaimRef>& claims) override {
    Check(claims);
    std::map<std::string, PrepareResult> out;
    for (const auto& c : claims) {
      // Answer only some, so the plugin's fill-in path runs too.
      if (c.uid.size() % 3 == 0) continue;
      PreparedDevice d;
      d.device_name = c.name;
      d.cdi_device_ids = {c.uid};
      out[c.uid].devices.push_back(d);
    }
    return out;
  }
  std::map<std::string, std::string> Unprepare(const std::vector<ClaimRef>& claims) override {
    Check(claims);
    std::map<std::string, std::string> out;
    for (const auto& c : claims) {
      if (c.uid.size() % 3 != 0) out[c.uid] = "";
    }
    return out;
  }

  std::mutex mu;
  int violations = 0;  // guarded by mu

 private:
  void Check(const std::vector<ClaimRef>& claims) {
    std::set<std::string> uids;
    std::lock_guard<std::mutex> l(mu);
    for (const auto& c : claims) {
      if (c.uid.empty() || !uids.insert(c.uid).second) ++violations;
    }
  }
};

std::string ToString(const grpc::ByteBuffer& buf) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buf.Dump(&slices).ok()) return out;
  for (const auto& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

grpc::Status RawCall(grpc::Channel* channel, const std::string& method, const std::string& body,
                     std::string* reply) {
  grpc::Slice slice(body);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(45));
  grpc::internal::RpcMethod rpc(method.c_str(), grpc::internal::RpcMethod::NORMAL_RPC);
  grpc::Status s = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      channel, rpc, &ctx, request, &response);
  *reply = ToString(response);
  return s;
}

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

// The plugin's answer to a request that decodes must carry exactly its distinct UIDs.
template <typename Req, typename Resp>
void CheckContract(const std::string& body, const std::string& reply, int iteration) {
  Req req;
  if (!req.ParseFromString(body)) return;
  std::set<std::string> want;
  for (const auto& c : req.claims()) want.insert(c.uid());
  Resp resp;
  ASSERT_TRUE(resp.ParseFromString(reply)) << "iteration " << iteration;
  std::set<std::string> got;
  for (const auto& [uid, entry] : resp.claims()) got.insert(uid);
  EXPECT_EQ(got, want) << "iteration " << iteration;
}

TEST(RequestFuzzTest, RandomRequestsOverTheSocket) {
  char tmpl[] = "/tmp/sp-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  kube::metrics::Registry metrics;
  CheckingDriver driver;
  PluginOptions o;
  o.registry_dir = root + "/registry";
  o.plugin_dir = root + "/plugin";
  o.metrics = &metrics;
  {
    Plugin plugin(o, &driver);
    ASSERT_TRUE(plugin.Start().ok());
    auto channel =
        grpc::CreateChannel("unix:" + plugin.sockets().dra, grpc::InsecureChannelCredentials());
    std::mt19937 rng(20240517);
    int answered = 0;
    for (int i = 0; i < 400; ++i) {
      const int kind = i % 4;
      std::string body;
      std::string method;
      switch (kind) {
        case 0:
          body = SeedRequest<drav1::NodePrepareResourcesRequest>(rng);
          method = std::string(kMethodPrepareV1);
          break;
        case 1:
          body = SeedRequest<drav1::NodeUnprepareResourcesRequest>(rng);
          method = std::string(kMethodUnprepareV1);
          break;
        case 2:
          body = SeedRequest<drav1beta1::NodePrepareResourcesRequest>(rng);
          method = std::string(kMethodPrepareV1beta1);
          break;
        default:
          body = SeedRequest<drav1beta1::NodeUnprepareResourcesRequest>(rng);
          method = std::string(kMethodUnprepareV1beta1);
          break;
      }
      if (i % 2 == 1) body = Mutate(rng, body);
      std::string reply;
      grpc::Status s = RawCall(channel.get(), method, body, &reply);
      if (!s.ok()) {
        // Undecodable bytes are refused by gRPC itself, never a crash or a hang.
        EXPECT_NE(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << i;
        continue;
      }
      ++answered;
      switch (kind) {
        case 0:
          CheckContract<drav1::NodePrepareResourcesRequest, drav1::NodePrepareResourcesResponse>(
              body, reply, i);
          break;
        case 1:
          CheckContract<drav1::NodeUnprepareResourcesRequest,
                        drav1::NodeUnprepareResourcesResponse>(body, reply, i);
          break;
        case 2:
          CheckContract<drav1beta1::NodePrepareResourcesRequest,
                        drav1beta1::NodePrepareResourcesResponse>(body, reply, i);
          break;
        default:
          CheckContract<drav1beta1::NodeUnprepareResourcesRequest,
                        drav1beta1::NodeUnprepareResourcesResponse>(body, reply, i);
          break;
      }
    }
    RecordProperty("answered", answered);
    EXPECT_GT(answered, 150);
    EXPECT_LT(answered, 400);  // some mutations must be refused, or the mutator is broken
    {
      std::lock_guard<std::mutex> l(driver.mu);
      EXPECT_EQ(driver.violations, 0);
    }
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
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace spiderpool::dra::kubeletplugin
