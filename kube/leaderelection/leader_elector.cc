#include "kube/leaderelection/leader_elector.h"

#include <thread>

#include "base/log.h"
#include "base/strings.h"

namespace spiderpool::kube {

absl::StatusOr<std::unique_ptr<LeaderElector>> LeaderElector::Create(
    LeaderElectionConfig config, std::unique_ptr<LeaseLock> lock) {
  if (config.identity.empty()) return absl::InvalidArgumentError("leader election: empty identity");
  if (config.lease_duration <= config.renew_deadline) {
    return absl::InvalidArgumentError("leader election: leaseDuration must exceed renewDeadline");
  }
  if (config.renew_deadline <= config.retry_period * 1.2) {
    return absl::InvalidArgumentError(
        "leader election: renewDeadline must exceed retryPeriod*1.2");
  }
  if (!config.on_started_leading) {
    return absl::InvalidArgumentError("leader election: on_started_leading is required");
  }
  if (lock == nullptr) return absl::InvalidArgumentError("leader election: no lock");
  return std::unique_ptr<LeaderElector>(new LeaderElector(std::move(config), std::move(lock)));
}

LeaderElector::LeaderElector(LeaderElectionConfig config, std::unique_ptr<LeaseLock> lock)
    : config_(std::move(config)),
      lock_(std::move(lock)),
      clock_(config_.clock != nullptr ? *config_.clock : base::RealClock::Get()),
      rng_state_(std::hash<std::string>{}(config_.identity) | 1) {}

absl::Duration LeaderElector::Jittered(absl::Duration d) {
  // xorshift: cheap and deterministic per identity; jitter factor 1.2 as client-go.
  rng_state_ ^= rng_state_ << 13;
  rng_state_ ^= rng_state_ >> 7;
  rng_state_ ^= rng_state_ << 17;
  double frac = static_cast<double>(rng_state_ % 1000) / 1000.0;
  return d + d * (0.2 * frac);
}

bool LeaderElector::IsLeader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return leader_;
}

std::string LeaderElector::ObservedLeader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return observed_ ? observed_->holder_identity : "";
}

bool LeaderElector::TryAcquireOrRenew() {
  const absl::Time now = clock_.Now();
  LeaderElectionRecord desired{
      .holder_identity = config_.identity,
      .lease_duration_seconds =
          static_cast<int>(absl::ToInt64Seconds(config_.lease_duration)),
      .acquire_time = now,
      .renew_time = now,
      .leader_transitions = 0,
  };

  auto current = lock_->Get();
  if (!current.ok()) {
    if (current.status().code() != absl::StatusCode::kNotFound) {
      SP_LOG(Warning).Msg("leader election: cannot read lease").KV("lock", lock_->Describe())
          .KV("err", current.status());
      return false;
    }
    absl::Status created = lock_->Create(desired);
    if (!created.ok()) {
      SP_LOG(Warning).Msg("leader election: cannot create lease").KV("lock", lock_->Describe())
          .KV("err", created);
      return false;
    }
    std::lock_guard<std::mutex> lock(mu_);
    observed_ = desired;
    observed_time_ = now;
    return true;
  }

  std::string new_leader;
  bool may_take = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!observed_ || !(*observed_ == *current)) {
      if (!observed_ || observed_->holder_identity != current->holder_identity) {
        new_leader = current->holder_identity;
      }
      observed_ = *current;
      observed_time_ = now;  // expiry is judged on OUR clock from when we saw the change
    }
    const bool held_by_other =
        !current->holder_identity.empty() && current->holder_identity != config_.identity;
    const absl::Duration lease = absl::Seconds(current->lease_duration_seconds);
    may_take = !held_by_other || observed_time_ + lease <= now;
  }
  if (!may_take) {
    if (!new_leader.empty() && config_.on_new_leader) config_.on_new_leader(new_leader);
    return false;
  }
  if (current->holder_identity == config_.identity) {
    desired.acquire_time = current->acquire_time;
    desired.leader_transitions = current->leader_transitions;
  } else {
    desired.leader_transitions = current->leader_transitions + 1;
  }
  absl::Status updated = lock_->Update(desired);
  if (!updated.ok()) {
    SP_VLOG(1).Msg("leader election: update failed").KV("lock", lock_->Describe())
        .KV("err", updated);
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  observed_ = desired;
  observed_time_ = now;
  return true;
}

void LeaderElector::Release() {
  LeaderElectionRecord record;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!observed_ || observed_->holder_identity != config_.identity) return;
    record = *observed_;
  }
  const absl::Time now = clock_.Now();
  record.holder_identity.clear();
  record.lease_duration_seconds = 1;
  record.acquire_time = now;
  record.renew_time = now;
  absl::Status s = lock_->Update(record);
  if (!s.ok()) {
    SP_LOG(Warning).Msg("leader election: release failed").KV("lock", lock_->Describe())
        .KV("err", s);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  observed_ = record;
  observed_time_ = now;
}

absl::Status LeaderElector::Run(std::stop_token stop) {
  // Acquire.
  while (!stop.stop_requested()) {
    if (TryAcquireOrRenew()) break;
    if (!clock_.SleepFor(Jittered(config_.retry_period), stop)) break;
  }
  if (stop.stop_requested()) return absl::OkStatus();
  SP_LOG(Info).Msg("became leader").KV("identity", config_.identity)
      .KV("lock", lock_->Describe());
  {
    std::lock_guard<std::mutex> lock(mu_);
    leader_ = true;
  }
  if (config_.on_new_leader) config_.on_new_leader(config_.identity);

  std::stop_source leading;
  std::jthread leader_thread([this, token = leading.get_token()] {
    config_.on_started_leading(token);
  });

  // Renew until stopped or the renew deadline passes without a successful renewal.
  absl::Status result = absl::OkStatus();
  absl::Time last_renew = clock_.Now();
  while (!stop.stop_requested()) {
    if (!clock_.SleepFor(config_.retry_period, stop)) break;
    if (TryAcquireOrRenew()) {
      last_renew = clock_.Now();
      continue;
    }
    if (clock_.Now() - last_renew >= config_.renew_deadline) {
      result = absl::AbortedError(base::StrCat("leader election lost: could not renew ",
                                               lock_->Describe(), " within the renew deadline"));
      break;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    leader_ = false;
  }
  leading.request_stop();
  leader_thread.join();
  if (result.ok() && config_.release_on_cancel) Release();
  SP_LOG(Info).Msg("stopped leading").KV("identity", config_.identity)
      .KV("reason", result.ok() ? std::string("stopped") : std::string(result.message()));
  if (config_.on_stopped_leading) config_.on_stopped_leading();
  return result;
}

}  // namespace spiderpool::kube
