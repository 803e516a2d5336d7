#include "kube/informer/reflector.h"

#include "absl/strings/match.h"
#include "base/log.h"
#include "kube/rest/errors.h"

namespace spiderpool::kube {

Reflector::Reflector(DynamicClient client, ReflectorOptions options, ReflectorSink* sink)
    : client_(std::move(client)),
      options_(std::move(options)),
      sink_(sink),
      clock_(options_.clock != nullptr ? *options_.clock : base::RealClock::Get()) {}

std::string Reflector::LastSyncResourceVersion() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_rv_;
}

ReflectorStats Reflector::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}

void Reflector::SetLastRV(std::string rv) {
  std::lock_guard<std::mutex> l(mu_);
  last_rv_ = std::move(rv);
}

absl::Status Reflector::ListAndReplace() {
  ListOptions lo;
  lo.label_selector = options_.label_selector;
  lo.field_selector = options_.field_selector;
  lo.limit = options_.page_size;
  lo.metadata_only = options_.metadata_only;
  auto list = client_.ListAll(options_.namespace_, lo);
  if (!list.ok()) return list.status();
  std::string rv;
  if (list->contains("metadata") && (*list)["metadata"].is_object()) {
    rv = (*list)["metadata"].value("resourceVersion", "");
  }
  std::vector<base::Json> items;
  if (list->contains("items") && (*list)["items"].is_array()) {
    items.reserve((*list)["items"].size());
    for (auto& item : (*list)["items"]) items.push_back(std::move(item));
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    ++stats_.lists;  // counted before the sink sees it, so handlers observe the new count
  }
  sink_->Replace(std::move(items), rv);
  SetLastRV(rv);
  synced_ = true;
  return absl::OkStatus();
}

absl::Status Reflector::WatchOnce(std::stop_token stop) {
  WatchOptions wo;
  wo.resource_version = LastSyncResourceVersion();
  wo.label_selector = options_.label_selector;
  wo.field_selector = options_.field_selector;
  wo.allow_watch_bookmarks = true;
  wo.metadata_only = options_.metadata_only;
  wo.timeout_seconds = options_.watch_timeout_seconds;
  {
    std::lock_guard<std::mutex> l(mu_);
    ++stats_.watches;
  }
  return client_.Watch(
      options_.namespace_, wo,
      [this](WatchEvent ev) {
        std::string rv;
        if (ev.object.is_object() && ev.object.contains("metadata") &&
            ev.object["metadata"].is_object()) {
          rv = ev.object["metadata"].value("resourceVersion", "");
        }
        if (ev.type != WatchEventType::kBookmark) {
          sink_->Apply(ev.type, std::move(ev.object));
          std::lock_guard<std::mutex> l(mu_);
          ++stats_.events;
        }
        if (!rv.empty()) SetLastRV(std::move(rv));
        return true;
      },
      stop);
}

bool Reflector::DropRefusedFieldSelector(const absl::Status& s) {
  if (!options_.field_selector_fallback || options_.field_selector.empty() ||
      !kube::IsBadRequest(s) || !absl::StrContains(s.message(), "field label not supported")) {
    return false;
  }
  SP_LOG(Warning).Msg("field selector not supported by the API server; watching every object")
      .KV("resource", client_.resource().GroupResource())
      .KV("fieldSelector", options_.field_selector).KV("err", s);
  options_.field_selector.clear();  // only Run's thread reads it
  return true;
}

void Reflector::Run(std::stop_token stop) {
  base::Backoff backoff(options_.backoff);
  bool need_list = true;
  const std::string what = client_.resource().GroupResource();
  while (!stop.stop_requested()) {
    if (need_list) {
      absl::Status s = ListAndReplace();
      if (!s.ok() && DropRefusedFieldSelector(s)) continue;
      if (!s.ok()) {
        SP_LOG(Warning).Msg("list failed").KV("resource", what).KV("err", s);
        if (!clock_.SleepFor(backoff.Next(), stop)) return;
        continue;
      }
      SP_LOG(Debug).Msg("listed").KV("resource", what).KV("rv", LastSyncResourceVersion());
      need_list = false;
      backoff.Reset();
    }
    absl::Status s = WatchOnce(stop);
    if (stop.stop_requested()) return;
    if (s.ok()) {
      backoff.Reset();
      continue;  // the stream ended (timeout, dropped): resume from the last resourceVersion
    }
    if (kube::IsGone(s) || DropRefusedFieldSelector(s)) {
      SP_LOG(Info).Msg("watch expired, relisting").KV("resource", what)
          .KV("rv", LastSyncResourceVersion());
      need_list = true;
      continue;
    }
    SP_LOG(Warning).Msg("watch failed").KV("resource", what).KV("err", s);
    if (!clock_.SleepFor(backoff.Next(), stop)) return;
  }
}

}  // namespace spiderpool::kube
