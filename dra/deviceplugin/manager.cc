#include "dra/deviceplugin/manager.h"

#include <fnmatch.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_join.h"
#include "api/names.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "dra/deviceplugin/v1beta1/api.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace spiderpool::dra::deviceplugin {
namespace {

// Identity of a file: a socket replaced by a new one (same path) gets a new inode or, where
// the file system reuses inode numbers at once (ext4), at least a new change time.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  int64_t ctime_sec = 0;
  int64_t ctime_nsec = 0;
  bool operator==(const FileId&) const = default;
};

std::optional<FileId> Stat(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino, static_cast<int64_t>(st.st_ctim.tv_sec),
                static_cast<int64_t>(st.st_ctim.tv_nsec)};
}

std::string KubeletSocketPath(const Options& o) {
  return base::StrCat(o.kubelet_dir, "/", kKubeletSocket);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Pure helpers

bool MatchesRules(const Rules& rules, std::string_view nic_name) {
  if (nic_name.empty() || nic_name == "lo") return false;
  std::string name(nic_name);
  auto any = [&](const std::vector<std::string>& globs) {
    for (const std::string& g : globs) {
      if (::fnmatch(g.c_str(), name.c_str(), 0) == 0) return true;
    }
    return false;
  };
  if (!rules.include.empty() && !any(rules.include)) return false;
  return !any(rules.exclude);
}

std::string ResourceNameFor(std::string_view prefix, std::string_view nic_name) {
  return base::StrCat(prefix, nic_name, "-nic");
}

std::string SocketNameFor(std::string_view resource_name) {
  std::string out(resource_name);
  std::replace(out.begin(), out.end(), '/', '_');
  out += ".sock";
  return out;
}

std::string EnvNameFor(std::string_view nic_name) {
  std::string out = "SPIDERPOOL_NIC_";
  for (char c : nic_name) {
    if (c >= 'a' && c <= 'z') {
      out += static_cast<char>(c - 'a' + 'A');
    } else if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      out += c;
    } else {
      out += '_';
    }
  }
  return out;
}

std::string DeviceIdFor(std::string_view nic_name, int index) {
  return base::StrCat(nic_name, "-", index);
}

absl::Status ValidateResourceName(std::string_view name) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        base::ToAbsl(base::StrCat("invalid extended resource name \"", name, "\": ", why)));
  };
  size_t slash = name.find('/');
  if (slash == std::string_view::npos) return bad("want <domain>/<name>");
  std::string_view domain = name.substr(0, slash);
  std::string_view part = name.substr(slash + 1);
  if (part.find('/') != std::string_view::npos) return bad("more than one '/'");
  if (domain == "kubernetes.io" || domain == "k8s.io" ||
      (domain.size() > 14 && domain.substr(domain.size() - 14) == ".kubernetes.io")) {
    return bad("the kubernetes.io domain is reserved for native resources");
  }
  // The kubelet checks "requests." + name as a qualified name.
  if (std::vector<std::string> errs = api::IsQualifiedName(base::StrCat("requests.", name));
      !errs.empty()) {
    return bad(absl::StrJoin(errs, "; "));
  }
  return absl::OkStatus();
}

v1beta1::ListAndWatchResponse DeviceListFor(const nic::Nic& nic, int devices_per_nic) {
  v1beta1::ListAndWatchResponse out;
  out.mutable_devices()->Reserve(devices_per_nic);
  const char* health = nic.up ? kHealthy : kUnhealthy;
  for (int i = 0; i < devices_per_nic; ++i) {
    v1beta1::Device* d = out.add_devices();
    d->set_id(DeviceIdFor(nic.name, i));
    d->set_health(health);
  }
  return out;
}

namespace {
// True if `id` is "<nic>-<i>" with 0 <= i < count, i in canonical decimal.
bool IsDeviceOf(std::string_view id, std::string_view nic_name, int count) {
  if (id.size() <= nic_name.size() + 1 || id.substr(0, nic_name.size()) != nic_name ||
      id[nic_name.size()] != '-') {
    return false;
  }
  std::string_view digits = id.substr(nic_name.size() + 1);
  if (digits.size() > 1 && digits.front() == '0') return false;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;  // from_chars alone would take a leading '-'
  }
  int index = -1;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) return false;
  return index >= 0 && index < count;
}
}  // namespace

