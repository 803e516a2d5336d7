#include "dra/kubeletplugin/plugin.h"

#include <errno.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "base/log.h"
#include "base/strings.h"
#include "dra/kubeletplugin/proto/dra_health_v1alpha1.grpc.pb.h"
#include "dra/kubeletplugin/proto/dra_v1.grpc.pb.h"
#include "dra/kubeletplugin/proto/dra_v1beta1.grpc.pb.h"
#include "dra/kubeletplugin/proto/health.grpc.pb.h"
#include "dra/kubeletplugin/proto/pluginregistration.grpc.pb.h"

namespace spiderpool::dra::kubeletplugin {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;
namespace reg = ::pluginregistration;
namespace health = ::grpc::health::v1;
namespace drahealth = ::v1alpha1;

namespace {

using std::chrono::steady_clock;
using std::chrono::system_clock;

// Unpadded base64url (RFC 4648 §5): file-name safe.
std::string Base64Url(const unsigned char* data, size_t n) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    uint32_t v = (uint32_t{data[i]} << 16) | (uint32_t{data[i + 1]} << 8) | data[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (n - i == 1) {
    uint32_t v = uint32_t{data[i]} << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
  } else if (n - i == 2) {
    uint32_t v = (uint32_t{data[i]} << 16) | (uint32_t{data[i + 1]} << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
  }
  return out;
}

// base64url of the first `prefix` bytes of sha256(data).
std::string HashPrefix(std::string_view data, size_t prefix) {
  std::array<unsigned char, 32> digest{};
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), digest.data(), &len, EVP_sha256(), nullptr) != 1 ||
      len != digest.size()) {
    // Cannot happen with a working libcrypto; a fixed name would still be unique per driver.
    SP_LOG(Error).Msg("sha256 failed");
  }
  return Base64Url(digest.data(), std::min<size_t>(prefix, digest.size()));
}

std::string JoinPath(std::string_view dir, std::string_view file) {
  std::string out(dir);
  if (out.empty() || out.back() != '/') out += '/';
  out += file;
  return out;
}

bool Fits(const std::string& path) { return path.size() <= kMaxSocketPathLength; }

std::string PluginDir(const PluginOptions& o) {
  if (!o.plugin_dir.empty()) return o.plugin_dir;
  return JoinPath(kDefaultPluginsDir, o.driver_name);
}

// Creates `dir` and its parents.
absl::Status MakeDirs(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        base::StrCat("create directory ", dir, ": ", ec.message()));
  }
  return absl::OkStatus();
}

// Removes a leftover socket at our own path so bind() succeeds; refuses other file types.
absl::Status RemoveStaleSocket(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::FailedPreconditionError(base::StrCat("stat ", path, ": ", strerror(errno)));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        base::StrCat(path, " exists and is not a socket; refusing to replace it"));
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::FailedPreconditionError(base::StrCat("remove ", path, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

void RemoveSocket(const std::string& path) {
  if (path.empty()) return;
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    SP_LOG(Warning).Msg("removing socket failed").KV("path", path).KV("error", strerror(errno));
  }
}

// --- proto <-> Driver types, shared by v1 and v1beta1 -----------------------------------------

template <typename ClaimProto>
ClaimRef FromProto(const ClaimProto& c) {
  return ClaimRef{c.namespace_(), c.uid(), c.name()};
}

template <typename DeviceProto>
void ToProto(const PreparedDevice& d, DeviceProto* out) {
  for (const auto& r : d.request_names) out->add_request_names(r);
  out->set_pool_name(d.pool_name);
  out->set_device_name(d.device_name);
  for (const auto& id : d.cdi_device_ids) out->add_cdi_device_ids(id);
  if constexpr (std::is_same_v<DeviceProto, drav1::Device>) {
    if (d.share_id.has_value()) out->set_share_id(*d.share_id);
  }
}

// The claims of a request split into the ones for the Driver (deduplicated by UID, request
// order kept) and a per-claim error for those the Driver must not see.
struct SplitClaims {
  std::vector<ClaimRef> valid;
  std::map<std::string, std::string> rejected;  // uid -> error
};

template <typename RequestProto>
SplitClaims Split(const RequestProto& req) {
  SplitClaims out;
  std::set<std::string> seen;
  for (const auto& c : req.claims()) {
    ClaimRef ref = FromProto(c);
    if (ref.uid.empty()) {
      out.rejected[""] = base::StrCat("claim ", ref.namespace_, "/", ref.name, " has no uid");
      continue;
    }
    if (!seen.insert(ref.uid).second) continue;
    out.valid.push_back(std::move(ref));
  }
  return out;
}

std::string MissingResult(const std::string& uid) {
  return base::StrCat("internal error: driver returned no result for claim ", uid);
}

}  // namespace

