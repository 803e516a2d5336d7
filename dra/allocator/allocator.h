#pragma once
// A small stand-in for kube-scheduler's structured-parameters allocator, for the loopback API
// server (which has no scheduler): the demo and the tests allocate ResourceClaims with it,
// honestly — by evaluating the DeviceClass and request CEL selectors (cel.h's subset) against
// the published ResourceSlices.
//
//   SP_ASSIGN_OR_RETURN(Outcome o, Allocate(claim, classes, slices, InUse(claims)));
//   if (!o.allocated) print(o.reason);   // e.g. why no node serves the claim's network
//
// Supported: requests `exactly` with allocationMode ExactCount (count, default 1), selectors
// of the class and the request, config (class first, then claim). Devices in node-local slices
// (spec.nodeName) of the newest generation per (driver, pool); one node for the whole claim,
// nodes tried in name order, devices in slice order; a device is given to one claim at a time.
// Not supported (an error, never ignored): firstAvailable, allocationMode All, adminAccess,
// capacity requests, constraints. Slices for several nodes (nodeSelector / allNodes) are
// skipped.

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "api/resource_claim.h"
#include "api/resource_slice.h"

namespace spiderpool::dra::allocator {

// (driver, pool, device).
using DeviceId = std::tuple<std::string, std::string, std::string>;

// The devices the allocations of `claims` hold (except `except_uid`'s own).
std::set<DeviceId> InUse(const std::vector<api::resource_v1::ResourceClaim>& claims,
                         const std::string& except_uid = "");

struct Outcome {
  bool allocated = false;
  std::string node;
  api::resource_v1::AllocationResult allocation;  // when allocated
  // When not: why, per node ("node2: request \"nic\": 32 devices of class ..., none
  // passes selector 3 (...)"), or that no node publishes devices.
  std::string reason;
};

// Errors: an unsupported claim feature or selector (InvalidArgument / Unimplemented, naming
// the field). A missing DeviceClass or a CEL runtime error leaves the claim unallocated with
// the reason, as the scheduler does.
absl::StatusOr<Outcome> Allocate(const api::resource_v1::ResourceClaim& claim,
                                 const std::vector<api::DeviceClass>& classes,
                                 const std::vector<api::ResourceSlice>& slices,
                                 const std::set<DeviceId>& in_use);

}  // namespace spiderpool::dra::allocator
