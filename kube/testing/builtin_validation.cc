#include "kube/testing/builtin_validation.h"

// The rules below follow kube-apiserver's registry strategies and validation packages
// (pkg/apis/{core,apps,batch,coordination,resource,admissionregistration}/validation,
// k8s.io/apimachinery/pkg/apis/meta/v1/validation), including their field paths and messages.
//
// kube-apiserver validates the *defaulted* internal object. The loopback server does no
// defaulting, so a field that kube would default (restartPolicy, dnsPolicy, protocol, Service
// type, StatefulSet podManagementPolicy, ...) is only checked when it is set. Values in
// messages are rendered as field.Error does since Kubernetes 1.34: strings and numbers as Go's
// %q / %v, anything composite as JSON (null for an absent map or pointer).

#include "kube/testing/builtin_validation_internal.h"

namespace spiderpool::kube::testing::internal {
namespace builtin {
namespace {

// ---- every built-in kind ----

// pkg/apis/core/validation.ValidateObjectMeta's extra finalizer rule.
void ValidateKubeFinalizers(const Json& obj, Errs& errs) {
  const Json* fins = ArrAt(MetaOf(obj), "finalizers");
  if (fins == nullptr) return;
  for (size_t i = 0; i < fins->size(); ++i) {
    if (!(*fins)[i].is_string()) continue;
    std::string f = (*fins)[i].get<std::string>();
    if (f.find('/') == std::string::npos && !IsStandardFinalizer(f)) {
      errs.push_back(FieldInvalid(Index("metadata.finalizers", i), Quote(f),
                                  "name is neither a standard finalizer name nor is it fully "
                                  "qualified"));
    }
  }
}

}  // namespace
}  // namespace builtin

using namespace builtin;  // the group files' entry points

std::vector<FieldError> ValidateBuiltin(std::string_view group, std::string_view plural,
                                        const base::Json& obj, const base::Json* old) {
  Errs errs;
  if (!obj.is_object()) return errs;
  // CRDs and webhook configurations use apimachinery's ObjectMeta validation, without kube's
  // finalizer rule (the apiserver itself sets customresourcecleanup.apiextensions.k8s.io).
  if (group != "apiextensions.k8s.io" && group != "admissionregistration.k8s.io") {
    ValidateKubeFinalizers(obj, errs);
  }
  if (group.empty()) {
    if (plural == "pods") {
      ValidatePod(obj, old, errs);
    } else if (plural == "nodes") {
      ValidateNode(obj, old, errs);
    } else if (plural == "namespaces") {
      ValidateNamespace(obj, errs);
    } else if (plural == "configmaps") {
      ValidateConfigMap(obj, old, errs);
    } else if (plural == "secrets") {
      ValidateSecret(obj, old, errs);
    } else if (plural == "services") {
      ValidateService(obj, errs);
    } else if (plural == "events") {
      ValidateEvent(obj, old, /*events_v1=*/false, errs);
    }
  } else if (group == "events.k8s.io") {
    if (plural == "events") ValidateEvent(obj, old, /*events_v1=*/true, errs);
  } else if (group == "coordination.k8s.io") {
    if (plural == "leases") ValidateLease(obj, errs);
  } else if (group == "apps") {
    if (plural == "deployments") {
      ValidateDeployment(obj, old, errs);
    } else if (plural == "replicasets") {
      ValidateReplicaSet(obj, old, errs);
    } else if (plural == "statefulsets") {
      ValidateStatefulSet(obj, old, errs);
    } else if (plural == "daemonsets") {
      ValidateDaemonSet(obj, old, errs);
    }
  } else if (group == "batch") {
    if (plural == "jobs") {
      ValidateJobSpec(ObjAt(obj, "spec"), "spec", errs);
    } else if (plural == "cronjobs") {
      ValidateCronJob(obj, errs);
    }
  } else if (group == "resource.k8s.io") {
    if (StrAt(obj, "apiVersion") == "resource.k8s.io/v1beta1") {
      Json converted = ResourceV1Beta1ToV1(plural, obj);
      Json old_converted = old == nullptr ? Json() : ResourceV1Beta1ToV1(plural, *old);
      return ValidateBuiltinResource(plural, converted, old == nullptr ? nullptr : &old_converted,
                                     std::move(errs));
    }
    return ValidateBuiltinResource(plural, obj, old, std::move(errs));
  } else if (group == "admissionregistration.k8s.io") {
    if (plural == "validatingwebhookconfigurations") {
      ValidateWebhookConfiguration(obj, /*mutating=*/false, errs);
    } else if (plural == "mutatingwebhookconfigurations") {
      ValidateWebhookConfiguration(obj, /*mutating=*/true, errs);
    }
  }
  return errs;
}

}  // namespace spiderpool::kube::testing::internal
