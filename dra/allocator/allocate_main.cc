// dra-allocate: plays kube-scheduler's DRA part for one ResourceClaim on a cluster without a
// scheduler (the loopback API server in tools/demo.sh): reads the DeviceClasses, the
// ResourceSlices and every claim's allocation (resource.k8s.io/v1), runs dra/allocator and
// writes status.allocation (+ reservedFor the pod named by --pod).
//
//   dra-allocate --kubeconfig=K --namespace=default dra-demo-0-nic --pod=dra-demo-0
//   -> "allocated default/dra-demo-0-nic on node1: node1/eth0-0"            (exit 0)
//   -> "unallocated default/x: cannot allocate all claims: node1: ..."      (exit 3)
// Errors (API, unsupported selector or claim feature): message on stderr, exit 1.

#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "api/codec.h"
#include "api/resource_claim.h"
#include "api/resource_slice.h"
#include "base/flags.h"
#include "base/json.h"
#include "base/strings.h"
#include "dra/allocator/allocator.h"
#include "kube/rest/config.h"
#include "kube/rest/rest_client.h"

ABSL_FLAG(std::string, kubeconfig, "", "kubeconfig file");
ABSL_FLAG(std::string, namespace, "default", "namespace of the claim");
ABSL_FLAG(std::string, pod, "", "pod to put in status.reservedFor (optional)");

namespace {

using namespace spiderpool;  // NOLINT
namespace rv1 = api::resource_v1;
constexpr std::string_view kBase = "/apis/resource.k8s.io/v1";

absl::StatusOr<base::Json> Get(kube::RestClient& rest, const std::string& path) {
  absl::StatusOr<kube::Response> r = rest.Do({.path = path});
  if (!r.ok()) return absl::Status(r.status().code(), base::StrCat("GET ", path, ": ", r.status().message()));
  return base::ParseJson(r->body);
}

int Run(const std::string& claim_name) {
  auto fail = [](const absl::Status& s) {
    std::cerr << "dra-allocate: " << s << "\n";
    return 1;
  };
  absl::StatusOr<kube::Config> config = kube::LoadKubeconfig(absl::GetFlag(FLAGS_kubeconfig));
  if (!config.ok()) return fail(config.status());
  auto rest = kube::RestClient::Create(*config);
  if (!rest.ok()) return fail(rest.status());
  const std::string ns = absl::GetFlag(FLAGS_namespace);

  std::vector<api::DeviceClass> classes;
  std::vector<api::ResourceSlice> slices;
  std::vector<rv1::ResourceClaim> claims;
  auto cl = Get(**rest, base::StrCat(kBase, "/deviceclasses"));
  if (!cl.ok()) return fail(cl.status());
  for (const base::Json& o : (*cl)["items"]) {
    auto c = api::DecodeDeviceClassFrom(o, "v1");
    if (!c.ok()) return fail(c.status());
    classes.push_back(*std::move(c));
  }
  auto sl = Get(**rest, base::StrCat(kBase, "/resourceslices"));
  if (!sl.ok()) return fail(sl.status());
  for (const base::Json& o : (*sl)["items"]) {
    auto s = api::DecodeResourceSliceFrom(o, "v1");
    if (!s.ok()) return fail(s.status());
    slices.push_back(*std::move(s));
  }
  auto rc = Get(**rest, base::StrCat(kBase, "/resourceclaims"));
  if (!rc.ok()) return fail(rc.status());
  for (const base::Json& o : (*rc)["items"]) {
    auto c = rv1::DecodeResourceClaim(o);
    if (!c.ok()) return fail(c.status());
    claims.push_back(*std::move(c));
  }
  const std::string path = base::StrCat(kBase, "/namespaces/", ns, "/resourceclaims/", claim_name);
  auto cj = Get(**rest, path);
  if (!cj.ok()) return fail(cj.status());
  auto claim = rv1::DecodeResourceClaim(*cj);
  if (!claim.ok()) return fail(claim.status());
  const std::string who = base::StrCat(ns, "/", claim_name);
  if (claim->status.allocation) {
    std::cout << "already allocated " << who << "\n";
    return 0;
  }
  auto outcome = spiderpool::dra::allocator::Allocate(
      *claim, classes, slices, spiderpool::dra::allocator::InUse(claims, claim->metadata.uid));
  if (!outcome.ok()) return fail(outcome.status());
  if (!outcome->allocated) {
    std::cout << "unallocated " << who << ": " << outcome->reason << "\n";
    return 3;
  }
  base::Json status = {{"allocation", api::Encode(outcome->allocation)}};
  if (const std::string pod = absl::GetFlag(FLAGS_pod); !pod.empty()) {
    auto pj = Get(**rest, base::StrCat("/api/v1/namespaces/", ns, "/pods/", pod));
    if (!pj.ok()) return fail(pj.status());
    status["reservedFor"] = base::Json::array(
        {{{"resource", "pods"}, {"name", pod}, {"uid", (*pj)["metadata"]["uid"]}}});
  }
  auto patched = (*rest)->Do({.method = "PATCH",
                              .path = path + "/status",
                              .body = base::DumpJson(base::Json{{"status", status}}),
                              .content_type = "application/merge-patch+json"});
  if (!patched.ok()) return fail(patched.status());
  std::cout << "allocated " << who << " on " << outcome->node << ":";
  for (const auto& r : outcome->allocation.devices.results) std::cout << " " << r.pool << "/" << r.device;
  std::cout << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args = spiderpool::base::ParseFlags(
      argc, argv, "dra-allocate: allocate a ResourceClaim as kube-scheduler would (no scheduler here)");
  if (args.size() != 2) {
    std::cerr << "usage: dra-allocate [--kubeconfig=K] [--namespace=NS] [--pod=POD] CLAIM\n";
    return 2;
  }
  return Run(args[1]);
}
