#pragma once
// The loopback API server's latency model at work (LatencyModel in apiserver.h): when each
// request may be answered and when each watch event may be delivered. Core asks it once per
// HTTP request (RequestReadyAt, then sleeps on the server's clock) and once per stored change
// (WatchDueAt, stamped on the queued watch items). Thread-safe; holds no other lock while it
// runs, so Core may call it with its store locked.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <optional>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <utility>

#include "absl/time/time.h"
#include "kube/testing/apiserver.h"

namespace spiderpool::kube::testing::internal {

class LatencyState {
 public:
  explicit LatencyState(LatencyModel model = {});

  void Set(LatencyModel model);
  LatencyModel Get() const;

  // When a request that arrives at `now` may be served: now + per_request (+ per_write for a
  // write verb). InfinitePast() when the model is off (nothing to wait for).
  absl::Time RequestReadyAt(absl::Time now, std::string_view verb);

  // One write's turn on one object (per_object_write): writes of the same object take turns
  // in arrival order. The holder performs its write; if it landed, it keeps the object for
  // `hold` (the etcd commit of that key) before answering, so the next writer of the object
  // waits. A write that did not land (409 on a stale resourceVersion, 404, 422) lets the next
  // one go at once, as kube-apiserver answers a failed precondition without an etcd write.
  class Turn {
   public:
    Turn(LatencyState* state, std::string key, uint64_t ticket, absl::Duration hold)
        : state_(state), key_(std::move(key)), ticket_(ticket), hold_(hold) {}
    Turn(Turn&& o) noexcept
        : state_(std::exchange(o.state_, nullptr)), key_(std::move(o.key_)),
          ticket_(o.ticket_), hold_(o.hold_) {}
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;
    Turn& operator=(Turn&&) = delete;
    ~Turn();  // the next writer of the object may go
    absl::Duration hold() const { return hold_; }

   private:
    LatencyState* state_;
    std::string key_;
    uint64_t ticket_;
    absl::Duration hold_;
  };
  enum class TurnWait { kTurn, kNoModel, kGaveUp };
  // Blocks until it is this write's turn on `object_key`: kTurn with `*turn` set. kNoModel (no
  // wait) when per_object_write is zero. While waiting, `give_up` is asked every
  // kGiveUpPoll (the request's deadline passed, its client went away: kube-apiserver cancels
  // the request's context, so its etcd write is never attempted); when it says yes the write
  // leaves the queue without a turn (kGaveUp) and the writers behind it move up.
  TurnWait WaitForTurn(const std::string& object_key, const std::function<bool()>& give_up,
                       std::optional<Turn>* turn);
  static constexpr absl::Duration kGiveUpPoll = absl::Milliseconds(100);
  // Writes queued behind another write of their object (not the ones in their turn).
  size_t WritesWaiting() const;

  // When a watch event of a change made at `now` may be delivered (InfinitePast() if
  // watch_delay is zero).
  absl::Time WatchDueAt(absl::Time now);

  // create/update/patch/delete/deletecollection.
  static bool IsWrite(std::string_view verb);

 private:
  struct Queue {
    uint64_t next_ticket = 0;  // handed to the next arriving writer
    uint64_t serving = 0;      // the writer whose turn it is
    std::set<uint64_t> gone;   // tickets given up while waiting: skipped when their turn comes
    // The writers waiting for this object (one condition per object: an end of turn wakes only
    // them; with one for all objects every SpiderEndpoint create woke every pool writer
    // waiting, ~10,000 wake-ups of ~50 threads in a 100-node ipam_e2e wave).
    std::condition_variable turn_cv;
  };
  // Moves `q` to its next ticket still waiting; true when no writer is left (erase the queue).
  static bool AdvanceLocked(Queue& q);
  absl::Duration StretchedLocked(absl::Duration d);  // d x [1, 1 + jitter]
  void EndTurn(const std::string& key, uint64_t ticket);

  mutable std::mutex mu_;
  LatencyModel model_;                  // guarded by mu_
  std::mt19937_64 rng_;                 // guarded by mu_
  std::map<std::string, Queue> queues_;  // guarded by mu_: objects with a writer in turn
};

}  // namespace spiderpool::kube::testing::internal
