#pragma once
// An in-memory LeaseLock with resourceVersion semantics, shared by several candidates, and a
// switch that cuts one candidate off from the "API server".

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>

#include "kube/leaderelection/leader_elector.h"

namespace spiderpool::kube::testing {

struct FakeLeaseStore {
  std::mutex mu;
  std::optional<LeaderElectionRecord> record;
  int64_t version = 0;
};

class FakeLeaseLock : public LeaseLock {
 public:
  explicit FakeLeaseLock(FakeLeaseStore* store) : store_(store) {}
  absl::StatusOr<LeaderElectionRecord> Get() override {
    if (partitioned) return absl::UnavailableError("partitioned");
    std::lock_guard<std::mutex> l(store_->mu);
    if (!store_->record) return absl::NotFoundError("lease not found");
    seen_ = store_->version;
    return *store_->record;
  }
  absl::Status Create(const LeaderElectionRecord& r) override {
    if (partitioned) return absl::UnavailableError("partitioned");
    std::lock_guard<std::mutex> l(store_->mu);
    if (store_->record) return absl::AlreadyExistsError("exists");
    store_->record = r;
    seen_ = ++store_->version;
    return absl::OkStatus();
  }
  absl::Status Update(const LeaderElectionRecord& r) override {
    if (partitioned) return absl::UnavailableError("partitioned");
    std::lock_guard<std::mutex> l(store_->mu);
    if (seen_ != store_->version) return absl::AbortedError("conflict");
    store_->record = r;
    seen_ = ++store_->version;
    return absl::OkStatus();
  }
  std::string Describe() const override { return "test/lease"; }
  std::atomic<bool> partitioned{false};

 private:
  FakeLeaseStore* store_;
  int64_t seen_ = -1;
};

}  // namespace spiderpool::kube::testing
