#include "kube/testing/resources.h"

#include <algorithm>
#include <cctype>
#include <tuple>

#include "api/apps.h"
#include "api/core.h"
#include "api/resource_claim.h"
#include "api/resource_slice.h"
#include "base/strings.h"

namespace spiderpool::kube::testing {

using base::Json;

const std::vector<ResourceInfo>& BuiltinResources() {
  static const std::vector<ResourceInfo>* kList = [] {
    auto* v = new std::vector<ResourceInfo>{
        // v1
        api::Namespace::Resource(), api::Pod::Resource(), api::Node::Resource(),
        api::Event::Resource(), api::ConfigMap::Resource(), api::Secret::Resource(),
        api::ServiceResource(), api::ServiceAccountResource(), api::EndpointsResource(),
        // coordination.k8s.io, events.k8s.io, apiextensions.k8s.io
        api::Lease::Resource(), api::events_v1::Event::Resource(),
        api::CustomResourceDefinitionResource(),
        // admissionregistration.k8s.io: typed in kube/webhook, which this package may not use.
        {"admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
         "validatingwebhookconfigurations", "validatingwebhookconfiguration", false, false, {},
         ""},
        {"admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration",
         "mutatingwebhookconfigurations", "mutatingwebhookconfiguration", false, false, {}, ""},
        // apps, batch
        api::Deployment::Resource(), api::ReplicaSet::Resource(), api::StatefulSet::Resource(),
        api::DaemonSet::Resource(), api::Job::Resource(), api::CronJob::Resource(),
        // DRA (resource.k8s.io/v1, Kubernetes >= 1.34). Tests of the v1beta1/v1beta2 fallback
        // register those versions themselves.
        api::ResourceSlice::Resource(), api::DeviceClass::Resource(),
        api::resource_v1::ResourceClaim::Resource(),
        api::resource_v1::ResourceClaimTemplate::Resource(),
    };
    for (ResourceInfo& r : *v) r = Normalized(r);
    return v;
  }();
  return *kList;
}

ResourceInfo Normalized(ResourceInfo info) {
  if (info.singular.empty()) {
    info.singular = info.kind;
    for (char& c : info.singular) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (info.list_kind.empty()) info.list_kind = info.kind + "List";
  return info;
}

namespace {

// Parses "v<major>[alpha|beta<minor>]"; kind 3 = GA, 2 = beta, 1 = alpha, 0 = not kube-like.
std::tuple<int, long, long> ParseKubeVersion(std::string_view v) {
  if (v.size() < 2 || v[0] != 'v' || !std::isdigit(static_cast<unsigned char>(v[1]))) {
    return {0, 0, 0};
  }
  size_t i = 1;
  long major = 0;
  while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) {
    major = major * 10 + (v[i] - '0');
    if (major > 1000000) return {0, 0, 0};
    ++i;
  }
  if (v[1] == '0') return {0, 0, 0};
  if (i == v.size()) return {3, major, 0};
  int kind = 0;
  std::string_view rest = v.substr(i);
  if (rest.substr(0, 5) == "alpha") {
    kind = 1;
    rest.remove_prefix(5);
  } else if (rest.substr(0, 4) == "beta") {
    kind = 2;
    rest.remove_prefix(4);
  } else {
    return {0, 0, 0};
  }
  if (rest.empty() || rest[0] == '0') return {0, 0, 0};
  long minor = 0;
  for (char c : rest) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return {0, 0, 0};
    minor = minor * 10 + (c - '0');
    if (minor > 1000000) return {0, 0, 0};
  }
  return {kind, major, minor};
}

}  // namespace

bool VersionPriorityLess(std::string_view a, std::string_view b) {
  auto [ka, ma, na] = ParseKubeVersion(a);
  auto [kb, mb, nb] = ParseKubeVersion(b);
  if (ka != kb) return ka > kb;
  if (ka == 0) return a < b;
  if (ma != mb) return ma > mb;
  return na > nb;
}

bool FieldSelectable(const ResourceInfo& info, bool custom,
                     const std::vector<std::string>& selectable, std::string_view field) {
  if (field == "metadata.name" || field == "metadata.namespace") return true;
  if (custom) return std::find(selectable.begin(), selectable.end(), field) != selectable.end();
  static const std::vector<std::tuple<std::string_view, std::string_view, std::string_view>>
      kFields = {
          {"", "pods", "spec.nodeName"},
          {"", "pods", "spec.restartPolicy"},
          {"", "pods", "spec.schedulerName"},
          {"", "pods", "spec.serviceAccountName"},
          {"", "pods", "spec.hostNetwork"},
          {"", "pods", "status.phase"},
          {"", "pods", "status.podIP"},
          {"", "pods", "status.nominatedNodeName"},
          {"", "nodes", "spec.unschedulable"},
          {"", "namespaces", "status.phase"},
          {"", "secrets", "type"},
          {"", "events", "involvedObject.kind"},
          {"", "events", "involvedObject.namespace"},
          {"", "events", "involvedObject.name"},
          {"", "events", "involvedObject.uid"},
          {"", "events", "involvedObject.apiVersion"},
          {"", "events", "involvedObject.resourceVersion"},
          {"", "events", "involvedObject.fieldPath"},
          {"", "events", "reason"},
          {"", "events", "reportingComponent"},
          {"", "events", "source"},
          {"", "events", "type"},
          {"apps", "replicasets", "status.replicas"},
          {"batch", "jobs", "status.successful"},
          {"resource.k8s.io", "resourceslices", "spec.driver"},
          {"resource.k8s.io", "resourceslices", "spec.nodeName"},
          {"resource.k8s.io", "resourceslices", "spec.pool.name"},
      };
  for (const auto& [g, r, f] : kFields) {
    if (g == info.group && r == info.plural && f == field) return true;
  }
  return false;
}

