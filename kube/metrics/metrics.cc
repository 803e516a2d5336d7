#include "kube/metrics/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <utility>

namespace spiderpool::kube::metrics {
namespace {

[[noreturn]] void Die(std::string_view what, std::string_view name) {
  std::fprintf(stderr, "metrics: %.*s: %.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(name.size()), name.data());
  std::abort();
}

bool IsMetricName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool IsLabelName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

void AppendEscaped(std::string* out, std::string_view s, bool quotes) {
  for (char c : s) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '\n') {
      out->append("\\n");
    } else if (quotes && c == '"') {
      out->append("\\\"");
    } else {
      out->push_back(c);
    }
  }
}

// `{a="x",b="y"}` (with an optional trailing le), or nothing when there are no labels.
void AppendLabels(std::string* out, const Labels& labels, const char* le = nullptr) {
  if (labels.empty() && le == nullptr) return;
  out->push_back('{');
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out->push_back(',');
    first = false;
    out->append(k);
    out->append("=\"");
    AppendEscaped(out, v, true);
    out->push_back('"');
  }
  if (le != nullptr) {
    if (!first) out->push_back(',');
    out->append("le=\"");
    out->append(le);
    out->push_back('"');
  }
  out->push_back('}');
}

void AppendSample(std::string* out, std::string_view name, std::string_view suffix,
                  const Labels& labels, double value, const char* le = nullptr) {
  out->append(name);
  out->append(suffix);
  AppendLabels(out, labels, le);
  out->push_back(' ');
  out->append(FormatValue(value));
  out->push_back('\n');
}

void AppendHeader(std::string* out, const FamilyBase& f) {
  if (!f.help().empty()) {
    out->append("# HELP ");
    out->append(f.name());
    out->push_back(' ');
    AppendEscaped(out, f.help(), false);
    out->push_back('\n');
  }
  out->append("# TYPE ");
  out->append(f.name());
  switch (f.type()) {
    case MetricType::kCounter:
      out->append(" counter\n");
      break;
    case MetricType::kGauge:
      out->append(" gauge\n");
      break;
    case MetricType::kHistogram:
      out->append(" histogram\n");
      break;
  }
}

void ExposeChild(std::string* out, std::string_view name, const Labels& labels,
                 const Counter& c) {
  AppendSample(out, name, "", labels, c.Value());
}

void ExposeChild(std::string* out, std::string_view name, const Labels& labels, const Gauge& g) {
  AppendSample(out, name, "", labels, g.Value());
}

void ExposeChild(std::string* out, std::string_view name, const Labels& labels,
                 const Histogram& h) {
  Histogram::Snapshot snap = h.Snap();
  const std::vector<double>& bounds = h.bounds();
  for (size_t i = 0; i < bounds.size(); ++i) {
    std::string le = FormatValue(bounds[i]);
    AppendSample(out, name, "_bucket", labels, static_cast<double>(snap.cumulative[i]),
                 le.c_str());
  }
  AppendSample(out, name, "_bucket", labels, static_cast<double>(snap.count), "+Inf");
  AppendSample(out, name, "_sum", labels, snap.sum);
  AppendSample(out, name, "_count", labels, static_cast<double>(snap.count));
}

template <typename T>
constexpr MetricType TypeOf() {
  if constexpr (std::is_same_v<T, Counter>) return MetricType::kCounter;
  if constexpr (std::is_same_v<T, Gauge>) return MetricType::kGauge;
  return MetricType::kHistogram;
}

}  // namespace

std::vector<double> DefaultBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  double v = start;
  for (int i = 0; i < count; ++i) {
    out.push_back(v);
    v *= factor;
  }
  return out;
}

std::vector<double> LinearBuckets(double start, double width, int count) {
  std::vector<double> out;
  double v = start;
  for (int i = 0; i < count; ++i) {
    out.push_back(v);
    v += width;
  }
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == 0) return std::signbit(v) ? "-0" : "0";
  // Shortest round-trip digits. Go's 'g' with precision -1 uses the exponent form when the
  // decimal exponent is < -4 or >= 6 (it decides with precision 6), fixed form otherwise.
  char buf[64];
  auto sci = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string_view s(buf, static_cast<size_t>(sci.ptr - buf));
  size_t e = s.find('e');
  int exp = 0;
  std::from_chars(s.data() + e + 1 + (s[e + 1] == '+' ? 1 : 0), s.data() + s.size(), exp);
  if (exp < -4 || exp >= 6) return std::string(s);
  auto fixed = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed);
  return std::string(buf, fixed.ptr);
}

// ---- Histogram ----

