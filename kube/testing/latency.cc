#include "kube/testing/latency.h"

#include <algorithm>

namespace spiderpool::kube::testing {

// Reasoning and calibration runs: bench/README.md ("ipam_e2e", latency model).
LatencyModel CalibratedLatencyModel() {
  LatencyModel m;
  m.per_request = absl::Milliseconds(1);
  m.per_write = absl::Milliseconds(4);
  m.per_object_write = absl::Milliseconds(8);
  m.watch_delay = absl::Milliseconds(5);
  m.jitter = 0.5;
  return m;
}

namespace internal {

LatencyState::LatencyState(LatencyModel model) : model_(model), rng_(model.seed) {}

void LatencyState::Set(LatencyModel model) {
  std::lock_guard<std::mutex> l(mu_);
  model_ = model;
  rng_.seed(model.seed);
}

LatencyModel LatencyState::Get() const {
  std::lock_guard<std::mutex> l(mu_);
  return model_;
}

bool LatencyState::IsWrite(std::string_view verb) {
  return verb == "create" || verb == "update" || verb == "patch" || verb == "delete" ||
         verb == "deletecollection";
}

absl::Duration LatencyState::StretchedLocked(absl::Duration d) {
  if (d <= absl::ZeroDuration() || model_.jitter <= 0) return d;
  return d * std::uniform_real_distribution<double>(1.0, 1.0 + model_.jitter)(rng_);
}

absl::Time LatencyState::RequestReadyAt(absl::Time now, std::string_view verb) {
  std::lock_guard<std::mutex> l(mu_);
  if (!model_.enabled()) return absl::InfinitePast();
  absl::Time ready = now + StretchedLocked(model_.per_request);
  if (IsWrite(verb)) ready += StretchedLocked(model_.per_write);
  return ready;
}

LatencyState::TurnWait LatencyState::WaitForTurn(const std::string& object_key,
                                                 const std::function<bool()>& give_up,
                                                 std::optional<Turn>* turn) {
  std::unique_lock<std::mutex> l(mu_);
  if (model_.per_object_write <= absl::ZeroDuration()) return TurnWait::kNoModel;
  Queue& q = queues_[object_key];
  const uint64_t ticket = q.next_ticket++;
  // `q` stays valid: the entry is erased only when no writer holds or waits for a ticket.
  while (q.serving != ticket) {
    q.turn_cv.wait_for(l, absl::ToChronoMilliseconds(kGiveUpPoll));
    if (q.serving == ticket) break;
    l.unlock();
    const bool leave = give_up && give_up();
    l.lock();
    if (leave && q.serving != ticket) {
      q.gone.insert(ticket);
      return TurnWait::kGaveUp;
    }
  }
  turn->emplace(this, object_key, ticket, StretchedLocked(model_.per_object_write));
  return TurnWait::kTurn;
}

size_t LatencyState::WritesWaiting() const {
  std::lock_guard<std::mutex> l(mu_);
  size_t n = 0;
  for (const auto& [key, q] : queues_) n += q.next_ticket - q.serving - 1 - q.gone.size();
  return n;
}

bool LatencyState::AdvanceLocked(Queue& q) {
  ++q.serving;
  while (!q.gone.empty() && *q.gone.begin() == q.serving) {
    q.gone.erase(q.gone.begin());
    ++q.serving;
  }
  return q.serving == q.next_ticket;
}

void LatencyState::EndTurn(const std::string& key, uint64_t ticket) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = queues_.find(key);
  if (it == queues_.end() || it->second.serving != ticket) return;  // broken invariant: ignore
  if (AdvanceLocked(it->second)) {
    queues_.erase(it);  // nobody waits for it
    return;
  }
  it->second.turn_cv.notify_all();
}

LatencyState::Turn::~Turn() {
  if (state_ != nullptr) state_->EndTurn(key_, ticket_);
}

absl::Time LatencyState::WatchDueAt(absl::Time now) {
  std::lock_guard<std::mutex> l(mu_);
  if (model_.watch_delay <= absl::ZeroDuration()) return absl::InfinitePast();
  return now + StretchedLocked(model_.watch_delay);
}

}  // namespace internal
}  // namespace spiderpool::kube::testing
