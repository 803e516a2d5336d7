#include "dra/nic/fake_source.h"

#include <utility>

namespace spiderpool::dra::nic {

FakeNicSource::FakeNicSource(std::vector<Nic> nics) : nics_(std::move(nics)) {}

void FakeNicSource::Set(std::vector<Nic> nics) {
  absl::MutexLock lock(&mu_);
  nics_ = std::move(nics);
  ++version_;
}

void FakeNicSource::SetListError(absl::Status error) {
  absl::MutexLock lock(&mu_);
  list_error_ = std::move(error);
}

int FakeNicSource::watchers() const {
  absl::MutexLock lock(&mu_);
  return watchers_;
}

absl::StatusOr<std::vector<Nic>> FakeNicSource::List() {
  absl::MutexLock lock(&mu_);
  if (!list_error_.ok()) return list_error_;
  return nics_;
}

absl::Status FakeNicSource::Watch(std::stop_token stop, const NicListCallback& on_change) {
  // Taking the lock after the stop request re-evaluates the Await condition below.
  std::stop_callback wake(stop, [this] { absl::MutexLock lock(&mu_); });
  std::vector<Nic> last;
  uint64_t seen = 0;
  {
    absl::MutexLock lock(&mu_);
    ++watchers_;
    last = nics_;
    seen = version_;
  }
  on_change(last);
  while (true) {
    std::vector<Nic> next;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [&]() {
        mu_.AssertHeld();  // Await evaluates it under mu_ (tells clang's thread-safety analysis)
        return stop.stop_requested() || version_ != seen;
      };
      mu_.Await(absl::Condition(&ready));
      if (stop.stop_requested()) {
        --watchers_;
        return absl::OkStatus();
      }
      seen = version_;
      next = nics_;
    }
    if (next != last) {
      last = std::move(next);
      on_change(last);
    }
  }
}

}  // namespace spiderpool::dra::nic
