// Fuzz target: what the kubelet sends the DRA kubelet plugin (dra/kubeletplugin), as raw
// gRPC message bytes over the plugin's real unix sockets (one Plugin started per process in a
// temporary directory): NodePrepareResources / NodeUnprepareResources (v1, v1beta1) on the DRA
// socket, GetInfo / NotifyRegistrationStatus on the registration socket.
//
// Input: the first byte picks the method, the rest is the serialized request. Properties:
// every call is answered or refused with a gRPC error, never left to time out; the Driver never
// sees an empty or duplicate claim UID; a request that decodes gets exactly one answer per
// distinct claim UID.
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/client_unary_call.h>
#include <stdlib.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "dra/kubeletplugin/plugin.h"
#include "dra/kubeletplugin/proto/dra_v1.grpc.pb.h"
#include "dra/kubeletplugin/proto/dra_v1beta1.grpc.pb.h"
#include "kube/metrics/metrics.h"

namespace {

using namespace spiderpool::dra::kubeletplugin;
namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

// Answers some claims and leaves others out (the plugin's fill-in path); traps on a UID the
// plugin must never pass on.
class CheckingDriver : public Driver {
 public:
  std::map<std::string, PrepareResult> Prepare(const std::vector<ClaimRef>& claims) override {
    Check(claims);
    std::map<std::string, PrepareResult> out;
    for (const auto& c : claims) {
      if (c.uid.size() % 3 == 0) continue;
      PreparedDevice d;
      d.device_name = c.name;
      d.cdi_device_ids = {c.uid};
      if (c.uid.size() % 3 == 2) d.share_id = c.namespace_;
      out[c.uid].devices.push_back(d);
    }
    return out;
  }
  std::map<std::string, std::string> Unprepare(const std::vector<ClaimRef>& claims) override {
    Check(claims);
    std::map<std::string, std::string> out;
    for (const auto& c : claims) {
      if (c.uid.size() % 3 != 0) out[c.uid] = c.uid.size() % 3 == 1 ? "" : "busy";
    }
    return out;
  }

 private:
  static void Check(const std::vector<ClaimRef>& claims) {
    std::set<std::string> uids;
    for (const auto& c : claims) {
      if (c.uid.empty() || !uids.insert(c.uid).second) __builtin_trap();
    }
  }
};

struct Served {
  std::shared_ptr<grpc::Channel> dra, registration;
};

const Served& Start() {
  static const Served* served = [] {
    char dir[] = "/tmp/kubelet-grpc-fuzz-XXXXXX";
    if (::mkdtemp(dir) == nullptr) abort();
    static spiderpool::kube::metrics::Registry metrics;
    static CheckingDriver driver;
    PluginOptions o;
    o.registry_dir = std::string(dir) + "/registry";
    o.plugin_dir = std::string(dir) + "/plugin";
    o.metrics = &metrics;
    static Plugin plugin(o, &driver);
    if (!plugin.Start().ok()) abort();
    auto* s = new Served;
    s->dra = grpc::CreateChannel("unix:" + plugin.sockets().dra, grpc::InsecureChannelCredentials());
    s->registration = grpc::CreateChannel("unix:" + plugin.sockets().registration,
                                          grpc::InsecureChannelCredentials());
    return s;
  }();
  return *served;
}

grpc::Status RawCall(grpc::Channel* channel, const std::string& method, const std::string& body,
                     std::string* reply) {
  grpc::Slice slice(body);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  grpc::internal::RpcMethod rpc(method.c_str(), grpc::internal::RpcMethod::NORMAL_RPC);
  grpc::Status s = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      channel, rpc, &ctx, request, &response);
  std::vector<grpc::Slice> slices;
  reply->clear();
  if (s.ok() && response.Dump(&slices).ok()) {
    for (const auto& sl : slices) reply->append(reinterpret_cast<const char*>(sl.begin()), sl.size());
  }
  return s;
}

// A request that decodes gets exactly its distinct claim UIDs back.
template <typename Req, typename Resp>
void CheckContract(const std::string& body, const std::string& reply) {
  Req req;
  if (!req.ParseFromString(body)) return;
  std::set<std::string> want;
  for (const auto& c : req.claims()) want.insert(c.uid());
  Resp resp;
  if (!resp.ParseFromString(reply)) __builtin_trap();
  std::set<std::string> got;
  for (const auto& [uid, entry] : resp.claims()) got.insert(uid);
  if (got != want) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Served& s = Start();
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  const int kind = data[0] % 6;
  static const std::string kMethods[] = {
      std::string(kMethodPrepareV1),      std::string(kMethodUnprepareV1),
      std::string(kMethodPrepareV1beta1), std::string(kMethodUnprepareV1beta1),
      std::string(kMethodGetInfo),        std::string(kMethodNotifyRegistrationStatus),
  };
  grpc::Channel* channel = kind < 4 ? s.dra.get() : s.registration.get();
  std::string reply;
  grpc::Status st = RawCall(channel, kMethods[kind], body, &reply);
  if (!st.ok()) {
    // Undecodable bytes are refused by gRPC itself; nothing may hang.
    if (st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) __builtin_trap();
    return 0;
  }
  switch (kind) {
    case 0:
      CheckContract<drav1::NodePrepareResourcesRequest, drav1::NodePrepareResourcesResponse>(body, reply);
      break;
    case 1:
      CheckContract<drav1::NodeUnprepareResourcesRequest, drav1::NodeUnprepareResourcesResponse>(body, reply);
      break;
    case 2:
      CheckContract<drav1beta1::NodePrepareResourcesRequest,
                    drav1beta1::NodePrepareResourcesResponse>(body, reply);
      break;
    case 3:
      CheckContract<drav1beta1::NodeUnprepareResourcesRequest,
                    drav1beta1::NodeUnprepareResourcesResponse>(body, reply);
      break;
    default:
      break;
  }
  return 0;
}
