// The misuse catalogue, failures at run time: a UDF throwing under each recovery policy or
// throwing a non-exception, lost actors past their budget, failing constructors, closed
// executors, a throwing streaming callback and a hung UDF. Each entry checks the error a user
// sees and that the executor is either closed (and says so) or still produces every row.
#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/misuse_testing.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace ro = rayorch;
using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

using misuse_testing::error_of;
using misuse_testing::expect_open_after_abort;
using misuse_testing::Inc;
using misuse_testing::kRows;

// Throws for the value 2, on every attempt.
struct ThrowsOnTwo {
  std::vector<int> run(ro::Column<int> x) {
    for (int v : x) {
      if (v == 2) throw std::runtime_error("cannot handle 2");
    }
    return x.to_vector();
  }
};

// Throws something that is not a std::exception.
struct ThrowsInt {
  std::vector<int> run(ro::Column<int> x) {
    if (x.size() > 0) throw 42;
    return {};
  }
};

// Loses its actor on every call.
struct AlwaysLost {
  std::vector<int> run(ro::Column<int>) { throw ro::ActorLost("node went away"); }
};

struct FailingConstructor {
  explicit FailingConstructor(std::string model) {
    throw std::runtime_error("cannot load model " + model);
  }
  std::vector<int> run(ro::Column<int> x) { return x.to_vector(); }
};

// ---- A UDF throwing, under each recovery policy ----------------------------------------------

struct Throwing {
  ro::Module<ThrowsOnTwo> udf;
  ro::Port<int> forward(ro::Port<int> x) { return udf(x); }
};

ro::Compiled<Throwing> program_with(ro::RecoveryPolicy policy, int batch_size) {
  Throwing p;
  p.udf.recovery(policy).batch_size(batch_size);
  return ro::compile(p);
}

TEST(Misuse, UdfThrowsUnderAbort) {
  auto program = program_with(ro::RecoveryPolicy::abort(), 2);
  for (int local = 0; local < 2; ++local) {
    auto check = [&](auto& ex) {
      const std::string msg = error_of<ro::ExecutionError>([&] { ex.run(kRows); });
      EXPECT_THAT(msg, HasSubstr("Call ThrowsOnTwo#0 (UDF ThrowsOnTwo) failed on Grains [0 g0, 1 "
                                 "g0]: std::runtime_error: cannot handle 2"));
      expect_open_after_abort(ex, "std::runtime_error: cannot handle 2");
    };
    if (local) {
      ro::Executor ex(program);
      check(ex);
    } else {
      ro::testing::SyncExecutor ex(program);
      check(ex);
    }
  }
}

TEST(Misuse, UdfThrowsUnderRetryBatch) {
  auto program = program_with(ro::RecoveryPolicy::retry_batch(2), 1);
  ro::testing::SyncExecutor ex(program);
  EXPECT_THAT(error_of<ro::ExecutionError>([&] { ex.run(kRows); }),
              HasSubstr("Call ThrowsOnTwo#0 (UDF ThrowsOnTwo) failed on Grains [1 g2] after 2 "
                        "retries: std::runtime_error: cannot handle 2"));
  // The exact batch was retried immediately, twice, before the abort.
  std::vector<std::string> log;
  for (const auto& rpc : ex.rpcs()) log.push_back(rpc.to_string());
  EXPECT_THAT(log,
              ::testing::ElementsAre("ThrowsOnTwo#0 [0] g0", "ThrowsOnTwo#0 [1] g0 failed",
                                     "ThrowsOnTwo#0 [1] g1 failed", "ThrowsOnTwo#0 [1] g2 failed"));
  EXPECT_FALSE(ex.closed());  // an aborted run keeps the executor
  ro::Executor local(program);
  EXPECT_THAT(error_of<ro::ExecutionError>([&] { local.run(kRows); }),
              HasSubstr("after 2 retries: std::runtime_error: cannot handle 2"));
  EXPECT_FALSE(local.closed());  // an aborted run keeps the executor
}

TEST(Misuse, UdfThrowsUnderRetryTail) {
  auto program = program_with(ro::RecoveryPolicy::retry_tail(1), 2);
  ro::testing::SyncExecutor ex(program);
  EXPECT_THAT(error_of<ro::ExecutionError>([&] { ex.run(kRows); }),
              HasSubstr("Call ThrowsOnTwo#0 (UDF ThrowsOnTwo) failed on Grains [0 g1, 1 g1] after "
                        "1 retries: std::runtime_error: cannot handle 2"));
  // The failed batch went behind the ready work before its retry.
  std::vector<std::string> log;
  for (const auto& rpc : ex.rpcs()) log.push_back(rpc.to_string());
  EXPECT_THAT(log, ::testing::ElementsAre("ThrowsOnTwo#0 [0 1] g0 failed", "ThrowsOnTwo#0 [2 3] g0",
                                          "ThrowsOnTwo#0 [4] g0", "ThrowsOnTwo#0 [0 1] g1 failed"));
}

