#pragma once
// The agent's DRA and device-plugin flags. Both binaries define them (spiderpool-agent parses
// the same arguments before it execs spiderpool-agent-dra); only compose.cc reads them all.

#include <string>

#include "absl/flags/declare.h"

ABSL_DECLARE_FLAG(bool, dra_enabled);
ABSL_DECLARE_FLAG(std::string, dra_driver_name);
ABSL_DECLARE_FLAG(std::string, dra_cdi_dir);
ABSL_DECLARE_FLAG(std::string, dra_cdi_version);
ABSL_DECLARE_FLAG(std::string, dra_rdma_library);
ABSL_DECLARE_FLAG(int, dra_slots_per_nic);
ABSL_DECLARE_FLAG(std::string, dra_declared_subnets);
ABSL_DECLARE_FLAG(std::string, dra_resource_names);
ABSL_DECLARE_FLAG(int, dra_health_port);
ABSL_DECLARE_FLAG(std::string, kubelet_registry_dir);
ABSL_DECLARE_FLAG(std::string, kubelet_plugins_dir);
ABSL_DECLARE_FLAG(bool, device_plugin_enabled);
ABSL_DECLARE_FLAG(std::string, kubelet_device_plugins_dir);
ABSL_DECLARE_FLAG(std::string, nic_include);
ABSL_DECLARE_FLAG(std::string, nic_exclude);
ABSL_DECLARE_FLAG(std::string, nic_netns);
ABSL_DECLARE_FLAG(std::string, sysfs_root);
