#include "kube/leaderelection/lease_lock.h"

namespace spiderpool::kube {

KubeLeaseLock::KubeLeaseLock(std::shared_ptr<RestClient> rest, std::string ns, std::string name)
    : client_(std::move(rest)), ns_(std::move(ns)), name_(std::move(name)) {}

LeaderElectionRecord KubeLeaseLock::ToRecord(const api::Lease& lease) {
  const api::LeaseSpec& s = lease.spec;
  LeaderElectionRecord r;
  r.holder_identity = s.holder_identity.value_or("");
  r.lease_duration_seconds = s.lease_duration_seconds.value_or(0);
  r.acquire_time = s.acquire_time ? s.acquire_time->value : absl::UnixEpoch();
  r.renew_time = s.renew_time ? s.renew_time->value : absl::UnixEpoch();
  r.leader_transitions = s.lease_transitions.value_or(0);
  return r;
}

void KubeLeaseLock::FromRecord(const LeaderElectionRecord& r, api::LeaseSpec* s) {
  s->holder_identity = r.holder_identity;
  s->lease_duration_seconds = r.lease_duration_seconds;
  s->acquire_time = api::MicroTime{r.acquire_time};
  s->renew_time = api::MicroTime{r.renew_time};
  s->lease_transitions = r.leader_transitions;
}

absl::StatusOr<LeaderElectionRecord> KubeLeaseLock::Get() {
  auto lease = client_.Get(ns_, name_);
  if (!lease.ok()) return lease.status();
  LeaderElectionRecord r = ToRecord(*lease);
  std::lock_guard<std::mutex> l(mu_);
  last_ = std::move(*lease);
  return r;
}

absl::Status KubeLeaseLock::Create(const LeaderElectionRecord& record) {
  api::Lease lease;
  lease.SetTypeMeta();
  lease.metadata.name = name_;
  lease.metadata.namespace_ = ns_;
  FromRecord(record, &lease.spec);
  auto created = client_.Create(lease);
  if (!created.ok()) return created.status();
  std::lock_guard<std::mutex> l(mu_);
  last_ = std::move(*created);
  return absl::OkStatus();
}

absl::Status KubeLeaseLock::Update(const LeaderElectionRecord& record) {
  api::Lease lease;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!last_) return absl::FailedPreconditionError("lease lock: Update before Get/Create");
    lease = *last_;
  }
  FromRecord(record, &lease.spec);
  auto updated = client_.Update(lease);
  if (!updated.ok()) return updated.status();
  std::lock_guard<std::mutex> l(mu_);
  last_ = std::move(*updated);
  return absl::OkStatus();
}

}  // namespace spiderpool::kube
