#pragma once
// Kubernetes device plugin fallback for clusters without DRA: one extended resource per
// matching host NIC, named like upstream Spiderpool's network resource plugin
// (`spidernet.io/<nic>-nic`, e.g. spidernet.io/eth1-nic), so pods that request
// `resources.limits: {spidernet.io/eth1-nic: 1}` are only scheduled onto nodes with that NIC.
//
// Each resource is served by its own gRPC server (device plugin API v1beta1) on
// `<kubelet_dir>/<prefix with '/'->'_'><nic>-nic.sock` and registered with the kubelet through
// `<kubelet_dir>/kubelet.sock`. Devices are virtual: `devices_per_nic` IDs "<nic>-<i>", all
// Healthy while the NIC is up and all Unhealthy while it is down; ListAndWatch resends the full
// list on every change. Allocate answers the env SPIDERPOOL_NIC_<NIC>=<nic> (see EnvNameFor).
//
// The kubelet deletes every socket in its directory when it restarts and recreates
// kubelet.sock: Resync() notices (our socket gone, or kubelet.sock is a new file) and restarts
// the affected servers and registers them again. Start() runs Resync() on a timer; tests call
// it directly.
//
// Thread-safe: Update, Resync and Stop may be called from any thread.

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dra/deviceplugin/v1beta1/api.pb.h"
#include "dra/nic/nic.h"

namespace spiderpool::dra::deviceplugin {

inline constexpr char kApiVersion[] = "v1beta1";
inline constexpr char kHealthy[] = "Healthy";
inline constexpr char kUnhealthy[] = "Unhealthy";
inline constexpr char kKubeletSocket[] = "kubelet.sock";
// Upper bound for Options::devices_per_nic: keeps the worst-case ListAndWatch message (15-char
// NIC name, every device Unhealthy) around 1.8 MB, under half of gRPC's 4 MiB default receive
// limit that the kubelet's client uses.
inline constexpr int kMaxDevicesPerNic = 50000;

// NIC selection by name. A NIC is served when it matches some `include` glob (fnmatch(3); an
// empty list matches every name) and no `exclude` glob. "lo" is never served.
struct Rules {
  std::vector<std::string> include;
  std::vector<std::string> exclude;
};

struct Options {
  std::string kubelet_dir = "/var/lib/kubelet/device-plugins";
  std::string resource_prefix = "spidernet.io/";  // resource = prefix + nic + "-nic"
  int devices_per_nic = 10000;                    // 1..kMaxDevicesPerNic
  Rules rules;
  // Period of the background Resync() started by Start(); <= 0: Start() runs no thread.
  std::chrono::milliseconds resync_interval{std::chrono::seconds(5)};
  // Deadline of one Register call to the kubelet.
  std::chrono::milliseconds register_timeout{std::chrono::seconds(10)};
};

// --- Pure helpers (exposed for the agent's logs and for tests) ---

bool MatchesRules(const Rules& rules, std::string_view nic_name);
// prefix + nic + "-nic".
std::string ResourceNameFor(std::string_view prefix, std::string_view nic_name);
// The resource name with '/' replaced by '_', + ".sock": "spidernet.io_eth1-nic.sock".
std::string SocketNameFor(std::string_view resource_name);
// "SPIDERPOOL_NIC_" + the NIC name upper-cased with every character outside [A-Z0-9] turned
// into '_': eth1 -> SPIDERPOOL_NIC_ETH1, eth1.100 -> SPIDERPOOL_NIC_ETH1_100.
std::string EnvNameFor(std::string_view nic_name);
// "<nic>-<index>".
std::string DeviceIdFor(std::string_view nic_name, int index);
// The kubelet's rule for an extended resource name: "<domain>/<name>", domain a DNS subdomain
// outside kubernetes.io / k8s.io, name a qualified name (<= 63, [A-Za-z0-9][-A-Za-z0-9_.]*
// ending alphanumeric).
absl::Status ValidateResourceName(std::string_view resource_name);
// The full device list for a NIC, as ListAndWatch sends it.
v1beta1::ListAndWatchResponse DeviceListFor(const nic::Nic& nic, int devices_per_nic);
// The Allocate answer for one NIC; InvalidArgument naming the first ID that is not one of the
// NIC's devices.
absl::StatusOr<v1beta1::AllocateResponse> AllocateFor(const nic::Nic& nic, int devices_per_nic,
                                                      const v1beta1::AllocateRequest& request);

class NicPlugin;  // one resource's gRPC service (manager.cc)

class Manager {
 public:
  // Validates the options (prefix, count, directory exists); serves nothing until Update().
  static absl::StatusOr<std::unique_ptr<Manager>> Create(Options options);
  ~Manager();  // Stop()
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  // The node's current NICs (all of them; the rules pick). Starts and registers a server for
  // each newly matching NIC, pushes a new device list when a served NIC's up/down state
  // changes, stops the server (and removes its socket) of a NIC that is gone or no longer
  // matches. Errors (a server that did not start, a registration the kubelet refused or did not
  // answer) are returned together; what succeeded stays in effect and failed registrations are
  // retried by Resync().
  absl::Status Update(const std::vector<nic::Nic>& nics);

  // One kubelet-restart check: a served socket that vanished -> that server restarts;
  // kubelet.sock replaced since a resource registered, or never registered -> Register again.
  // Cheap (a few stat calls) when nothing changed. Returns registration errors.
  absl::Status Resync();

  // Runs Resync() every options.resync_interval in a background thread (no-op if <= 0).
  void Start();
  // Stops the thread and every server, removes our sockets. Idempotent; Update() afterwards
  // serves again.
  void Stop();

  // Resource names currently served, sorted.
  std::vector<std::string> Resources() const;
  const Options& options() const { return options_; }

 private:
  struct Entry;
  explicit Manager(Options options);

  // All with mu_ held.
  absl::Status StartServer(Entry& entry);
  void StopServer(Entry& entry);
  absl::Status Register(Entry& entry);
  absl::Status SyncLocked();

  const Options options_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Entry>> entries_;  // by NIC name

  std::mutex thread_mu_;
  std::condition_variable thread_cv_;
  bool thread_stop_ = false;
  std::thread thread_;
};

}  // namespace spiderpool::dra::deviceplugin
