// Writes: create, update (PUT and PATCH, main resource and status), delete, deletecollection.

#include "kube/testing/core.h"

#include <algorithm>
#include <set>

#include "base/log.h"
#include "base/strings.h"
#include "kube/testing/builtin_validation.h"
#include "kube/testing/core_util.h"
#include "kube/testing/errors.h"
#include "kube/testing/resources.h"

namespace spiderpool::kube::testing::internal {

using base::Json;
using base::StrCat;

// ---- writes ----


HttpResponse Core::Create(const HttpRequest& req, const Target& t) {
  Json obj;
  if (auto err = ParseBodyObject(req.body, &obj)) return StatusResp(*err);
  if (auto err = CheckTypeMeta(&obj, t.ApiVersion(), t.info.kind)) return StatusResp(*err);
  if (auto err = CheckMetaTypes(obj)) return StatusResp(*err);
  Json& meta = MutableMeta(obj);
  std::string body_ns = Str(meta, "namespace");
  if (t.info.namespaced) {
    if (!body_ns.empty() && body_ns != t.ns) {
      return StatusResp(BadRequestStatus(
          "the namespace of the provided object does not match the namespace sent on the request"));
    }
    meta["namespace"] = t.ns;
  } else {
    meta.erase("namespace");
  }
  if (!Str(meta, "resourceVersion").empty()) {
    return StatusResp(
        InternalErrorStatus("resourceVersion should not be set on objects to be created"));
  }
  std::string name = Str(meta, "name");
  std::string generate = Str(meta, "generateName");
  bool generated = false;
  if (name.empty()) {
    if (generate.empty()) {
      return StatusResp(InvalidStatus(t.group, t.info.kind, "",
                                      {FieldRequired("metadata.name",
                                                     "name or generateName is required")}));
    }
    std::lock_guard<std::mutex> l(mu_);
    name = generate.substr(0, std::min<size_t>(generate.size(), 58)) + RandomSuffix();
    generated = true;
    meta["name"] = name;
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    if (auto err = CheckNamespaceLocked(t, name)) return StatusResp(*err);
  }
  // Server-owned fields.
  for (const char* k : {"uid", "creationTimestamp", "deletionTimestamp",
                        "deletionGracePeriodSeconds", "selfLink"}) {
    meta.erase(k);
  }
  meta["generation"] = 1;
  bool is_ns = t.group.empty() && t.plural == "namespaces";
  if (t.info.has_status) obj.erase("status");
  if (is_ns) {
    meta["labels"]["kubernetes.io/metadata.name"] = name;
    if (!obj.contains("spec") || !obj["spec"].is_object()) obj["spec"] = Json::object();
    if (!obj["spec"].contains("finalizers")) obj["spec"]["finalizers"] = {"kubernetes"};
    obj["status"] = {{"phase", "Active"}};
  }
  if (t.group.empty() && t.plural == "pods") obj["status"] = {{"phase", "Pending"}};

  std::vector<FieldError> errs = ValidateMeta(obj, is_ns);
  if (!errs.empty()) return StatusResp(InvalidStatus(t.group, t.info.kind, name, errs));

  std::shared_ptr<Admission> adm;
  SchemaValidator validator;
  {
    std::lock_guard<std::mutex> l(mu_);
    adm = admission_;
    if (ResourceState* rs = FindLocked(t.group, t.plural)) {
      auto v = rs->versions.find(t.version);
      if (v != rs->versions.end()) validator = v->second.validator;
    }
  }
  AdmissionAttributes attrs;
  attrs.operation = AdmissionOperation::kCreate;
  attrs.resource = t.info;
  attrs.namespace_name = t.info.namespaced ? t.ns : "";
  attrs.name = name;
  attrs.user = req.user;
  attrs.dry_run = !DryRun(req, nullptr).empty();
  attrs.options = Json{{"kind", "CreateOptions"}, {"apiVersion", "meta.k8s.io/v1"}};
  if (adm) {
    if (auto rej = adm->Mutate(attrs, &obj)) return StatusResp(*rej);
    if (!obj.is_object()) return StatusResp(InternalErrorStatus("admission returned a non-object"));
  }
  if (validator) {
    std::vector<StatusCause> causes = validator(&obj);
    if (!causes.empty()) {
      return StatusResp(InvalidStatus(t.group, t.info.kind, name, ToFieldErrors(causes)));
    }
  }
  // The registry strategy's validation of built-in kinds: after mutating admission, before
  // validating admission, as in kube-apiserver.
  if (!t.custom) {
    std::vector<FieldError> builtin = ValidateBuiltin(t.group, t.plural, obj, nullptr);
    if (!builtin.empty()) return StatusResp(InvalidStatus(t.group, t.info.kind, name, builtin));
  }
  std::map<std::string, SchemaValidator> crd_validators;
  bool is_crd = IsCrdResource(t.group, t.plural);
  if (is_crd) {
    if (auto err = PlanCrd(obj, &crd_validators)) return StatusResp(*err);
    SetCrdStatus(&obj, nullptr);
  }
  // System fields are filled before validating admission, as the registry's BeforeCreate does
  // (validating webhooks see uid and creationTimestamp; mutating ones do not).
  {
    std::lock_guard<std::mutex> l(mu_);
    MutableMeta(obj)["uid"] = NewUid();
  }
  MutableMeta(obj)["creationTimestamp"] = NowRfc3339();
  if (adm) {
    if (auto rej = adm->Validate(attrs, obj)) return StatusResp(*rej);
  }

  std::lock_guard<std::mutex> l(mu_);
  if (auto err = CheckNamespaceLocked(t, name)) return StatusResp(*err);
  ResourceState* rs = FindLocked(t.group, t.plural);
  if (!rs) return StatusResp(ResourceNotFoundStatus());
  std::string key = Key(t.info.namespaced ? t.ns : "", name);
  if (rs->objects.count(key)) {
    if (generated) {
      ApiStatus s = AlreadyExistsStatus(t.group, t.plural, name);
      s.message += ", the server was not able to generate a unique name for the object";
      return StatusResp(s);
    }
    return StatusResp(AlreadyExistsStatus(t.group, t.plural, name));
  }
  Json& m = MutableMeta(obj);
  if (attrs.dry_run) return JsonResp(201, obj);
  int64_t rv = NextRvLocked();
  m["resourceVersion"] = std::to_string(rv);
  StoredPtr s = MakeStored(std::move(obj), key, rv);
  rs->objects[key] = s;
  EmitLocked(*rs, "ADDED", s, nullptr);
  if (is_crd) {
    if (auto err = ApplyCrdLocked(s->obj, crd_validators)) {
      SP_LOG(Warning).Msg("CRD registration failed").KV("crd", name).KV("err", err->message);
    }
  }
  return RawJson(201, s->text);
}

HttpResponse Core::Update(const HttpRequest& req, const Target& t, bool patch) {
  Json body;
  std::string patch_type;
  if (patch) {
    patch_type = MediaType(req.content_type);
    bool builtin = !t.custom;
    if (patch_type != "application/json-patch+json" &&
        patch_type != "application/merge-patch+json" &&
        !(builtin && patch_type == "application/strategic-merge-patch+json")) {
      return StatusResp(UnsupportedMediaTypeStatus(StrCat(
          "the body of the request was in an unknown format - accepted media types include: "
          "application/json-patch+json, application/merge-patch+json",
          builtin ? ", application/strategic-merge-patch+json" : "")));
    }
    auto parsed = base::ParseJson(req.body);
    if (!parsed.ok()) return StatusResp(BadRequestStatus(base::FromAbsl(parsed.status().message())));
    body = *std::move(parsed);
    if (patch_type == "application/json-patch+json" && !body.is_array()) {
      return StatusResp(BadRequestStatus(
          "json: cannot unmarshal object into Go value of type jsonpatch.Patch"));
    }
    if (patch_type != "application/json-patch+json" && !body.is_object()) {
      return StatusResp(BadRequestStatus("the patch must be a JSON object"));
    }
  } else {
    if (auto err = ParseBodyObject(req.body, &body)) return StatusResp(*err);
  }
  // A patch that names metadata.resourceVersion is a conditional write: no retries.
  bool patch_names_rv = false;
  if (patch) {
    if (body.is_object()) {
      const Json& m = MetaOf(body);
      patch_names_rv = m.contains("resourceVersion");
    } else {
      for (const Json& op : body) {
        if (op.is_object() && op.contains("path") && op["path"] == "/metadata/resourceVersion") {
          patch_names_rv = true;
        }
      }
    }
  }
  const std::string av = t.ApiVersion();
  const std::string key = Key(t.info.namespaced ? t.ns : "", t.name);
  const bool status_sub = t.sub == "status";
  const bool is_crd = IsCrdResource(t.group, t.plural);

  for (size_t attempt = 0; attempt < kMaxUpdateAttempts; ++attempt) {
    StoredPtr old;
    std::shared_ptr<Admission> adm;
    SchemaValidator validator;
    {
      std::lock_guard<std::mutex> l(mu_);
      ResourceState* rs = FindLocked(t.group, t.plural);
      if (!rs) return StatusResp(ResourceNotFoundStatus());
      auto it = rs->objects.find(key);
      if (it == rs->objects.end()) return StatusResp(NotFoundStatus(t.group, t.plural, t.name));
      old = it->second;
      adm = admission_;
      auto v = rs->versions.find(t.version);
      if (v != rs->versions.end()) validator = v->second.validator;
    }
    Json oldv = old->obj;
    oldv["apiVersion"] = av;
    const Json& old_meta = MetaOf(oldv);
    const std::string old_rv = Str(old_meta, "resourceVersion");

    Json obj;
    bool conditional = false;
    if (patch) {
      if (patch_type == "application/json-patch+json") {
        auto patched = base::ApplyJsonPatch(oldv, body);
        if (!patched.ok()) {
          return StatusResp(UnprocessableStatus(base::FromAbsl(patched.status().message())));
        }
        obj = *std::move(patched);
      } else if (patch_type == "application/merge-patch+json") {
        obj = base::ApplyMergePatch(oldv, body);
      } else {
        auto patched = ApplyStrategicMergePatch(oldv, body);
        if (!patched.ok()) {
          return StatusResp(BadRequestStatus(base::FromAbsl(patched.status().message())));
        }
        obj = *std::move(patched);
      }
      if (!obj.is_object()) {
        return StatusResp(UnprocessableStatus("the patched object is not a JSON object"));
      }
      if (auto err = CheckTypeMeta(&obj, av, t.info.kind)) return StatusResp(*err);
      if (auto err = CheckMetaTypes(obj)) return StatusResp(*err);
      std::string rv = MetaStr(obj, "resourceVersion");
      if (!rv.empty() && rv != old_rv) {
        return StatusResp(ConflictStatus(t.group, t.plural, t.name, kOptimisticLockMessage));
      }
      conditional = patch_names_rv;
      if (MetaStr(obj, "name") != t.name) {
        return StatusResp(BadRequestStatus(StrCat("the name of the object (", MetaStr(obj, "name"),
                                                  ") does not match the name on the URL (",
                                                  t.name, ")")));
      }
    } else {
      obj = body;
      if (auto err = CheckTypeMeta(&obj, av, t.info.kind)) return StatusResp(*err);
      if (auto err = CheckMetaTypes(obj)) return StatusResp(*err);
      std::string name = MetaStr(obj, "name");
      if (name != t.name) {
        return StatusResp(BadRequestStatus(StrCat("the name of the object (", name,
                                                  ") does not match the name on the URL (",
                                                  t.name, ")")));
      }
      std::string rv = MetaStr(obj, "resourceVersion");
      if (rv.empty()) {
        if (t.custom) {
          return StatusResp(InvalidStatus(
              t.group, t.plural, t.name,
              {FieldInvalid("metadata.resourceVersion", "0x0", "must be specified for an update")}));
        }
      } else {
        conditional = true;
        if (rv != old_rv) {
          return StatusResp(ConflictStatus(t.group, t.plural, t.name, kOptimisticLockMessage));
        }
      }
    }
    Json& meta = MutableMeta(obj);
    std::string body_ns = Str(meta, "namespace");
    if (t.info.namespaced) {
      if (!body_ns.empty() && body_ns != t.ns) {
        return StatusResp(BadRequestStatus(
            "the namespace of the provided object does not match the namespace sent on the "
            "request"));
      }
      meta["namespace"] = t.ns;
    } else {
      meta.erase("namespace");
    }
    std::string new_uid = Str(meta, "uid");
    std::string old_uid = Str(old_meta, "uid");
    if (!new_uid.empty() && new_uid != old_uid) {
      return StatusResp(ConflictStatus(t.group, t.plural, t.name,
                                       StrCat("Precondition failed: UID in precondition: ",
                                              new_uid, ", UID in object meta: ", old_uid)));
    }
    // Server-owned metadata comes from the stored object.
    for (const char* k : {"uid", "creationTimestamp", "deletionTimestamp",
                          "deletionGracePeriodSeconds", "generation", "resourceVersion"}) {
      auto o = old_meta.find(k);
      if (o != old_meta.end()) {
        meta[k] = *o;
      } else {
        meta.erase(k);
      }
    }
    meta.erase("selfLink");
    if (t.info.has_status) {
      if (status_sub) {
        // Only status changes: everything else (spec and metadata) stays as stored.
        Json next = oldv;
        if (obj.contains("status")) {
          next["status"] = obj["status"];
        } else {
          next.erase("status");
        }
        obj = std::move(next);
      } else if (oldv.contains("status")) {
        obj["status"] = oldv["status"];
      } else {
        obj.erase("status");
      }
    }
    // generation: bumped when anything but metadata (and status, when it is a subresource)
    // changes.
    if (!status_sub) {
      bool changed = t.info.has_status
                         ? Without(obj, {"metadata", "status"}) != Without(oldv, {"metadata", "status"})
                         : Without(obj, {"metadata"}) != Without(oldv, {"metadata"});
      if (changed) MutableMeta(obj)["generation"] = MetaGeneration(oldv) + 1;
    }
    bool is_ns = t.group.empty() && t.plural == "namespaces";
    std::vector<FieldError> errs = ValidateMeta(obj, is_ns);
    if (Deleting(oldv)) {
      std::vector<std::string> old_f = Finalizers(oldv), new_f = Finalizers(obj), added;
      for (const std::string& f : new_f) {
        if (std::find(old_f.begin(), old_f.end(), f) == old_f.end()) added.push_back(f);
      }
      if (!added.empty()) {
        errs.push_back(FieldForbidden(
            "metadata.finalizers",
            StrCat("no new finalizers can be added if the object is being deleted, found new "
                   "finalizers ",
                   GoStringSlice(added))));
      }
    }
    if (!errs.empty()) return StatusResp(InvalidStatus(t.group, t.info.kind, t.name, errs));

    AdmissionAttributes attrs;
    attrs.operation = AdmissionOperation::kUpdate;
    attrs.resource = t.info;
    attrs.subresource = t.sub;
    attrs.namespace_name = t.info.namespaced ? t.ns : "";
    attrs.name = t.name;
    attrs.old_object = oldv;
    attrs.user = req.user;
    attrs.dry_run = !DryRun(req, nullptr).empty();
    attrs.options = Json{{"kind", patch ? "PatchOptions" : "UpdateOptions"},
                         {"apiVersion", "meta.k8s.io/v1"}};
    if (adm) {
      if (auto rej = adm->Mutate(attrs, &obj)) return StatusResp(*rej);
      if (!obj.is_object()) {
        return StatusResp(InternalErrorStatus("admission returned a non-object"));
      }
    }
    if (validator) {
      std::vector<StatusCause> causes = validator(&obj);
      if (!causes.empty()) {
        return StatusResp(InvalidStatus(t.group, t.info.kind, t.name, ToFieldErrors(causes)));
      }
    }
    if (!t.custom && !status_sub) {
      std::vector<FieldError> builtin = ValidateBuiltin(t.group, t.plural, obj, &oldv);
      if (!builtin.empty()) {
        return StatusResp(InvalidStatus(t.group, t.info.kind, t.name, builtin));
      }
    }
    std::map<std::string, SchemaValidator> crd_validators;
    if (is_crd && !status_sub) {
      if (auto err = PlanCrd(obj, &crd_validators)) return StatusResp(*err);
    }
    if (is_crd) SetCrdStatus(&obj, &oldv);
    if (adm) {
      if (auto rej = adm->Validate(attrs, obj)) return StatusResp(*rej);
    }
    // No-op updates do not write (no new resourceVersion, no event).
    if (obj == oldv) return RawJson(200, RenderAs(*old, av));
    if (attrs.dry_run) return JsonResp(200, obj);

    std::lock_guard<std::mutex> l(mu_);
    ResourceState* rs = FindLocked(t.group, t.plural);
    if (!rs) return StatusResp(ResourceNotFoundStatus());
    auto it = rs->objects.find(key);
    if (it == rs->objects.end()) return StatusResp(NotFoundStatus(t.group, t.plural, t.name));
    if (it->second->rv != old->rv) {
      if (conditional) {
        return StatusResp(ConflictStatus(t.group, t.plural, t.name, kOptimisticLockMessage));
      }
      continue;  // unconditional: retry against the new state
    }
    int64_t rv = NextRvLocked();
    MutableMeta(obj)["resourceVersion"] = std::to_string(rv);
    StoredPtr s = MakeStored(std::move(obj), key, rv);
    it->second = s;
    EmitLocked(*rs, "MODIFIED", s, old);
    if (is_crd && !status_sub) {
      if (auto err = ApplyCrdLocked(s->obj, crd_validators)) {
        SP_LOG(Warning).Msg("CRD re-registration failed").KV("crd", t.name).KV("err", err->message);
      }
    }
    if (Deleting(s->obj) && Finalizers(s->obj).empty()) {
      if (t.group.empty() && t.plural == "namespaces") {
        MaybeRemoveNamespaceLocked(t.name);  // also waits for spec.finalizers and contents
      } else if (!(t.group.empty() && t.plural == "pods") || GracePeriodZero(s->obj)) {
        // The last finalizer is gone: the object goes away now (MODIFIED, then DELETED).
        RemoveLocked(*rs, s);
      }
    }
    return RawJson(200, s->text);
  }
  return StatusResp(ConflictStatus(t.group, t.plural, t.name, kOptimisticLockMessage));
}

HttpResponse Core::Delete(const HttpRequest& req, const Target& t) {
  Json options = Json::object();
  if (!req.body.empty()) {
    auto parsed = base::ParseJson(req.body);
    if (!parsed.ok() || !parsed->is_object()) {
      return StatusResp(BadRequestStatus(
          StrCat("the body of the request is not a valid DeleteOptions: ",
                 parsed.ok() ? "not a JSON object" : base::FromAbsl(parsed.status().message()))));
    }
    options = *std::move(parsed);
  }
  std::string propagation = Str(options, "propagationPolicy");
  if (propagation.empty()) propagation = Param(req, "propagationPolicy");
  if (!propagation.empty() && propagation != "Orphan" && propagation != "Background" &&
      propagation != "Foreground") {
    return StatusResp(InvalidStatus("", "DeleteOptions", "",
                                    {FieldNotSupported("propagationPolicy", Quote(propagation),
                                                       {"Foreground", "Background", "Orphan",
                                                        "nil"})}));
  }
  if (!options.contains("gracePeriodSeconds")) {
    int64_t g = 0;
    if (std::string q = Param(req, "gracePeriodSeconds"); !q.empty() && ParseInt(q, &g)) {
      options["gracePeriodSeconds"] = g;
    }
  }
  std::string pre_uid, pre_rv;
  if (auto p = options.find("preconditions"); p != options.end() && p->is_object()) {
    pre_uid = Str(*p, "uid");
    pre_rv = Str(*p, "resourceVersion");
  }
  const bool dry_run = !DryRun(req, &options).empty();
  const std::string av = t.ApiVersion();
  const std::string key = Key(t.info.namespaced ? t.ns : "", t.name);
  const bool is_ns = t.group.empty() && t.plural == "namespaces";
  if (is_ns && (t.name == "default" || t.name == "kube-system" || t.name == "kube-public")) {
    return StatusResp(ForbiddenStatus("", "namespaces", t.name,
                                      "this namespace may not be deleted"));
  }

  for (size_t attempt = 0; attempt < kMaxUpdateAttempts; ++attempt) {
    StoredPtr old;
    std::shared_ptr<Admission> adm;
    {
      std::lock_guard<std::mutex> l(mu_);
      ResourceState* rs = FindLocked(t.group, t.plural);
      if (!rs) return StatusResp(ResourceNotFoundStatus());
      auto it = rs->objects.find(key);
      if (it == rs->objects.end()) return StatusResp(NotFoundStatus(t.group, t.plural, t.name));
      old = it->second;
      adm = admission_;
    }
    Json oldv = old->obj;
    oldv["apiVersion"] = av;
    std::string uid = MetaStr(oldv, "uid"), rv = MetaStr(oldv, "resourceVersion");
    if (!pre_uid.empty() && pre_uid != uid) {
      return StatusResp(ConflictStatus(t.group, t.plural, t.name,
                                       StrCat("Precondition failed: UID in precondition: ",
                                              pre_uid, ", UID in object meta: ", uid)));
    }
    if (!pre_rv.empty() && pre_rv != rv) {
      return StatusResp(ConflictStatus(
          t.group, t.plural, t.name,
          StrCat("Precondition failed: ResourceVersion in precondition: ", pre_rv,
                 ", ResourceVersion in object meta: ", rv)));
    }
    if (adm) {
      AdmissionAttributes attrs;
      attrs.operation = AdmissionOperation::kDelete;
      attrs.resource = t.info;
      attrs.namespace_name = t.info.namespaced ? t.ns : "";
      attrs.name = t.name;
      attrs.old_object = oldv;
      attrs.user = req.user;
      attrs.dry_run = dry_run;
      attrs.options = options;
      attrs.options["kind"] = "DeleteOptions";
      attrs.options["apiVersion"] = "meta.k8s.io/v1";
      Json none;
      if (auto rej = adm->Mutate(attrs, &none)) return StatusResp(*rej);
      if (auto rej = adm->Validate(attrs, none)) return StatusResp(*rej);
    }
    if (dry_run) return JsonResp(200, oldv);

    std::lock_guard<std::mutex> l(mu_);
    ResourceState* rs = FindLocked(t.group, t.plural);
    if (!rs) return StatusResp(ResourceNotFoundStatus());
    auto it = rs->objects.find(key);
    if (it == rs->objects.end()) return StatusResp(NotFoundStatus(t.group, t.plural, t.name));
    if (it->second->rv != old->rv) continue;  // re-check preconditions against the new state
    const bool is_pod = t.group.empty() && t.plural == "pods";
    // Graceful deletion (the pod strategy's CheckGracefulDelete): a pod bound to a node that has
    // not finished gets deletionTimestamp = now + grace and stays until its kubelet (or a
    // delete with gracePeriodSeconds 0) removes it; unscheduled or finished pods go at once.
    int64_t grace = 0;
    if (is_pod) grace = PodGracePeriod(old->obj, options);
    // propagationPolicy Orphan / Foreground: the garbage collector's finalizers hold the owner
    // until it has orphaned / deleted the dependents.
    std::vector<std::string> add_finalizers;
    if (!Deleting(old->obj)) {
      if (propagation == "Orphan") add_finalizers.push_back("orphan");
      if (propagation == "Foreground") add_finalizers.push_back("foregroundDeletion");
    }
    std::vector<std::string> finalizers = Finalizers(old->obj);
    for (const std::string& f : add_finalizers) {
      if (std::find(finalizers.begin(), finalizers.end(), f) == finalizers.end()) {
        finalizers.push_back(f);
      }
    }
    const bool has_finalizers = !finalizers.empty();
    if (has_finalizers || is_ns || grace > 0) {
      if (Deleting(old->obj)) {
        // A second delete may only shorten a pod's grace period; 0 removes it (finalizers
        // permitting).
        const Json& om = MetaOf(old->obj);
        int64_t cur = om.contains("deletionGracePeriodSeconds") &&
                              om["deletionGracePeriodSeconds"].is_number_integer()
                          ? om["deletionGracePeriodSeconds"].get<int64_t>()
                          : 0;
        if (!is_pod || grace >= cur) return RawJson(200, RenderAs(*old, av));
        if (grace == 0 && !has_finalizers) {
          RemoveLocked(*rs, old);
          return RawJson(200, RenderAs(*old, av));
        }
      }
      Json obj = old->obj;
      Json& m = MutableMeta(obj);
      m["deletionTimestamp"] = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", clock_->Now() + absl::Seconds(grace), absl::UTCTimeZone());
      m["deletionGracePeriodSeconds"] = grace;
      if (!add_finalizers.empty()) m["finalizers"] = finalizers;
      if (!Deleting(old->obj)) m["generation"] = MetaGeneration(obj) + 1;
      if (is_ns) obj["status"] = {{"phase", "Terminating"}};
      int64_t new_rv = NextRvLocked();
      m["resourceVersion"] = std::to_string(new_rv);
      StoredPtr s = MakeStored(std::move(obj), key, new_rv);
      it->second = s;
      EmitLocked(*rs, "MODIFIED", s, old);
      // The namespace controller deletes the contents and finalizes the namespace.
      return RawJson(200, RenderAs(*s, av));
    }
    RemoveLocked(*rs, old);
    if (t.custom || (t.group.empty() && t.plural == "pods")) {
      return RawJson(200, RenderAs(*old, av));
    }
    return JsonResp(200, SuccessStatusJson(t.group, t.plural, t.name, uid));
  }
  return StatusResp(ConflictStatus(t.group, t.plural, t.name, kOptimisticLockMessage));
}

HttpResponse Core::DeleteCollection(const HttpRequest& req, const Target& t) {
  Selectors sel;
  if (auto err = ParseSelectors(req, t.info, t.custom, t.selectable_fields, &sel)) return StatusResp(*err);
  std::vector<std::string> names;
  {
    std::lock_guard<std::mutex> l(mu_);
    ResourceState* rs = FindLocked(t.group, t.plural);
    if (!rs) return StatusResp(ResourceNotFoundStatus());
    for (const auto& [key, s] : rs->objects) {
      if (t.info.namespaced && !t.ns.empty() && MetaStr(s->obj, "namespace") != t.ns) continue;
      if (StoredMatches(*s, sel)) names.push_back(key);
    }
  }
  Json items = Json::array();
  for (const std::string& key : names) {
    Target one = t;
    size_t slash = key.find('/');
    if (slash != std::string::npos) {
      one.ns = key.substr(0, slash);
      one.name = key.substr(slash + 1);
    } else {
      one.name = key;
    }
    HttpRequest sub = req;
    HttpResponse r = Delete(sub, one);
    if (r.code == 404) continue;
    if (r.code >= 300) return r;
    auto parsed = base::ParseJson(r.body);
    if (parsed.ok() && Str(*parsed, "kind") != "Status") items.push_back(*std::move(parsed));
  }
  std::lock_guard<std::mutex> l(mu_);
  return JsonResp(200, {{"kind", t.info.list_kind},
                        {"apiVersion", t.ApiVersion()},
                        {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
                        {"items", items}});
}

}  // namespace spiderpool::kube::testing::internal
