#pragma once
// A leader-election candidate for tests: runs a LeaderElector on its own thread, counts
// started/stopped leadership (atomics tests can wait on), and keeps a typed pointer to its lock
// (e.g. to cut it off from the API server).

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

#include "base/clock.h"
#include "kube/leaderelection/leader_elector.h"

namespace spiderpool::kube::testing {

template <typename Lock>
struct Candidate {
  std::unique_ptr<LeaderElector> elector;
  Lock* lock = nullptr;
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  absl::Status result;
  std::stop_source stop;
  std::jthread thread;

  // Stops the elector before `thread` joins, so a failed assertion cannot hang the test.
  ~Candidate() { stop.request_stop(); }

  // Returns an error if the elector cannot be created.
  absl::Status Start(const std::string& id, std::unique_ptr<Lock> l, base::Clock* clock) {
    lock = l.get();
    LeaderElectionConfig cfg;
    cfg.identity = id;
    cfg.clock = clock;
    cfg.on_started_leading = [this](std::stop_token leading) {
      ++started;
      started.notify_all();
      std::mutex m;
      std::condition_variable_any cv;
      std::unique_lock<std::mutex> lk(m);
      cv.wait(lk, leading, [] { return false; });
    };
    cfg.on_stopped_leading = [this] {
      ++stopped;
      stopped.notify_all();
    };
    auto e = LeaderElector::Create(std::move(cfg), std::move(l));
    if (!e.ok()) return e.status();
    elector = std::move(*e);
    thread = std::jthread([this] { result = elector->Run(stop.get_token()); });
    return absl::OkStatus();
  }
};

}  // namespace spiderpool::kube::testing