TEST(Misuse, UdfThrowsUnderIsolateTailFailsOnlyItsGrain) {
  auto program = program_with(ro::RecoveryPolicy::isolate_tail(), 4);
  for (int local = 0; local < 2; ++local) {
    auto check = [&](auto& ex) {
      auto r = ex.run(kRows);
      ASSERT_EQ(r.outputs.size(), kRows.size());
      for (std::size_t i = 0; i < kRows.size(); ++i) {
        if (kRows[i] == 2) {
          ASSERT_FALSE(r.outputs[i].ok());
          EXPECT_EQ(r.outputs[i].issue(),
                    (ro::OutputIssue{ro::Outcome::failed, "std::runtime_error: cannot handle 2"}));
        } else {
          EXPECT_EQ(r.outputs[i].value(), kRows[i]);
        }
      }
      EXPECT_FALSE(ex.closed());
      // The issue is reported, not thrown, when a user reads it as a value.
      EXPECT_THAT(error_of<std::logic_error>([&] { (void)r.outputs[1].value(); }),
                  HasSubstr("Output::value() called on a failed output; check ok() first (cause: "
                            "std::runtime_error: cannot handle 2)"));
      EXPECT_THAT(error_of<std::logic_error>([&] { (void)r.outputs[0].issue(); }),
                  HasSubstr("Output::issue() called on a present output"));
    };
    if (local) {
      ro::Executor ex(program);
      check(ex);
    } else {
      ro::testing::SyncExecutor ex(program);
      check(ex);
    }
  }
}

TEST(Misuse, UdfThrowsSomethingThatIsNotAnException) {
  ro::Module<ThrowsInt> udf;
  auto program = ro::compile([&](ro::Port<int> x) { return udf(x); });
  ro::testing::SyncExecutor ex(program);
  EXPECT_THAT(error_of<ro::ExecutionError>([&] { ex.run({7}); }),
              HasSubstr("Call ThrowsInt#0 (UDF ThrowsInt) failed on Grains [0 g0]: int"));
}

TEST(Misuse, ActorLostBeyondTheInfrastructureBudget) {
  ro::Module<AlwaysLost> udf = ro::Module<AlwaysLost>().infra_retries(1);
  auto program = ro::compile([&](ro::Port<int> x) { return udf(x); });
  for (int local = 0; local < 2; ++local) {
    auto check = [&](auto& ex) {
      EXPECT_THAT(error_of<ro::ExecutionError>([&] { ex.run({7}); }),
                  HasSubstr("Call AlwaysLost#0 (UDF AlwaysLost) lost its actor on Grains [0 g1] "
                            "and the infrastructure budget (1 replays per Grain) is exhausted: "
                            "rayorch::ActorLost: node went away"));
      // Each lost actor was replaced: the executor stays open.
      EXPECT_FALSE(ex.closed());
    };
    if (local) {
      ro::Executor ex(program);
      check(ex);
    } else {
      ro::testing::SyncExecutor ex(program);
      check(ex);
    }
  }
}

// ---- Constructors and closed executors -------------------------------------------------------

TEST(Misuse, ConstructorFailure) {
  ro::Module<FailingConstructor> udf =
      ro::Module<FailingConstructor>(std::string("eng")).replicas(3);
  auto program = ro::compile([&](ro::Port<int> x) { return udf(x); });
  // The local executor starts its actors in the background: the first run reports a pool
  // whose every constructor failed (eager start, DESIGN 6.1.4).
  ro::Executor local(program);
  EXPECT_THAT(error_of<ro::ExecutionError>([&] { local.run({1}); }),
              AllOf(HasSubstr("no actor of Module<FailingConstructor> could start"),
                    HasSubstr("the constructor of Module<FailingConstructor> threw "
                              "std::runtime_error: cannot load model eng"),
                    HasSubstr("of pool FailingConstructor")));
  EXPECT_TRUE(local.closed());
  EXPECT_THAT(error_of<ro::ExecutionError>([&] { ro::testing::SyncExecutor ex(program); }),
              HasSubstr("the constructor of Module<FailingConstructor> threw std::runtime_error: "
                        "cannot load model eng"));
}

