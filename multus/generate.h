#pragma once
// SpiderMultusConfig -> Multus NetworkAttachmentDefinition, as upstream Spiderpool's controller
// generates it (pkg/multuscniconfig; reference docs/reference/spiderpool.md §4):
//
//   name        the `multus.spidernet.io/cr-name` annotation, else the SMC's name;
//   namespace   the SMC's;
//   annotations every SMC annotation, plus `k8s.v1.cni.cncf.io/resourceName` for sriov and
//               ib-sriov (spec.<type>.resourceName) and for ovs with a deviceID
//               ("ovs-cni.network.kubevirt.io/<bridge>");
//   spec.config {"cniVersion": <`multus.spidernet.io/cni-version` annotation, else "0.3.1">,
//                "name": <`cni.spidernet.io/cniconfig-name` annotation, else the NAD name>,
//                "plugins": [...]}, plugins per cniType:
//     macvlan  [ifacer if vlanID != 0 or >= 2 masters] macvlan{master: <master|bond>[.vlanID],
//              mode: bridge, mtu, ipam} chain... [coordinator]
//     ipvlan   the same without `mode`
//     vlan     [ifacer if >= 2 masters] vlan{master, vlanMode, vlanId (manual only), mtu, ipam}
//              chain... [coordinator]
//     sriov    sriov{vlan, min_tx_rate, max_tx_rate, ipam (+match_master_subnet)}
//              [rdma if rdmaIsolation] chain... [coordinator] [tuning{mtu} if mtu > 0]
//     ib-sriov ib-sriov{pkey, link_state, rdmaIsolation, ibKubernetesEnabled, ipam} chain...
//              [coordinator]
//     ipoib    ipoib{master, ipam} chain... [coordinator]
//     ovs      ovs{vlan, bridge, deviceID, ipam, trunk} chain... [coordinator]
//     custom   spec.customCNI verbatim (empty: a NAD without config); no chain, no coordinator.
//   ipam is {"type":"spiderpool","default_ipv4_ippool":[..],"default_ipv6_ippool":[..]} (empty
//   lists left out), absent with disableIPAM; the coordinator entry carries the SMC's
//   spec.coordinator fields (unset ones are inherited from the SpiderCoordinator at ADD time).
//
// The text is written the way Go's encoding/json writes upstream's structs (same key order,
// `<>&` escaped), so it is usually byte-identical to upstream's; compare configs as JSON
// (CNIConfigsEqual), never as strings.

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "api/nad.h"
#include "api/spider_multusconfig.h"

namespace spiderpool::multus {

inline constexpr std::string_view kOvsResourcePrefix = "ovs-cni.network.kubevirt.io";

struct Options {
  // Run DefaultSpiderMultusConfig (multus/defaults.h) on a copy first, so the result is what
  // upstream generates from the object a real API server stores, whether or not our webhook
  // ran. Off: generate from the object as given (unset cniType = custom, unset
  // enableCoordinator = true, as upstream assumes).
  bool apply_defaults = true;
};

// The NAD name for `smc`: the cr-name annotation if present, else metadata.name.
std::string NADName(const api::SpiderMultusConfig& smc);

// spec.config alone ("" for a custom SMC without customCNI). InvalidArgument when the SMC cannot
// be generated (unknown cniType, its config block missing, several masters without a bond,
// a chainCNIJsonData item or customCNI that is not JSON).
absl::StatusOr<std::string> GenerateCNIConfig(const api::SpiderMultusConfig& smc,
                                              const Options& options = {});

// The NAD for `smc`: TypeMeta, name, namespace, annotations, spec.config. No ownerReference.
absl::StatusOr<api::NetworkAttachmentDefinition> GenerateNAD(const api::SpiderMultusConfig& smc,
                                                             const Options& options = {});

// GenerateNAD plus a controller ownerReference to `smc` (blockOwnerDeletion; uses
// smc.metadata.uid): the object the controller creates, or compares with what exists.
absl::StatusOr<api::NetworkAttachmentDefinition> BuildDesiredNAD(
    const api::SpiderMultusConfig& smc, const Options& options = {});

// True if the two CNI config texts are the same JSON value (key order, spacing and escaping
// do not matter). Texts that are not JSON are equal only if byte-identical.
bool CNIConfigsEqual(std::string_view a, std::string_view b);

// True if `actual` (as read from the API server) lacks what `desired` owns:
//   - spec.config differs as JSON (CNIConfigsEqual);
//   - an annotation of `desired` is missing or has another value, or `actual` carries
//     k8s.v1.cni.cncf.io/resourceName that `desired` does not (a stale device request);
//     other annotations on `actual` are left alone;
//   - `desired` has a controller ownerReference and `actual` is not controlled by that uid.
bool NADNeedsUpdate(const api::NetworkAttachmentDefinition& desired,
                    const api::NetworkAttachmentDefinition& actual);

// Writes what `desired` owns into `actual` (the object to PUT back; resourceVersion and
// everything else stay): config, owned annotations, and, if `actual` is not controlled by
// desired's owner, the controller reference (other controller references and any reference
// with that uid are replaced; non-controller references stay). Returns true if anything
// changed; afterwards NADNeedsUpdate(desired, *actual) is false.
bool ApplyDesiredNAD(const api::NetworkAttachmentDefinition& desired,
                     api::NetworkAttachmentDefinition* actual);

}  // namespace spiderpool::multus
