// Integration tests of the embedded local executor (DESIGN 3.4 and 6) through ro::Executor:
// timeouts. A timed-out RPC is replayed and its late report rejected, a hung attempt released
// after the executor is gone is safe, and a Grain that always times out is FAILED under
// isolate_tail() and aborts the run under the default policy.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/executor_testing.h"
#include "support/local_executor_testing.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace ro = rayorch;
using executor_testing::Gate;
using local_executor_testing::quiet;
using local_executor_testing::values_of;

// ---- Timeouts -------------------------------------------------------------------------

namespace {

// Hangs on the first attempt at `hang_value` until the gate opens; signals when the hung
// instance is finally destroyed (its abandoned actor thread has exited).
struct HangState {
  explicit HangState(int v) : hang_value(v) {}
  int hang_value;
  Gate release;
  Gate hung_instance_gone;
  std::atomic<bool> hung{false};
  std::atomic<int> hung_instance{0};
  std::atomic<int> constructed{0};
  std::atomic<bool> watchdog_fired{false};
};

struct Hangs {
  explicit Hangs(std::shared_ptr<HangState> s) : state(std::move(s)), id(++state->constructed) {}
  ~Hangs() {
    if (state->hung_instance.load() == id) state->hung_instance_gone.open();
  }
  Hangs(const Hangs&) = delete;
  Hangs& operator=(const Hangs&) = delete;
  std::vector<int> run(ro::Column<int> x) {
    for (int v : x) {
      if (v == state->hang_value && !state->hung.exchange(true)) {
        state->hung_instance = id;
        if (!state->release.wait()) state->watchdog_fired = true;
      }
    }
    // Read the inputs after the hang: an abandoned attempt keeps its input storage alive.
    std::vector<int> out;
    for (int v : x) out.push_back(v * 2);
    return out;
  }
  std::shared_ptr<HangState> state;
  int id;
};

}  // namespace

TEST(LocalExecutor, TimedOutRpcIsReplayedAndItsLateReportRejected) {
  // The hung attempt is the run's first RPC (batch id 1), so its late report names a batch
  // id that the next run's engine also hands out: only the run fence can tell them apart.
  auto state = std::make_shared<HangState>(0);
  ro::Module<Hangs> hangs =
      ro::Module<Hangs>(state).replicas(2).timeout(std::chrono::milliseconds(150)).infra_retries(3);
  auto program = ro::compile([&](ro::Port<int> x) { return hangs(x); });
  ro::Executor ex(program);
  std::vector<int> input(10);
  std::iota(input.begin(), input.end(), 0);
  auto r = ex.run(input, quiet());
  ASSERT_EQ(r.outputs.size(), input.size());
  for (int v : input) EXPECT_EQ(r.outputs[static_cast<std::size_t>(v)].value(), v * 2);
  EXPECT_GE(r.metrics.actors_replaced, 1u);
  EXPECT_GE(r.metrics.calls[0].failed_rpcs, 1u);
  EXPECT_FALSE(state->hung_instance_gone.is_open());

  // Release the abandoned attempt and wait until its thread has reported and exited.
  state->release.open();
  ASSERT_TRUE(state->hung_instance_gone.wait());
  EXPECT_FALSE(state->watchdog_fired.load());
  // Its late report is rejected by the next run rather than committed there.
  auto again = ex.run({1, 2}, quiet());
  EXPECT_EQ(values_of(again.outputs), (std::vector<int>{2, 4}));
  EXPECT_GE(again.metrics.stale_reports_rejected, 1u);
  // Closing joins every live actor, the replacement included, after its constructor ran.
  ex.close();
  EXPECT_GE(state->constructed.load(), 3);
}

TEST(LocalExecutor, ReleasingAHungAttemptAfterTheExecutorIsGoneIsSafe) {
  auto state = std::make_shared<HangState>(2);
  {
    ro::Module<Hangs> hangs = ro::Module<Hangs>(state)
                                  .replicas(2)
                                  .batch_size(2)
                                  .timeout(std::chrono::milliseconds(150))
                                  .infra_retries(3);
    auto program = ro::compile([&](ro::Port<int> x) { return hangs(x); });
    ro::Executor ex(program);
    auto r = ex.run({0, 1, 2, 3, 4}, quiet());
    EXPECT_EQ(values_of(r.outputs), (std::vector<int>{0, 2, 4, 6, 8}));
    EXPECT_GE(r.metrics.actors_replaced, 1u);
  }
  // The executor, its plan handle and its pools are gone; the detached thread owns what it
  // still needs and exits cleanly once released.
  EXPECT_FALSE(state->hung_instance_gone.is_open());
  state->release.open();
  EXPECT_TRUE(state->hung_instance_gone.wait());
}

