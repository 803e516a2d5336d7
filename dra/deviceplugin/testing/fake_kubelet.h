#pragma once
// A stand-in for the kubelet's device manager, for tests: serves v1beta1.Registration on
// <dir>/kubelet.sock, records every Register, and (like the kubelet) then dials the plugin's
// endpoint, asks GetDevicePluginOptions and keeps a ListAndWatch stream open in a thread,
// recording every device list. Restart() behaves like a kubelet restart: streams dropped, every
// socket in <dir> removed, a new kubelet.sock served. Real gRPC over unix sockets.
//
// Waiting is by condition (WaitFor, a condvar notified on every recorded event), never by
// sleeping; the timeout only turns a hang into a test failure.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dra/deviceplugin/v1beta1/api.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace spiderpool::dra::deviceplugin::testing {

struct FakeDevice {
  std::string id;
  std::string health;
  bool operator==(const FakeDevice&) const = default;
};

// What the fake knows about one resource name.
struct FakeResource {
  int registrations = 0;  // Register calls for it, over the fake's whole life (restarts too)
  std::string version;    // of the latest Register
  std::string endpoint;   // of the latest Register
  bool pre_start_required = false;  // options of the latest Register
  bool get_preferred_allocation_available = false;
  bool options_fetched = false;  // GetDevicePluginOptions answered on the latest connection
  bool streaming = false;        // the latest connection's ListAndWatch is open
  std::string stream_end;        // how the latest stream ended ("" while open / never opened)
  // Device lists received on the latest connection, oldest first.
  std::vector<std::vector<FakeDevice>> updates;

  const std::vector<FakeDevice>* latest() const {
    return updates.empty() ? nullptr : &updates.back();
  }
};

struct FakeState {
  int generation = 0;  // 1 after Start, +1 per Restart
  std::map<std::string, FakeResource> resources;
  std::vector<std::string> rejected;  // messages of refused Register calls
};

class FakeKubelet {
 public:
  // Serves <dir>/kubelet.sock (dir must exist).
  static absl::StatusOr<std::unique_ptr<FakeKubelet>> Start(std::string dir);
  ~FakeKubelet();
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  // Like a kubelet restart: stop serving, drop every plugin connection, delete every socket in
  // the directory (kubelet.sock included), serve a new kubelet.sock. Recorded state is kept;
  // each resource's `streaming` goes false until its plugin registers again.
  absl::Status Restart();
  // Stops serving and drops every connection (the destructor does it too).
  void Stop();

  FakeState Snapshot() const;
  // Blocks until pred(state) is true (re-checked after every recorded event); false after
  // `timeout` (a failing test, not a timing assertion).
  bool WaitFor(const std::function<bool(const FakeState&)>& pred,
               std::chrono::milliseconds timeout = std::chrono::seconds(60)) const;

  // Calls Allocate on the latest endpoint registered for `resource`, one container request per
  // element of `containers`.
  absl::StatusOr<v1beta1::AllocateResponse> Allocate(
      const std::string& resource, const std::vector<std::vector<std::string>>& containers);
  // Calls any method: a stub to the latest endpoint of `resource`.
  absl::StatusOr<std::unique_ptr<v1beta1::DevicePlugin::Stub>> Dial(const std::string& resource);

  const std::string& dir() const { return dir_; }
  std::string socket_path() const { return dir_ + "/kubelet.sock"; }

 private:
  class RegistrationService;
  struct Connection;

  explicit FakeKubelet(std::string dir);
  absl::Status Serve();
  // From the Register handler: record, then connect in a thread.
  void OnRegister(const v1beta1::RegisterRequest& req);
  void RunConnection(Connection* conn);

  const std::string dir_;
  std::unique_ptr<RegistrationService> service_;
  std::unique_ptr<grpc::Server> server_;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  FakeState state_;
  std::map<std::string, std::unique_ptr<Connection>> connections_;  // latest per resource
  std::vector<std::unique_ptr<Connection>> retired_;                // replaced, to be joined
};

}  // namespace spiderpool::dra::deviceplugin::testing
