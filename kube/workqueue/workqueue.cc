#include "kube/workqueue/workqueue.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "base/log.h"

namespace spiderpool::kube::workqueue {
namespace {

// The delay thread never sleeps longer than this in one go, so a far deadline on a real
// clock cannot overflow std::chrono arithmetic; it simply re-arms.
constexpr absl::Duration kMaxSleep = absl::Hours(1);

enum class AddResult { kAdded, kDropped, kShutDown };

// Help texts as controller-runtime registers them.
constexpr char kDepthHelp[] = "Current depth of workqueue";
constexpr char kAddsHelp[] = "Total number of adds handled by workqueue";
constexpr char kQueueLatencyHelp[] =
    "How long in seconds an item stays in workqueue before being requested";
constexpr char kWorkDurationHelp[] = "How long in seconds processing an item from workqueue takes.";
constexpr char kUnfinishedHelp[] =
    "How many seconds of work has been done that is in progress and hasn't been observed by "
    "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
    "threads by observing the rate at which this increases.";
constexpr char kLongestHelp[] =
    "How many seconds has the longest running processor for workqueue been running.";
constexpr char kRetriesHelp[] = "Total number of retries handled by workqueue";
constexpr char kDroppedHelp[] =
    "Total number of new keys dropped because the workqueue was at its maximum length";

double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

}  // namespace

struct WorkQueue::Impl {
  struct Metrics {
    metrics::Counter* adds;
    metrics::Gauge* depth;
    metrics::Histogram* queue_duration;
    metrics::Histogram* work_duration;
    metrics::Gauge* unfinished;
    metrics::Gauge* longest;
    metrics::Counter* retries;
    metrics::Counter* dropped;
  };

  explicit Impl(Options o)
      : name(std::move(o.name)),
        clock(o.clock != nullptr ? *o.clock : base::RealClock::Get()),
        limiter(o.rate_limiter != nullptr ? std::move(o.rate_limiter)
                                          : DefaultControllerRateLimiter(clock)),
        max_length(o.max_length),
        registry(o.registry != nullptr ? o.registry : &metrics::Registry::Default()) {
    if (!name.empty()) {
      metrics::Labels l = {{"name", name}};
      std::vector<double> buckets = metrics::ExponentialBuckets(10e-9, 10, 12);
      m = Metrics{
          .adds = &registry->AddCounter("workqueue_adds_total", kAddsHelp).WithLabels(l),
          .depth = &registry->AddGauge("workqueue_depth", kDepthHelp).WithLabels(l),
          .queue_duration = &registry
                                 ->AddHistogram("workqueue_queue_duration_seconds",
                                                kQueueLatencyHelp, buckets)
                                 .WithLabels(l),
          .work_duration = &registry
                                ->AddHistogram("workqueue_work_duration_seconds",
                                               kWorkDurationHelp, buckets)
                                .WithLabels(l),
          .unfinished = &registry->AddGauge("workqueue_unfinished_work_seconds", kUnfinishedHelp)
                             .WithLabels(l),
          .longest = &registry
                          ->AddGauge("workqueue_longest_running_processor_seconds", kLongestHelp)
                          .WithLabels(l),
          .retries = &registry->AddCounter("workqueue_retries_total", kRetriesHelp).WithLabels(l),
          .dropped = &registry->AddCounter("workqueue_dropped_total", kDroppedHelp).WithLabels(l),
      };
      hook = registry->AddCollectHook([this] { UpdateUnfinishedWork(); });
    }
  }

  // Requires mu.
  AddResult AddLocked(const std::string& key) {
    if (shutting_down) return AddResult::kShutDown;
    if (dirty.contains(key)) return AddResult::kAdded;
    if (max_length > 0 && dirty.size() >= max_length) {
      ++dropped;
      if (m) m->dropped->Inc();
      return AddResult::kDropped;
    }
    if (m) {
      m->adds->Inc();
      m->depth->Inc();
      add_times.try_emplace(key, clock.Now());
    }
    dirty.insert(key);
    if (processing.contains(key)) return AddResult::kAdded;  // re-queued by Done
    queue.push_back(key);
    cv.notify_one();
    return AddResult::kAdded;
  }

