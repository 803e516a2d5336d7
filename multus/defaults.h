#pragma once
// The defaults a SpiderMultusConfig gets on its way into the API server (reference §4
// "Mutating defaults", §1.5), as pure functions:
//
//   ApplyCrdDefaults       the `default:` values of the SpiderMultusConfig CRD schema, which the
//                          API server applies to every object it decodes, only where the parent
//                          object exists (macvlan.mtu only if spec.macvlan is set, ...);
//   ApplyWebhookDefaults   upstream's mutating webhook (pkg/multuscniconfig mutate): per-cniType
//                          zero values, coordinator defaults, custom => no coordinator, and the
//                          cni.spidernet.io/{rdma,network}-resource-inject annotations copied
//                          into labels of the same key;
//   DefaultSpiderMultusConfig
//                          CRD defaults, webhook, CRD defaults again: what a real API server
//                          stores (it defaults on decode, calls the webhook, and defaults the
//                          patched object again). Idempotent.
//
// Validation (reference §5) is not here: see api/validation.

#include <string_view>

#include "api/spider_multusconfig.h"

namespace spiderpool::multus {

// spec.vlan.vlanMode values.
inline constexpr std::string_view kVlanModeManual = "manual";
inline constexpr std::string_view kVlanModeAuto = "auto";

void ApplyCrdDefaults(api::SpiderMultusConfig* smc);
void ApplyWebhookDefaults(api::SpiderMultusConfig* smc);
void DefaultSpiderMultusConfig(api::SpiderMultusConfig* smc);

}  // namespace spiderpool::multus
