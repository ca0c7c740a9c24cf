// A record of what an actor thread was running when a fatal signal ended the process.
//
// Modules on threads (the default isolation) run in the driver's process, so a segfault or
// an abort in native code ends the whole run, and by itself says nothing of the row that did
// it. While an actor thread runs an invocation it holds a CrashLabel (the Call, its Module,
// the Grains' Entity keys: WorkerTask::crash_label) through a CrashScope; the handler that
// install_crash_record() puts on the fatal signals writes that label to stderr with what
// would have contained the crash (isolation "process"), then hands the signal on to the
// handler that was there before it (Python's faulthandler prints the Python stacks), so the
// process ends as it would have without it.
//
// Cost: the label is plain data (numbers and two pointers into the plan) filled by the
// driver per RPC without allocating; only the handler turns it into text.
//
// Async-signal safety: the handler reads one thread-local pointer and the label it points
// to, formats numbers itself, and calls only write(2), sigaction(2) and raise(3). A label
// is complete before its pointer is published and outlives the CrashScope that publishes
// it.
//
// Process state: a signal's disposition belongs to the process, so the handlers chained to
// are kept once per process (install_crash_record() is idempotent and thread-safe); the
// label is per thread. A crash on a thread without a label (the driver's, a library's own
// thread) passes straight on.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace rayorch::detail {

/// What an RPC runs, as the crash record names it: "Call 'c' (Module<M>) on Grains 7/3, 7/4
/// of input batch 0". Plain data; `call` null means no label.
struct CrashLabel {
  static constexpr std::size_t kKeys = 8;   ///< Grains named; the rest are counted
  static constexpr std::size_t kDepth = 6;  ///< ordinals kept per key, from the Grain up

  /// One Grain's Entity key: its source row's key and the ordinals below it.
  struct Key {
    std::uint64_t root = 0;
    std::uint32_t depth = 0;  ///< ordinals in all (those past kDepth print as "...")
    std::array<std::uint32_t, kDepth> ordinals{};  ///< from the Grain up
  };

  const char* call = nullptr;    ///< the Call's name, owned by the plan
  const char* module = nullptr;  ///< its Module's UDF name, owned by the plan
  std::uint64_t input_batch = 0;
  std::uint32_t grains = 0;  ///< Grains of the RPC; keys holds the first min(grains, kKeys)
  std::array<Key, kKeys> keys{};
};

/// Publishes `label` (call null: none) as what this thread runs until the scope ends.
/// Scopes nest: the outer label is back when an inner scope ends. `label` must outlive the
/// scope.
class CrashScope {
 public:
  explicit CrashScope(const CrashLabel& label) noexcept;
  ~CrashScope();
  CrashScope(const CrashScope&) = delete;
  CrashScope& operator=(const CrashScope&) = delete;

 private:
  const CrashLabel* outer_;
};

/// Puts the crash record's handler on SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT, chained
/// to the handlers there now. Once per process; later calls do nothing.
void install_crash_record();

/// The text the handler writes for `signal` while `label` runs (without the leading newline
/// it starts with), for tests and documentation; the handler writes the same pieces without
/// allocating.
std::string crash_record_text(int signal, const CrashLabel& label);

}  // namespace rayorch::detail
