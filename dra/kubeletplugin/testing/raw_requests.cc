#include "dra/kubeletplugin/testing/raw_requests.h"

#include <grpcpp/impl/client_unary_call.h>

#include <chrono>
#include <set>

#include "absl/time/clock.h"
#include "dra/kubeletplugin/plugin.h"
#include "dra/kubeletplugin/proto/dra_v1.grpc.pb.h"
#include "dra/kubeletplugin/proto/dra_v1beta1.grpc.pb.h"

namespace spiderpool::dra::kubeletplugin::testing {
namespace {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

template <typename Req, typename Resp>
std::optional<std::string> CheckUids(const std::string& body, const std::string& reply) {
  Req req;
  if (!req.ParseFromString(body)) return std::nullopt;
  std::set<std::string> want;
  for (const auto& c : req.claims()) want.insert(c.uid());
  Resp resp;
  if (!resp.ParseFromString(reply)) return "the reply does not decode";
  std::set<std::string> got;
  for (const auto& [uid, entry] : resp.claims()) got.insert(uid);
  if (got != want) {
    return "the reply names " + std::to_string(got.size()) + " claims, the request " +
           std::to_string(want.size()) + " distinct UIDs";
  }
  return std::nullopt;
}

}  // namespace

std::map<std::string, PrepareResult> CheckingDriver::Prepare(
    const std::vector<ClaimRef>& claims) {
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

std::map<std::string, std::string> CheckingDriver::Unprepare(const std::vector<ClaimRef>& claims) {
  Check(claims);
  std::map<std::string, std::string> out;
  for (const auto& c : claims) {
    if (c.uid.size() % 3 != 0) out[c.uid] = c.uid.size() % 3 == 1 ? "" : "busy";
  }
  return out;
}

int CheckingDriver::violations() const {
  std::lock_guard<std::mutex> l(mu_);
  return violations_;
}

void CheckingDriver::Check(const std::vector<ClaimRef>& claims) {
  std::set<std::string> uids;
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& c : claims) {
    if (c.uid.empty() || !uids.insert(c.uid).second) ++violations_;
  }
}

std::string_view MethodOf(DraCall call) {
  switch (call) {
    case DraCall::kPrepareV1: return kMethodPrepareV1;
    case DraCall::kUnprepareV1: return kMethodUnprepareV1;
    case DraCall::kPrepareV1beta1: return kMethodPrepareV1beta1;
    case DraCall::kUnprepareV1beta1: return kMethodUnprepareV1beta1;
  }
  return "";
}

grpc::Status RawCall(grpc::Channel* channel, std::string_view method, const std::string& body,
                     std::string* reply, absl::Duration deadline) {
  grpc::Slice slice(body);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  const std::string method_path(method);
  grpc::internal::RpcMethod rpc(method_path.c_str(), grpc::internal::RpcMethod::NORMAL_RPC);
  grpc::Status s = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      channel, rpc, &ctx, request, &response);
  reply->clear();
  std::vector<grpc::Slice> slices;
  if (s.ok() && response.Dump(&slices).ok()) {
    for (const auto& sl : slices) {
      reply->append(reinterpret_cast<const char*>(sl.begin()), sl.size());
    }
  }
  return s;
}

std::optional<std::string> ContractViolation(DraCall call, const std::string& body,
                                             const std::string& reply) {
  switch (call) {
    case DraCall::kPrepareV1:
      return CheckUids<drav1::NodePrepareResourcesRequest, drav1::NodePrepareResourcesResponse>(
          body, reply);
    case DraCall::kUnprepareV1:
      return CheckUids<drav1::NodeUnprepareResourcesRequest,
                       drav1::NodeUnprepareResourcesResponse>(body, reply);
    case DraCall::kPrepareV1beta1:
      return CheckUids<drav1beta1::NodePrepareResourcesRequest,
                       drav1beta1::NodePrepareResourcesResponse>(body, reply);
    case DraCall::kUnprepareV1beta1:
      return CheckUids<drav1beta1::NodeUnprepareResourcesRequest,
                       drav1beta1::NodeUnprepareResourcesResponse>(body, reply);
  }
  return std::nullopt;
}

}  // namespace spiderpool::dra::kubeletplugin::testing
