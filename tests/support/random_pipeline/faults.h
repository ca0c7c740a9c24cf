// Randomized differential testing: the faults of a Call, what each Grain does as a pure
// function of them and of its hash, and the state every actor of one case shares.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_set>

#include "support/random_pipeline/random.h"
#include <fmt/format.h>

namespace random_pipeline {

// Rates in permille, decided per Grain from its hash.
struct Faults {
  int record = 0;  // RecordFailure row
  int group = 0;   // GroupFailure row
  int flaky = 0;   // throws on the first attempt only
  int poison = 0;  // always throws
  int lost = 0;    // ActorLost on the first attempt only
  int hang = 0;    // sleeps past the Module's timeout on the first attempt only
};

// What one Grain does, a pure function of the Call's faults and the Grain's hash.
struct Behavior {
  bool lost = false;
  bool poison = false;
  bool flaky = false;
  bool group = false;
  bool record = false;
  bool hang = false;
};

inline bool roll(u64 h, u64 salt, int permille) {
  return permille > 0 && static_cast<int>(mix(h ^ salt) % 1000) < permille;
}

inline Behavior classify(const Faults& f, u64 h) {
  return Behavior{roll(h, 0x10, f.lost),  roll(h, 0x20, f.poison), roll(h, 0x30, f.flaky),
                  roll(h, 0x40, f.group), roll(h, 0x50, f.record), roll(h, 0x90, f.hang)};
}

inline std::string record_message(int call, u64 h) {
  return fmt::format("record c{} {:016x}", call, h);
}
inline std::string group_message(int call, u64 h) {
  return fmt::format("group c{} {:016x}", call, h);
}
inline std::string poison_message(int call, u64 h) {
  return fmt::format("poison c{} {:016x}", call, h);
}
inline std::string flaky_message(int call, u64 h) {
  return fmt::format("flaky c{} {:016x}", call, h);
}
// The cause isolate_tail records for a poisoned Grain ("ErrorType: message").
inline std::string poison_cause(int call, u64 h) {
  return "std::runtime_error: " + poison_message(call, h);
}

// State shared by every actor of every Call of one case: which first-attempt faults already
// fired, the injected delay, and counters checked against the run's metrics.
struct Runtime {
  std::mutex mutex;
  std::unordered_set<u64> fired;
  std::atomic<int> delay_us{0};
  std::atomic<int> hang_ms{0};  // 0: hang triggers do nothing (the SyncExecutor has no timeouts)
  std::atomic<u64> salt{0};
  std::atomic<u64> rpcs{0};
  std::atomic<u64> rows{0};
  std::atomic<u64> throws{0};
  std::atomic<u64> losses{0};
  // Eager start (DESIGN 6.1.4): the first `slow_builds` UDF constructors (an executor's
  // actors) sleep up to `startup_us` each (a hash of the build number), so actors join their
  // pools in a random order, many after the first run began; later builds (replacements, whose
  // tasks wait for them within a timeout) do not. Set before an executor is made; reset()
  // leaves them. A worker process sees the values at its fork.
  std::atomic<int> startup_us{0};
  std::atomic<u64> startup_salt{0};
  std::atomic<u64> slow_builds{0};
  std::atomic<u64> builds{0};

  void start_up() {
    const u64 n = builds.fetch_add(1);
    const int limit = startup_us.load();
    if (limit <= 0 || n >= slow_builds.load()) return;
    const u64 us = mix(n ^ startup_salt.load()) % static_cast<u64>(limit);
    std::this_thread::sleep_for(std::chrono::microseconds(us));
  }

  void reset(int delay, u64 delay_salt, int hang) {
    std::lock_guard<std::mutex> lock(mutex);
    fired.clear();
    delay_us = delay;
    hang_ms = hang;
    salt = delay_salt;
    rpcs = 0;
    rows = 0;
    throws = 0;
    losses = 0;
  }
};

// The static argument of every Call: its seed, faults and shape parameters.
struct CallSpec {
  u64 seed = 0;
  int call = 0;  // index in the case, for messages
  Faults faults;
  int max_len = 3;          // list UDFs: lengths in [0, max_len]
  int true_permille = 600;  // mask UDFs
  // MaskExclude: the Call whose GroupFailures the mask leaves out (its seed and faults).
  u64 exclude_seed = 0;
  Faults exclude_faults;
  std::shared_ptr<Runtime> rt;
};

}  // namespace random_pipeline
