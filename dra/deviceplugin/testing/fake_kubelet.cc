#include "dra/deviceplugin/testing/fake_kubelet.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

#include "base/strings.h"

namespace spiderpool::dra::deviceplugin::testing {

namespace {
constexpr auto kCallTimeout = std::chrono::seconds(10);

std::chrono::system_clock::time_point Deadline() {
  return std::chrono::system_clock::now() + kCallTimeout;
}
}  // namespace

class FakeKubelet::RegistrationService final : public v1beta1::Registration::Service {
 public:
  explicit RegistrationService(FakeKubelet* owner) : owner_(owner) {}
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* req,
                        v1beta1::Empty*) override {
    if (req->version() != "v1beta1") {
      std::string msg =
          base::StrCat("unsupported device plugin API version \"", req->version(), "\"");
      {
        std::lock_guard lock(owner_->mu_);
        owner_->state_.rejected.push_back(msg);
      }
      owner_->cv_.notify_all();
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, msg);
    }
    owner_->OnRegister(*req);
    return grpc::Status::OK;
  }

 private:
  FakeKubelet* owner_;
};

struct FakeKubelet::Connection {
  std::string resource;
  std::string endpoint;
  grpc::ClientContext stream_ctx;
  std::thread thread;
};

FakeKubelet::FakeKubelet(std::string dir) : dir_(std::move(dir)) {}

absl::StatusOr<std::unique_ptr<FakeKubelet>> FakeKubelet::Start(std::string dir) {
  std::unique_ptr<FakeKubelet> k(new FakeKubelet(std::move(dir)));
  absl::Status s = k->Serve();
  if (!s.ok()) return s;
  return k;
}

FakeKubelet::~FakeKubelet() { Stop(); }

absl::Status FakeKubelet::Serve() {
  service_ = std::make_unique<RegistrationService>(this);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(base::StrCat("unix:", socket_path()), grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    return absl::InternalError(
        base::ToAbsl(base::StrCat("fake kubelet: cannot serve ", socket_path())));
  }
  {
    std::lock_guard lock(mu_);
    ++state_.generation;
  }
  cv_.notify_all();
  return absl::OkStatus();
}

void FakeKubelet::Stop() {
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_->Wait();
    server_.reset();
  }
  service_.reset();
  std::vector<std::unique_ptr<Connection>> conns;
  {
    std::lock_guard lock(mu_);
    for (auto& [r, c] : connections_) conns.push_back(std::move(c));
    connections_.clear();
    for (auto& c : retired_) conns.push_back(std::move(c));
    retired_.clear();
    for (auto& c : conns) c->stream_ctx.TryCancel();
  }
  for (auto& c : conns) {
    if (c->thread.joinable()) c->thread.join();
  }
  {
    std::lock_guard lock(mu_);
    for (auto& [r, res] : state_.resources) res.streaming = false;
  }
  cv_.notify_all();
}

absl::Status FakeKubelet::Restart() {
  Stop();
  // The kubelet's device manager removes every file in its directory when it starts.
  DIR* d = ::opendir(dir_.c_str());
  if (d == nullptr) return absl::InternalError("fake kubelet: opendir failed");
  while (dirent* ent = ::readdir(d)) {
    std::string name = ent->d_name;
    if (name == "." || name == "..") continue;
    std::string path = base::StrCat(dir_, "/", name);
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) ::unlink(path.c_str());
  }
  ::closedir(d);
  return Serve();
}

void FakeKubelet::OnRegister(const v1beta1::RegisterRequest& req) {
  auto conn = std::make_unique<Connection>();
  conn->resource = req.resource_name();
  conn->endpoint = req.endpoint();
  Connection* raw = conn.get();
  {
    std::lock_guard lock(mu_);
    FakeResource& r = state_.resources[req.resource_name()];
    ++r.registrations;
    r.version = req.version();
    r.endpoint = req.endpoint();
    r.pre_start_required = req.options().pre_start_required();
    r.get_preferred_allocation_available = req.options().get_preferred_allocation_available();
    r.options_fetched = false;
    r.streaming = false;
    r.stream_end.clear();
    r.updates.clear();
    // Like the kubelet: a new registration of a resource replaces the old connection.
    auto it = connections_.find(req.resource_name());
    if (it != connections_.end()) {
      it->second->stream_ctx.TryCancel();
      retired_.push_back(std::move(it->second));
      connections_.erase(it);
    }
    connections_[req.resource_name()] = std::move(conn);
    raw->thread = std::thread([this, raw] { RunConnection(raw); });
  }
  cv_.notify_all();
}