  void LogDropped(const std::string& key) {
    SP_LOG(Warning)
        .Msg("workqueue is full, dropping key")
        .KV("queue", name)
        .KV("key", key)
        .KV("max_length", max_length);
  }

  void UpdateUnfinishedWork() {
    std::lock_guard<std::mutex> lock(mu);
    absl::Time now = clock.Now();
    double total = 0;
    double longest = 0;
    for (const auto& [key, start] : processing_start) {
      double age = Seconds(now - start);
      total += age;
      longest = std::max(longest, age);
    }
    m->unfinished->Set(total);
    m->longest->Set(longest);
  }

  // The delay thread: moves due keys from `waiting` into the queue, then sleeps on the
  // clock until the earliest deadline. AddAfter wakes it early (through `wake`) when it
  // parks a key that is due before the one the thread sleeps for.
  void WaitLoop(std::stop_token stop) {
    std::unique_lock<std::mutex> lock(mu);
    while (!stop.stop_requested() && !shutting_down) {
      absl::Time now = clock.Now();
      std::vector<std::string> dropped_keys;
      while (!waiting_order.empty() && std::get<0>(*waiting_order.begin()) <= now) {
        std::string key = std::get<2>(*waiting_order.begin());
        waiting_order.erase(waiting_order.begin());
        waiting.erase(key);
        if (AddLocked(key) == AddResult::kDropped) dropped_keys.push_back(std::move(key));
      }
      if (!dropped_keys.empty()) {
        lock.unlock();
        for (const auto& key : dropped_keys) LogDropped(key);
        lock.lock();
        continue;
      }
      if (waiting_order.empty()) {
        waiter_cv.wait(lock, stop, [&] { return !waiting_order.empty() || shutting_down; });
        continue;
      }
      absl::Time deadline = std::min(std::get<0>(*waiting_order.begin()), now + kMaxSleep);
      wake = std::stop_source();
      std::stop_source my_wake = wake;
      std::stop_token wake_token = my_wake.get_token();
      lock.unlock();
      {
        std::stop_callback forward(stop, [&my_wake] { my_wake.request_stop(); });
        clock.SleepUntil(deadline, wake_token);
      }
      lock.lock();
    }
  }

  const std::string name;
  base::Clock& clock;
  const std::unique_ptr<RateLimiter> limiter;
  const size_t max_length;
  metrics::Registry* const registry;
  std::optional<Metrics> m;  // set when name is not empty
  metrics::Registry::HookId hook = 0;

  mutable std::mutex mu;
  std::condition_variable_any cv;         // Get waiters
  std::condition_variable_any drain_cv;   // ShutDownWithDrain
  std::condition_variable_any waiter_cv;  // delay thread, while nothing waits
  // All below guarded by mu.
  std::deque<std::string> queue;
  std::unordered_set<std::string> dirty;       // pending: queued, or re-added while processing
  std::unordered_set<std::string> processing;  // handed out by Get, not yet Done
  std::unordered_map<std::string, absl::Time> add_times;         // metrics only
  std::unordered_map<std::string, absl::Time> processing_start;  // metrics only
  bool shutting_down = false;
  bool drain = false;
  uint64_t dropped = 0;
  // Delayed keys: ordered by (deadline, arrival), plus the index by key for de-duplication.
  std::set<std::tuple<absl::Time, uint64_t, std::string>> waiting_order;
  std::unordered_map<std::string, std::pair<absl::Time, uint64_t>> waiting;
  uint64_t next_seq = 0;
  std::stop_source wake;  // wakes the delay thread's current clock sleep