absl::StatusOr<v1beta1::AllocateResponse> AllocateFor(const nic::Nic& nic, int devices_per_nic,
                                                      const v1beta1::AllocateRequest& request) {
  v1beta1::AllocateResponse out;
  const std::string env = EnvNameFor(nic.name);
  for (const v1beta1::ContainerAllocateRequest& c : request.container_requests()) {
    for (const std::string& id : c.devices_ids()) {
      if (!IsDeviceOf(id, nic.name, devices_per_nic)) {
        return absl::InvalidArgumentError(
            base::ToAbsl(base::StrCat("unknown device ID \"", id, "\": not one of the ",
                                      devices_per_nic, " devices of NIC ", nic.name)));
      }
    }
    (*out.add_container_responses()->mutable_envs())[env] = nic.name;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// One resource's DevicePlugin service.

class NicPlugin final : public v1beta1::DevicePlugin::Service {
 public:
  NicPlugin(nic::Nic nic, int count) : nic_(std::move(nic)), count_(count) {}

  // A new view of the NIC; streams resend the list when what it shows (up/down) changed.
  void SetNic(const nic::Nic& nic) {
    std::lock_guard lock(mu_);
    bool changed = nic.up != nic_.up;
    nic_ = nic;
    if (changed) {
      ++version_;
      cv_.notify_all();
    }
  }

  // Ends every ListAndWatch stream (they return OK) before the server shuts down.
  void Shutdown() {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* out) override {
    out->set_pre_start_required(false);
    out->set_get_preferred_allocation_available(false);
    return grpc::Status::OK;
  }

  grpc::Status ListAndWatch(grpc::ServerContext* ctx, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override {
    std::unique_lock lock(mu_);
    uint64_t sent = version_;
    while (!stopping_) {
      v1beta1::ListAndWatchResponse list = DeviceListFor(nic_, count_);
      sent = version_;
      lock.unlock();
      bool ok = writer->Write(list);
      lock.lock();
      if (!ok) return grpc::Status(grpc::StatusCode::CANCELLED, "stream closed");
      // The kubelet going away is only noticed through the context: look at it once a second
      // while there is nothing to send.
      while (!stopping_ && version_ == sent) {
        if (ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
        cv_.wait_for(lock, std::chrono::seconds(1));
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                      const v1beta1::PreferredAllocationRequest*,
                                      v1beta1::PreferredAllocationResponse*) override {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                        "GetPreferredAllocation is not available (see GetDevicePluginOptions)");
  }

  grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override {
    nic::Nic nic;
    {
      std::lock_guard lock(mu_);
      nic = nic_;
    }
    absl::StatusOr<v1beta1::AllocateResponse> r = AllocateFor(nic, count_, *request);
    if (!r.ok()) {
      SP_LOG(Warning)
          .Msg("device plugin Allocate refused")
          .KV("nic", nic.name)
          .KV("error", std::string(r.status().message()));
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(r.status().message()));
    }
    *response = *std::move(r);
    return grpc::Status::OK;
  }

  grpc::Status PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest*,
                                 v1beta1::PreStartContainerResponse*) override {
    return grpc::Status::OK;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  nic::Nic nic_;
  const int count_;
  uint64_t version_ = 0;
  bool stopping_ = false;
};

// ---------------------------------------------------------------------------------------------
// Manager

struct Manager::Entry {
  nic::Nic nic;
  std::string resource;
  std::string socket_name;
  std::string socket_path;
  std::unique_ptr<NicPlugin> plugin;
  std::unique_ptr<grpc::Server> server;
  std::optional<FileId> socket_id;        // the socket file our server bound
  std::optional<FileId> registered_with;  // kubelet.sock at the last successful Register
};

absl::StatusOr<std::unique_ptr<Manager>> Manager::Create(Options options) {
  while (options.kubelet_dir.size() > 1 && options.kubelet_dir.back() == '/') {
    options.kubelet_dir.pop_back();
  }
  if (options.kubelet_dir.empty() || options.kubelet_dir.front() != '/') {
    return absl::InvalidArgumentError(base::ToAbsl(
        base::StrCat("kubelet_dir must be an absolute path, got \"", options.kubelet_dir, "\"")));
  }
  struct stat st;
  if (::stat(options.kubelet_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(base::ToAbsl(
        base::StrCat("kubelet device-plugins directory ", options.kubelet_dir, " does not exist")));
  }
  if (options.devices_per_nic < 1 || options.devices_per_nic > kMaxDevicesPerNic) {
    return absl::InvalidArgumentError(base::ToAbsl(base::StrCat(
        "devices_per_nic must be in 1..", kMaxDevicesPerNic, ", got ", options.devices_per_nic)));
  }
  if (options.resource_prefix.empty() || options.resource_prefix.back() != '/') {
    return absl::InvalidArgumentError(base::ToAbsl(
        base::StrCat("resource_prefix must end with '/', got \"", options.resource_prefix, "\"")));
  }
  SP_RETURN_IF_ERROR(ValidateResourceName(ResourceNameFor(options.resource_prefix, "eth0")));
  return std::unique_ptr<Manager>(new Manager(std::move(options)));
}

Manager::Manager(Options options) : options_(std::move(options)) {}

Manager::~Manager() { Stop(); }

absl::Status Manager::StartServer(Entry& e) {
  if (e.socket_path.size() >= sizeof(sockaddr_un::sun_path)) {
    return absl::InvalidArgumentError(base::ToAbsl(
        base::StrCat("socket path ", e.socket_path, " is longer than the unix socket limit of ",
                     sizeof(sockaddr_un::sun_path) - 1)));
  }
  // A socket of ours left by an earlier agent (or killed server): ours to replace.
  if (::unlink(e.socket_path.c_str()) != 0 && errno != ENOENT) {
    return absl::InternalError(
        base::ToAbsl(base::StrCat("removing stale ", e.socket_path, ": ", std::strerror(errno))));
  }
  auto plugin = std::make_unique<NicPlugin>(e.nic, options_.devices_per_nic);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(base::StrCat("unix:", e.socket_path), grpc::InsecureServerCredentials());
  builder.RegisterService(plugin.get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    return absl::InternalError(
        base::ToAbsl(base::StrCat("cannot serve the device plugin on ", e.socket_path)));
  }
  e.plugin = std::move(plugin);
  e.server = std::move(server);
  e.socket_id = Stat(e.socket_path);
  e.registered_with.reset();
  SP_LOG(Info).Msg("device plugin serving").KV("resource", e.resource).KV("socket", e.socket_path);
  return absl::OkStatus();
}

void Manager::StopServer(Entry& e) {
  if (e.plugin != nullptr) e.plugin->Shutdown();
  if (e.server != nullptr) {
    // Streams return at once (Shutdown above); the deadline only bounds a stuck Write.
    e.server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    e.server->Wait();
    e.server.reset();
  }
  e.plugin.reset();
  // Remove the socket only if it is still the file we bound (not someone else's by now).
  if (e.socket_id.has_value() && Stat(e.socket_path) == e.socket_id) {
    ::unlink(e.socket_path.c_str());
  }
  e.socket_id.reset();
  e.registered_with.reset();
}

absl::Status Manager::Register(Entry& e) {
  const std::string kubelet = KubeletSocketPath(options_);
  std::optional<FileId> id = Stat(kubelet);
  if (!id.has_value()) {
    return absl::UnavailableError(base::ToAbsl(base::StrCat(kubelet, " does not exist")));
  }
  auto channel =
      grpc::CreateChannel(base::StrCat("unix:", kubelet), grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest req;
  req.set_version(kApiVersion);
  req.set_endpoint(e.socket_name);
  req.set_resource_name(e.resource);
  req.mutable_options()->set_pre_start_required(false);
  req.mutable_options()->set_get_preferred_allocation_available(false);
  v1beta1::Empty resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + options_.register_timeout);
  grpc::Status s = stub->Register(&ctx, req, &resp);
  if (!s.ok()) {
    return absl::UnavailableError(base::ToAbsl(
        base::StrCat("registering ", e.resource, " with the kubelet: ", s.error_message())));
  }
  e.registered_with = id;
  SP_LOG(Info).Msg("device plugin registered").KV("resource", e.resource);
  return absl::OkStatus();
}

absl::Status Manager::SyncLocked() {
  std::vector<std::string> errors;
  const std::optional<FileId> kubelet = Stat(KubeletSocketPath(options_));
  for (auto& [name, ep] : entries_) {
    Entry& e = *ep;
    if (e.server != nullptr && Stat(e.socket_path) != e.socket_id) {
      SP_LOG(Info)
          .Msg("device plugin socket removed (kubelet restart?): restarting")
          .KV("resource", e.resource);
      StopServer(e);
    }
    if (e.server == nullptr) {
      if (absl::Status s = StartServer(e); !s.ok()) {
        errors.push_back(std::string(s.message()));
        continue;
      }
    }
    if (!kubelet.has_value()) continue;
    if (e.registered_with != kubelet) {
      if (absl::Status s = Register(e); !s.ok()) errors.push_back(std::string(s.message()));
    }
  }
  if (!kubelet.has_value() && !entries_.empty()) {
    errors.push_back(base::StrCat(KubeletSocketPath(options_), " does not exist (kubelet down?)"));
  }
  if (errors.empty()) return absl::OkStatus();
  std::string msg;
  for (const std::string& m : errors) {
    if (!msg.empty()) msg += "; ";
    msg += m;
  }
  return absl::UnavailableError(base::ToAbsl(msg));
}

absl::Status Manager::Update(const std::vector<nic::Nic>& nics) {
  std::lock_guard lock(mu_);
  std::set<std::string> wanted;
  for (const nic::Nic& n : nics) {
    if (!MatchesRules(options_.rules, n.name)) continue;
    std::string resource = ResourceNameFor(options_.resource_prefix, n.name);
    if (absl::Status s = ValidateResourceName(resource); !s.ok()) {
      SP_VLOG(1)
          .Msg("NIC not served by the device plugin")
          .KV("nic", n.name)
          .KV("error", std::string(s.message()));
      continue;
    }
    wanted.insert(n.name);
    auto it = entries_.find(n.name);
    if (it != entries_.end()) {
      it->second->nic = n;
      if (it->second->plugin != nullptr) it->second->plugin->SetNic(n);
      continue;
    }
    auto e = std::make_unique<Entry>();
    e->nic = n;
    e->resource = std::move(resource);
    e->socket_name = SocketNameFor(e->resource);
    e->socket_path = base::StrCat(options_.kubelet_dir, "/", e->socket_name);
    entries_.emplace(n.name, std::move(e));
  }
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (wanted.count(it->first) != 0) {
      ++it;
      continue;
    }
    SP_LOG(Info).Msg("device plugin NIC gone: stopping").KV("resource", it->second->resource);
    StopServer(*it->second);
    it = entries_.erase(it);
  }
  return SyncLocked();
}

absl::Status Manager::Resync() {
  std::lock_guard lock(mu_);
  return SyncLocked();
}

void Manager::Start() {
  if (options_.resync_interval.count() <= 0) return;
  std::lock_guard lock(thread_mu_);
  if (thread_.joinable()) return;
  thread_stop_ = false;
  thread_ = std::thread([this] {
    std::string last_error;
    std::unique_lock lock(thread_mu_);
    while (!thread_cv_.wait_for(lock, options_.resync_interval, [this] { return thread_stop_; })) {
      lock.unlock();
      absl::Status s = Resync();
      std::string err = s.ok() ? "" : std::string(s.message());
      if (err != last_error && !err.empty()) {
        SP_LOG(Warning).Msg("device plugin resync").KV("error", err);
      }
      last_error = std::move(err);
      lock.lock();
    }
  });
}

void Manager::Stop() {
  {
    std::unique_lock lock(thread_mu_);
    thread_stop_ = true;
    thread_cv_.notify_all();
    if (thread_.joinable()) {
      std::thread t = std::move(thread_);
      lock.unlock();
      t.join();
    }
  }
  std::lock_guard lock(mu_);
  for (auto& [name, e] : entries_) StopServer(*e);
  entries_.clear();
}

std::vector<std::string> Manager::Resources() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, e] : entries_) {
    if (e->server != nullptr) out.push_back(e->resource);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace spiderpool::dra::deviceplugin