void FakeKubelet::RunConnection(Connection* conn) {
  auto channel = grpc::CreateChannel(base::StrCat("unix:", dir_, "/", conn->endpoint),
                                     grpc::InsecureChannelCredentials());
  auto stub = v1beta1::DevicePlugin::NewStub(channel);
  auto latest = [&] {
    auto it = connections_.find(conn->resource);
    return it != connections_.end() && it->second.get() == conn;
  };
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(Deadline());
    v1beta1::DevicePluginOptions opts;
    grpc::Status s = stub->GetDevicePluginOptions(&ctx, v1beta1::Empty(), &opts);
    std::lock_guard lock(mu_);
    if (latest()) {
      FakeResource& r = state_.resources[conn->resource];
      r.options_fetched = s.ok();
      if (!s.ok()) r.stream_end = base::StrCat("GetDevicePluginOptions: ", s.error_message());
    }
  }
  cv_.notify_all();
  auto reader = stub->ListAndWatch(&conn->stream_ctx, v1beta1::Empty());
  {
    std::lock_guard lock(mu_);
    if (latest()) state_.resources[conn->resource].streaming = true;
  }
  cv_.notify_all();
  v1beta1::ListAndWatchResponse resp;
  while (reader->Read(&resp)) {
    std::vector<FakeDevice> devices;
    devices.reserve(resp.devices_size());
    for (const v1beta1::Device& d : resp.devices()) devices.push_back({d.id(), d.health()});
    {
      std::lock_guard lock(mu_);
      if (latest()) state_.resources[conn->resource].updates.push_back(std::move(devices));
    }
    cv_.notify_all();
  }
  grpc::Status s = reader->Finish();
  {
    std::lock_guard lock(mu_);
    if (latest()) {
      FakeResource& r = state_.resources[conn->resource];
      r.streaming = false;
      r.stream_end =
          s.ok() ? "OK" : base::StrCat(static_cast<int>(s.error_code()), ": ", s.error_message());
    }
  }
  cv_.notify_all();
}

FakeState FakeKubelet::Snapshot() const {
  std::lock_guard lock(mu_);
  return state_;
}

bool FakeKubelet::WaitFor(const std::function<bool(const FakeState&)>& pred,
                          std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return pred(state_); });
}

absl::StatusOr<std::unique_ptr<v1beta1::DevicePlugin::Stub>> FakeKubelet::Dial(
    const std::string& resource) {
  std::string endpoint;
  {
    std::lock_guard lock(mu_);
    auto it = state_.resources.find(resource);
    if (it == state_.resources.end()) {
      return absl::NotFoundError(base::ToAbsl(base::StrCat("never registered: ", resource)));
    }
    endpoint = it->second.endpoint;
  }
  auto channel = grpc::CreateChannel(base::StrCat("unix:", dir_, "/", endpoint),
                                     grpc::InsecureChannelCredentials());
  return v1beta1::DevicePlugin::NewStub(channel);
}

absl::StatusOr<v1beta1::AllocateResponse> FakeKubelet::Allocate(
    const std::string& resource, const std::vector<std::vector<std::string>>& containers) {
  auto stub = Dial(resource);
  if (!stub.ok()) return stub.status();
  v1beta1::AllocateRequest req;
  for (const auto& ids : containers) {
    auto* c = req.add_container_requests();
    for (const std::string& id : ids) c->add_devices_ids(id);
  }
  v1beta1::AllocateResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline());
  grpc::Status s = (*stub)->Allocate(&ctx, req, &resp);
  if (!s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                        base::ToAbsl(s.error_message()));
  }
  return resp;
}

}  // namespace spiderpool::dra::deviceplugin::testing
