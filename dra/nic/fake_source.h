#pragma once
// A scripted NicSource for tests of its consumers (the agent's ResourceSlice publisher, the
// device plugin): Set() replaces the list and wakes every Watch(), with the same contract as
// NetlinkNicSource (initial list first, then only lists that differ from the last delivered).

#include <cstdint>
#include <stop_token>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "dra/nic/discovery.h"
#include "dra/nic/nic.h"

namespace spiderpool::dra::nic {

class FakeNicSource : public NicSource {
 public:
  explicit FakeNicSource(std::vector<Nic> nics = {});

  void Set(std::vector<Nic> nics);
  // List() returns this error until it is cleared with OkStatus(); Watch() is unaffected.
  void SetListError(absl::Status error);
  // Number of Watch() calls currently running (tests wait for 1 before calling Set()).
  int watchers() const;

  absl::StatusOr<std::vector<Nic>> List() override;
  absl::Status Watch(std::stop_token stop, const NicListCallback& on_change) override;

 private:
  mutable absl::Mutex mu_;
  std::vector<Nic> nics_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status list_error_ ABSL_GUARDED_BY(mu_);
  int watchers_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace spiderpool::dra::nic
