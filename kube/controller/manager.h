#pragma once
// The Manager of a binary (controller-runtime's manager.Manager): owns the runnables
// (informers, controllers, servers), the probe/metrics server and leader election.
//
// - Runnables that do not need leader election (informers, the webhook server) start at once
//   on every replica; the others (controllers, GC) start only while this replica leads.
// - Run returns when `stop` is requested (everything is stopped and joined, then the lease is
//   released), when a runnable fails (the others are stopped; its error is returned), or when
//   leadership is lost (Aborted: the process should exit so it restarts as a follower, as
//   controller-runtime does).
// - ManagerOptions::ordered (a binary whose parts depend on each other, the agent): the
//   runnables without leader election start one at a time in the order added, each once the
//   previous one has started (Runnable::WaitStarted), and stop in the reverse order, each
//   returned before the next one is asked to stop (controller-runtime likewise starts and stops
//   its runnable groups in order). A runnable that fails while starting stops the start: the
//   ones after it never run.

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "kube/health/health.h"
#include "kube/leaderelection/leader_elector.h"

namespace spiderpool::kube {

class Runnable {
 public:
  virtual ~Runnable() = default;
  virtual std::string Name() const = 0;
  // Blocks until `stop` is requested (then returns OK) or fails.
  virtual absl::Status Run(std::stop_token stop) = 0;
  virtual bool NeedsLeaderElection() const { return true; }
  // Blocks until Run serves (true) or failed to start (false; Run returns the error): an
  // ordered Manager starts the next runnable then, or nothing more. Default: true at once.
  virtual bool WaitStarted() { return true; }
};

class FuncRunnable : public Runnable {
 public:
  FuncRunnable(std::string name, bool needs_leader, std::function<absl::Status(std::stop_token)> fn)
      : name_(std::move(name)), needs_leader_(needs_leader), fn_(std::move(fn)) {}
  std::string Name() const override { return name_; }
  absl::Status Run(std::stop_token stop) override { return fn_(stop); }
  bool NeedsLeaderElection() const override { return needs_leader_; }

 private:
  std::string name_;
  bool needs_leader_;
  std::function<absl::Status(std::stop_token)> fn_;
};

// A server or background worker with Start() and Stop() as a runnable on every replica: Run
// calls `start`, serves until stopped, then calls `stop`; a failed `start` is Run's error.
// Started (WaitStarted) once `start` returned.
class StartStopRunnable : public Runnable {
 public:
  StartStopRunnable(std::string name, std::function<absl::Status()> start,
                    std::function<void()> stop);
  std::string Name() const override { return name_; }
  absl::Status Run(std::stop_token stop) override;
  bool NeedsLeaderElection() const override { return false; }
  bool WaitStarted() override;

 private:
  std::string name_;
  std::function<absl::Status()> start_;
  std::function<void()> stop_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<bool> started_;  // guarded by mu_; whether `start` succeeded, once it returned
};

// An informer (kube::Informer<T>: anything with Run(std::stop_token)) as a runnable on every
// replica, named "informer/<resource>".
template <template <typename> class Informer, typename T>
std::unique_ptr<Runnable> InformerRunnable(Informer<T>* informer) {
  return std::make_unique<FuncRunnable>(
      "informer/" + std::string(T::Resource().plural), /*needs_leader=*/false,
      [informer](std::stop_token stop) {
        informer->Run(stop);
        return absl::OkStatus();
      });
}

struct ManagerOptions {
  std::string name = "manager";
  // The probe + metrics server; disabled when nullopt.
  std::optional<health::ServerOptions> health;
  // Leader election; when nullopt every runnable starts at once (single replica / tests).
  // The manager sets the config's callbacks itself.
  std::optional<LeaderElectionConfig> leader_election;
  std::function<std::unique_ptr<LeaseLock>()> lease_lock;
  // Start in order, stop in reverse order (see the top of this file); off: all at once.
  // Without leader_election only (with it, ignored).
  bool ordered = false;
};

class Manager {
 public:
  explicit Manager(ManagerOptions options);
  ~Manager();
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  // Before Run only.
  void Add(std::unique_ptr<Runnable> runnable);
  // The probe server (nullptr when disabled). Add checks before or after Run.
  health::Server* health() { return health_.get(); }

  absl::Status Run(std::stop_token stop);
  bool IsLeader() const;

 private:
  // Starts `runnables` on threads stopping with `token`; a failure is reported to Fail().
  void StartGroup(const std::vector<Runnable*>& runnables, std::stop_token token,
                  std::vector<std::jthread>* threads);
  // One runnable on a thread stopping with `token`.
  std::jthread Launch(Runnable* r, std::stop_token token);
  // ManagerOptions::ordered: starts `runnables` one by one until stop or a failure, waits for
  // either, then stops them last first.
  void RunOrdered(const std::vector<Runnable*>& runnables, std::stop_token stop);
  void Fail(absl::Status s);

  ManagerOptions options_;
  std::unique_ptr<health::Server> health_;
  std::vector<std::unique_ptr<Runnable>> runnables_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  absl::Status first_error_;  // guarded by mu_
  bool leading_ = false;      // guarded by mu_
};

}  // namespace spiderpool::kube
