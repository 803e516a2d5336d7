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
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "dra/kubeletplugin/plugin.h"
#include "dra/kubeletplugin/testing/raw_requests.h"
#include "kube/metrics/metrics.h"

namespace {

using namespace spiderpool::dra::kubeletplugin;
using testing::CheckingDriver;
using testing::DraCall;

struct Served {
  std::shared_ptr<grpc::Channel> dra, registration;
  const CheckingDriver* driver = nullptr;
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
    s->driver = &driver;
    s->dra =
        grpc::CreateChannel("unix:" + plugin.sockets().dra, grpc::InsecureChannelCredentials());
    s->registration = grpc::CreateChannel("unix:" + plugin.sockets().registration,
                                          grpc::InsecureChannelCredentials());
    return s;
  }();
  return *served;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Served& s = Start();
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  const int kind = data[0] % (testing::kDraCalls + 2);
  std::string reply;
  grpc::Status st;
  if (kind < testing::kDraCalls) {
    st = testing::RawCall(s.dra.get(), testing::MethodOf(static_cast<DraCall>(kind)), body, &reply,
                          absl::Seconds(20));
  } else {
    st = testing::RawCall(s.registration.get(),
                          kind == testing::kDraCalls ? kMethodGetInfo
                                                     : kMethodNotifyRegistrationStatus,
                          body, &reply, absl::Seconds(20));
  }
  if (s.driver->violations() != 0) __builtin_trap();  // an empty or duplicate UID passed on
  if (!st.ok()) {
    // Undecodable bytes are refused by gRPC itself; nothing may hang.
    if (st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) __builtin_trap();
    return 0;
  }
  if (kind < testing::kDraCalls &&
      testing::ContractViolation(static_cast<DraCall>(kind), body, reply).has_value()) {
    __builtin_trap();
  }
  return 0;
}
