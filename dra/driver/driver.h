#pragma once
// NetDriver: the node-side claim logic of the `netresources.spidernet.io` DRA driver, behind
// the kubelet gRPC plugin (dra/kubeletplugin). Per claim, NodePrepareResources:
//
//   checkpoint says PrepareCompleted (and the spec file exists) -> the same answer, no API call
//   GET the ResourceClaim; UID must match; status.allocation must hold results of this driver,
//     all in this node's pool
//   resolve the SpiderClaimParameter from the opaque config (params.h), GET it and the
//     SpiderMultusConfigs it names (validated with api/validation's SpiderClaimParameter rules)
//   checkpoint PrepareStarted -> write the CDI spec atomically -> write our status.devices
//     entries (Ready=True; GET + PUT /status with the resourceVersion, retried on 409, other
//     drivers' entries untouched) -> checkpoint PrepareCompleted
//   answer one device per allocation result, cdi_device_ids ["k8s.netresources.spidernet.io/
//     claim=<uid>"]
//
// A failure after PrepareStarted rolls everything back (spec file, status entries, checkpoint
// entry); a crash in between leaves PrepareStarted, which the next call (or Recover()) rolls
// back. NodeUnprepareResources removes the spec file (by UID, even without a checkpoint entry),
// our status.devices entries (best effort: a missing claim is fine) and the checkpoint entry;
// it is idempotent. Errors are per claim and name the object.
//
// A failed prepare is also recorded (Options::recorder; asynchronous, never delays the answer)
// as a Warning Event, reason kEventReasonPrepareFailed, on each pod in the claim's
// status.reservedFor and on the claim itself; the message
// names the claim, its SpiderMultusConfigs (when resolved) and the error.
//
//   driver::NetDriver d(rest, {.node_name = node, .plugin_dir = dir,
//                              .rdma_library_path = "/usr/lib/librdma_acc.so"});
//   (void)d.Recover();                          // at startup: gauge + crash leftovers
//   kubeletplugin::Plugin plugin(plugin_options, &d);
//   ... IPAM path, once the pod's interface is up:
//   d.ReportNetworkData({ns, uid, name}, {.interface_name = "net1", .ips = {"10.6.0.10/24"}});

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/resource_claim.h"
#include "base/backoff.h"
#include "base/clock.h"
#include "dra/cdi/spec.h"
#include "dra/cdi/writer.h"
#include "dra/checkpoint/checkpoint.h"
#include "dra/driver/params.h"
#include "dra/kubeletplugin/driver.h"
#include "kube/events/recorder.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/rest_client.h"

namespace spiderpool::dra::driver {

// Gauge: claims in state PrepareCompleted in this node's checkpoint.
inline constexpr char kPreparedClaimsMetric[] = "spiderpool_dra_prepared_claims";
// status.devices[].conditions[Ready] written on prepare.
inline constexpr char kReadyReason[] = "Prepared";
// Reason of the Warning Event on the claim's pods when NodePrepareResources fails for it.
inline constexpr char kEventReasonPrepareFailed[] = "DRAPrepareFailed";

struct Options {
  std::string driver_name = kDriverName;
  std::string node_name;  // required
  // The resource.k8s.io version claims are read and written in: "v1" (Kubernetes >= 1.34),
  // "v1beta2" (1.33) or "v1beta1" (1.32); the agent passes the one the server serves.
  // status.devices has the same shape in all three.
  std::string api_version = "v1";
  // The ResourceSlice pool of this node's devices; "" = node_name.
  std::string pool_name;
  // The plugin data directory: holds the checkpoint (hostPath, same inside and outside).
  std::string plugin_dir;
  std::string cdi_dir = cdi::kDefaultSpecDir;
  // Highest cdiVersion chosen without a pin (dra.spidernet.io/cdi-version on the parameter).
  std::string cdi_max_version = cdi::kDefaultMaxVersion;
  // Host path of the RDMA userspace library mounted for rdmaAcc ("" = rdmaAcc claims fail).
  std::string rdma_library_path;
  std::string boot_id;  // "" = read boot_id_path
  std::string boot_id_path = checkpoint::kBootIDPath;
  cdi::FileSystem* fs = cdi::PosixFileSystem();  // spec + checkpoint writes (fault injection)
  kube::metrics::Registry* registry = nullptr;   // nullptr = Registry::Default()
  base::Clock* clock = nullptr;                  // condition timestamps; nullptr = RealClock
  // Warning Events on the pods of claims whose prepare failed (not owned; must outlive the
  // driver); nullptr = the failure is only logged and answered.
  kube::EventRecorder* recorder = nullptr;
  // Retries of the status write on 409 Conflict (client-go's retry.DefaultRetry).
  base::BackoffPolicy conflict_retry = {.initial = absl::Milliseconds(10),
                                        .factor = 1.0,
                                        .jitter = 0.1,
                                        .steps = 5};
};

// What the IPAM path learns about a prepared device (status.devices[].networkData).
struct NetworkData {
  std::string interface_name;     // in the pod, e.g. "net1" (<= 256 bytes)
  std::vector<std::string> ips;   // CIDR form "10.6.0.10/24" (<= 16)
  std::string hardware_address;   // "aa:bb:cc:dd:ee:ff" (<= 128 bytes)
};

class NetDriver : public kubeletplugin::Driver {
 public:
  NetDriver(std::shared_ptr<kube::RestClient> rest, Options options);
  ~NetDriver() override;

