#include "dra/resourceslice/publisher.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <utility>

#include "base/json.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "kube/rest/errors.h"

namespace spiderpool::dra::resourceslice {

namespace rs = api::resourceslice;
using base::Json;
using base::StrCat;

namespace {

bool SupportedVersion(std::string_view v) {
  return v == rs::kVersionV1 || v == rs::kVersionV1beta2 || v == rs::kVersionV1beta1;
}

uint32_t Fnv1a32(std::string_view s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

std::string JsonString(const Json& j, std::string_view a, std::string_view b) {
  if (!j.is_object()) return "";
  auto x = j.find(a);
  if (x == j.end() || !x->is_object()) return "";
  auto y = x->find(b);
  if (y == x->end() || !y->is_string()) return "";
  return y->get<std::string>();
}

}  // namespace

absl::StatusOr<std::string> DiscoverResourceApiVersion(kube::RestClient& rest) {
  absl::StatusOr<kube::Response> r =
      rest.Do({.method = "GET", .path = StrCat("/apis/", rs::kGroup)});
  if (!r.ok()) {
    if (kube::IsNotFound(r.status())) {
      return absl::NotFoundError(
          StrCat("the API server does not serve ", rs::kGroup,
                 " (Dynamic Resource Allocation needs Kubernetes >= 1.32 with the "
                 "DynamicResourceAllocation feature and API enabled)"));
    }
    return kube::WithContext(r.status(), StrCat("discovering ", rs::kGroup));
  }
  absl::StatusOr<Json> group = base::ParseJson(r->body);
  if (!group.ok()) {
    return absl::DataLossError(StrCat("discovering ", rs::kGroup, ": ",
                                      base::FromAbsl(group.status().message())));
  }
  std::set<std::string> served;
  if (group->is_object()) {
    auto versions = group->find("versions");
    if (versions != group->end() && versions->is_array()) {
      for (const Json& v : *versions) {
        if (v.is_object() && v.contains("version") && v["version"].is_string()) {
          served.insert(v["version"].get<std::string>());
        }
      }
    }
  }
  for (std::string_view want : {rs::kVersionV1, rs::kVersionV1beta2, rs::kVersionV1beta1}) {
    if (served.count(std::string(want))) return std::string(want);
  }
  std::string list;
  for (const std::string& v : served) list += (list.empty() ? "" : ", ") + v;
  return absl::FailedPreconditionError(
      StrCat(rs::kGroup, " is served in [", list, "] but none of v1, v1beta2, v1beta1"));
}

std::string SliceName(std::string_view node, std::string_view driver, int index) {
  std::string suffix = StrCat("-", driver, "-", index);
  constexpr size_t kMax = 253;
  if (node.size() + suffix.size() <= kMax) return StrCat(node, suffix);
  size_t keep = kMax - suffix.size() - 9;  // "-" + 8 hex digits
  std::string_view cut = node.substr(0, std::min(keep, node.size()));
  while (!cut.empty() && (cut.back() == '-' || cut.back() == '.')) cut.remove_suffix(1);
  char hash[9];
  std::snprintf(hash, sizeof(hash), "%08x", Fnv1a32(node));
  return StrCat(cut, "-", hash, suffix);
}

Publisher::Publisher(std::shared_ptr<kube::RestClient> rest, std::string node_name,
                     std::string driver, PublisherOptions options)
    : rest_(std::move(rest)),
      node_(std::move(node_name)),
      driver_(std::move(driver)),
      options_(std::move(options)) {}

kube::DynamicClient Publisher::Slices(const std::string& version) const {
  return kube::DynamicClient(rest_, api::ResourceSliceResourceIn(version));
}

absl::StatusOr<std::string> Publisher::ApiVersion() {
  std::lock_guard<std::mutex> l(mu_);
  return ApiVersionLocked();
}

absl::StatusOr<std::string> Publisher::ApiVersionLocked() {
  if (!options_.api_version.empty()) {
    if (!SupportedVersion(options_.api_version)) {
      return absl::InvalidArgumentError(
          StrCat("unsupported resource.k8s.io version \"", options_.api_version, "\""));
    }
    return options_.api_version;
  }
  if (version_.empty()) {
    SP_ASSIGN_OR_RETURN(version_, DiscoverResourceApiVersion(*rest_));
    SP_LOG(Info).Msg("using resource.k8s.io version").KV("version", version_).KV("node", node_);
  }
  return version_;
}

std::vector<api::OwnerReference> Publisher::OwnerReferences() const {
  if (options_.node_uid.empty()) return {};
  return {api::OwnerReference{.api_version = "v1",
                              .kind = "Node",
                              .name = node_,
                              .uid = options_.node_uid,
                              .controller = true}};
}

std::string Publisher::ContentKey(const api::ResourceSlice& s) {
  api::ResourceSliceSpec spec = s.spec;
  spec.pool.generation = 0;
  Json key = {{"spec", api::Encode(spec)}, {"owners", api::Encode(s.metadata.owner_references)}};
  return base::DumpJson(key);
}

bool Publisher::IsCurrent(const Existing& e, const api::ResourceSlice& desired) const {
  std::string want = ContentKey(desired);
  if (e.slice.has_value() && ContentKey(*e.slice) == want) return true;
  auto w = written_.find(e.name);
  return w != written_.end() && w->second.resource_version == e.resource_version &&
         w->second.content == want;
}

absl::StatusOr<std::vector<api::ResourceSlice>> Publisher::Desired(
    const std::vector<api::Device>& devices) {
  std::vector<std::vector<api::Device>> chunks = SplitDevices(devices);
  std::vector<api::ResourceSlice> out;
  for (size_t i = 0; i < chunks.size(); ++i) {
    api::ResourceSlice s;
    s.SetTypeMeta();
    s.metadata.name = SliceName(node_, driver_, static_cast<int>(i));
    s.metadata.owner_references = OwnerReferences();
    s.spec.driver = driver_;
    s.spec.pool = {node_, 0, static_cast<int64_t>(chunks.size())};
    s.spec.node_name = node_;
    s.spec.devices = std::move(chunks[i]);
    absl::Status valid = api::ValidateResourceSliceStatus(s);
    if (!valid.ok()) {
      return absl::InvalidArgumentError(StrCat("refusing to publish an invalid ResourceSlice: ",
                                               base::FromAbsl(valid.message())));
    }
    out.push_back(std::move(s));
  }
  return out;
}

absl::StatusOr<std::vector<Publisher::Existing>> Publisher::ListLocked(const std::string& version) {
  kube::ListOptions opts;
  opts.field_selector =
      StrCat(rs::kSelectorNodeName, "=", node_, ",", rs::kSelectorDriver, "=", driver_);
  absl::StatusOr<Json> list = Slices(version).ListAll("", opts);
  if (!list.ok()) {
    if (kube::IsNotFound(list.status()) && options_.api_version.empty()) {
      version_.clear();  // the server changed (downgrade/upgrade): discover again next time
    }
    return kube::WithContext(list.status(), "listing ResourceSlices");
  }
  std::vector<Existing> out;
  auto items = list->find("items");
  if (items == list->end() || !items->is_array()) return out;
  for (const Json& item : *items) {
    // The field selector already filters; check again (a server may ignore it).
    if (JsonString(item, "spec", "driver") != driver_ ||
        JsonString(item, "spec", "nodeName") != node_) {
      continue;
    }
    Existing e;
    e.name = JsonString(item, "metadata", "name");
    e.resource_version = JsonString(item, "metadata", "resourceVersion");
    if (e.name.empty()) continue;
    absl::StatusOr<api::ResourceSlice> s = api::DecodeResourceSliceFrom(item, version);
    if (s.ok()) {
      e.slice = std::move(*s);
    } else {
      SP_LOG(Warning)
          .Msg("ResourceSlice does not decode; it will be replaced")
          .KV("name", e.name)
          .KV("err", base::FromAbsl(s.status().message()));
    }
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(),
            [](const Existing& a, const Existing& b) { return a.name < b.name; });
  return out;
}

absl::StatusOr<PublishResult> Publisher::PublishOnce(const std::vector<api::ResourceSlice>& desired,
                                                     const std::string& version) {
  SP_ASSIGN_OR_RETURN(std::vector<Existing> existing, ListLocked(version));
  std::map<std::string, const Existing*> by_name;
  int64_t max_gen = 0;
  for (const Existing& e : existing) {
    by_name[e.name] = &e;
    if (e.slice && e.slice->spec.pool.name == node_) {
      max_gen = std::max(max_gen, e.slice->spec.pool.generation);
    }
  }
  std::set<std::string> wanted;
  bool current = true;
  for (const api::ResourceSlice& d : desired) {
    wanted.insert(d.metadata.name);
    auto it = by_name.find(d.metadata.name);
    if (it == by_name.end() || !it->second->slice ||
        it->second->slice->spec.pool.generation != max_gen || !IsCurrent(*it->second, d)) {
      current = false;
    }
  }

  PublishResult result;
  result.slices = static_cast<int>(desired.size());
  kube::DynamicClient client = Slices(version);
  kube::CreateOptions write_opts{.field_manager = options_.field_manager};
  if (current) {
    result.generation = max_gen;
  } else {
    result.generation = max_gen + 1;
    for (const api::ResourceSlice& d : desired) {
      api::ResourceSlice obj = d;
      obj.spec.pool.generation = result.generation;
      auto it = by_name.find(d.metadata.name);
      bool update = it != by_name.end();
      if (update) {
        const Existing& e = *it->second;
        if (!e.slice || e.slice->spec.pool.name != node_) {
          // spec.pool.name is immutable (and an undecodable object cannot be merged):
          // replace the object instead of updating it.
          kube::DeleteOptions del;
          del.precondition_resource_version = e.resource_version;
          absl::Status s = client.Delete("", e.name, del);
          if (!s.ok() && !kube::IsNotFound(s)) {
            return kube::WithContext(s, StrCat("replacing ResourceSlice ", e.name));
          }
          ++result.deleted;
          update = false;
        } else {
          obj.metadata = e.slice->metadata;  // keep labels/annotations/finalizers
          obj.metadata.owner_references = d.metadata.owner_references;
          obj.metadata.resource_version = e.resource_version;
        }
      }
      SP_ASSIGN_OR_RETURN(Json body, api::EncodeResourceSliceAs(obj, version));
      absl::StatusOr<Json> written =
          update ? client.Update(body, write_opts) : client.Create(body, write_opts);
      if (!written.ok()) {
        return kube::WithContext(written.status(), StrCat(update ? "updating" : "creating",
                                                          " ResourceSlice ", d.metadata.name));
      }
      ++(update ? result.updated : result.created);
      written_[d.metadata.name] = {JsonString(*written, "metadata", "resourceVersion"),
                                   ContentKey(obj)};
    }
  }
  for (const Existing& e : existing) {
    if (wanted.count(e.name)) continue;
    kube::DeleteOptions del;
    del.precondition_resource_version = e.resource_version;
    absl::Status s = client.Delete("", e.name, del);
    if (!s.ok() && !kube::IsNotFound(s)) {
      return kube::WithContext(s, StrCat("deleting ResourceSlice ", e.name));
    }
    written_.erase(e.name);
    ++result.deleted;
  }
  result.changed = result.created + result.updated + result.deleted > 0;
  return result;
}

absl::StatusOr<PublishResult> Publisher::Publish(const std::vector<api::Device>& devices) {
  std::lock_guard<std::mutex> l(mu_);
  SP_ASSIGN_OR_RETURN(std::string version, ApiVersionLocked());
  SP_ASSIGN_OR_RETURN(std::vector<api::ResourceSlice> desired, Desired(devices));
  absl::Status last;
  int attempts = std::max(1, options_.max_attempts);
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    absl::StatusOr<PublishResult> r = PublishOnce(desired, version);
    if (r.ok()) {
      r->attempts = attempt;
      r->devices = static_cast<int>(devices.size());
      r->api_version = version;
      if (r->changed) {
        SP_LOG(Info)
            .Msg("published ResourceSlices")
            .KV("node", node_)
            .KV("driver", driver_)
            .KV("version", version)
            .KV("generation", r->generation)
            .KV("slices", r->slices)
            .KV("devices", r->devices)
            .KV("created", r->created)
            .KV("updated", r->updated)
            .KV("deleted", r->deleted);
      }
      return r;
    }
    last = r.status();
    if (!kube::IsConflict(last) && !kube::IsAlreadyExists(last)) return last;
    SP_LOG(Info).Msg("ResourceSlice write conflict; re-listing").KV("node", node_).KV("attempt",
                                                                                      attempt);
  }
  return kube::WithContext(last, StrCat("publishing ResourceSlices: still conflicting after ",
                                        attempts, " attempts"));
}

absl::StatusOr<int> Publisher::Unpublish() {
  std::lock_guard<std::mutex> l(mu_);
  SP_ASSIGN_OR_RETURN(std::string version, ApiVersionLocked());
  SP_ASSIGN_OR_RETURN(std::vector<Existing> existing, ListLocked(version));
  kube::DynamicClient client = Slices(version);
  int deleted = 0;
  for (const Existing& e : existing) {
    absl::Status s = client.Delete("", e.name);
    if (!s.ok() && !kube::IsNotFound(s)) {
      return kube::WithContext(s, StrCat("deleting ResourceSlice ", e.name));
    }
    written_.erase(e.name);
    ++deleted;
  }
  return deleted;
}

absl::StatusOr<std::vector<api::ResourceSlice>> Publisher::List() {
  std::lock_guard<std::mutex> l(mu_);
  SP_ASSIGN_OR_RETURN(std::string version, ApiVersionLocked());
  SP_ASSIGN_OR_RETURN(std::vector<Existing> existing, ListLocked(version));
  std::vector<api::ResourceSlice> out;
  for (Existing& e : existing) {
    if (e.slice) out.push_back(std::move(*e.slice));
  }
  return out;
}

}  // namespace spiderpool::dra::resourceslice
