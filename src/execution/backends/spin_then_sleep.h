// How long a waiting thread polls for work before it sleeps on a condition variable.
//
// Why: sleeping on a condition variable and being woken costs a context switch each way and,
// on a virtual machine, several microseconds of scheduler latency; with UDFs that take
// microseconds (no-op stages, small batches) the driver spent most of each round trip asleep
// or waking. A driver that polls a short while first catches such results awake.
//
// The rule: poll only while polling pays. A wait polls for up to the poll's time (25 us by default)
// when the previous wait was answered within that time of its start (the results come fast), and
// not at all otherwise (a UDF of milliseconds gets no polling: the driver sleeps at once, as
// before). Polling yields the core on each turn, so it never keeps a runnable actor thread off a
// core it shares with the driver.
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

  /// The wait that began with the last poll() has its answer now.
  void answered() { fast_ = Clock::now() - start_ <= poll_; }

 private:
  Clock::duration poll_;
  bool fast_ = true;  // the last wait was answered within `poll_`
  Clock::time_point start_{};
};

}  // namespace rayorch::detail