Histogram::Histogram(const std::vector<double>* bounds)
    : bounds_(bounds), counts_(new std::atomic<uint64_t>[bounds->size() + 1]) {
  for (size_t i = 0; i <= bounds_->size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  size_t i = bounds_->size();  // NaN goes to +Inf, as in Go
  if (!std::isnan(v)) {
    i = static_cast<size_t>(std::lower_bound(bounds_->begin(), bounds_->end(), v) -
                            bounds_->begin());
  }
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Snap() const {
  Snapshot snap;
  snap.cumulative.resize(bounds_->size() + 1);
  uint64_t acc = 0;
  for (size_t i = 0; i <= bounds_->size(); ++i) {
    acc += counts_[i].load(std::memory_order_relaxed);
    snap.cumulative[i] = acc;
  }
  snap.count = acc;
  snap.sum = sum_.load(std::memory_order_relaxed);
  return snap;
}

// ---- Family ----

template <typename T>
Family<T>::Family(std::string name, std::string help, std::vector<double> buckets)
    : FamilyBase(std::move(name), std::move(help), TypeOf<T>()), buckets_(std::move(buckets)) {
  if constexpr (std::is_same_v<T, Histogram>) {
    if (!std::is_sorted(buckets_.begin(), buckets_.end()) ||
        std::adjacent_find(buckets_.begin(), buckets_.end()) != buckets_.end()) {
      Die("histogram buckets must be strictly increasing", this->name());
    }
    // A +Inf bound is implicit.
    if (!buckets_.empty() && std::isinf(buckets_.back()) && buckets_.back() > 0) {
      buckets_.pop_back();
    }
  }
}

template <typename T>
T& Family<T>::WithLabels(const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = children_.find(labels);
  if (it != children_.end()) return *it->second;
  for (const auto& [k, v] : labels) {
    if (!IsLabelName(k) || k.starts_with("__")) Die("invalid label name", k);
    if (std::is_same_v<T, Histogram> && k == "le") Die("label le is reserved", name());
  }
  std::unique_ptr<T> child;
  if constexpr (std::is_same_v<T, Histogram>) {
    child = std::make_unique<Histogram>(&buckets_);
  } else {
    child = std::make_unique<T>();
  }
  T& ref = *child;
  children_.emplace(labels, std::move(child));
  return ref;
}

template <typename T>
bool Family<T>::Remove(const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  return children_.erase(labels) > 0;
}

template <typename T>
size_t Family<T>::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return children_.size();
}

template <typename T>
void Family<T>::Expose(std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (children_.empty()) return;
  AppendHeader(out, *this);
  for (const auto& [labels, child] : children_) ExposeChild(out, name(), labels, *child);
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

// ---- Registry ----

struct Registry::Hook {
  std::mutex mu;  // held while the hook runs; RemoveCollectHook takes it to wait
  bool alive = true;
  std::function<void()> fn;
};

Registry& Registry::Default() {
  static Registry* registry = new Registry();
  return *registry;
}

FamilyBase* Registry::GetOrAdd(std::string_view name, std::string_view help, MetricType type,
                               std::vector<double> buckets) {
  if (!IsMetricName(name)) Die("invalid metric name", name);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it != families_.end()) {
    if (it->second->type() != type) Die("metric registered twice with different types", name);
    return it->second.get();
  }
  std::unique_ptr<FamilyBase> family;
  switch (type) {
    case MetricType::kCounter:
      family = std::make_unique<Family<Counter>>(std::string(name), std::string(help));
      break;
    case MetricType::kGauge:
      family = std::make_unique<Family<Gauge>>(std::string(name), std::string(help));
      break;
    case MetricType::kHistogram:
      family = std::make_unique<Family<Histogram>>(std::string(name), std::string(help),
                                                   std::move(buckets));
      break;
  }
  FamilyBase* raw = family.get();
  families_.emplace(std::string(name), std::move(family));
  return raw;
}

Family<Counter>& Registry::AddCounter(std::string_view name, std::string_view help) {
  return static_cast<Family<Counter>&>(*GetOrAdd(name, help, MetricType::kCounter, {}));
}

Family<Gauge>& Registry::AddGauge(std::string_view name, std::string_view help) {
  return static_cast<Family<Gauge>&>(*GetOrAdd(name, help, MetricType::kGauge, {}));
}

Family<Histogram>& Registry::AddHistogram(std::string_view name, std::string_view help,
                                          std::vector<double> buckets) {
  return static_cast<Family<Histogram>&>(
      *GetOrAdd(name, help, MetricType::kHistogram, std::move(buckets)));
}

Registry::HookId Registry::AddCollectHook(std::function<void()> hook) {
  auto h = std::make_shared<Hook>();
  h->fn = std::move(hook);
  std::lock_guard<std::mutex> lock(mu_);
  HookId id = next_hook_id_++;
  hooks_.emplace(id, std::move(h));
  return id;
}

void Registry::RemoveCollectHook(HookId id) {
  std::shared_ptr<Hook> h;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = hooks_.find(id);
    if (it == hooks_.end()) return;
    h = std::move(it->second);
    hooks_.erase(it);
  }
  std::lock_guard<std::mutex> hook_lock(h->mu);  // waits for a running call
  h->alive = false;
}

std::string Registry::Expose() const {
  std::vector<std::shared_ptr<Hook>> hooks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, h] : hooks_) hooks.push_back(h);
  }
  for (const auto& h : hooks) {
    std::lock_guard<std::mutex> hook_lock(h->mu);
    if (h->alive) h->fn();
  }
  std::string out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, family] : families_) family->Expose(&out);
  return out;
}

}  // namespace spiderpool::kube::metrics
