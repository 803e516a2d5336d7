#include "dra/kubeletplugin/testing/fake_kubelet.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <utility>

#include "base/log.h"
#include "base/strings.h"
#include "dra/kubeletplugin/proto/dra_health_v1alpha1.grpc.pb.h"
#include "dra/kubeletplugin/proto/dra_v1.grpc.pb.h"
#include "dra/kubeletplugin/proto/dra_v1beta1.grpc.pb.h"
#include "dra/kubeletplugin/proto/pluginregistration.grpc.pb.h"

namespace spiderpool::dra::kubeletplugin::testing {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;
namespace reg = ::pluginregistration;

namespace {

constexpr std::chrono::seconds kRegistrationTimeout(10);

absl::Status FromGrpc(const grpc::Status& s, std::string_view what) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      base::StrCat(what, ": ", s.error_message()));
}

std::shared_ptr<grpc::Channel> UnixChannel(const std::string& path) {
  return grpc::CreateChannel(base::StrCat("unix:", path), grpc::InsecureChannelCredentials());
}

absl::StatusOr<reg::PluginInfo> GetInfo(const std::string& socket) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kRegistrationTimeout);
  reg::PluginInfo info;
  grpc::Status s = reg::Registration::NewStub(UnixChannel(socket))->GetInfo(&ctx, {}, &info);
  if (!s.ok()) return FromGrpc(s, "GetInfo");
  return info;
}

absl::Status Notify(const std::string& socket, bool registered, const std::string& error) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kRegistrationTimeout);
  reg::RegistrationStatus req;
  req.set_plugin_registered(registered);
  req.set_error(error);
  reg::RegistrationStatusResponse resp;
  return FromGrpc(
      reg::Registration::NewStub(UnixChannel(socket))->NotifyRegistrationStatus(&ctx, req, &resp),
      "NotifyRegistrationStatus");
}

bool IsSocket(const std::filesystem::path& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

template <typename Req>
void FillClaims(const std::vector<ClaimRef>& claims, Req* req) {
  for (const ClaimRef& c : claims) {
    auto* out = req->add_claims();
    out->set_namespace_(c.namespace_);
    out->set_uid(c.uid);
    out->set_name(c.name);
  }
}

template <typename Resp>
std::map<std::string, PrepareResult> DecodePrepare(const Resp& resp) {
  std::map<std::string, PrepareResult> out;
  for (const auto& [uid, claim] : resp.claims()) {
    PrepareResult r;
    r.error = claim.error();
    for (const auto& d : claim.devices()) {
      PreparedDevice dev;
      dev.request_names.assign(d.request_names().begin(), d.request_names().end());
      dev.pool_name = d.pool_name();
      dev.device_name = d.device_name();
      dev.cdi_device_ids.assign(d.cdi_device_ids().begin(), d.cdi_device_ids().end());
      if constexpr (std::is_same_v<Resp, drav1::NodePrepareResourcesResponse>) {
        if (d.has_share_id()) dev.share_id = d.share_id();
      }
      r.devices.push_back(std::move(dev));
    }
    out[uid] = std::move(r);
  }
  return out;
}

template <typename Resp>
std::map<std::string, std::string> DecodeUnprepare(const Resp& resp) {
  std::map<std::string, std::string> out;
  for (const auto& [uid, claim] : resp.claims()) out[uid] = claim.error();
  return out;
}

}  // namespace

FakeKubelet::FakeKubelet(FakeKubeletOptions options) : options_(std::move(options)) {}
FakeKubelet::~FakeKubelet() = default;

absl::Status FakeKubelet::Discover() {
  std::lock_guard<std::mutex> discover(discover_mu_);
  std::set<std::string> found;
  std::error_code ec;
  std::filesystem::directory_iterator it(options_.registry_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        base::StrCat("read ", options_.registry_dir, ": ", ec.message()));
  }
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.front() == '.') continue;
    if (!IsSocket(entry.path())) continue;
    found.insert(entry.path().string());
  }

  std::map<std::string, Registered> known;
  {
    std::lock_guard<std::mutex> l(mu_);
    known = registered_;
  }
  std::set<std::string> dropped;
  for (const auto& [path, r] : known) {
    // Gone, no longer answering, or replaced by another plugin at the same path: the kubelet
    // unregisters the instance (and registers a replacement below).
    if (!found.count(path)) {
      dropped.insert(path);
      continue;
    }
    auto info = GetInfo(path);
    if (!info.ok() || info->endpoint() != r.instance.endpoint) dropped.insert(path);
  }

  std::map<std::string, std::string> rejected;
  std::vector<Registered> added;
  for (const std::string& path : found) {
    if (known.count(path) && !dropped.count(path)) continue;
    auto info = GetInfo(path);
    if (!info.ok()) {
      rejected[path] = std::string(base::FromAbsl(info.status().message()));
      continue;
    }
    std::string reason;
    std::string service;
    const auto& versions = info->supported_versions();
    auto offers = [&](std::string_view v) {
      return std::find(versions.begin(), versions.end(), std::string(v)) != versions.end();
    };
    if (info->type() != kPluginType) {
      reason = base::StrCat("unsupported plugin type ", info->type());
    } else if (info->name() != options_.driver_name) {
      reason =
          base::StrCat("unexpected driver name ", info->name(), ", want ", options_.driver_name);
    } else if (info->endpoint().empty()) {
      reason = "empty endpoint";
    } else if (!options_.force_v1beta1 && offers(kServiceV1)) {
      service = std::string(kServiceV1);
    } else if (offers(kServiceV1beta1)) {
      service = std::string(kServiceV1beta1);
    } else {
      reason = "none of the supported versions are compatible with this kubelet";
    }
    if (!reason.empty()) {
      if (auto s = Notify(path, false, reason); !s.ok()) {
        SP_LOG(Warning)
            .Msg("fake kubelet: notify failed")
            .KV("socket", path)
            .KV("error", s.ToString());
      }
      rejected[path] = reason;
      continue;
    }
    if (auto s = Notify(path, true, ""); !s.ok()) {
      rejected[path] = std::string(base::FromAbsl(s.message()));
      continue;
    }
    Registered r;
    r.instance.registration_socket = path;
    r.instance.endpoint = info->endpoint();
    r.instance.service = service;
    r.instance.resource_health = offers(kServiceHealthV1alpha1);
    r.channel = UnixChannel(info->endpoint());
    added.push_back(std::move(r));
  }

  std::lock_guard<std::mutex> l(mu_);
  for (const std::string& path : dropped) registered_.erase(path);
  for (Registered& r : added) {
    r.instance.generation = next_generation_++;
    registered_[r.instance.registration_socket] = std::move(r);
  }
  rejected_ = std::move(rejected);
  return absl::OkStatus();
}

