#pragma once
// An event recorder (client-go's record.EventRecorder): reconcilers call Event(...) and move
// on; a background thread writes core/v1 Events. Repeats of the same event (same object,
// type, reason and message) within `aggregation_window` are folded into one Event whose count
// and lastTimestamp grow (a merge patch), as kubectl describe shows them. The queue is bounded:
// when the API server is slow, events are dropped (counted) rather than blocking a reconciler.
// With `min_interval` set, the same (object, reason) is written at most once per interval
// (client-go's spam filter, per reason): occurrences in between cost no API call and are
// added to the count of the next write of that (object, reason).

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "api/core.h"
#include "base/clock.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/client.h"

namespace spiderpool::kube {

struct EventRecorderOptions {
  std::string component;  // source.component / reportingComponent, e.g. "spiderpool-controller"
  std::string host;       // source.host / reportingInstance (node or pod name)
  size_t max_queue = 1000;
  absl::Duration aggregation_window = absl::Minutes(10);
  // Per (object, reason): at most one write (create or count patch) per interval; 0 = off.
  // Occurrences in between are counted and folded into the next write's count.
  absl::Duration min_interval = absl::ZeroDuration();
  base::Clock* clock = nullptr;
  metrics::Registry* registry = nullptr;
};

class EventRecorder {
 public:
  EventRecorder(std::shared_ptr<RestClient> rest, EventRecorderOptions options);
  ~EventRecorder();  // flushes what is queued (bounded by the client's timeouts), then stops
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // type is "Normal" or "Warning"; reason is CamelCase ("IPPoolExhausted").
  void Event(const api::ObjectReference& object, std::string type, std::string reason,
             std::string message);
  // Blocks until everything queued so far has been written (tests, shutdown).
  void Flush();
  uint64_t dropped() const;

 private:
  struct Pending {
    api::ObjectReference object;
    std::string type, reason, message;
    absl::Time at;
  };
  struct Seen {
    std::string event_name;
    int32_t count = 0;
    absl::Time first, last;
  };
  void Loop(std::stop_token stop);
  void Write(const Pending& p);

  Client<api::Event> client_;
  EventRecorderOptions options_;
  base::Clock& clock_;
  metrics::Counter& dropped_counter_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Pending> queue_;          // guarded by mu_
  uint64_t in_flight_ = 0;             // guarded by mu_
  uint64_t dropped_ = 0;               // guarded by mu_
  struct Throttle {
    absl::Time last_write;
    int32_t suppressed = 0;  // occurrences not written since last_write
  };
  std::map<std::string, Seen> seen_;   // writer thread only
  std::map<std::string, Throttle> throttled_;  // writer thread only; by (object, reason)
  uint64_t name_counter_ = 0;          // writer thread only
  std::jthread thread_;
};

}  // namespace spiderpool::kube
