#pragma once
// A typed informer: a Reflector feeding a Store<T>, plus event handlers.
//
//   Informer<api::Pod> pods(rest, {.namespace_ = "kube-system"});
//   pods.AddHandlers({.on_add = [&](const api::Pod& p) { ctrl.Enqueue(...); }, ...});
//   std::jthread t([&](std::stop_token s) { pods.Run(s); });
//   pods.WaitForCacheSync(absl::Seconds(30));
//   auto pod = pods.store().Get("kube-system/p1");
//
// Handlers run on the informer's thread, outside the store lock, in event order; they must be
// quick (enqueue a key and return). An object that does not decode is logged and counted
// (`spiderpool_informer_decode_errors_total{resource}`) and skipped, never a crash; on DELETE
// its key is still removed.

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "api/codec.h"
#include "api/resource.h"
#include "base/clock.h"
#include "base/log.h"
#include "kube/informer/reflector.h"
#include "kube/informer/store.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/client.h"

namespace spiderpool::kube {

template <typename T>
struct EventHandlers {
  std::function<void(const T&)> on_add;
  std::function<void(const T& old_obj, const T& new_obj)> on_update;
  std::function<void(const T&)> on_delete;
};

struct InformerOptions {
  std::string namespace_;  // "" = all
  std::string label_selector;
  std::string field_selector;
  bool field_selector_fallback = false;  // see ReflectorOptions
  int64_t page_size = 500;
  // Re-delivers every cached object as on_update(obj, obj) this often; zero = never.
  absl::Duration resync_period = absl::ZeroDuration();
  base::Clock* clock = nullptr;
  metrics::Registry* registry = nullptr;
};

namespace informer_internal {
std::string KeyOf(const base::Json& obj);
metrics::Counter& DecodeErrors(metrics::Registry* registry, const std::string& resource);
}  // namespace informer_internal

template <api::ApiObject T>
class Informer : public ReflectorSink {
 public:
  using Ptr = std::shared_ptr<const T>;
  // Informer<api::MetadataOnly<X>> lists and watches X's metadata only.
  static constexpr bool kMetadataOnly = requires { T::kMetadataOnly; };

  Informer(std::shared_ptr<RestClient> rest, InformerOptions options = {})
      : options_(std::move(options)),
        clock_(options_.clock != nullptr ? *options_.clock : base::RealClock::Get()),
        decode_errors_(
            informer_internal::DecodeErrors(options_.registry, T::Resource().GroupResource())),
        reflector_(DynamicClient(std::move(rest), T::Resource()),
                   ReflectorOptions{.namespace_ = options_.namespace_,
                                    .label_selector = options_.label_selector,
                                    .field_selector = options_.field_selector,
                                    .field_selector_fallback = options_.field_selector_fallback,
                                    .page_size = options_.page_size,
                                    .metadata_only = kMetadataOnly,
                                    .clock = options_.clock},
                   this) {}

  // Before Run.
  void AddHandlers(EventHandlers<T> h) { handlers_.push_back(std::move(h)); }
  void AddIndexer(const std::string& name, typename Store<T>::IndexFunc fn) {
    store_.AddIndexer(name, std::move(fn));
  }

  void Run(std::stop_token stop) {
    std::jthread resync;
    if (options_.resync_period > absl::ZeroDuration()) {
      resync = std::jthread([this, stop] {
        while (clock_.SleepFor(options_.resync_period, stop)) {
          for (const Ptr& obj : store_.List()) {
            for (auto& h : handlers_) {
              if (h.on_update) h.on_update(*obj, *obj);
            }
          }
        }
      });
    }
    reflector_.Run(stop);
  }

  bool HasSynced() const { return reflector_.HasSynced(); }
  // Polls HasSynced (real time) until it is true or `timeout` passes.
  bool WaitForCacheSync(absl::Duration timeout, std::stop_token stop = {}) const {
    const absl::Time deadline = absl::Now() + timeout;
    while (!HasSynced()) {
      if (absl::Now() >= deadline) return false;
      if (!base::RealClock::Get().SleepFor(absl::Milliseconds(5), stop)) return false;
    }
    return true;
  }
  const Store<T>& store() const { return store_; }
  const Reflector& reflector() const { return reflector_; }

  // ReflectorSink.
  void Replace(std::vector<base::Json> items, const std::string&) override {
    std::set<std::string> present;
    for (base::Json& item : items) {
      const std::string key = informer_internal::KeyOf(item);
      present.insert(key);
      Ptr obj = DecodeOrNull(item);
      if (obj == nullptr) continue;
      Ptr old = store_.Upsert(key, obj);
      Deliver(old, obj);
    }
    for (const std::string& key : store_.Keys()) {
      if (present.count(key)) continue;
      Ptr old = store_.Remove(key);  // deleted while we were not watching
      if (old != nullptr) DeliverDelete(*old);
    }
  }

  void Apply(WatchEventType type, base::Json object) override {
    const std::string key = informer_internal::KeyOf(object);
    if (type == WatchEventType::kDeleted) {
      Ptr old = store_.Remove(key);
      Ptr last = DecodeOrNull(object);
      if (last != nullptr) {
        DeliverDelete(*last);
      } else if (old != nullptr) {
        DeliverDelete(*old);
      }
      return;
    }
    Ptr obj = DecodeOrNull(object);
    if (obj == nullptr) return;
    Ptr old = store_.Upsert(key, obj);
    Deliver(old, obj);
  }

 private:
  Ptr DecodeOrNull(const base::Json& j) {
    api::DecodeErrors errs;
    auto obj = std::make_shared<T>(api::DecodeInto<T>(j, &errs));
    if (!errs.ok()) {
      decode_errors_.Inc();
      SP_LOG(Warning).Msg("skipping an object that does not decode")
          .KV("resource", T::Resource().GroupResource())
          .KV("key", informer_internal::KeyOf(j))
          .KV("err", std::string(errs.ToStatus().message()));
      return nullptr;
    }
    return obj;
  }
  void Deliver(const Ptr& old, const Ptr& obj) {
    for (auto& h : handlers_) {
      if (old == nullptr) {
        if (h.on_add) h.on_add(*obj);
      } else if (h.on_update) {
        h.on_update(*old, *obj);
      }
    }
  }
  void DeliverDelete(const T& obj) {
    for (auto& h : handlers_) {
      if (h.on_delete) h.on_delete(obj);
    }
  }

  InformerOptions options_;
  base::Clock& clock_;
  metrics::Counter& decode_errors_;
  Store<T> store_;
  std::vector<EventHandlers<T>> handlers_;
  Reflector reflector_;
};

}  // namespace spiderpool::kube