std::vector<FakeKubelet::Instance> FakeKubelet::instances() const {
  std::vector<Instance> out;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [path, r] : registered_) out.push_back(r.instance);
  }
  std::sort(out.begin(), out.end(),
            [](const Instance& a, const Instance& b) { return a.generation < b.generation; });
  return out;
}

absl::StatusOr<FakeKubelet::Registered> FakeKubelet::Current() const {
  std::lock_guard<std::mutex> l(mu_);
  const Registered* best = nullptr;
  for (const auto& [path, r] : registered_) {
    if (best == nullptr || r.instance.generation > best->instance.generation) best = &r;
  }
  if (best == nullptr) {
    return absl::NotFoundError(
        base::StrCat("no registered instance of driver ", options_.driver_name));
  }
  return *best;
}

absl::StatusOr<FakeKubelet::Instance> FakeKubelet::current() const {
  auto r = Current();
  if (!r.ok()) return r.status();
  return r->instance;
}

std::map<std::string, std::string> FakeKubelet::rejected() const {
  std::lock_guard<std::mutex> l(mu_);
  return rejected_;
}

absl::StatusOr<std::map<std::string, PrepareResult>> FakeKubelet::Prepare(
    const std::vector<ClaimRef>& claims) {
  auto r = Current();
  if (!r.ok()) return r.status();
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + options_.call_timeout);
  if (r->instance.service == kServiceV1) {
    drav1::NodePrepareResourcesRequest req;
    FillClaims(claims, &req);
    drav1::NodePrepareResourcesResponse resp;
    grpc::Status s = drav1::DRAPlugin::NewStub(r->channel)->NodePrepareResources(&ctx, req, &resp);
    if (!s.ok()) return FromGrpc(s, "NodePrepareResources");
    return DecodePrepare(resp);
  }
  drav1beta1::NodePrepareResourcesRequest req;
  FillClaims(claims, &req);
  drav1beta1::NodePrepareResourcesResponse resp;
  grpc::Status s =
      drav1beta1::DRAPlugin::NewStub(r->channel)->NodePrepareResources(&ctx, req, &resp);
  if (!s.ok()) return FromGrpc(s, "NodePrepareResources");
  return DecodePrepare(resp);
}

absl::StatusOr<std::map<std::string, std::string>> FakeKubelet::Unprepare(
    const std::vector<ClaimRef>& claims) {
  auto r = Current();
  if (!r.ok()) return r.status();
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + options_.call_timeout);
  if (r->instance.service == kServiceV1) {
    drav1::NodeUnprepareResourcesRequest req;
    FillClaims(claims, &req);
    drav1::NodeUnprepareResourcesResponse resp;
    grpc::Status s =
        drav1::DRAPlugin::NewStub(r->channel)->NodeUnprepareResources(&ctx, req, &resp);
    if (!s.ok()) return FromGrpc(s, "NodeUnprepareResources");
    return DecodeUnprepare(resp);
  }
  drav1beta1::NodeUnprepareResourcesRequest req;
  FillClaims(claims, &req);
  drav1beta1::NodeUnprepareResourcesResponse resp;
  grpc::Status s =
      drav1beta1::DRAPlugin::NewStub(r->channel)->NodeUnprepareResources(&ctx, req, &resp);
  if (!s.ok()) return FromGrpc(s, "NodeUnprepareResources");
  return DecodeUnprepare(resp);
}

absl::Status FakeKubelet::WatchHealth(
    const std::function<bool(const std::vector<DeviceHealth>&)>& on_update,
    std::chrono::milliseconds timeout) {
  auto r = Current();
  if (!r.ok()) return r.status();
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  ::v1alpha1::NodeWatchResourcesRequest req;
  auto reader = ::v1alpha1::DRAResourceHealth::NewStub(r->channel)->NodeWatchResources(&ctx, req);
  ::v1alpha1::NodeWatchResourcesResponse resp;
  while (reader->Read(&resp)) {
    std::vector<DeviceHealth> devices;
    for (const auto& d : resp.devices()) {
      devices.push_back({.pool = d.device().pool_name(),
                         .device = d.device().device_name(),
                         .status = static_cast<DeviceHealthStatus>(d.health()),
                         .last_updated_unix = d.last_updated_time()});
    }
    if (!on_update(devices)) {
      ctx.TryCancel();
      (void)reader->Finish();
      return absl::OkStatus();
    }
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return FromGrpc(s, "NodeWatchResources");
  return absl::OkStatus();
}

}  // namespace spiderpool::dra::kubeletplugin::testing
