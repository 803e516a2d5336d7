#include "kube/controller/manager.h"

#include <condition_variable>

#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::kube {

Manager::Manager(ManagerOptions options) : options_(std::move(options)) {
  if (options_.health) health_ = std::make_unique<health::Server>(*options_.health);
}

Manager::~Manager() {
  if (health_) health_->Stop();
}

StartStopRunnable::StartStopRunnable(std::string name, std::function<absl::Status()> start,
                                     std::function<void()> stop)
    : name_(std::move(name)), start_(std::move(start)), stop_(std::move(stop)) {}

absl::Status StartStopRunnable::Run(std::stop_token stop) {
  absl::Status s = start_();
  {
    std::lock_guard<std::mutex> l(mu_);
    started_ = s.ok();
  }
  cv_.notify_all();
  if (!s.ok()) return s;
  {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, stop, [] { return false; });  // until stop is requested
  }
  stop_();
  return absl::OkStatus();
}

bool StartStopRunnable::WaitStarted() {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [this] { return started_.has_value(); });
  return *started_;
}

void Manager::Add(std::unique_ptr<Runnable> runnable) { runnables_.push_back(std::move(runnable)); }

bool Manager::IsLeader() const {
  std::lock_guard<std::mutex> l(mu_);
  return leading_;
}

void Manager::Fail(absl::Status s) {
  std::lock_guard<std::mutex> l(mu_);
  if (first_error_.ok()) first_error_ = std::move(s);
  cv_.notify_all();
}

std::jthread Manager::Launch(Runnable* r, std::stop_token token) {
  return std::jthread([this, r, token] {
    SP_LOG(Info).Msg("starting runnable").KV("manager", options_.name).KV("runnable", r->Name());
    absl::Status s = r->Run(token);
    if (!s.ok() && !token.stop_requested()) {
      SP_LOG(Error).Msg("runnable failed").KV("runnable", r->Name()).KV("err", s);
      Fail(base::Annotate(s, r->Name()));
    }
  });
}

void Manager::StartGroup(const std::vector<Runnable*>& runnables, std::stop_token token,
                         std::vector<std::jthread>* threads) {
  for (Runnable* r : runnables) threads->push_back(Launch(r, token));
}

void Manager::RunOrdered(const std::vector<Runnable*>& runnables, std::stop_token stop) {
  auto done = [&] {
    std::lock_guard<std::mutex> l(mu_);
    return stop.stop_requested() || !first_error_.ok();
  };
  std::vector<std::stop_source> stops;
  std::vector<std::jthread> threads;
  for (Runnable* r : runnables) {
    if (done()) break;
    stops.emplace_back();
    threads.push_back(Launch(r, stops.back().get_token()));
    if (!r->WaitStarted()) break;  // its thread reports the error
  }
  {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return stop.stop_requested() || !first_error_.ok(); });
  }
  for (size_t i = threads.size(); i-- > 0;) {
    SP_LOG(Info).Msg("stopping runnable").KV("manager", options_.name)
        .KV("runnable", runnables[i]->Name());
    stops[i].request_stop();
    threads[i].join();
  }
}

absl::Status Manager::Run(std::stop_token stop) {
  if (health_) SP_RETURN_IF_ERROR(health_->Start());

  std::vector<Runnable*> always, leader_only;
  for (auto& r : runnables_) {
    (r->NeedsLeaderElection() && options_.leader_election ? leader_only : always)
        .push_back(r.get());
  }

  std::stop_source all;
  std::stop_callback forward(stop, [&] {
    all.request_stop();
    { std::lock_guard<std::mutex> l(mu_); }  // no lost wake-up between check and wait
    cv_.notify_all();
  });
  std::vector<std::jthread> threads;
  if (options_.ordered && !options_.leader_election) {
    RunOrdered(always, stop);
    if (health_) health_->Stop();
    std::lock_guard<std::mutex> l(mu_);
    return first_error_;
  }
  StartGroup(always, all.get_token(), &threads);

  std::jthread elector_thread;
  if (options_.leader_election) {
    LeaderElectionConfig cfg = *options_.leader_election;
    cfg.on_started_leading = [this, &leader_only](std::stop_token leading) {
      {
        std::lock_guard<std::mutex> l(mu_);
        leading_ = true;
      }
      std::vector<std::jthread> leader_threads;
      StartGroup(leader_only, leading, &leader_threads);
      for (auto& t : leader_threads) t.join();
    };
    cfg.on_stopped_leading = [this] {
      std::lock_guard<std::mutex> l(mu_);
      leading_ = false;
    };
    auto lock = options_.lease_lock ? options_.lease_lock() : nullptr;
    auto elector = LeaderElector::Create(std::move(cfg), std::move(lock));
    if (!elector.ok()) {
      all.request_stop();
      for (auto& t : threads) t.join();
      return elector.status();
    }
    elector_thread =
        std::jthread([this, e = std::move(*elector), token = all.get_token()]() mutable {
          absl::Status s = e->Run(token);
          if (!s.ok()) Fail(s);  // leadership lost
        });
  }

  {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return stop.stop_requested() || !first_error_.ok(); });
  }
  all.request_stop();
  if (elector_thread.joinable()) elector_thread.join();  // leader runnables, then release
  for (auto& t : threads) t.join();
  if (health_) health_->Stop();
  std::lock_guard<std::mutex> l(mu_);
  return first_error_;
}

}  // namespace spiderpool::kube
