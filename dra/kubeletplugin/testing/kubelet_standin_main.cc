// kubelet-standin: the kubelet's side of the DRA plugin protocol, from the command line, for
// the local demo and for poking a running agent by hand (no kubelet on this machine).
//
//   kubelet-standin --registry-dir=DIR [--driver=netresources.spidernet.io] [--v1beta1]
//                   prepare|unprepare NAMESPACE NAME UID
//
// Does the plugin-watcher handshake on every registration socket in DIR (GetInfo,
// NotifyRegistrationStatus), then calls NodePrepareResources / NodeUnprepareResources on the
// newest registered instance and prints the answer as JSON. Exit 1 on any error, including a
// per-claim error in the answer.
#include <iostream>

#include "absl/flags/flag.h"
#include "base/flags.h"
#include "base/json.h"
#include "base/sigpipe.h"
#include "dra/kubeletplugin/testing/fake_kubelet.h"

ABSL_FLAG(std::string, registry_dir, "/var/lib/kubelet/plugins_registry", "plugin registration directory");
ABSL_FLAG(std::string, driver, "netresources.spidernet.io", "DRA driver name");
ABSL_FLAG(bool, v1beta1, false, "use the v1beta1 DRA service even if v1 is offered");

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
  using namespace spiderpool;
  using namespace spiderpool::dra::kubeletplugin;
  std::vector<std::string> args = base::ParseFlags(argc, argv, "kubelet-standin: call a DRA kubelet plugin");
  if (args.size() != 5) {
    std::cerr << "usage: kubelet-standin [flags] prepare|unprepare NAMESPACE NAME UID\n";
    return 2;
  }
  const std::string command = args[1];
  const ClaimRef claim{.namespace_ = args[2], .uid = args[4], .name = args[3]};
  testing::FakeKubelet kubelet({.registry_dir = absl::GetFlag(FLAGS_registry_dir),
                                .driver_name = absl::GetFlag(FLAGS_driver),
                                .force_v1beta1 = absl::GetFlag(FLAGS_v1beta1)});
  if (absl::Status s = kubelet.Discover(); !s.ok()) {
    std::cerr << "kubelet-standin: discovering plugins: " << s << "\n";
    return 1;
  }
  absl::StatusOr<testing::FakeKubelet::Instance> current = kubelet.current();
  if (!current.ok()) {
    std::cerr << "kubelet-standin: " << current.status() << "\n";
    return 1;
  }
  base::Json out = {{"plugin", current->registration_socket},
                    {"endpoint", current->endpoint},
                    {"service", current->service}};
  bool failed = false;
  if (command == "prepare") {
    auto r = kubelet.Prepare({claim});
    if (!r.ok()) {
      std::cerr << "kubelet-standin: NodePrepareResources: " << r.status() << "\n";
      return 1;
    }
    for (const auto& [uid, result] : *r) {
      base::Json devices = base::Json::array();
      for (const auto& d : result.devices) {
        devices.push_back({{"requestNames", d.request_names},
                           {"poolName", d.pool_name},
                           {"deviceName", d.device_name},
                           {"cdiDeviceIDs", d.cdi_device_ids}});
      }
      out["claims"][uid] = {{"devices", devices}, {"error", result.error}};
      failed |= !result.error.empty();
    }
  } else if (command == "unprepare") {
    auto r = kubelet.Unprepare({claim});
    if (!r.ok()) {
      std::cerr << "kubelet-standin: NodeUnprepareResources: " << r.status() << "\n";
      return 1;
    }
    for (const auto& [uid, error] : *r) {
      out["claims"][uid] = {{"error", error}};
      failed |= !error.empty();
    }
  } else {
    std::cerr << "kubelet-standin: unknown command " << command << "\n";
    return 2;
  }
  std::cout << base::DumpJsonPretty(out) << "\n";
  return failed ? 1 : 0;
}
