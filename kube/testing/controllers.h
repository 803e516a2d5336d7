#pragma once
// The part of kube-controller-manager that kube-apiserver's clients see without asking for it,
// run against the loopback server's core on one background thread, through the same request
// path as any client (admission included), asynchronously as in a real cluster:
//   - root-ca-cert-publisher: ConfigMap kube-root-ca.crt (data ca.crt = the server's CA) in
//     every namespace, put back when deleted;
//   - serviceaccount controller: ServiceAccount "default" in every namespace;
//   - namespace controller: a terminating namespace's contents are deleted (pods gracefully),
//     then the namespace is finalized and removed;
//   - garbage collector: dependents whose owners are all gone are deleted (background
//     propagation), dangling owner references of objects with a live owner are removed,
//     propagationPolicy Orphan / Foreground are carried out through the "orphan" /
//     "foregroundDeletion" finalizers.
// Internal to kube/testing.

#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "kube/testing/core.h"

namespace spiderpool::kube::testing::internal {

class Controllers {
 public:
  Controllers(Core* core, std::string root_ca_pem);
  ~Controllers();  // stops
  Controllers(const Controllers&) = delete;
  Controllers& operator=(const Controllers&) = delete;

  void Start();
  void Stop();

 private:
  void OnEvent(std::string_view type, const ObjectRef& ref, const StoredPtr& prev);
  void Run(std::stop_token stop);
  // One request as system:kube-controller-manager; returns the HTTP code.
  int Request(const std::string& method, const std::string& path, const base::Json& body,
              const std::string& content_type = "application/json");
  void EnsureNamespaceDefaults(const std::string& ns);
  // Deletes what is left in `ns`; true once it is empty and finalized.
  bool SyncTerminatingNamespace(const std::string& ns);
  // Deletes `ref` if all its owners are gone, or drops its dangling owner references.
  void VerifyOwners(const ObjectRef& ref);
  // Carries out the orphan / foregroundDeletion finalizer of a deleting owner.
  void ProcessOwnerFinalizers(const ObjectRef& owner);

  Core* core_;
  std::string root_ca_pem_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> new_namespaces_;          // guarded by mu_
  std::set<std::string> terminating_namespaces_;  // guarded by mu_
  std::set<std::string> gone_uids_;               // guarded by mu_
  std::deque<ObjectRef> check_owners_;            // guarded by mu_
  std::deque<ObjectRef> owner_finalizers_;        // guarded by mu_
  std::deque<ObjectRef> waiting_owners_;          // guarded by mu_; foreground, dependents left
  bool stopping_ = false;                         // guarded by mu_
  std::jthread thread_;
};

}  // namespace spiderpool::kube::testing::internal
