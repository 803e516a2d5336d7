#pragma once
// client-go's Reflector: keeps a sink in sync with one resource by listing, then watching.
//
// - List: paginated (page_size), consistent snapshot; the sink gets Replace(items, rv).
// - Watch from the list's resourceVersion with bookmarks. Each event (and bookmark) advances
//   the last seen resourceVersion; when the stream ends or drops, the watch RESUMES from it —
//   no relist, so a flapping connection costs no list of 10k objects.
// - 410 Gone (the watch request, or an ERROR event with a 410 Status): relist.
// - A refused field selector with field_selector_fallback: list again without it.
// - Other failures back off (800ms doubling to 30s, jittered) on the injected clock.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "base/backoff.h"
#include "base/clock.h"
#include "base/json.h"
#include "kube/rest/client.h"

namespace spiderpool::kube {

class ReflectorSink {
 public:
  virtual ~ReflectorSink() = default;
  // The full current state after a (re)list.
  virtual void Replace(std::vector<base::Json> items, const std::string& resource_version) = 0;
  // One watch event (never BOOKMARK or ERROR).
  virtual void Apply(WatchEventType type, base::Json object) = 0;
};

struct ReflectorOptions {
  std::string namespace_;  // "" = all namespaces (or a cluster-scoped resource)
  std::string label_selector;
  std::string field_selector;
  // When the server refuses field_selector (400 `field label not supported`: a custom
  // resource's selectableFields on an API server older than 1.31, which prunes them), list
  // and watch without it: the sink then sees every object and must filter itself.
  bool field_selector_fallback = false;
  int64_t page_size = 500;
  // List and watch only the objects' metadata (PartialObjectMetadata).
  bool metadata_only = false;
  // Server-side watch timeout; client-go picks 5–10 minutes so watches rotate.
  int64_t watch_timeout_seconds = 300;
  base::BackoffPolicy backoff{.initial = absl::Milliseconds(800), .max = absl::Seconds(30),
                              .factor = 2.0, .jitter = 1.0};
  base::Clock* clock = nullptr;  // nullptr = RealClock
};

struct ReflectorStats {
  uint64_t lists = 0;    // successful (re)lists
  uint64_t watches = 0;  // watch requests started
  uint64_t events = 0;   // events applied
};

class Reflector {
 public:
  Reflector(DynamicClient client, ReflectorOptions options, ReflectorSink* sink);
  // Runs until `stop`. Never returns an error: failures are retried with backoff.
  void Run(std::stop_token stop);
  bool HasSynced() const { return synced_.load(); }
  std::string LastSyncResourceVersion() const;
  ReflectorStats stats() const;

 private:
  absl::Status ListAndReplace();
  // Watches from last_rv_ until the stream ends; returns why it ended.
  absl::Status WatchOnce(std::stop_token stop);
  // field_selector_fallback: true (and the selector dropped) if `s` refused the selector.
  bool DropRefusedFieldSelector(const absl::Status& s);
  void SetLastRV(std::string rv);

  DynamicClient client_;
  ReflectorOptions options_;
  ReflectorSink* sink_;
  base::Clock& clock_;
  std::atomic<bool> synced_{false};
  mutable std::mutex mu_;
  std::string last_rv_;   // guarded by mu_
  ReflectorStats stats_;  // guarded by mu_
};

}  // namespace spiderpool::kube
