// What a run's results depend on, as one number (src/program/plan_fingerprint.h): tuning
// leaves it alone; the Calls' arguments, wiring and the outputs change it.
#include "program/plan_fingerprint.h"

#include <vector>

#include "support/udfs.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

namespace ro = rayorch;
namespace rd = rayorch::detail;

using test_udfs::Add;
using test_udfs::AddConst;

struct Options {
  int k = 2;
  int batch_size = 4;
  int replicas = 1;
  bool swapped = false;    // Add's inputs the other way round
  bool both = false;       // the scaled column as a second output
  bool colocated = false;  // both Modules share one pool (DESIGN 5.12)
};

std::uint64_t fingerprint(const Options& o) {
  ro::Module<AddConst> scale = ro::Module<AddConst>().batch_size(o.batch_size).replicas(o.replicas);
  ro::Module<Add> add;
  if (o.colocated) {
    scale.colocate("g");
    add.colocate("g").replicas(o.replicas);
  }
  if (o.both) {
    auto program = ro::compile([&](ro::Port<int> x) {
      auto y = scale(x, o.k);
      return std::make_tuple(add(x, y), y);
    });
    return rd::plan_fingerprint(*program.plan());
  }
  auto program = ro::compile([&](ro::Port<int> x) {
    auto y = scale(x, o.k);
    return o.swapped ? add(y, x) : add(x, y);
  });
  return rd::plan_fingerprint(*program.plan());
}

TEST(PlanFingerprint, TuningLeavesItAlone) {
  EXPECT_EQ(fingerprint({}), fingerprint({}));
  EXPECT_EQ(fingerprint({}), fingerprint({.batch_size = 64, .replicas = 3}));
  EXPECT_EQ(fingerprint({}), fingerprint({.colocated = true}));
}

TEST(PlanFingerprint, ArgumentsWiringAndOutputsChangeIt) {
  const std::uint64_t base = fingerprint({});
  EXPECT_NE(base, fingerprint({.k = 3}));
  EXPECT_NE(base, fingerprint({.swapped = true}));
  EXPECT_NE(base, fingerprint({.both = true}));
}

}  // namespace