  std::jthread waiter;  // last: started after everything above exists
};

WorkQueue::WorkQueue(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {
  impl_->waiter = std::jthread([impl = impl_.get()](std::stop_token st) { impl->WaitLoop(st); });
}

WorkQueue::~WorkQueue() {
  if (impl_->m) impl_->registry->RemoveCollectHook(impl_->hook);
  ShutDown();
  impl_->waiter.request_stop();
  impl_->waiter.join();
}

bool WorkQueue::Add(const std::string& key) {
  AddResult r;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    r = impl_->AddLocked(key);
  }
  if (r == AddResult::kDropped) impl_->LogDropped(key);
  return r == AddResult::kAdded;
}

std::optional<std::string> WorkQueue::Get(std::stop_token stop) {
  Impl& q = *impl_;
  std::unique_lock<std::mutex> lock(q.mu);
  q.cv.wait(lock, stop, [&] { return !q.queue.empty() || q.shutting_down; });
  if (stop.stop_requested() || q.queue.empty()) return std::nullopt;
  std::string key = std::move(q.queue.front());
  q.queue.pop_front();
  if (q.m) {
    absl::Time now = q.clock.Now();
    q.m->depth->Dec();
    q.processing_start[key] = now;
    if (auto it = q.add_times.find(key); it != q.add_times.end()) {
      q.m->queue_duration->Observe(Seconds(now - it->second));
      q.add_times.erase(it);
    }
  }
  q.processing.insert(key);
  q.dirty.erase(key);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  Impl& q = *impl_;
  std::lock_guard<std::mutex> lock(q.mu);
  if (q.processing.erase(key) == 0) return;  // not handed out: nothing to finish
  if (q.m) {
    if (auto it = q.processing_start.find(key); it != q.processing_start.end()) {
      q.m->work_duration->Observe(Seconds(q.clock.Now() - it->second));
      q.processing_start.erase(it);
    }
  }
  if (q.dirty.contains(key)) {
    q.queue.push_back(key);
    q.cv.notify_one();
  } else if (q.processing.empty()) {
    q.drain_cv.notify_all();
  }
}

void WorkQueue::AddAfter(const std::string& key, absl::Duration delay) {
  Impl& q = *impl_;
  if (ShuttingDown()) return;
  if (q.m) q.m->retries->Inc();
  if (delay <= absl::ZeroDuration()) {
    Add(key);
    return;
  }
  std::stop_source to_wake;
  bool earliest;
  {
    std::lock_guard<std::mutex> lock(q.mu);
    if (q.shutting_down) return;
    absl::Time ready = q.clock.Now() + delay;
    if (auto it = q.waiting.find(key); it != q.waiting.end()) {
      if (ready >= it->second.first) return;  // already due sooner
      q.waiting_order.erase({it->second.first, it->second.second, key});
    }
    uint64_t seq = q.next_seq++;
    q.waiting_order.emplace(ready, seq, key);
    q.waiting[key] = {ready, seq};
    earliest = std::get<1>(*q.waiting_order.begin()) == seq;
    to_wake = q.wake;
    q.waiter_cv.notify_one();
  }
  if (earliest) to_wake.request_stop();
}

void WorkQueue::AddRateLimited(const std::string& key) {
  AddAfter(key, impl_->limiter->When(key));
}

void WorkQueue::Forget(const std::string& key) { impl_->limiter->Forget(key); }

int WorkQueue::NumRequeues(const std::string& key) { return impl_->limiter->NumRequeues(key); }

size_t WorkQueue::Len() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->queue.size();
}

size_t WorkQueue::WaitingLen() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->waiting.size();
}

uint64_t WorkQueue::Dropped() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->dropped;
}

void WorkQueue::ShutDown() {
  Impl& q = *impl_;
  {
    std::lock_guard<std::mutex> lock(q.mu);
    q.shutting_down = true;
    q.drain = false;
    q.waiting.clear();
    q.waiting_order.clear();
    q.cv.notify_all();
    q.drain_cv.notify_all();
    q.waiter_cv.notify_all();
  }
  q.waiter.request_stop();  // interrupts a clock sleep
}

void WorkQueue::ShutDownWithDrain() {
  Impl& q = *impl_;
  {
    std::lock_guard<std::mutex> lock(q.mu);
    q.shutting_down = true;
    q.drain = true;
    q.waiting.clear();
    q.waiting_order.clear();
    q.cv.notify_all();
    q.waiter_cv.notify_all();
  }
  q.waiter.request_stop();
  std::unique_lock<std::mutex> lock(q.mu);
  q.drain_cv.wait(lock, [&] { return q.processing.empty() || !q.drain; });
}

bool WorkQueue::ShuttingDown() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->shutting_down;
}

}  // namespace spiderpool::kube::workqueue
