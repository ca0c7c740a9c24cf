// The Module options checked by the verify phase of the compiler (DESIGN 4,
// src/program/compile_verify.cc): an invalid option is a CompileError naming the Module, its
// Calls and the option; the boundary values are accepted.
#include <chrono>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "support/compiler_testing.h"
#include "support/output_values.h"
#include "support/udfs.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

namespace ro = rayorch;
using compiler_testing::compile_error;
using output_values::values;
using test_udfs::Add;
using test_udfs::Double;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

struct OptionCase {
  std::string name;
  std::function<void(ro::Module<Double>&)> configure;
  std::string expected;
};

TEST(CompileErrors, InvalidModuleOptionsNameTheModuleAndTheOption) {
  const std::vector<OptionCase> cases = {
      {"replicas", [](auto& m) { m.replicas(0); }, "replicas must be >= 1, got 0"},
      {"batch_size", [](auto& m) { m.batch_size(0); }, "batch_size must be >= 1, got 0"},
      {"negative batch_size", [](auto& m) { m.batch_size(-3); }, "batch_size must be >= 1, got -3"},
      {"cpus", [](auto& m) { m.cpus(-1); }, "cpus must be >= 0, got -1"},
      {"cpus NaN", [](auto& m) { m.cpus(std::numeric_limits<double>::quiet_NaN()); },
       "cpus must be >= 0, got nan"},
      {"gpus", [](auto& m) { m.gpus(-0.5); }, "gpus must be >= 0, got -0.5"},
      {"resource", [](auto& m) { m.resources("tpu", -2); }, "resource 'tpu' must be >= 0, got -2"},
      {"infra_retries", [](auto& m) { m.infra_retries(-1); }, "infra_retries must be >= 0, got -1"},
      {"retry_batch", [](auto& m) { m.recovery(ro::RecoveryPolicy::retry_batch(-1)); },
       "recovery retries must be >= 0, got -1"},
      {"retry_tail", [](auto& m) { m.recovery(ro::RecoveryPolicy::retry_tail(-2)); },
       "recovery retries must be >= 0, got -2"},
      {"timeout", [](auto& m) { m.timeout(std::chrono::milliseconds(-5)); },
       "timeout must be >= 0 ms, got -5"},
  };
  for (const OptionCase& c : cases) {
    ro::Module<Double> dbl;
    c.configure(dbl);
    EXPECT_THAT(
        compile_error([&] { ro::compile([&](ro::Port<int> x) { return dbl(dbl(x)); }); }),
        AllOf(HasSubstr("Module<Double> (used by Double#0, Double#1)"), HasSubstr(c.expected)))
        << c.name;
  }
}

TEST(CompileErrors, BoundaryModuleOptionsAreAccepted) {
  ro::Module<Double> dbl = ro::Module<Double>()
                               .replicas(1)
                               .batch_size(1)
                               .cpus(0)
                               .gpus(0)
                               .resources("tpu", 0)
                               .infra_retries(0)
                               .recovery(ro::RecoveryPolicy::retry_batch(0))
                               .timeout(std::chrono::milliseconds(0));
  auto program = ro::compile([&](ro::Port<int> x) { return dbl(x); });
  ro::testing::SyncExecutor ex(program);
  EXPECT_EQ(values(ex.run({3}).outputs), (std::vector<int>{6}));
}

TEST(CompileErrors, InvalidOptionOfTheSecondModuleNamesThatModule) {
  ro::Module<Double> fine;
  ro::Module<Add> bad = ro::Module<Add>().replicas(-4);
  EXPECT_THAT(compile_error([&] { ro::compile([&](ro::Port<int> x) { return bad(fine(x), x); }); }),
              AllOf(HasSubstr("Module<Add> (used by Add#1): replicas must be >= 1, got -4"),
                    Not(HasSubstr("Double"))));
}

}  // namespace
