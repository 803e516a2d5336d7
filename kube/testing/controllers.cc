#include "kube/testing/controllers.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "base/log.h"
#include "base/strings.h"
#include "kube/testing/core_util.h"

namespace spiderpool::kube::testing::internal {
namespace {

using base::Json;
using base::StrCat;

// How often work that waits on others (a terminating namespace's graceful pods, a foreground
// owner's dependents) is looked at again.
constexpr auto kResyncInterval = std::chrono::milliseconds(100);

constexpr std::string_view kRootCaConfigMap = "kube-root-ca.crt";
constexpr std::string_view kDefaultServiceAccount = "default";

bool HasFinalizer(const Json& obj, std::string_view f) {
  std::vector<std::string> fs = Finalizers(obj);
  return std::find(fs.begin(), fs.end(), f) != fs.end();
}

}  // namespace

Controllers::Controllers(Core* core, std::string root_ca_pem)
    : core_(core), root_ca_pem_(std::move(root_ca_pem)) {}

Controllers::~Controllers() { Stop(); }

void Controllers::Start() {
  core_->SetEventHook([this](std::string_view type, const ObjectRef& ref, const StoredPtr& prev) {
    OnEvent(type, ref, prev);
  });
  // What was stored before the hook: the initial namespaces, objects created meanwhile.
  for (const ObjectRef& ref : core_->AllObjects()) OnEvent("ADDED", ref, nullptr);
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
}

void Controllers::Stop() {
  core_->SetEventHook(nullptr);
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

void Controllers::OnEvent(std::string_view type, const ObjectRef& ref, const StoredPtr& prev) {
  const Json& obj = ref.obj->obj;
  const bool core_group = ref.group.empty();
  std::lock_guard<std::mutex> l(mu_);
  if (core_group && ref.plural == "namespaces") {
    std::string name = MetaStr(obj, "name");
    if (type == "DELETED") {
      terminating_namespaces_.erase(name);
    } else if (Deleting(obj)) {
      terminating_namespaces_.insert(name);
    } else if (type == "ADDED") {
      new_namespaces_.insert(name);
    }
  } else if (core_group && type == "DELETED" &&
             ((ref.plural == "configmaps" && MetaStr(obj, "name") == kRootCaConfigMap) ||
              (ref.plural == "serviceaccounts" &&
               MetaStr(obj, "name") == kDefaultServiceAccount))) {
    new_namespaces_.insert(MetaStr(obj, "namespace"));  // put back unless terminating
  }
  if (type == "DELETED") {
    std::string uid = MetaStr(obj, "uid");
    if (!uid.empty()) gone_uids_.insert(uid);
  } else {
    if (const Json* refs = OwnerRefs(obj)) {
      const Json* before = prev ? OwnerRefs(prev->obj) : nullptr;
      if (before == nullptr || *before != *refs) check_owners_.push_back(ref);
    }
    if (Deleting(obj) &&
        (HasFinalizer(obj, "orphan") || HasFinalizer(obj, "foregroundDeletion"))) {
      owner_finalizers_.push_back(ref);
    }
  }
  cv_.notify_all();
}

int Controllers::Request(const std::string& method, const std::string& path, const Json& body,
                         const std::string& content_type) {
  HttpRequest r;
  r.method = method;
  r.path = path;
  if (!body.is_null()) r.body = base::DumpJson(body);
  r.content_type = content_type;
  r.user = {"system:kube-controller-manager", "", {"system:authenticated"}};
  HttpResponse out = core_->Handle(r);
  if (out.code >= 300 && out.code != 404 && out.code != 409) {
    SP_LOG(Debug)
        .Msg("loopback controller request failed")
        .KV("method", method)
        .KV("path", path)
        .KV("code", out.code)
        .KV("body", out.body);
  }
  return out.code;
}

void Controllers::EnsureNamespaceDefaults(const std::string& ns) {
  std::optional<ObjectRef> nso = core_->GetObject("", "namespaces", "", ns);
  if (!nso || Deleting(nso->obj->obj)) return;
  if (!core_->GetObject("", "configmaps", ns, kRootCaConfigMap)) {
    Request("POST", StrCat("/api/v1/namespaces/", ns, "/configmaps"),
            {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata",
              {{"name", kRootCaConfigMap},
               {"annotations",
                {{"kubernetes.io/description",
                  "Contains a CA bundle that can be used to verify the kube-apiserver when "
                  "using internal endpoints such as the internal service IP or "
                  "kubernetes.default.svc. No other usage is guaranteed across distributions "
                  "of Kubernetes clusters."}}}}},
             {"data", {{"ca.crt", root_ca_pem_}}}});
  }
  if (!core_->GetObject("", "serviceaccounts", ns, kDefaultServiceAccount)) {
    Request("POST", StrCat("/api/v1/namespaces/", ns, "/serviceaccounts"),
            {{"apiVersion", "v1"},
             {"kind", "ServiceAccount"},
             {"metadata", {{"name", kDefaultServiceAccount}}}});
  }
}

bool Controllers::SyncTerminatingNamespace(const std::string& ns) {
  std::vector<ObjectRef> contents = core_->NamespaceContents(ns);
  for (const ObjectRef& ref : contents) {
    if (Deleting(ref.obj->obj)) continue;  // graceful pods, finalizers: wait
    Request("DELETE", ref.Path(),
            {{"kind", "DeleteOptions"},
             {"apiVersion", "v1"},
             {"propagationPolicy", "Background"},
             {"preconditions", {{"uid", MetaStr(ref.obj->obj, "uid")}}}});
  }
  if (!contents.empty() && !core_->NamespaceContents(ns).empty()) return false;
  core_->FinalizeNamespace(ns);
  return true;
}

void Controllers::VerifyOwners(const ObjectRef& ref) {
  // Act on the stored state, not the event's: it may have changed since.
  std::optional<ObjectRef> cur =
      core_->GetObject(ref.group, ref.plural, MetaStr(ref.obj->obj, "namespace"),
                       MetaStr(ref.obj->obj, "name"));
  if (!cur || MetaStr(cur->obj->obj, "uid") != MetaStr(ref.obj->obj, "uid")) return;
  const Json* refs = OwnerRefs(cur->obj->obj);
  if (refs == nullptr) return;
  const std::string ns = MetaStr(cur->obj->obj, "namespace");
  Json solid = Json::array();
  size_t dangling = 0;
  for (const Json& owner : *refs) {
    if (!owner.is_object()) continue;
    std::optional<ResourceInfo> info = core_->ResourceFor(Str(owner, "apiVersion"),
                                                          Str(owner, "kind"));
    if (!info) {
      // An owner kind the server does not serve cannot be verified: the garbage collector
      // leaves such a dependent alone (and retries), never deletes it.
      solid.push_back(owner);
      continue;
    }
    std::optional<ObjectRef> o = core_->GetObject(info->group, info->plural,
                                                  info->namespaced ? ns : "", Str(owner, "name"));
    if (o && MetaStr(o->obj->obj, "uid") == Str(owner, "uid")) {
      solid.push_back(owner);
    } else {
      ++dangling;
    }
  }
  if (dangling == 0) return;
  const std::string uid = MetaStr(cur->obj->obj, "uid");
  if (solid.empty()) {
    Request("DELETE", cur->Path(),
            {{"kind", "DeleteOptions"},
             {"apiVersion", "v1"},
             {"propagationPolicy", "Background"},
             {"preconditions", {{"uid", uid}}}});
  } else {
    Request("PATCH", cur->Path(), {{"metadata", {{"uid", uid}, {"ownerReferences", solid}}}},
            "application/merge-patch+json");
  }
}

void Controllers::ProcessOwnerFinalizers(const ObjectRef& owner_ref) {
  std::optional<ObjectRef> owner =
      core_->GetObject(owner_ref.group, owner_ref.plural,
                       MetaStr(owner_ref.obj->obj, "namespace"), MetaStr(owner_ref.obj->obj, "name"));
  if (!owner) return;
  const Json& obj = owner->obj->obj;
  const std::string uid = MetaStr(obj, "uid");
  if (uid != MetaStr(owner_ref.obj->obj, "uid") || !Deleting(obj)) return;
  std::vector<ObjectRef> dependents = core_->DependentsOf({uid});
  std::string done;
  if (HasFinalizer(obj, "orphan")) {
    for (const ObjectRef& d : dependents) {
      Json kept = Json::array();
      for (const Json& r : *OwnerRefs(d.obj->obj)) {
        if (!r.is_object() || Str(r, "uid") != uid) kept.push_back(r);
      }
      Request("PATCH", d.Path(),
              {{"metadata", {{"uid", MetaStr(d.obj->obj, "uid")},
                             {"ownerReferences", kept.empty() ? Json(nullptr) : kept}}}},
              "application/merge-patch+json");
    }
    done = "orphan";
  } else if (HasFinalizer(obj, "foregroundDeletion")) {
    bool left = false;
    for (const ObjectRef& d : dependents) {
      left = true;
      if (Deleting(d.obj->obj)) continue;
      Request("DELETE", d.Path(),
              {{"kind", "DeleteOptions"},
               {"apiVersion", "v1"},
               {"propagationPolicy", "Foreground"},
               {"preconditions", {{"uid", MetaStr(d.obj->obj, "uid")}}}});
    }
    if (left) {
      std::lock_guard<std::mutex> l(mu_);
      waiting_owners_.push_back(*owner);  // look again at the next resync
      return;
    }
    done = "foregroundDeletion";
  }
  if (done.empty()) return;
  Json kept = Json::array();
  for (const std::string& f : Finalizers(obj)) {
    if (f != done) kept.push_back(f);
  }
  Request("PATCH", owner->Path(), {{"metadata", {{"uid", uid}, {"finalizers", kept}}}},
          "application/merge-patch+json");
}

void Controllers::Run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    std::set<std::string> new_ns, terminating, gone;
    std::deque<ObjectRef> check, finalize;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait_for(l, kResyncInterval, [this] {
        return stopping_ || !new_namespaces_.empty() || !gone_uids_.empty() ||
               !check_owners_.empty() || !owner_finalizers_.empty();
      });
      if (stopping_) return;
      new_ns.swap(new_namespaces_);
      terminating = terminating_namespaces_;
      gone.swap(gone_uids_);
      check.swap(check_owners_);
      finalize.swap(owner_finalizers_);
      for (ObjectRef& r : waiting_owners_) finalize.push_back(std::move(r));
      waiting_owners_.clear();
    }
    for (const std::string& ns : new_ns) EnsureNamespaceDefaults(ns);
    if (!gone.empty()) {
      for (const ObjectRef& d : core_->DependentsOf(gone)) check.push_back(d);
    }
    for (const ObjectRef& ref : check) VerifyOwners(ref);
    for (const ObjectRef& ref : finalize) ProcessOwnerFinalizers(ref);
    for (const std::string& ns : terminating) {
      if (SyncTerminatingNamespace(ns)) {
        std::lock_guard<std::mutex> l(mu_);
        terminating_namespaces_.erase(ns);
      }
    }
  }
}

}  // namespace spiderpool::kube::testing::internal
