#pragma once
// A small Prometheus registry: Counter, Gauge and Histogram families with labels, and the
// text exposition format 0.0.4. Hot-path updates are lock-free atomics; looking a child up
// by labels takes the family's mutex, so callers on hot paths keep the returned reference
// (children live as long as their family, families as long as their registry, unless
// Family::Remove is called).
//
//   auto& adds = metrics::Registry::Default().AddCounter("workqueue_adds_total", "...");
//   metrics::Counter& c = adds.WithLabels({{"name", "ippool"}});
//   c.Inc();

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace spiderpool::kube::metrics {

// Label name -> value. Sorted, so two equal label sets always name the same child.
using Labels = std::map<std::string, std::string>;

// The exposition content type served on /metrics.
inline constexpr std::string_view kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

// Prometheus' default histogram buckets (.005 … 10 seconds).
std::vector<double> DefaultBuckets();
// `count` buckets: start, start*factor, start*factor^2, …  (start > 0, factor > 1).
std::vector<double> ExponentialBuckets(double start, double factor, int count);
// `count` buckets: start, start+width, …
std::vector<double> LinearBuckets(double start, double width, int count);

// Formats a sample value like Go's strconv.FormatFloat(v, 'g', -1, 64), with Prometheus'
// spellings of the specials: "+Inf", "-Inf", "NaN". 1e-08, 0.005, 100000, 1e+06.
std::string FormatValue(double v);

// A monotonically increasing value.
class Counter {
 public:
  void Inc(double v = 1.0) {
    if (v > 0) value_.fetch_add(v, std::memory_order_relaxed);  // negatives are ignored
  }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// A value that goes up and down.
class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }
  void Sub(double v) { value_.fetch_sub(v, std::memory_order_relaxed); }
  void Inc() { Add(1.0); }
  void Dec() { Sub(1.0); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Observations counted into buckets with upper bounds `le` (inclusive), plus +Inf.
class Histogram {
 public:
  // `bounds` must be sorted ascending and outlive the histogram (its family owns them).
  explicit Histogram(const std::vector<double>* bounds);
  void Observe(double v);

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // one per bound, then +Inf (== count)
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Snap() const;
  uint64_t Count() const { return Snap().count; }
  double Sum() const { return sum_.load(std::memory_order_relaxed); }
  const std::vector<double>& bounds() const { return *bounds_; }

 private:
  const std::vector<double>* bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // bounds_->size() + 1, not cumulative
  std::atomic<double> sum_{0.0};
};

enum class MetricType { kCounter, kGauge, kHistogram };

class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, MetricType type)
      : name_(std::move(name)), help_(std::move(help)), type_(type) {}
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }
  // Appends this family in text format; appends nothing when it has no children.
  virtual void Expose(std::string* out) const = 0;

 private:
  std::string name_;
  std::string help_;
  MetricType type_;
};

// All children of one metric name, keyed by their labels. T is Counter, Gauge or Histogram.
template <typename T>
class Family : public FamilyBase {
 public:
  Family(std::string name, std::string help, std::vector<double> buckets = {});
  // The child with exactly these labels, created on first use. Label names must match
  // [a-zA-Z_][a-zA-Z0-9_]* and must not be "le" on histograms (aborts otherwise: a
  // programming error). The reference stays valid until Remove(labels) or destruction.
  T& WithLabels(const Labels& labels = {});
  // Drops a child (its series disappears from the exposition). True if it existed.
  // References to it become dangling: only for callers that own the series' lifetime.
  bool Remove(const Labels& labels);
  size_t size() const;
  const std::vector<double>& buckets() const { return buckets_; }
  void Expose(std::string* out) const override;

 private:
  std::vector<double> buckets_;  // histograms only
  mutable std::mutex mu_;
  std::map<Labels, std::unique_ptr<T>> children_;  // guarded by mu_
};

extern template class Family<Counter>;
extern template class Family<Gauge>;
extern template class Family<Histogram>;

// A set of families exposed together. Thread-safe.
class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // The process-wide registry (never destroyed).
  static Registry& Default();

  // Get-or-create by name: a second call with the same name and type returns the first
  // family (its help and buckets win). A name registered with another type, or an invalid
  // metric name ([a-zA-Z_:][a-zA-Z0-9_:]*), aborts: a programming error.
  Family<Counter>& AddCounter(std::string_view name, std::string_view help);
  Family<Gauge>& AddGauge(std::string_view name, std::string_view help);
  Family<Histogram>& AddHistogram(std::string_view name, std::string_view help,
                                  std::vector<double> buckets = DefaultBuckets());

  // Hooks run at the start of every Expose(), outside the registry's lock, to refresh
  // values computed on demand (e.g. "seconds since"). RemoveCollectHook waits for a
  // running call of that hook to return, so the hook may capture an object that removes it
  // in its destructor. A hook must not call Add/RemoveCollectHook or Expose itself.
  using HookId = uint64_t;
  HookId AddCollectHook(std::function<void()> hook);
  void RemoveCollectHook(HookId id);

  // Text exposition format 0.0.4: families sorted by name, children by labels; labels
  // sorted by name; histogram `le` last.
  std::string Expose() const;

 private:
  struct Hook;
  FamilyBase* GetOrAdd(std::string_view name, std::string_view help, MetricType type,
                       std::vector<double> buckets);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<FamilyBase>, std::less<>> families_;  // guarded by mu_
  std::map<HookId, std::shared_ptr<Hook>> hooks_;                            // guarded by mu_
  HookId next_hook_id_ = 1;                                                  // guarded by mu_
};

}  // namespace spiderpool::kube::metrics
