// Core's reads: GET (objects and Tables), LIST (selectors, pagination over bounded snapshots,
// Tables) and WATCH (replay from the history ring, bookmarks, filters).

#include "kube/testing/core.h"

#include <algorithm>

#include "base/log.h"
#include "base/strings.h"
#include "kube/testing/core_util.h"
#include "kube/testing/errors.h"
#include "kube/testing/resources.h"

namespace spiderpool::kube::testing::internal {

using base::Json;
using base::StrCat;

namespace {
constexpr std::string_view kContinueExpired =
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this response "
    "to retrieve the remainder of the results. Continuing with the provided token results in an "
    "inconsistent list - objects that were created, modified, or deleted between the time the "
    "first chunk was returned and now may show up in the list.";
}  // namespace


TableConvertor Core::TableConvertorLocked(const Target& t) const {
  if (!t.custom) return TableConvertor::ForBuiltin(t.group, t.plural);
  Json columns;
  if (const ResourceState* crds = FindLocked("apiextensions.k8s.io", "customresourcedefinitions")) {
    auto it = crds->objects.find(StrCat(t.plural, ".", t.group));
    if (it != crds->objects.end()) {
      const Json& spec = it->second->obj.contains("spec") ? it->second->obj["spec"] : Json();
      if (spec.is_object() && spec.contains("versions") && spec["versions"].is_array()) {
        for (const Json& v : spec["versions"]) {
          if (Str(v, "name") == t.version && v.contains("additionalPrinterColumns")) {
            columns = v["additionalPrinterColumns"];
          }
        }
      }
    }
  }
  return TableConvertor::ForCustomResource(columns);
}

namespace {
// The Content-Type kube-apiserver answers a Table with.
std::string TableContentType(const std::string& version) {
  return StrCat("application/json;as=Table;v=", version, ";g=meta.k8s.io");
}

// The Content-Type kube-apiserver answers PartialObjectMetadata(List) with.
std::string MetadataContentType(std::string_view as, const std::string& version) {
  return StrCat("application/json;as=", as, ";g=meta.k8s.io;v=", version);
}
}  // namespace

HttpResponse Core::Get(const HttpRequest& req, const Target& t) {
  std::optional<std::string> table = NegotiateTable(req.accept);
  const std::optional<std::string> metadata = NegotiateAs(req.accept, "PartialObjectMetadata");
  Json obj;
  std::optional<TableConvertor> conv;
  {
    std::lock_guard<std::mutex> l(mu_);
    ResourceState* rs = FindLocked(t.group, t.plural);
    if (!rs) return StatusResp(ResourceNotFoundStatus());
    auto it = rs->objects.find(Key(t.ns, t.name));
    if (it == rs->objects.end()) return StatusResp(NotFoundStatus(t.group, t.plural, t.name));
    if (metadata && !table) {
      HttpResponse r = JsonResp(200, PartialObjectMetadata(it->second->obj, *metadata));
      r.content_type = MetadataContentType("PartialObjectMetadata", *metadata);
      return r;
    }
    if (!table) return RawJson(200, RenderAs(*it->second, t.ApiVersion()));
    obj = it->second->obj;
    conv = TableConvertorLocked(t);
  }
  obj["apiVersion"] = t.ApiVersion();
  Json meta = {{"resourceVersion", MetaStr(obj, "resourceVersion")}};
  HttpResponse r = JsonResp(200, conv->ToTable({&obj}, meta, clock_->Now(),
                                               ParseIncludeObject(Param(req, "includeObject")),
                                               *table));
  r.content_type = TableContentType(*table);
  return r;
}

HttpResponse Core::List(const HttpRequest& req, const Target& t) {
  Selectors sel;
  if (auto err = ParseSelectors(req, t.info, t.custom, t.selectable_fields, &sel)) return StatusResp(*err);
  int64_t limit = 0;
  std::string limit_s = Param(req, "limit");
  if (!limit_s.empty() && (!ParseInt(limit_s, &limit) || limit < 0)) limit = 0;
  std::string cont = Param(req, "continue");

  std::vector<StoredPtr> page;
  int64_t rv = 0;
  std::string next_token;
  int64_t remaining = 0;
  std::optional<std::string> table = NegotiateTable(req.accept);
  const std::optional<std::string> metadata =
      table ? std::nullopt : NegotiateAs(req.accept, "PartialObjectMetadataList");
  std::optional<TableConvertor> conv;
  {
    std::lock_guard<std::mutex> l(mu_);
    ResourceState* rs = FindLocked(t.group, t.plural);
    if (!rs) return StatusResp(ResourceNotFoundStatus());
    if (table) conv = TableConvertorLocked(t);
    const std::vector<StoredPtr>* items = nullptr;
    std::vector<StoredPtr> fresh;
    uint64_t snap_id = 0;
    size_t offset = 0;
    if (!cont.empty()) {
      std::string decoded;
      Json tok;
      if (!UnBase64Url(cont, &decoded)) {
        return StatusResp(BadRequestStatus("continue key is not valid: illegal base64 data"));
      }
      auto parsed = base::ParseJson(decoded);
      if (!parsed.ok() || !parsed->is_object() || !(*parsed)["id"].is_number_unsigned() ||
          !(*parsed)["off"].is_number_unsigned() || !(*parsed)["rv"].is_number_integer()) {
        return StatusResp(BadRequestStatus("continue key is not valid: incorrect encoded start "
                                           "resourceVersion (version meta.k8s.io/v1)"));
      }
      snap_id = (*parsed)["id"].get<uint64_t>();
      offset = (*parsed)["off"].get<uint64_t>();
      auto sit = snapshots_.find(snap_id);
      if (sit == snapshots_.end()) {
        ApiStatus s = ExpiredStatus(kContinueExpired);
        return StatusResp(s);
      }
      items = &sit->second.items;
      rv = sit->second.rv;
      if (offset > items->size()) offset = items->size();
    } else {
      rv = rv_;
      auto begin = rs->objects.begin();
      std::string prefix;
      if (!t.ns.empty() && rs->namespaced) {
        prefix = t.ns + "/";
        begin = rs->objects.lower_bound(prefix);
      }
      for (auto it = begin; it != rs->objects.end(); ++it) {
        if (!prefix.empty() && it->first.compare(0, prefix.size(), prefix) != 0) break;
        if (StoredMatches(*it->second, sel)) fresh.push_back(it->second);
      }
      items = &fresh;
    }
    size_t end = items->size();
    if (limit > 0 && offset + static_cast<size_t>(limit) < items->size()) {
      end = offset + static_cast<size_t>(limit);
      if (snap_id == 0) {
        snap_id = next_snapshot_++;
        Snapshot snap;
        snap.items = std::move(fresh);
        snap.rv = rv;
        snapshots_[snap_id] = std::move(snap);
        while (snapshots_.size() > std::max<size_t>(options_.list_snapshots, 1)) {
          snapshots_.erase(snapshots_.begin());
        }
        items = &snapshots_[snap_id].items;
      }
      Json tok = {{"v", "meta.k8s.io/v1"},
                  {"rv", rv},
                  {"start", (*items)[end]->key},
                  {"id", snap_id},
                  {"off", end}};
      next_token = Base64Url(base::DumpJson(tok));
      remaining = static_cast<int64_t>(items->size() - end);
    }
    page.assign(items->begin() + static_cast<std::ptrdiff_t>(offset),
                items->begin() + static_cast<std::ptrdiff_t>(end));
  }
  std::string av = t.ApiVersion();
  if (conv) {
    std::vector<Json> objs;
    objs.reserve(page.size());
    for (const StoredPtr& s : page) {
      objs.push_back(s->obj);
      objs.back()["apiVersion"] = av;
    }
    std::vector<const Json*> ptrs;
    for (const Json& o : objs) ptrs.push_back(&o);
    Json meta = {{"resourceVersion", std::to_string(rv)}};
    if (!next_token.empty()) {
      meta["continue"] = next_token;
      meta["remainingItemCount"] = remaining;
    }
    HttpResponse r = JsonResp(200, conv->ToTable(ptrs, meta, clock_->Now(),
                                                 ParseIncludeObject(Param(req, "includeObject")),
                                                 *table));
    r.content_type = TableContentType(*table);
    return r;
  }
  const std::string list_kind = metadata ? "PartialObjectMetadataList" : t.info.list_kind;
  const std::string list_version = metadata ? StrCat("meta.k8s.io/", *metadata) : av;
  std::string body = StrCat("{\"kind\":\"", list_kind, "\",\"apiVersion\":\"", list_version,
                            "\",\"metadata\":{\"resourceVersion\":\"", rv, "\"");
  if (!next_token.empty()) {
    body += StrCat(",\"continue\":\"", next_token, "\",\"remainingItemCount\":", remaining);
  }
  body += "},\"items\":[";
  size_t total = body.size();
  for (const StoredPtr& s : page) total += s->text.size() + 1;
  body.reserve(total + 2);
  for (size_t i = 0; i < page.size(); ++i) {
    if (i) body += ',';
    body += metadata ? base::DumpJson(PartialObjectMetadata(page[i]->obj, *metadata))
                     : RenderAs(*page[i], av);
  }
  body += "]}";
  HttpResponse r = RawJson(200, std::move(body));
  if (metadata) r.content_type = MetadataContentType("PartialObjectMetadataList", *metadata);
  return r;
}

HttpResponse Core::Watch(const HttpRequest& req, const Target& t) {
  Selectors sel;
  if (auto err = ParseSelectors(req, t.info, t.custom, t.selectable_fields, &sel)) return StatusResp(*err);
  if (t.legacy_watch && !t.name.empty()) {
    std::string fs = Param(req, "fieldSelector");
    auto merged = api::FieldSelector::Parse(
        StrCat(fs, fs.empty() ? "" : ",", "metadata.name=", t.name));
    if (!merged.ok()) return StatusResp(BadRequestStatus(base::FromAbsl(merged.status().message())));
    sel.fields = *std::move(merged);
  }
  std::string rv_param = Param(req, "resourceVersion");
  int64_t from = 0;
  if (!rv_param.empty() && (!ParseInt(rv_param, &from) || from < 0)) {
    return StatusResp(BadRequestStatus(StrCat("invalid resource version: ", Quote(rv_param))));
  }
  bool initial = ParamTrue(req, "sendInitialEvents") || rv_param.empty() || from == 0;
  auto w = std::make_shared<Watcher>(std::max<size_t>(options_.watch_queue_capacity, 1),
                                     t.ApiVersion());
  w->group = t.group;
  w->plural = t.plural;
  w->ns = t.info.namespaced ? t.ns : "";
  w->labels = std::move(sel.labels);
  w->fields = std::move(sel.fields);
  w->bookmarks = ParamTrue(req, "allowWatchBookmarks");
  w->kind = t.info.kind;
  std::string timeout = Param(req, "timeoutSeconds");
  int64_t timeout_s = 0;
  if (!timeout.empty() && ParseInt(timeout, &timeout_s) && timeout_s > 0) {
    w->deadline = absl::Now() + absl::Seconds(timeout_s);
  } else if (options_.watch_min_request_timeout > absl::ZeroDuration()) {
    // kube-apiserver ends a watch without timeoutSeconds after a random time in
    // [min-request-timeout, 2 * min-request-timeout], so that clients spread their re-watches.
    double f;
    {
      std::lock_guard<std::mutex> l(mu_);
      f = std::uniform_real_distribution<double>(1.0, 2.0)(rng_);
    }
    w->deadline = absl::Now() + options_.watch_min_request_timeout * f;
  }

  w->clock = clock_;  // table ages and LatencyModel::watch_delay
  std::optional<std::string> table = NegotiateTable(req.accept);
  if (table) {
    w->table_version = *table;
    w->include_object = ParseIncludeObject(Param(req, "includeObject"));
  } else if (std::optional<std::string> metadata =
                 NegotiateAs(req.accept, "PartialObjectMetadata")) {
    w->metadata_version = *metadata;  // events and bookmarks carry PartialObjectMetadata
    w->kind = "PartialObjectMetadata";
  }
  HttpResponse r;
  r.code = 200;
  r.watch = w;
  std::lock_guard<std::mutex> l(mu_);
  ResourceState* rs = FindLocked(t.group, t.plural);
  if (!rs) return StatusResp(ResourceNotFoundStatus());
  if (table) w->table = std::make_shared<const TableConvertor>(TableConvertorLocked(t));
  if (initial) {
    for (const auto& [key, s] : rs->objects) {
      if (MatchesLocked(*w, *s)) w->Push({"ADDED", s, ""});
    }
    if (ParamTrue(req, "sendInitialEvents") && w->bookmarks) EnqueueBookmarkLocked(*w, true);
  } else {
    if (from < rs->history_floor) {
      ApiStatus s = ExpiredStatus(StrCat("too old resource version: ", from, " (",
                                         rs->history_floor, ")"));
      w->Push({"ERROR", nullptr, base::DumpJson(s.ToJson())});
      w->Close(false);
      return r;  // not registered: the stream ends after the error
    }
    for (const Event& e : rs->history) {
      if (e.rv > from) OfferLocked(*rs, *w, e);
    }
  }
  rs->watchers.push_back(w);
  watches_cv_.notify_all();
  return r;
}
}  // namespace spiderpool::kube::testing::internal