namespace {

// Hangs on every attempt at the value 2 until the test opens `release`: a Grain that no replay
// can finish. Counts the instances stuck in run() so the test can wait for their threads.
struct HangForeverState {
  Gate release;
  std::atomic<int> hanging{0};
  std::atomic<int> hung_attempts{0};
  std::atomic<int> constructed{0};
};

struct HangsOnTwo {
  explicit HangsOnTwo(std::shared_ptr<HangForeverState> s) : state(std::move(s)) {
    ++state->constructed;
  }
  std::vector<int> run(ro::Column<int> x) {
    std::vector<int> out;
    for (int v : x) {
      if (v == 2) {
        ++state->hung_attempts;
        ++state->hanging;
        state->release.wait(std::chrono::seconds(60));
        --state->hanging;
      }
      out.push_back(v * 2);
    }
    return out;
  }
  std::shared_ptr<HangForeverState> state;
};

// Opens the gate and waits until no abandoned attempt is still inside run().
bool release_hung_attempts(HangForeverState& state) {
  state.release.open();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (state.hanging.load() > 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return state.hanging.load() == 0;
}

}  // namespace

// A thread pool cannot kill the thread of a hung attempt, but past the replay budget it still
// isolates the Grain under isolate_tail(): the batch is split until the Grain that keeps timing
// out runs alone and is FAILED with the timeout as its cause; the rest of its batch completes
// and the run goes on. The outcome does not depend on how many actors share the work.
TEST(LocalExecutor, GrainThatAlwaysTimesOutIsFailedUnderIsolateTail) {
  for (int replicas : {1, 3}) {
    SCOPED_TRACE(replicas);
    auto state = std::make_shared<HangForeverState>();
    ro::Module<HangsOnTwo> udf = ro::Module<HangsOnTwo>(state)
                                     .replicas(replicas)
                                     .batch_size(4)
                                     .timeout(std::chrono::milliseconds(100))
                                     .infra_retries(1)
                                     .recovery(ro::RecoveryPolicy::isolate_tail());
    auto program = ro::compile([&](ro::Port<int> x) { return udf(x); });
    ro::Executor ex(program);
    auto r = ex.run({0, 1, 2, 3, 4, 5, 6, 7}, quiet());
    ASSERT_EQ(r.outputs.size(), 8u);
    for (int v = 0; v < 8; ++v) {
      const auto& out = r.outputs[static_cast<std::size_t>(v)];
      if (v == 2) continue;
      ASSERT_TRUE(out.ok()) << v << ": " << out.issue().cause;
      EXPECT_EQ(out.value(), v * 2);
    }
    ASSERT_FALSE(r.outputs[2].ok());
    EXPECT_EQ(r.outputs[2].issue().outcome, ro::Outcome::failed);
    EXPECT_NE(
        r.outputs[2].issue().cause.find("rayorch::Timeout: the RPC ran past the 100 ms timeout"),
        std::string::npos)
        << r.outputs[2].issue().cause;
    // The attempts at Grain 2: the first and its replay within infra_retries, the tail
    // retry, the half (2, 3), then Grain 2 alone.
    EXPECT_EQ(state->hung_attempts.load(), 5);
    EXPECT_GE(r.metrics.actors_replaced, 5u);
    EXPECT_FALSE(ex.closed());
    // The executor stays usable.
    auto again = ex.run({5}, quiet());
    EXPECT_EQ(values_of(again.outputs), (std::vector<int>{10}));
    // Every timed-out attempt abandoned its thread and a new instance took its place: the
    // pool kept its capacity. Closing joins every live actor after its constructor ran.
    ex.close();
    EXPECT_EQ(static_cast<std::uint64_t>(state->constructed.load()),
              static_cast<std::uint64_t>(replicas) + r.metrics.actors_replaced +
                  again.metrics.actors_replaced);
    EXPECT_TRUE(release_hung_attempts(*state));
  }
}

// The default policy still stops the run, now naming the policy that would contain the hang.
TEST(LocalExecutor, GrainThatAlwaysTimesOutAbortsUnderTheDefaultPolicy) {
  auto state = std::make_shared<HangForeverState>();
  ro::Module<HangsOnTwo> udf = ro::Module<HangsOnTwo>(state)
                                   .batch_size(4)
                                   .timeout(std::chrono::milliseconds(100))
                                   .infra_retries(1);
  auto program = ro::compile([&](ro::Port<int> x) { return udf(x); });
  ro::Executor ex(program);
  try {
    ex.run({0, 1, 2, 3}, quiet());
    ADD_FAILURE() << "the run did not abort";
  } catch (const ro::ExecutionError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rayorch::Timeout: the RPC ran past the 100 ms timeout"), std::string::npos)
        << what;
    EXPECT_NE(what.find("isolate_tail()"), std::string::npos) << what;
  }
  EXPECT_EQ(state->hung_attempts.load(), 2);  // the first attempt and its one replay
  EXPECT_TRUE(release_hung_attempts(*state));
}
