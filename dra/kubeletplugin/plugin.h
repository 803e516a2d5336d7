#pragma once
// The kubelet DRA plugin: plain gRPC over unix sockets, in front of a Driver (driver.h).
//
//   Registration  <registry_dir>/<driver>-reg.sock   (pluginregistration.Registration)
//   DRA service   <plugin_dir>/dra.sock              (k8s.io.kubelet.pkg.apis.dra.v1 and
//                                                      v1beta1 .DRAPlugin, same Driver)
//                                                     with device_health set, also
//                                                     v1alpha1.DRAResourceHealth (KEP-4680)
//   Health        TCP :health_port                   (grpc.health.v1.Health, liveness probe)
//
// With a pod UID (seamless upgrade, kubelet >= 1.33) the socket names carry it
// (<driver>-<uid>-reg.sock, dra-<uid>.sock) so an old and a new pod serve side by side; every
// prepare/unprepare call is serialized across both through flock(<plugin_dir>/serialize.lock)
// plus an in-process mutex, waiting at most until the call's gRPC deadline.
//
//   kubeletplugin::PluginOptions o;
//   o.pod_uid = kubeletplugin::PodUIDFromEnv();
//   o.health_port = 51515;
//   o.metrics = &registry;
//   kubeletplugin::Plugin plugin(o, &driver);
//   SP_RETURN_IF_ERROR(plugin.Start());
//   ... on SIGTERM: plugin.Stop();   // removes only this instance's sockets

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dra/kubeletplugin/device_health.h"
#include "dra/kubeletplugin/driver.h"
#include "kube/metrics/metrics.h"

namespace spiderpool::dra::kubeletplugin {

inline constexpr std::string_view kDefaultDriverName = "netresources.spidernet.io";
inline constexpr std::string_view kDefaultRegistryDir = "/var/lib/kubelet/plugins_registry";
inline constexpr std::string_view kDefaultPluginsDir = "/var/lib/kubelet/plugins";
// PluginInfo.type and the services GetInfo advertises (the kubelet prefers the first).
inline constexpr std::string_view kPluginType = "DRAPlugin";
inline constexpr std::string_view kServiceV1 = "v1.DRAPlugin";
inline constexpr std::string_view kServiceV1beta1 = "v1beta1.DRAPlugin";
// The device-health stream kubelets 1.34-1.36 open on every DRA plugin (advertised when served).
inline constexpr std::string_view kServiceHealthV1alpha1 = "v1alpha1.DRAResourceHealth";
// Full gRPC method paths (also the metric's method_name label values).
inline constexpr std::string_view kMethodPrepareV1 =
    "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources";
inline constexpr std::string_view kMethodUnprepareV1 =
    "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources";
inline constexpr std::string_view kMethodPrepareV1beta1 =
    "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodePrepareResources";
inline constexpr std::string_view kMethodUnprepareV1beta1 =
    "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodeUnprepareResources";
inline constexpr std::string_view kMethodNodeWatchResources =
    "/v1alpha1.DRAResourceHealth/NodeWatchResources";
inline constexpr std::string_view kMethodGetInfo = "/pluginregistration.Registration/GetInfo";
inline constexpr std::string_view kMethodNotifyRegistrationStatus =
    "/pluginregistration.Registration/NotifyRegistrationStatus";
// Histogram of every call served on the plugin's sockets, label method_name (full path).
inline constexpr std::string_view kOperationsMetric = "dra_grpc_operations_duration_seconds";
// Counter of claims whose NodePrepareResources failed (the chart's DRA alert).
inline constexpr std::string_view kPrepareFailuresMetric = "spiderpool_dra_prepare_failures_total";
// Longest usable unix socket path: sun_path is 108 bytes including the terminating NUL.
inline constexpr size_t kMaxSocketPathLength = 107;

// $POD_UID (set from the downward API by the DaemonSet), "" when unset.
std::string PodUIDFromEnv();

struct PluginOptions {
  std::string driver_name = std::string(kDefaultDriverName);
  // Where the kubelet's plugin watcher looks for registration sockets.
  std::string registry_dir = std::string(kDefaultRegistryDir);
  // This driver's data directory (DRA socket, serialize.lock). "" = <plugins dir>/<driver>.
  // Must be the same path inside and outside the container (hostPath).
  std::string plugin_dir;
  // "" = classic socket names; set = per-instance names for seamless upgrades.
  std::string pod_uid;
  // TCP port of the grpc.health.v1 server: -1 = none, 0 = any free port (see health_port()).
  int health_port = -1;
  std::string health_host = "0.0.0.0";
  // The devices' health for the kubelet's DRAResourceHealth stream (served on the DRA socket
  // and advertised in GetInfo); must outlive the plugin. nullptr: not served (the kubelet then
  // logs Unimplemented for its stream).
  const DeviceHealthFeed* device_health = nullptr;
  // Where kOperationsMetric is registered; nullptr = Registry::Default().
  kube::metrics::Registry* metrics = nullptr;
  // Stop() lets in-flight calls run this long before cancelling them.
  std::chrono::milliseconds shutdown_grace{5000};
};

struct SocketPaths {
  std::string registration;  // in registry_dir
  std::string dra;           // in plugin_dir; this is PluginInfo.endpoint
};

// The socket paths Start() will use. Classic: <driver>-reg.sock and dra.sock. With a pod UID,
// the first that fits kMaxSocketPathLength of
//   <driver>-<uid>-reg.sock, <driver>-<h8>-reg.sock, dra-<h16>-reg.sock
// where h8 = base64url(sha256(uid)[:8]) and h16 = base64url(sha256(driver NUL uid)[:16])
// (unpadded), and dra-<uid>.sock or else dra-<h8>.sock. InvalidArgument if nothing fits or a
// name is unusable (empty driver, '/' in driver or UID).
absl::StatusOr<SocketPaths> ComputeSocketPaths(const PluginOptions& options);

class Plugin {
 public:
  // `driver` must outlive the plugin; it is called from gRPC threads, one call at a time.
  Plugin(PluginOptions options, Driver* driver);
  ~Plugin();  // Stop()
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  // Creates the directories, serves the DRA service first and then the registration socket
  // (so the kubelet never sees an endpoint that is not listening), then the health server.
  // Stale sockets at this instance's own paths are replaced. Call once.
  absl::Status Start();
  // Graceful: removes the registration socket (the kubelet deregisters this instance and
  // falls back to another one), drains in-flight calls (shutdown_grace), removes the DRA
  // socket, stops health. Removes only this instance's sockets. Idempotent.
  void Stop();

  const PluginOptions& options() const { return options_; }
  // Valid after a successful Start().
  const SocketPaths& sockets() const { return sockets_; }
  // The bound health port after Start(); 0 when disabled.
  int health_port() const { return bound_health_port_; }

  // The last NotifyRegistrationStatus from the kubelet, if any.
  struct RegistrationStatus {
    bool plugin_registered = false;
    std::string error;
  };
  std::optional<RegistrationStatus> registration_status() const;

 private:
  struct Impl;
  PluginOptions options_;
  Driver* driver_;
  SocketPaths sockets_;
  int bound_health_port_ = 0;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spiderpool::dra::kubeletplugin