  std::map<std::string, kubeletplugin::PrepareResult> Prepare(
      const std::vector<kubeletplugin::ClaimRef>& claims) override;
  std::map<std::string, std::string> Unprepare(
      const std::vector<kubeletplugin::ClaimRef>& claims) override;

  // At startup: loads the checkpoint (a corrupted one is moved aside and reported), rolls back
  // PrepareStarted leftovers and sets the gauge. Prepare/Unprepare do the same on every call,
  // so calling this is optional.
  absl::Status Recover();

  // Sets networkData on our status.devices entry for `device` of the claim ("" = every device
  // of this driver in the claim), creating the entry if prepare has not written it yet. The
  // claim must exist with this UID and have the device allocated by this driver. Other
  // fields of the entry (conditions) are kept. Retried on 409. An empty `data` removes
  // networkData (the pod's addresses were released).
  absl::Status ReportNetworkData(const kubeletplugin::ClaimRef& claim, const NetworkData& data,
                                 std::string_view device = "");

  const Options& options() const { return options_; }
  // The spec file path of a claim UID.
  std::string SpecPath(std::string_view claim_uid) const { return specs_.PathFor(claim_uid); }

 private:
  api::ResourceInfo ClaimResource() const;  // ResourceClaim in options_.api_version
  absl::StatusOr<checkpoint::Data> LoadCheckpoint();
  // Rolls back PrepareStarted entries whose UID is not in `keep`; saves if anything changed.
  void RecoverStale(checkpoint::Data* data, const std::vector<kubeletplugin::ClaimRef>& keep);
  kubeletplugin::PrepareResult PrepareOne(const kubeletplugin::ClaimRef& ref,
                                          checkpoint::Data* data);
  // What a failed prepare knows for its Warning Events.
  struct PrepareFailure {
    std::optional<api::resource_v1::ResourceClaim> claim;  // once read and decoded
    std::vector<std::string> multus_configs;               // "<ns>/<name>", once resolved
  };
  void RecordPrepareFailure(const kubeletplugin::ClaimRef& ref, const PrepareFailure& failure,
                            const std::string& error);
  absl::Status PrepareFresh(const kubeletplugin::ClaimRef& ref, checkpoint::Data* data,
                            kubeletplugin::PrepareResult* out, PrepareFailure* failure);
  // PrepareFresh's steps, in order: read the claim and check what it allocates to this node;
  // fetch and check its SpiderClaimParameter (if any); build the CDI spec and the checkpoint
  // entry; write the spec; mark the devices Ready in status.devices.
  struct AllocatedClaim {
    base::Json raw;  // as read: the first status update uses it instead of a GET
    api::resource_v1::ResourceClaim claim;
    // This driver's results, all in this node's pool (pointers into `claim`).
    std::vector<const api::resource_v1::DeviceRequestAllocationResult*> results;
  };
  absl::Status ReadAllocatedClaim(const kubeletplugin::ClaimRef& ref, AllocatedClaim* out,
                                  PrepareFailure* failure);
  // Fills inputs->parameters (pointing into *scp) and inputs->multus_configs.
  absl::Status LoadClaimParameters(const kubeletplugin::ClaimRef& ref,
                                   const AllocatedClaim& claim, SpecInputs* inputs,
                                   std::optional<api::SpiderClaimParameter>* scp,
                                   PrepareFailure* failure);
  checkpoint::PreparedClaim StartedEntry(const kubeletplugin::ClaimRef& ref,
                                         const AllocatedClaim& claim,
                                         const std::string& cdi_device_id) const;
  absl::Status WriteReadyStatuses(const kubeletplugin::ClaimRef& ref, const AllocatedClaim& claim,
                                  const std::string& cdi_device_id);
  // Undoes a (partial) prepare: spec file, our status entries (best effort), checkpoint entry.
  void Rollback(const std::string& uid, checkpoint::Data* data, bool status_written);
  std::string UnprepareOne(const kubeletplugin::ClaimRef& ref, checkpoint::Data* data,
                           bool* changed);
  // GET + mutate status.devices + PUT /status, retried on conflict. `mutate` returns whether
  // it changed anything (no PUT otherwise). NotFound if the claim is gone or has another UID.
  // `fresh` (optional) is a claim just read: the first attempt uses it instead of a GET.
  absl::Status UpdateDeviceStatuses(
      const kubeletplugin::ClaimRef& ref,
      const std::function<absl::StatusOr<bool>(const api::resource_v1::ResourceClaim& claim,
                                               std::vector<api::resource_v1::AllocatedDeviceStatus>*)>&
          mutate,
      const base::Json* fresh = nullptr);
  // Removes this driver's status entries of the claim: those with `keys`, or (keys == nullptr)
  // every entry of ours in this node's pool. A missing claim or another UID is success.
  absl::Status RemoveStatusEntries(const kubeletplugin::ClaimRef& ref,
                                   const std::vector<checkpoint::StatusKey>* keys);
  void SetGauge(const checkpoint::Data& data);

  std::shared_ptr<kube::RestClient> rest_;
  Options options_;
  base::Clock* clock_;
  cdi::SpecWriter specs_;
  checkpoint::Checkpoint checkpoint_;
  kube::metrics::Gauge* prepared_gauge_;
  std::mutex mu_;  // one call at a time (the plugin serializes too; ReportNetworkData may not)
};

}  // namespace spiderpool::dra::driver
