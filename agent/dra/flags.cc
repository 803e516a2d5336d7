#include "agent/dra/flags.h"

#include "absl/flags/flag.h"

// DRA (Kubernetes >= 1.32 with resource.k8s.io served) and its device-plugin fallback.
ABSL_FLAG(bool, dra_enabled, false, "publish ResourceSlices and serve the kubelet DRA plugin");
ABSL_FLAG(std::string, dra_driver_name, "netresources.spidernet.io", "DRA driver name");
ABSL_FLAG(std::string, dra_cdi_dir, "/var/run/cdi", "where CDI spec files of prepared claims go");
ABSL_FLAG(std::string, dra_cdi_version, "", "highest cdiVersion written unless a SpiderClaimParameter pins one (\"\" = 0.5.0)");
ABSL_FLAG(std::string, dra_rdma_library, "", "host path of the RDMA library mounted for rdmaAcc claims");
ABSL_FLAG(int, dra_slots_per_nic, 32, "devices (pods) published per NIC, capped by the free IPs of its pools");
ABSL_FLAG(std::string, dra_declared_subnets, "", "subnets of NICs without a host address in them: eth1=10.7.0.0/24,eth1=fd00:7::/64,...");
ABSL_FLAG(std::string, dra_resource_names, "", "k8s.cni.cncf.io/resourceName per NIC (SR-IOV device plugin resources): ens1f0=spidernet.io/sriov_a,...");
ABSL_FLAG(int, dra_health_port, 5713, "TCP port of the gRPC health service of the DRA plugin (-1 = off)");
ABSL_FLAG(std::string, kubelet_registry_dir, "/var/lib/kubelet/plugins_registry", "kubelet plugin registration directory");
ABSL_FLAG(std::string, kubelet_plugins_dir, "/var/lib/kubelet/plugins", "kubelet plugins directory (the DRA socket goes in <dir>/<driver>)");
ABSL_FLAG(bool, device_plugin_enabled, false, "advertise spidernet.io/<nic>-nic through the kubelet device-plugin API (clusters without DRA)");
ABSL_FLAG(std::string, kubelet_device_plugins_dir, "/var/lib/kubelet/device-plugins", "kubelet device-plugin directory");
ABSL_FLAG(std::string, nic_include, "", "comma-separated globs of NIC names to use (\"\" = all)");
ABSL_FLAG(std::string, nic_exclude, "", "comma-separated globs of NIC names never to use");
ABSL_FLAG(std::string, nic_netns, "", "discover NICs in this network namespace (path) instead of the agent's own");
ABSL_FLAG(std::string, sysfs_root, "/sys", "sysfs mount for PCI/NUMA/SR-IOV/RDMA facts of NICs");