std::string PodUIDFromEnv() {
  const char* v = std::getenv("POD_UID");
  return v == nullptr ? std::string() : std::string(v);
}

absl::StatusOr<SocketPaths> ComputeSocketPaths(const PluginOptions& o) {
  if (o.driver_name.empty()) return absl::InvalidArgumentError("driver name must be set");
  if (o.driver_name.find('/') != std::string::npos || o.driver_name.front() == '.') {
    return absl::InvalidArgumentError(
        base::StrCat("driver name ", o.driver_name, " is not usable in a file name"));
  }
  if (o.pod_uid.find('/') != std::string::npos || o.pod_uid.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(
        base::StrCat("pod UID ", o.pod_uid, " is not usable in a file name"));
  }
  if (o.registry_dir.empty()) return absl::InvalidArgumentError("registry dir must be set");
  const std::string plugin_dir = PluginDir(o);
  SocketPaths out;
  if (o.pod_uid.empty()) {
    out.registration = JoinPath(o.registry_dir, base::StrCat(o.driver_name, "-reg.sock"));
    out.dra = JoinPath(plugin_dir, "dra.sock");
  } else {
    const std::string h8 = HashPrefix(o.pod_uid, 8);
    std::string driver_and_uid = o.driver_name;
    driver_and_uid.push_back('\0');
    driver_and_uid += o.pod_uid;
    const std::string candidates[] = {
        base::StrCat(o.driver_name, "-", o.pod_uid, "-reg.sock"),
        base::StrCat(o.driver_name, "-", h8, "-reg.sock"),
        base::StrCat("dra-", HashPrefix(driver_and_uid, 16), "-reg.sock"),
    };
    for (const auto& name : candidates) {
      out.registration = JoinPath(o.registry_dir, name);
      if (Fits(out.registration)) break;
    }
    out.dra = JoinPath(plugin_dir, base::StrCat("dra-", o.pod_uid, ".sock"));
    if (!Fits(out.dra)) out.dra = JoinPath(plugin_dir, base::StrCat("dra-", h8, ".sock"));
  }
  for (const std::string* p : {&out.registration, &out.dra}) {
    if (!Fits(*p)) {
      return absl::InvalidArgumentError(base::StrCat("socket path ", *p, " is ", p->size(),
                                                     " bytes, over the unix socket limit of ",
                                                     kMaxSocketPathLength));
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------------

struct Plugin::Impl {
  explicit Impl(Plugin* p) : plugin(p) {
    kube::metrics::Registry* r =
        p->options_.metrics != nullptr ? p->options_.metrics : &kube::metrics::Registry::Default();
    operations = &r->AddHistogram(kOperationsMetric,
                                  "Duration in seconds of the DRA gRPC operations served by the "
                                  "kubelet plugin, by full gRPC method name.");
    prepare_failures = &r->AddCounter(kPrepareFailuresMetric,
                                      "Claims whose NodePrepareResources failed (a per-claim "
                                      "error, or the whole call not served).")
                            .WithLabels();
  }

  // Observes the duration of one call into the histogram when it goes out of scope.
  class OpTimer {
   public:
    OpTimer(Impl* impl, std::string_view method)
        : hist_(&impl->operations->WithLabels({{"method_name", std::string(method)}})),
          start_(steady_clock::now()) {}
    ~OpTimer() {
      hist_->Observe(std::chrono::duration<double>(steady_clock::now() - start_).count());
    }

   private:
    kube::metrics::Histogram* hist_;
    steady_clock::time_point start_;
  };

  // Held while the Driver runs: the in-process mutex and the flock on serialize.lock.
  class CallLock {
   public:
    ~CallLock() {
      if (fd_ >= 0) flock(fd_, LOCK_UN);
    }
    std::unique_lock<std::timed_mutex> mu;
    int fd_ = -1;
  };

  // Waits for the in-process mutex, then for the file lock, never past the call's deadline.
  grpc::Status Acquire(grpc::ServerContext* ctx, CallLock* lock) {
    const system_clock::time_point deadline = ctx->deadline();
    auto expired = [&](std::string_view what) {
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                          base::StrCat("deadline exceeded while waiting for ", what));
    };
    lock->mu = std::unique_lock<std::timed_mutex>(call_mu, std::defer_lock);
    for (;;) {
      if (ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "call cancelled");
      const auto now = system_clock::now();
      if (now >= deadline) return expired("the in-process call mutex");
      const auto step =
          std::min<system_clock::duration>(deadline - now, std::chrono::milliseconds(100));
      if (lock->mu.try_lock_for(step)) break;
    }
    auto backoff = std::chrono::milliseconds(1);
    for (;;) {
      if (flock(lock_fd, LOCK_EX | LOCK_NB) == 0) {
        lock->fd_ = lock_fd;
        return grpc::Status::OK;
      }
      if (errno == EINTR) continue;
      if (errno != EWOULDBLOCK) {
        return grpc::Status(grpc::StatusCode::INTERNAL,
                            base::StrCat("flock ", lock_path, ": ", strerror(errno)));
      }
      if (ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "call cancelled");
      const auto now = system_clock::now();
      if (now >= deadline) return expired(base::StrCat("the file lock ", lock_path));
      std::this_thread::sleep_for(std::min<system_clock::duration>(deadline - now, backoff));
      backoff = std::min(backoff * 2, std::chrono::milliseconds(50));
    }
  }

  grpc::Status CheckNotLate(grpc::ServerContext* ctx) {
    if (system_clock::now() >= ctx->deadline()) {
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                          "deadline exceeded before the driver was called");
    }
    return grpc::Status::OK;
  }

  template <typename Req, typename Resp>
  grpc::Status Prepare(grpc::ServerContext* ctx, const Req& req, Resp* resp,
                       std::string_view method) {
    OpTimer timer(this, method);
    SplitClaims split = Split(req);
    auto* claims = resp->mutable_claims();
    for (const auto& [uid, error] : split.rejected) (*claims)[uid].set_error(error);
    prepare_failures->Inc(static_cast<double>(split.rejected.size()));
    if (split.valid.empty()) return grpc::Status::OK;  // nothing for the Driver: no lock
    CallLock lock;
    grpc::Status s = Acquire(ctx, &lock);
    if (s.ok()) s = CheckNotLate(ctx);
    if (!s.ok()) {
      SP_LOG(Warning).Msg("call not served").KV("method", method).KV("error", s.error_message());
      prepare_failures->Inc(static_cast<double>(split.valid.size()));
      return s;
    }
    std::map<std::string, PrepareResult> results = plugin->driver_->Prepare(split.valid);
    for (const ClaimRef& c : split.valid) {
      auto& entry = (*claims)[c.uid];
      auto it = results.find(c.uid);
      if (it == results.end()) {
        SP_LOG(Error).Msg("driver returned no prepare result").KV("claim", c.uid);
        entry.set_error(MissingResult(c.uid));
        prepare_failures->Inc();
        continue;
      }
      entry.set_error(it->second.error);
      if (!it->second.error.empty()) prepare_failures->Inc();
      for (const PreparedDevice& d : it->second.devices) ToProto(d, entry.add_devices());
    }
    return grpc::Status::OK;
  }

  template <typename Req, typename Resp>
  grpc::Status Unprepare(grpc::ServerContext* ctx, const Req& req, Resp* resp,
                         std::string_view method) {
    OpTimer timer(this, method);
    SplitClaims split = Split(req);
    auto* claims = resp->mutable_claims();
    for (const auto& [uid, error] : split.rejected) (*claims)[uid].set_error(error);
    if (split.valid.empty()) return grpc::Status::OK;
    CallLock lock;
    grpc::Status s = Acquire(ctx, &lock);
    if (s.ok()) s = CheckNotLate(ctx);
    if (!s.ok()) {
      SP_LOG(Warning).Msg("call not served").KV("method", method).KV("error", s.error_message());
      return s;
    }
    std::map<std::string, std::string> results = plugin->driver_->Unprepare(split.valid);
    for (const ClaimRef& c : split.valid) {
      auto it = results.find(c.uid);
      if (it == results.end()) {
        SP_LOG(Error).Msg("driver returned no unprepare result").KV("claim", c.uid);
        (*claims)[c.uid].set_error(MissingResult(c.uid));
        continue;
      }
      (*claims)[c.uid].set_error(it->second);
    }
    return grpc::Status::OK;
  }

  class RegistrationService final : public reg::Registration::Service {
   public:
    explicit RegistrationService(Impl* impl) : impl_(impl) {}
    grpc::Status GetInfo(grpc::ServerContext*, const reg::InfoRequest*,
                         reg::PluginInfo* info) override {
      OpTimer timer(impl_, kMethodGetInfo);
      info->set_type(std::string(kPluginType));
      info->set_name(impl_->plugin->options_.driver_name);
      info->set_endpoint(impl_->plugin->sockets_.dra);
      info->add_supported_versions(std::string(kServiceV1));
      info->add_supported_versions(std::string(kServiceV1beta1));
      if (impl_->plugin->options_.device_health != nullptr) {
        info->add_supported_versions(std::string(kServiceHealthV1alpha1));
      }
      return grpc::Status::OK;
    }
    grpc::Status NotifyRegistrationStatus(grpc::ServerContext*, const reg::RegistrationStatus* req,
                                          reg::RegistrationStatusResponse*) override {
      OpTimer timer(impl_, kMethodNotifyRegistrationStatus);
      {
        std::lock_guard<std::mutex> l(impl_->status_mu);
        impl_->status = RegistrationStatus{req->plugin_registered(), req->error()};
      }
      if (req->plugin_registered()) {
        SP_LOG(Info)
            .Msg("registered with the kubelet")
            .KV("driver", impl_->plugin->options_.driver_name)
            .KV("socket", impl_->plugin->sockets_.registration);
      } else {
        SP_LOG(Error)
            .Msg("kubelet rejected the plugin registration")
            .KV("driver", impl_->plugin->options_.driver_name)
            .KV("socket", impl_->plugin->sockets_.registration)
            .KV("error", req->error());
      }
      return grpc::Status::OK;
    }

   private:
    Impl* impl_;
  };

  class DraV1Service final : public drav1::DRAPlugin::Service {
   public:
    explicit DraV1Service(Impl* impl) : impl_(impl) {}
    grpc::Status NodePrepareResources(grpc::ServerContext* ctx,
                                      const drav1::NodePrepareResourcesRequest* req,
                                      drav1::NodePrepareResourcesResponse* resp) override {
      return impl_->Prepare(ctx, *req, resp, kMethodPrepareV1);
    }
    grpc::Status NodeUnprepareResources(grpc::ServerContext* ctx,
                                        const drav1::NodeUnprepareResourcesRequest* req,
                                        drav1::NodeUnprepareResourcesResponse* resp) override {
      return impl_->Unprepare(ctx, *req, resp, kMethodUnprepareV1);
    }

   private:
    Impl* impl_;
  };

  class DraV1beta1Service final : public drav1beta1::DRAPlugin::Service {
   public:
    explicit DraV1beta1Service(Impl* impl) : impl_(impl) {}
    grpc::Status NodePrepareResources(grpc::ServerContext* ctx,
                                      const drav1beta1::NodePrepareResourcesRequest* req,
                                      drav1beta1::NodePrepareResourcesResponse* resp) override {
      return impl_->Prepare(ctx, *req, resp, kMethodPrepareV1beta1);
    }
    grpc::Status NodeUnprepareResources(grpc::ServerContext* ctx,
                                        const drav1beta1::NodeUnprepareResourcesRequest* req,
                                        drav1beta1::NodeUnprepareResourcesResponse* resp) override {
      return impl_->Unprepare(ctx, *req, resp, kMethodUnprepareV1beta1);
    }

   private:
    Impl* impl_;
  };

  // SERVING only while both of this instance's sockets answer, as the kubelet would see them:
  // GetInfo on the registration socket (and it names our endpoint), then an empty
  // NodePrepareResources on the DRA socket.
  health::HealthCheckResponse::ServingStatus Probe(system_clock::time_point deadline) {
    {
      std::lock_guard<std::mutex> l(health_mu);
      if (stopping) return health::HealthCheckResponse::NOT_SERVING;
    }
    deadline = std::min(deadline, system_clock::now() + std::chrono::seconds(5));
    const SocketPaths& s = plugin->sockets_;
    auto reg_channel = grpc::CreateChannel(base::StrCat("unix:", s.registration),
                                           grpc::InsecureChannelCredentials());
    reg::InfoRequest info_req;
    reg::PluginInfo info;
    grpc::ClientContext reg_ctx;
    reg_ctx.set_deadline(deadline);
    grpc::Status st = reg::Registration::NewStub(reg_channel)->GetInfo(&reg_ctx, info_req, &info);
    if (!st.ok() || info.endpoint() != s.dra || info.name() != plugin->options_.driver_name) {
      SP_VLOG(1).Msg("health: registration socket does not answer").KV("error", st.error_message());
      return health::HealthCheckResponse::NOT_SERVING;
    }
    auto dra_channel =
        grpc::CreateChannel(base::StrCat("unix:", s.dra), grpc::InsecureChannelCredentials());
    drav1::NodePrepareResourcesRequest prep_req;
    drav1::NodePrepareResourcesResponse prep_resp;
    grpc::ClientContext dra_ctx;
    dra_ctx.set_deadline(deadline);
    st = drav1::DRAPlugin::NewStub(dra_channel)
             ->NodePrepareResources(&dra_ctx, prep_req, &prep_resp);
    if (!st.ok()) {
      SP_VLOG(1).Msg("health: DRA socket does not answer").KV("error", st.error_message());
      return health::HealthCheckResponse::NOT_SERVING;
    }
    return health::HealthCheckResponse::SERVING;
  }

  static bool KnownHealthService(const std::string& service) {
    return service.empty() || service == "liveness";
  }

  class HealthService final : public health::Health::Service {
   public:
    explicit HealthService(Impl* impl) : impl_(impl) {}
    grpc::Status Check(grpc::ServerContext* ctx, const health::HealthCheckRequest* req,
                       health::HealthCheckResponse* resp) override {
      if (!KnownHealthService(req->service())) {
        return grpc::Status(grpc::StatusCode::NOT_FOUND,
                            base::StrCat("unknown service ", req->service()));
      }
      resp->set_status(impl_->Probe(ctx->deadline()));
      return grpc::Status::OK;
    }
    grpc::Status Watch(grpc::ServerContext* ctx, const health::HealthCheckRequest* req,
                       grpc::ServerWriter<health::HealthCheckResponse>* writer) override {
      int last = -1;
      for (;;) {
        const auto status = KnownHealthService(req->service())
                                ? impl_->Probe(system_clock::now() + std::chrono::seconds(5))
                                : health::HealthCheckResponse::SERVICE_UNKNOWN;
        if (status != last) {
          health::HealthCheckResponse resp;
          resp.set_status(status);
          if (!writer->Write(resp)) return grpc::Status::OK;
          last = status;
        }
        std::unique_lock<std::mutex> l(impl_->health_mu);
        impl_->health_cv.wait_for(l, std::chrono::seconds(2),
                                  [&] { return impl_->stopping || ctx->IsCancelled(); });
        if (impl_->stopping || ctx->IsCancelled()) return grpc::Status::OK;
      }
    }

   private:
    Impl* impl_;
  };

  // The kubelet's device-health stream: the complete list at once, then after every change,
  // until the kubelet goes away or the plugin stops.
  class ResourceHealthService final : public drahealth::DRAResourceHealth::Service {
   public:
    explicit ResourceHealthService(Impl* impl) : impl_(impl) {}
    grpc::Status NodeWatchResources(
        grpc::ServerContext* ctx, const drahealth::NodeWatchResourcesRequest*,
        grpc::ServerWriter<drahealth::NodeWatchResourcesResponse>* writer) override {
      const DeviceHealthFeed* feed = impl_->plugin->options_.device_health;
      uint64_t seen = 0;
      for (;;) {
        if (impl_->Stopping() || ctx->IsCancelled()) return grpc::Status::OK;
        std::optional<DeviceHealthFeed::Snapshot> snap = feed->WaitNewer(seen, absl::Seconds(1));
        if (!snap.has_value()) continue;
        seen = snap->version;
        drahealth::NodeWatchResourcesResponse resp;
        for (const DeviceHealth& d : snap->devices) {
          drahealth::DeviceHealth* out = resp.add_devices();
          out->mutable_device()->set_pool_name(d.pool);
          out->mutable_device()->set_device_name(d.device);
          out->set_health(static_cast<drahealth::HealthStatus>(d.status));
          out->set_last_updated_time(d.last_updated_unix);
        }
        if (!writer->Write(resp)) return grpc::Status::OK;  // the kubelet went away
      }
    }

   private:
    Impl* impl_;
  };

  bool Stopping() {
    std::lock_guard<std::mutex> l(health_mu);
    return stopping;
  }

  Plugin* plugin;
  kube::metrics::Family<kube::metrics::Histogram>* operations;
  kube::metrics::Counter* prepare_failures;

  std::timed_mutex call_mu;
  std::string lock_path;
  int lock_fd = -1;

  mutable std::mutex status_mu;
  std::optional<RegistrationStatus> status;  // guarded by status_mu

  std::mutex health_mu;
  std::condition_variable health_cv;
  bool stopping = false;  // guarded by health_mu

  RegistrationService registration_service{this};
  DraV1Service v1_service{this};
  DraV1beta1Service v1beta1_service{this};
  HealthService health_service{this};
  ResourceHealthService resource_health_service{this};

  std::unique_ptr<grpc::Server> dra_server;
  std::unique_ptr<grpc::Server> registration_server;
  std::unique_ptr<grpc::Server> health_server;
  bool started = false;
  bool stopped = false;
};

Plugin::Plugin(PluginOptions options, Driver* driver)
    : options_(std::move(options)), driver_(driver) {
  impl_ = std::make_unique<Impl>(this);
}

Plugin::~Plugin() { Stop(); }

absl::Status Plugin::Start() {
  if (impl_->started) return absl::FailedPreconditionError("plugin already started");
  impl_->started = true;
  if (driver_ == nullptr) return absl::InvalidArgumentError("no driver");
  auto paths = ComputeSocketPaths(options_);
  if (!paths.ok()) return paths.status();
  sockets_ = *std::move(paths);
  const std::string plugin_dir = PluginDir(options_);
  if (auto s = MakeDirs(options_.registry_dir); !s.ok()) return s;
  if (auto s = MakeDirs(plugin_dir); !s.ok()) return s;

  impl_->lock_path = JoinPath(plugin_dir, "serialize.lock");
  impl_->lock_fd = open(impl_->lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (impl_->lock_fd < 0) {
    return absl::FailedPreconditionError(
        base::StrCat("open ", impl_->lock_path, ": ", strerror(errno)));
  }

  // The DRA service first: once the registration socket exists the kubelet may call it.
  if (auto s = RemoveStaleSocket(sockets_.dra); !s.ok()) return s;
  {
    grpc::ServerBuilder b;
    b.AddListeningPort(base::StrCat("unix:", sockets_.dra), grpc::InsecureServerCredentials());
    b.RegisterService(&impl_->v1_service);
    b.RegisterService(&impl_->v1beta1_service);
    if (options_.device_health != nullptr) b.RegisterService(&impl_->resource_health_service);
    impl_->dra_server = b.BuildAndStart();
    if (impl_->dra_server == nullptr) {
      return absl::UnavailableError(base::StrCat("cannot serve the DRA socket ", sockets_.dra));
    }
  }
  if (auto s = RemoveStaleSocket(sockets_.registration); !s.ok()) {
    Stop();
    return s;
  }
  {
    grpc::ServerBuilder b;
    b.AddListeningPort(base::StrCat("unix:", sockets_.registration),
                       grpc::InsecureServerCredentials());
    b.RegisterService(&impl_->registration_service);
    impl_->registration_server = b.BuildAndStart();
    if (impl_->registration_server == nullptr) {
      Stop();
      return absl::UnavailableError(
          base::StrCat("cannot serve the registration socket ", sockets_.registration));
    }
  }
  if (options_.health_port >= 0) {
    grpc::ServerBuilder b;
    int port = 0;
    std::string host = options_.health_host;
    if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
    b.AddListeningPort(base::StrCat(host, ":", options_.health_port),
                       grpc::InsecureServerCredentials(), &port);
    b.RegisterService(&impl_->health_service);
    impl_->health_server = b.BuildAndStart();
    if (impl_->health_server == nullptr || port == 0) {
      Stop();
      return absl::UnavailableError(
          base::StrCat("cannot serve gRPC health on ", host, ":", options_.health_port));
    }
    bound_health_port_ = port;
  }
  SP_LOG(Info)
      .Msg("kubelet plugin serving")
      .KV("driver", options_.driver_name)
      .KV("registration", sockets_.registration)
      .KV("endpoint", sockets_.dra)
      .KV("healthPort", bound_health_port_);
  return absl::OkStatus();
}

void Plugin::Stop() {
  if (!impl_->started || impl_->stopped) return;
  impl_->stopped = true;
  {
    std::lock_guard<std::mutex> l(impl_->health_mu);
    impl_->stopping = true;
  }
  impl_->health_cv.notify_all();
  const auto grace = system_clock::now() + options_.shutdown_grace;
  // Deregister first: the kubelet sees the socket vanish and uses another instance.
  if (impl_->registration_server != nullptr) {
    RemoveSocket(sockets_.registration);
    impl_->registration_server->Shutdown(grace);
    impl_->registration_server->Wait();
  }
  if (impl_->dra_server != nullptr) {
    impl_->dra_server->Shutdown(grace);
    impl_->dra_server->Wait();
    RemoveSocket(sockets_.dra);
  }
  if (impl_->health_server != nullptr) {
    impl_->health_server->Shutdown(grace);
    impl_->health_server->Wait();
  }
  if (impl_->lock_fd >= 0) {
    close(impl_->lock_fd);
    impl_->lock_fd = -1;
  }
  SP_LOG(Info).Msg("kubelet plugin stopped").KV("driver", options_.driver_name);
}

std::optional<Plugin::RegistrationStatus> Plugin::registration_status() const {
  std::lock_guard<std::mutex> l(impl_->status_mu);
  return impl_->status;
}

}  // namespace spiderpool::dra::kubeletplugin
