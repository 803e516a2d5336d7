#pragma once
// LeaseLock on a real coordination.k8s.io/v1 Lease through the REST client. Update is
// optimistic: it sends the resourceVersion of the lease as last read or written through this
// lock, so a concurrent writer makes it fail with 409 Conflict.

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "api/core.h"
#include "kube/leaderelection/leader_elector.h"
#include "kube/rest/client.h"

namespace spiderpool::kube {

class KubeLeaseLock : public LeaseLock {
 public:
  KubeLeaseLock(std::shared_ptr<RestClient> rest, std::string ns, std::string name);
  absl::StatusOr<LeaderElectionRecord> Get() override;
  absl::Status Create(const LeaderElectionRecord& record) override;
  absl::Status Update(const LeaderElectionRecord& record) override;
  std::string Describe() const override { return ns_ + "/" + name_; }

  static LeaderElectionRecord ToRecord(const api::Lease& lease);
  static void FromRecord(const LeaderElectionRecord& record, api::LeaseSpec* spec);

 private:
  Client<api::Lease> client_;
  std::string ns_;
  std::string name_;
  std::mutex mu_;
  std::optional<api::Lease> last_;  // guarded by mu_
};

}  // namespace spiderpool::kube
