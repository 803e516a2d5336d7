#pragma once
// SpiderMultusConfig -> NetworkAttachmentDefinition reconcile latency, for the bench binaries
// (//bench:webhook fills "smc_to_nad_reconcile_s" with it).
//
// MeasureSmcToNadSeconds(n): starts a TestCluster (the in-process loopback API server; a real
// cluster with SPIDERPOOL_TEST_KUBECONFIG), applies the chart's CRDs, runs the
// operator/multus controller through op::multus::AddToManager (3 workers, scoped to the test
// namespace), waits until a warm-up SMC has its NAD (caches synced, workers running), then
// creates n macvlan SMCs (4 client threads) and returns the wall-clock seconds from the first
// create until all n NADs exist with the expected config (compared as JSON) and the controller
// ownerReference, as seen by a watch. Fails (DeadlineExceeded) after max(120 s, 100 ms * n).

#include "absl/status/statusor.h"

namespace spiderpool::bench {

absl::StatusOr<double> MeasureSmcToNadSeconds(int n);

}  // namespace spiderpool::bench
