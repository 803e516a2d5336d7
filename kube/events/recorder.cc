#include "kube/events/recorder.h"

#include "base/log.h"
#include "base/strings.h"
#include "kube/rest/errors.h"

namespace spiderpool::kube {
namespace {

std::string AggregationKey(const api::ObjectReference& o, const std::string& type,
                           const std::string& reason, const std::string& message) {
  return base::StrCat(o.kind, "\x1f", o.namespace_, "\x1f", o.name, "\x1f", o.uid, "\x1f", type,
                      "\x1f", reason, "\x1f", message);
}

std::string ThrottleKey(const api::ObjectReference& o, const std::string& reason) {
  return base::StrCat(o.kind, "\x1f", o.namespace_, "\x1f", o.name, "\x1f", o.uid, "\x1f",
                      reason);
}

}  // namespace

EventRecorder::EventRecorder(std::shared_ptr<RestClient> rest, EventRecorderOptions options)
    : client_(std::move(rest)),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : base::RealClock::Get()),
      dropped_counter_((options_.registry != nullptr ? *options_.registry
                                                     : metrics::Registry::Default())
                           .AddCounter("spiderpool_events_dropped_total",
                                       "Events not written because the recorder queue was full")
                           .WithLabels({{"component", options_.component}})),
      thread_([this](std::stop_token stop) { Loop(stop); }) {}

EventRecorder::~EventRecorder() {
  Flush();
  thread_.request_stop();
  { std::lock_guard<std::mutex> l(mu_); }
  cv_.notify_all();
}

void EventRecorder::Event(const api::ObjectReference& object, std::string type,
                          std::string reason, std::string message) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (queue_.size() >= options_.max_queue) {
      ++dropped_;
      dropped_counter_.Inc();
      return;
    }
    queue_.push_back(Pending{object, std::move(type), std::move(reason), std::move(message),
                             clock_.Now()});
  }
  cv_.notify_all();
}

void EventRecorder::Flush() {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return queue_.empty() && in_flight_ == 0; });
}

uint64_t EventRecorder::dropped() const {
  std::lock_guard<std::mutex> l(mu_);
  return dropped_;
}

void EventRecorder::Loop(std::stop_token stop) {
  for (;;) {
    Pending p;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, stop, [&] { return !queue_.empty(); });
      if (queue_.empty()) return;  // stopped
      p = std::move(queue_.front());
      queue_.pop_front();
      ++in_flight_;
    }
    Write(p);
    {
      std::lock_guard<std::mutex> l(mu_);
      --in_flight_;
    }
    cv_.notify_all();
  }
}

void EventRecorder::Write(const Pending& p) {
  const std::string ns = p.object.namespace_.empty() ? "default" : p.object.namespace_;
  // Occurrences of this (object, reason) that the rate limit kept from being written.
  int32_t folded = 0;
  if (options_.min_interval > absl::ZeroDuration()) {
    if (throttled_.size() > 4096) throttled_.clear();  // bounded memory
    auto [t, inserted] =
        throttled_.try_emplace(ThrottleKey(p.object, p.reason), Throttle{p.at, 0});
    if (!inserted) {
      if (p.at - t->second.last_write < options_.min_interval) {
        ++t->second.suppressed;
        return;
      }
      folded = t->second.suppressed;
      t->second = Throttle{p.at, 0};
    }
  }
  const std::string key = AggregationKey(p.object, p.type, p.reason, p.message);
  auto it = seen_.find(key);
  if (it != seen_.end() && p.at - it->second.last < options_.aggregation_window) {
    Seen& s = it->second;
    base::Json patch = {{"count", s.count + 1 + folded},
                        {"lastTimestamp", api::FormatTime(p.at)}};
    auto patched = client_.Patch(ns, s.event_name, PatchType::kMerge, patch);
    if (patched.ok()) {
      s.count += 1 + folded;
      s.last = p.at;
      return;
    }
    if (!kube::IsNotFound(patched.status())) {
      SP_LOG(Warning).Msg("cannot update event").KV("event", s.event_name)
          .KV("err", patched.status());
      return;
    }
    seen_.erase(it);  // the event expired on the server: write a new one
  }
  if (seen_.size() > 4096) seen_.clear();  // bounded memory; worst case a duplicate Event

  api::Event e;
  e.SetTypeMeta();
  e.metadata.namespace_ = ns;
  // client-go names events <object>.<unique hex>; time plus a counter keeps them unique.
  e.metadata.name = base::StrCat(
      p.object.name, ".",
      absl::StrCat(absl::Hex(absl::ToUnixNanos(p.at) + static_cast<int64_t>(name_counter_++))));
  e.involved_object = p.object;
  e.reason = p.reason;
  e.message = p.message;
  e.type = p.type;
  e.count = 1 + folded;
  e.first_timestamp = api::Time{p.at};
  e.last_timestamp = api::Time{p.at};
  e.source.component = options_.component;
  e.source.host = options_.host;
  e.reporting_component = options_.component;
  e.reporting_instance = options_.host;
  auto created = client_.Create(e);
  if (!created.ok()) {
    SP_LOG(Warning).Msg("cannot write event").KV("reason", p.reason)
        .KV("object", p.object.name).KV("err", created.status());
    return;
  }
  seen_[key] = Seen{created->metadata.name, 1 + folded, p.at, p.at};
}

}  // namespace spiderpool::kube
