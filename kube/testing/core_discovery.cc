// Discovery (/version, /api, /apis, ...) and the minimal /openapi/v3 surface.

#include "kube/testing/core.h"

#include <algorithm>
#include <set>

#include "base/log.h"
#include "base/strings.h"
#include "kube/testing/core_util.h"
#include "kube/testing/errors.h"
#include "kube/testing/resources.h"

namespace spiderpool::kube::testing::internal {

using base::Json;
using base::StrCat;

namespace {
const std::vector<std::string> kVerbs = {"create", "delete", "deletecollection", "get",
                                         "list",   "patch",  "update",           "watch"};
}  // namespace

// ---- discovery ----

// A minimal OpenAPI v3 surface: enough for kubectl to learn that every resource supports
// server-side field validation (it then skips client-side schema validation). No schemas.
HttpResponse Core::OpenApi(const HttpRequest& req, const std::vector<std::string>& seg) {
  std::lock_guard<std::mutex> l(mu_);
  if (seg.size() < 2 || seg[1] != "v3") return StatusResp(ResourceNotFoundStatus());
  std::map<std::string, std::vector<const VersionState*>> by_gv;  // "api/v1", "apis/g/v"
  for (const auto& [k, rs] : resources_) {
    for (const auto& [v, vs] : rs.versions) {
      by_gv[rs.group.empty() ? "api/" + v : StrCat("apis/", rs.group, "/", v)].push_back(&vs);
    }
  }
  if (seg.size() == 2) {
    Json paths = Json::object();
    for (const auto& [gv, list] : by_gv) {
      paths[gv] = {{"serverRelativeURL", StrCat("/openapi/v3/", gv, "?hash=", rv_)}};
    }
    return JsonResp(200, {{"paths", paths}});
  }
  std::string gv;
  for (size_t i = 2; i < seg.size(); ++i) gv += (i > 2 ? "/" : "") + seg[i];
  auto it = by_gv.find(gv);
  if (it == by_gv.end()) return StatusResp(ResourceNotFoundStatus());
  Json paths = Json::object();
  for (const VersionState* vs : it->second) {
    const ResourceInfo& info = vs->info;
    std::string item = StrCat("/", gv, info.namespaced ? "/namespaces/{namespace}/" : "/",
                              info.plural, "/{name}");
    Json gvk = {{"group", info.group}, {"version", info.version}, {"kind", info.kind}};
    Json params = {
        {{"name", "fieldValidation"}, {"in", "query"}, {"schema", {{"type", "string"}}}},
        {{"name", "dryRun"}, {"in", "query"}, {"schema", {{"type", "string"}}}}};
    Json op = {{"x-kubernetes-group-version-kind", gvk},
               {"parameters", params},
               {"responses", {{"200", {{"description", "OK"}}}}}};
    paths[item] = {{"get", op}, {"put", op}, {"patch", op}, {"delete", op}};
  }
  return JsonResp(200, {{"openapi", "3.0.0"},
                        {"info", {{"title", "Kubernetes"}, {"version", "v1.31.0-loopback"}}},
                        {"paths", paths},
                        {"components", {{"schemas", Json::object()}}}});
}

HttpResponse Core::Discovery(const HttpRequest& req, const Target& t) {
  std::lock_guard<std::mutex> l(mu_);
  switch (t.kind) {
    case Target::kRoot: {
      Json paths = {"/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"};
      std::set<std::string> gvs;
      for (const auto& [k, rs] : resources_) {
        if (rs.group.empty()) continue;
        gvs.insert("/apis/" + rs.group);
        for (const auto& [v, vs] : rs.versions) gvs.insert(StrCat("/apis/", rs.group, "/", v));
      }
      for (const std::string& p : gvs) paths.push_back(p);
      return JsonResp(200, {{"paths", paths}});
    }
    case Target::kVersion:
      return JsonResp(200, {{"major", "1"},
                            {"minor", "31"},
                            {"gitVersion", "v1.31.0-loopback"},
                            {"gitCommit", "0000000000000000000000000000000000000000"},
                            {"gitTreeState", "clean"},
                            {"buildDate", "2024-08-13T00:00:00Z"},
                            {"goVersion", "go1.22.5"},
                            {"compiler", "gc"},
                            {"platform", "linux/amd64"}});
    case Target::kHealth: {
      HttpResponse r = RawJson(200, "ok");
      r.content_type = "text/plain; charset=utf-8";
      return r;
    }
    case Target::kApi:
      return JsonResp(200, {{"kind", "APIVersions"},
                            {"versions", {"v1"}},
                            {"serverAddressByClientCIDRs",
                             {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", server_address_}}}}});
    default:
      break;
  }
  // Group -> versions (by priority).
  std::map<std::string, std::vector<std::string>> groups;
  for (const auto& [k, rs] : resources_) {
    if (rs.group.empty()) continue;
    auto& vs = groups[rs.group];
    for (const auto& [v, st] : rs.versions) {
      if (std::find(vs.begin(), vs.end(), v) == vs.end()) vs.push_back(v);
    }
  }
  for (auto& [g, vs] : groups) std::sort(vs.begin(), vs.end(), VersionPriorityLess);
  auto group_json = [](const std::string& g, const std::vector<std::string>& vs) {
    Json versions = Json::array();
    for (const std::string& v : vs) {
      versions.push_back({{"groupVersion", StrCat(g, "/", v)}, {"version", v}});
    }
    return Json{{"name", g},
                {"versions", versions},
                {"preferredVersion", {{"groupVersion", StrCat(g, "/", vs[0])}, {"version", vs[0]}}}};
  };
  if (t.kind == Target::kApis) {
    Json list = Json::array();
    for (const auto& [g, vs] : groups) list.push_back(group_json(g, vs));
    return JsonResp(200, {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", list}});
  }
  if (t.kind == Target::kGroup) {
    auto it = groups.find(t.group);
    if (it == groups.end()) return StatusResp(ResourceNotFoundStatus());
    Json g = group_json(it->first, it->second);
    g["kind"] = "APIGroup";
    g["apiVersion"] = "v1";
    return JsonResp(200, g);
  }
  // kGroupVersion: APIResourceList.
  Json resources = Json::array();
  bool found = false;
  for (const auto& [k, rs] : resources_) {
    if (rs.group != t.group) continue;
    auto v = rs.versions.find(t.version);
    if (v == rs.versions.end()) continue;
    found = true;
    const ResourceInfo& info = v->second.info;
    Json r = {{"name", info.plural},
              {"singularName", info.singular},
              {"namespaced", info.namespaced},
              {"kind", info.kind},
              {"verbs", kVerbs}};
    if (!info.short_names.empty()) r["shortNames"] = info.short_names;
    resources.push_back(std::move(r));
    if (info.has_status) {
      resources.push_back({{"name", info.plural + "/status"},
                           {"singularName", ""},
                           {"namespaced", info.namespaced},
                           {"kind", info.kind},
                           {"verbs", {"get", "patch", "update"}}});
    }
  }
  if (!found) return StatusResp(ResourceNotFoundStatus());
  return JsonResp(200, {{"kind", "APIResourceList"},
                        {"apiVersion", "v1"},
                        {"groupVersion", t.ApiVersion()},
                        {"resources", resources}});
}

}  // namespace spiderpool::kube::testing::internal