std::optional<std::string> FieldValue(const Json& object, std::string_view path) {
  const Json* cur = &object;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string key(path.substr(start, dot == std::string_view::npos ? path.npos : dot - start));
    if (!cur->is_object()) return std::nullopt;
    auto it = cur->find(key);
    if (it == cur->end()) return std::nullopt;
    cur = &*it;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (cur->is_string()) return cur->get<std::string>();
  if (cur->is_boolean()) return cur->get<bool>() ? "true" : "false";
  if (cur->is_number_integer()) return std::to_string(cur->get<int64_t>());
  if (cur->is_number_unsigned()) return std::to_string(cur->get<uint64_t>());
  if (cur->is_null()) return std::nullopt;
  return base::DumpJson(*cur);
}

namespace {

bool AllObjectsWithName(const Json& list) {
  if (!list.is_array() || list.empty()) return false;
  for (const Json& e : list) {
    if (!e.is_object()) return false;
    auto it = e.find("name");
    if (it == e.end() || !it->is_string()) return false;
  }
  return true;
}

absl::StatusOr<Json> StrategicMerge(const Json& target, const Json& patch, int depth) {
  if (depth > base::kMaxJsonDepth) return absl::InvalidArgumentError("patch nested too deeply");
  if (!patch.is_object()) return patch;
  if (auto p = patch.find("$patch"); p != patch.end()) {
    if (*p == "replace") {
      Json out = patch;
      out.erase("$patch");
      return out;
    }
    if (*p == "delete") return Json();  // caller removes
    return absl::InvalidArgumentError(
        base::StrCat("unknown patch type: ", base::DumpJson(*p), " in map"));
  }
  Json out = target.is_object() ? target : Json::object();
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& key = it.key();
    if (key.rfind("$setElementOrder/", 0) == 0 || key == "$retainKeys") continue;
    if (key.rfind("$deleteFromPrimitiveList/", 0) == 0) {
      std::string field = key.substr(std::string("$deleteFromPrimitiveList/").size());
      if (out.contains(field) && out[field].is_array() && it.value().is_array()) {
        Json kept = Json::array();
        for (const Json& e : out[field]) {
          if (std::find(it.value().begin(), it.value().end(), e) == it.value().end()) {
            kept.push_back(e);
          }
        }
        out[field] = std::move(kept);
      }
      continue;
    }
    const Json& pv = it.value();
    if (pv.is_null()) {
      out.erase(key);
      continue;
    }
    auto existing = out.find(key);
    if (pv.is_object()) {
      auto merged = StrategicMerge(existing != out.end() ? *existing : Json(), pv, depth + 1);
      if (!merged.ok()) return merged.status();
      if (merged->is_null()) {
        out.erase(key);
      } else {
        out[key] = *std::move(merged);
      }
      continue;
    }
    if (pv.is_array() && existing != out.end() && AllObjectsWithName(*existing) &&
        AllObjectsWithName(pv)) {
      Json merged = *existing;
      for (const Json& pe : pv) {
        const std::string& name = pe["name"].get_ref<const std::string&>();
        bool is_delete = pe.contains("$patch") && pe["$patch"] == "delete";
        bool found = false;
        for (size_t i = 0; i < merged.size(); ++i) {
          if (merged[i]["name"] == name) {
            found = true;
            if (is_delete) {
              merged.erase(i);
            } else {
              auto m = StrategicMerge(merged[i], pe, depth + 1);
              if (!m.ok()) return m.status();
              merged[i] = *std::move(m);
            }
            break;
          }
        }
        if (!found && !is_delete) merged.push_back(pe);
      }
      out[key] = std::move(merged);
      continue;
    }
    out[key] = pv;
  }
  return out;
}

}  // namespace

absl::StatusOr<Json> ApplyStrategicMergePatch(const Json& target, const Json& patch) {
  if (!patch.is_object()) {
    return absl::InvalidArgumentError("strategic merge patch must be a JSON object");
  }
  auto out = StrategicMerge(target, patch, 0);
  if (!out.ok()) return out.status();
  if (out->is_null()) return Json::object();
  return out;
}

}  // namespace spiderpool::kube::testing
