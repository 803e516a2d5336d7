#pragma once
// The chart's pre-delete hook (`spiderpool-controller --cleanup`): before `helm uninstall`
// removes the release, release what only the controller would release, so that nothing is
// left Terminating once it is gone.
//
//   1. scale the controller Deployment to 0;
//   2. delete its Mutating/ValidatingWebhookConfiguration (no admission webhook left that
//      nothing answers, even if step 3 fails; new pools get no finalizer), then wait until
//      none of the controller's pods exist (a terminating replica could still add or rely on
//      finalizers);
//   3. remove the finalizer `spiderpool.spidernet.io` (only ours; other finalizers stay) from
//      every Spider* object that carries it (pools, subnets, coordinators, endpoints, and any
//      other Spider kind): terminating ones are then deleted by the API server, the others
//      no longer hang when they are deleted later.
//
// Step 3 runs only once the controller's pods are gone: if they do not go within `timeout`,
// Run fails (kDeadlineExceeded, naming them) without touching a finalizer.
// Kinds whose CRD is not installed are skipped. Per-object failures do not stop the others;
// the result names every object that could not be released.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "kube/rest/rest_client.h"

namespace spiderpool::op::cleanup {

struct Options {
  // Namespace of the controller Deployment.
  std::string namespace_ = "kube-system";
  // The controller Deployment to stop first; "" = do not stop anything.
  std::string controller_deployment = "spiderpool-controller";
  // Name of the Mutating and the Validating WebhookConfiguration to delete; "" = none.
  std::string webhook_configuration = "spiderpool-controller";
  // Restricts step 3 to objects with these labels (tests on a shared cluster); "" = all.
  std::string label_selector;
  // How long the controller's pods may take to go.
  absl::Duration timeout = absl::Minutes(2);
  absl::Duration poll_interval = absl::Seconds(1);
  base::Clock* clock = &base::RealClock::Get();
};

struct Result {
  bool controller_scaled_down = false;           // the Deployment was found and set to 0
  std::vector<std::string> webhook_configurations_deleted;  // "Kind/name"
  std::vector<std::string> finalizers_removed;   // "Kind/name" or "Kind/ns/name"
};

// Runs steps 1-3. Errors name the object and the step.
absl::StatusOr<Result> Run(const std::shared_ptr<kube::RestClient>& rest, const Options& options);

}  // namespace spiderpool::op::cleanup
