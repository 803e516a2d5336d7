#pragma once
// What the request fuzzers of the DRA kubelet plugin share (the gtest mutation test
// //dra/kubeletplugin:request_fuzz_test and the libFuzzer target //agent/fuzz:kubelet_grpc):
// a Driver that checks what the plugin passes on, a raw unary gRPC call (request bytes in,
// reply bytes out) and the contract of an answer.

#include <grpcpp/grpcpp.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "dra/kubeletplugin/driver.h"

namespace spiderpool::dra::kubeletplugin::testing {

// Answers some claims and leaves others out (the plugin's fill-in path: UIDs of a length
// divisible by 3), shares some devices, refuses some unprepares ("busy"), and counts every
// empty or duplicate claim UID the plugin passed on (it never may).
class CheckingDriver : public Driver {
 public:
  std::map<std::string, PrepareResult> Prepare(const std::vector<ClaimRef>& claims) override;
  std::map<std::string, std::string> Unprepare(const std::vector<ClaimRef>& claims) override;
  int violations() const;

 private:
  void Check(const std::vector<ClaimRef>& claims);

  mutable std::mutex mu_;
  int violations_ = 0;  // guarded by mu_
};

// The four DRA calls a kubelet makes, by index.
enum class DraCall { kPrepareV1 = 0, kUnprepareV1, kPrepareV1beta1, kUnprepareV1beta1 };
inline constexpr int kDraCalls = 4;
std::string_view MethodOf(DraCall call);  // the gRPC method path

// One unary call of `method` with `body` as the serialized request; the reply's bytes in
// `reply` (empty on error).
grpc::Status RawCall(grpc::Channel* channel, std::string_view method, const std::string& body,
                     std::string* reply, absl::Duration deadline);

// The contract of an answer to a request that decodes: exactly its distinct claim UIDs.
// nullopt when it holds or the request does not decode; otherwise what is wrong.
std::optional<std::string> ContractViolation(DraCall call, const std::string& body,
                                             const std::string& reply);

}  // namespace spiderpool::dra::kubeletplugin::testing