// Builds once per pool, then its replacement constructor fails; every RPC loses its actor.
struct FragileReplacement {
  explicit FragileReplacement(std::shared_ptr<std::atomic<int>> builds) {
    if (builds->fetch_add(1) > 0) throw std::runtime_error("no spare node");
  }
  std::vector<int> run(ro::Column<int>) { throw ro::ActorLost("node went away"); }
};

TEST(Misuse, ReplacementConstructorFailure) {
  for (int local = 0; local < 2; ++local) {
    auto builds = std::make_shared<std::atomic<int>>(0);
    ro::Module<FragileReplacement> udf = ro::Module<FragileReplacement>(builds).infra_retries(3);
    auto program = ro::compile([&](ro::Port<int> x) { return udf(x); });
    auto check = [&](auto& ex) {
      EXPECT_THAT(error_of<ro::ExecutionError>([&] { ex.run({7}); }),
                  HasSubstr("replacing a lost actor failed: the constructor of "
                            "Module<FragileReplacement> threw std::runtime_error: no spare node"));
      EXPECT_TRUE(ex.closed());
    };
    if (local) {
      ro::Executor ex(program);
      check(ex);
    } else {
      ro::testing::SyncExecutor ex(program);
      check(ex);
    }
  }
}

TEST(Misuse, RunningAClosedExecutor) {
  ro::Module<Inc> inc;
  auto program = ro::compile([&](ro::Port<int> x) { return inc(x); });
  for (int local = 0; local < 2; ++local) {
    auto check = [&](auto& ex) {
      EXPECT_EQ(ex.run(kRows).outputs.size(), kRows.size());
      ex.close();
      ex.close();  // idempotent
      EXPECT_TRUE(ex.closed());
      EXPECT_THAT(error_of<ro::ExecutionError>([&] { ex.run(kRows); }),
                  HasSubstr("this executor is closed (after close() or a run whose actors "
                            "broke); create a new executor to run again"));
      EXPECT_THAT(error_of<ro::ExecutionError>(
                      [&] { ex.run(kRows, {}, [](std::size_t, const ro::Output<int>&) {}); }),
                  HasSubstr("this executor is closed"));
    };
    if (local) {
      ro::Executor ex(program);
      check(ex);
    } else {
      ro::testing::SyncExecutor ex(program);
      check(ex);
    }
  }
}

TEST(Misuse, StreamingCallbackThatThrows) {
  ro::Module<Inc> inc;
  auto program = ro::compile([&](ro::Port<int> x) { return inc(x); });
  for (int local = 0; local < 2; ++local) {
    auto check = [&](auto& ex) {
      EXPECT_THAT(error_of<std::runtime_error>([&] {
                    ex.run(kRows, {}, [](std::size_t row, const ro::Output<int>&) {
                      if (row == 2) throw std::runtime_error("sink full");
                    });
                  }),
                  HasSubstr("sink full"));
      // The user's exception reaches the caller unchanged; the executor runs every row again.
      EXPECT_FALSE(ex.closed());
      EXPECT_EQ(ex.run(kRows).outputs.size(), kRows.size());
    };
    if (local) {
      ro::Executor ex(program);
      check(ex);
    } else {
      ro::testing::SyncExecutor ex(program);
      check(ex);
    }
  }
}

// Sleeps far past its Module's timeout on the value 1.
struct Hangs {
  std::vector<int> run(ro::Column<int> x) {
    for (int v : x) {
      if (v == 1) std::this_thread::sleep_for(std::chrono::seconds(2));
    }
    return x.to_vector();
  }
};

TEST(Misuse, HungUdfPastItsTimeoutDoesNotHangTheRun) {
  ro::Module<Hangs> udf =
      ro::Module<Hangs>().timeout(std::chrono::milliseconds(20)).infra_retries(0);
  auto program = ro::compile([&](ro::Port<int> x) { return udf(x); });
  ro::Executor ex(program);
  EXPECT_THAT(error_of<ro::ExecutionError>([&] { ex.run({1}); }),
              AllOf(HasSubstr("Call Hangs#0 (UDF Hangs) failed on Grains [0 g0]: "
                              "rayorch::Timeout: the RPC ran past the 20 ms timeout; the Module's "
                              "recovery policy abort() (the default) stops the run here")));
  EXPECT_FALSE(ex.closed());  // the hung actor was replaced and the run aborted cleanly
}

}  // namespace
