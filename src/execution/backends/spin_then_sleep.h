// How long a waiting thread polls for work before it sleeps on a condition variable: the
// local executor's driver waiting for results, each actor thread waiting for its next task
// (execution/backends/thread_pools.cc).
//
// Why: sleeping on a condition variable and being woken costs a context switch each way and,
// on a virtual machine, tens of microseconds of scheduler latency; with UDFs that take
// microseconds (no-op stages, small batches) an RPC spent most of its round trip asleep or
// waking, on both sides. A thread that polls a short while first catches such work awake.
//
// The rule: poll only while polling pays. A wait polls for up to the poll's time (25 us by
// default) when the previous wait's answer arrived within that time of its start (the work
// comes fast), and not at all otherwise (behind a UDF of milliseconds the driver sleeps at
// once, as without polling). When the answer arrived is when it was posted, not when the
// waiter saw it: a waiter that slept wakes later than its answer came, by the scheduler's
// wake-up latency, and where that latency is longer than the poll (tens of microseconds on
// some virtual machines) judging by the wake-up would turn polling off for good after one
// slow answer. Polling yields the core on each turn, so a polling thread never keeps a
// runnable thread off a core they share.
//
// Threading: one object per waiting thread; not shared.
#pragma once

#include <chrono>
#include <thread>

namespace rayorch::detail {

class SpinThenSleep {
 public:
  using Clock = std::chrono::steady_clock;
  /// Long enough for a no-op UDF's result to come back from another thread, short against
  /// any UDF worth running on one.
  static constexpr std::chrono::microseconds kDefaultPoll{25};

  explicit SpinThenSleep(Clock::duration poll = kDefaultPoll) : poll_(poll) {}

  /// Polls `ready` until it returns true, `deadline` passes or the poll's time is up; returns
  /// what `ready` last returned. Call `answered` once the wait has its answer.
  template <class Ready>
  bool poll(Clock::time_point deadline, Ready ready) {
    start_ = Clock::now();
    if (!fast_) return ready();
    const auto until = start_ + poll_ < deadline ? start_ + poll_ : deadline;
    for (;;) {
      if (ready()) return true;
      if (Clock::now() >= until) return false;
      std::this_thread::yield();
    }
  }

  /// The wait that began with the last poll() has its answer, posted at `arrived` (now when
  /// the waiter cannot tell: then a wake-up's latency counts against polling).
  void answered(Clock::time_point arrived = Clock::now()) { fast_ = arrived - start_ <= poll_; }

 private:
  Clock::duration poll_;
  bool fast_ = true;  // the last wait was answered within `poll_`
  Clock::time_point start_{};
};

}  // namespace rayorch::detail
