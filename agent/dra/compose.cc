// compose.h for spiderpool-agent-dra: the node's devices, the claims' networkData and the
// kubelet DRA plugin as runnables of the agent's manager.

#include "agent/dra/compose.h"

#include <iostream>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/dra/flags.h"
#include "agent/dra/network_data.h"
#include "agent/dra/node_devices.h"
#include "base/log.h"
#include "base/status.h"
#include "dra/driver/driver.h"
#include "dra/kubeletplugin/plugin.h"
#include "dra/resourceslice/publisher.h"
#include "kube/rest/client.h"

namespace spiderpool::agent::dra {
namespace {

namespace kp = ::spiderpool::dra::kubeletplugin;
namespace drv = ::spiderpool::dra::driver;

std::vector<std::string> Globs(const std::string& csv) {
  std::vector<std::string> out;
  for (absl::string_view g : absl::StrSplit(csv, ',', absl::SkipWhitespace())) {
    out.emplace_back(absl::StripAsciiWhitespace(g));
  }
  return out;
}

// What the runnables share; each holds it, so it lives as long as the last of them.
struct Parts {
  kp::DeviceHealthFeed device_health;  // before its users: outlives them
  std::unique_ptr<NodeDevices> devices;
  std::unique_ptr<drv::NetDriver> claim_driver;
  std::unique_ptr<NetworkDataReporter> network_data;  // uses claim_driver
  std::unique_ptr<kp::Plugin> plugin;                 // uses claim_driver, device_health
};

// NICs -> ResourceSlices (DRA) and/or device-plugin resources, sized by the cached pools and
// refreshed when a pool or this node changes.
absl::Status BuildDevices(const NodeParts& in, bool dra, bool device_plugin, Parts& parts) {
  NodeDevicesOptions o{.node_name = in.node_name,
                       .netns_path = absl::GetFlag(FLAGS_nic_netns),
                       .publish_slices = dra,
                       .device_plugin = device_plugin,
                       .registry = in.registry};
  o.discovery.sysfs_root = absl::GetFlag(FLAGS_sysfs_root);
  o.model.driver = absl::GetFlag(FLAGS_dra_driver_name);
  o.model.slots_per_nic = absl::GetFlag(FLAGS_dra_slots_per_nic);
  o.model.include_interfaces = Globs(absl::GetFlag(FLAGS_nic_include));
  o.model.exclude_interfaces = Globs(absl::GetFlag(FLAGS_nic_exclude));
  SP_RETURN_IF_ERROR(
      ParseDeclaredSubnets(absl::GetFlag(FLAGS_dra_declared_subnets), &o.model.declared_subnets));
  SP_RETURN_IF_ERROR(
      ParseResourceNames(absl::GetFlag(FLAGS_dra_resource_names), &o.model.resource_names));
  o.device_plugin_options.kubelet_dir = absl::GetFlag(FLAGS_kubelet_device_plugins_dir);
  o.device_plugin_options.rules = {.include = o.model.include_interfaces,
                                   .exclude = o.model.exclude_interfaces};
  if (dra) {
    o.device_health = &parts.device_health;  // NIC link state -> the kubelet's stream
    // Slices die with their Node (ownerReference), when the Node is there to own them.
    if (absl::StatusOr<api::Node> n = kube::Client<api::Node>(in.rest).Get("", in.node_name);
        n.ok()) {
      o.publisher.node_uid = n->metadata.uid;
    }
  }
  ipam::Caches* caches = in.caches;
  parts.devices = std::make_unique<NodeDevices>(
      in.rest, o, [caches, node = in.node_name, handed_out = in.handed_out] {
        return PoolCapacities(caches->pools.List(), node, caches->NodeLabels(),
                              handed_out);
      });
  NodeDevices* d = parts.devices.get();
  auto refresh = [d](const auto&) { d->Refresh(); };
  caches->pools.AddHandlers(
      {.on_add = refresh,
       .on_update = [d](const api::SpiderIPPool&, const api::SpiderIPPool&) { d->Refresh(); },
       .on_delete = refresh});
  caches->node.AddHandlers(  // the cache holds this node only
      {.on_add = refresh,
       .on_update = [d](const api::Node&, const api::Node&) { d->Refresh(); },
       .on_delete = refresh});
  return absl::OkStatus();
}

// The kubelet DRA plugin with the claim driver, and the claims' networkData.
void BuildPlugin(const NodeParts& in, Parts& parts) {
  const std::string driver_name = absl::GetFlag(FLAGS_dra_driver_name);
  const std::string plugin_dir = absl::GetFlag(FLAGS_kubelet_plugins_dir) + "/" + driver_name;
  drv::Options d{.driver_name = driver_name,
                 .node_name = in.node_name,
                 .plugin_dir = plugin_dir,
                 .cdi_dir = absl::GetFlag(FLAGS_dra_cdi_dir),
                 .rdma_library_path = absl::GetFlag(FLAGS_dra_rdma_library),
                 .registry = in.registry,
                 .recorder = in.recorder};
  if (!absl::GetFlag(FLAGS_dra_cdi_version).empty()) {
    d.cdi_max_version = absl::GetFlag(FLAGS_dra_cdi_version);
  }
  // Claims in the version the server serves (v1, else v1beta2, else v1beta1), like the slices.
  if (absl::StatusOr<std::string> v =
          ::spiderpool::dra::resourceslice::DiscoverResourceApiVersion(*in.rest);
      v.ok()) {
    d.api_version = *v;
  } else {
    SP_LOG(Warning).Msg("resource.k8s.io not served; claims will be read as v1")
        .KV("error", v.status());
  }
  parts.claim_driver = std::make_unique<drv::NetDriver>(in.rest, d);
  // status.devices[].networkData from this node's SpiderEndpoints (the IPAM results).
  NodeDevices* devices = parts.devices.get();
  parts.network_data = std::make_unique<NetworkDataReporter>(
      in.rest, parts.claim_driver.get(),
      NetworkDataOptions{.node_name = in.node_name, .driver = driver_name},
      [devices] { return devices != nullptr ? devices->devices() : std::vector<api::Device>{}; },
      &in.caches->endpoints);
  parts.plugin = std::make_unique<kp::Plugin>(
      kp::PluginOptions{.driver_name = driver_name,
                        .registry_dir = absl::GetFlag(FLAGS_kubelet_registry_dir),
                        .plugin_dir = plugin_dir,
                        .pod_uid = kp::PodUIDFromEnv(),
                        .health_port = absl::GetFlag(FLAGS_dra_health_port),
                        .device_health = &parts.device_health,
                        .metrics = in.registry},
      parts.claim_driver.get());
}

}  // namespace

absl::Status ExecDraAgentIfAsked(char**) { return absl::OkStatus(); }

absl::Status AddToManager(kube::Manager& manager, const NodeParts& in) {
  const bool dra = absl::GetFlag(FLAGS_dra_enabled);
  const bool device_plugin = absl::GetFlag(FLAGS_device_plugin_enabled);
  if (!dra && !device_plugin) return absl::OkStatus();
  auto parts = std::make_shared<Parts>();
  SP_RETURN_IF_ERROR(BuildDevices(in, dra, device_plugin, *parts));
  manager.Add(std::make_unique<kube::StartStopRunnable>(
      "NIC discovery", [parts] { return parts->devices->Start(); },
      [parts] { parts->devices->Stop(); }));
  if (!dra) return absl::OkStatus();
  BuildPlugin(in, *parts);
  manager.Add(std::make_unique<kube::StartStopRunnable>(
      "DRA network data",
      [parts] {
        parts->network_data->Start();
        return absl::OkStatus();
      },
      [parts] { parts->network_data->Stop(); }));
  manager.Add(std::make_unique<kube::StartStopRunnable>(
      "DRA kubelet plugin",
      [parts]() -> absl::Status {
        // A claim half-prepared before a crash is finished or rolled back before serving.
        if (absl::Status s = parts->claim_driver->Recover(); !s.ok()) {
          SP_LOG(Warning).Msg("DRA checkpoint recovery").KV("error", s);
        }
        SP_RETURN_IF_ERROR(parts->plugin->Start());
        std::cout << "dra_registration_socket=" << parts->plugin->sockets().registration << "\n"
                  << "dra_socket=" << parts->plugin->sockets().dra << "\n";
        if (parts->plugin->health_port() > 0) {
          std::cout << "dra_health_port=" << parts->plugin->health_port() << "\n";
        }
        std::cout.flush();
        return absl::OkStatus();
      },
      [parts] { parts->plugin->Stop(); }));
  return absl::OkStatus();
}

}  // namespace spiderpool::agent::dra
