// Co-located pools (src/program/colocated_instance.h, DESIGN 5.12): the Modules of a colocate
// group share one pool whose actors hold one instance of each, every Call runs on its own
// Module's instance with its own batch size and metrics, and the outputs are those of the
// same pipeline without co-location, on every executor.
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/compiler_testing.h"
#include "support/output_values.h"
#include "support/udfs.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>
#include <rayorch/testing.h>

#include "program/plan.h"

namespace {

namespace ro = rayorch;
using output_values::values;
using test_udfs::AddConst;
using test_udfs::RecordingDouble;
using ::testing::HasSubstr;

struct Pipeline {
  std::shared_ptr<RecordingDouble::Log> log = std::make_shared<RecordingDouble::Log>();
  ro::Module<RecordingDouble> dbl = ro::Module<RecordingDouble>(log).batch_size(3);
  ro::Module<AddConst> add = ro::Module<AddConst>().batch_size(5);

  explicit Pipeline(const std::string& group, int replicas = 2) {
    dbl.replicas(replicas).colocate(group);
    add.replicas(replicas).colocate(group);
  }
  auto compile() {
    return ro::compile([this](ro::Port<int> x) { return add(dbl(x), 1); });
  }
};

std::vector<int> inputs() {
  std::vector<int> xs;
  for (int i = 0; i < 40; ++i) xs.push_back(i);
  return xs;
}

std::vector<int> expected() {
  std::vector<int> out;
  for (int x : inputs()) out.push_back(2 * x + 1);
  return out;
}

ro::RunOptions quiet() {
  ro::RunOptions o;
  o.progress = false;
  return o;
}

TEST(CoLocatedInstance, ThePoolIsNamedAfterItsMembersAndExplainSaysWhichCallsItRuns) {
  Pipeline p("page");
  auto program = p.compile();
  const auto& plan = *program.plan();
  ASSERT_EQ(plan.pools.size(), 1u);
  EXPECT_EQ(plan.pools[0].name, "RecordingDouble+AddConst");
  EXPECT_EQ(plan.pools[0].members, 2u);
  EXPECT_EQ(plan.pools[0].calls, (std::vector<int>{0, 1}));
  EXPECT_THAT(program.explain(),
              HasSubstr("co-located pool RecordingDouble+AddConst: RecordingDouble#0, AddConst#1"));
}

TEST(CoLocatedInstance, AGroupOfOneIsAnOrdinaryPool) {
  Pipeline p("");
  p.dbl.colocate("alone");
  auto program = p.compile();
  const auto& plan = *program.plan();
  ASSERT_EQ(plan.pools.size(), 2u);
  EXPECT_EQ(plan.pools[0].name, "RecordingDouble");
  EXPECT_EQ(plan.pools[0].members, 1u);
  EXPECT_THAT(program.explain(), ::testing::Not(HasSubstr("co-located")));
}

TEST(CoLocatedInstance, EveryActorBuildsOneInstanceOfEachMemberAndEachCallKeepsItsBatchSize) {
  Pipeline p("page", 3);
  auto program = p.compile();
  ro::RunResult<int> r;
  {
    ro::Executor ex(program);
    r = ex.run(inputs(), quiet());
  }  // closing joins every actor, started or still starting (eager start)
  EXPECT_EQ(values(r.outputs), expected());
  // Three actors of the one pool: one RecordingDouble each (AddConst has no log).
  EXPECT_EQ(p.log->constructions.entries().size(), 3u);
  for (std::size_t size : p.log->batch_sizes.entries()) EXPECT_LE(size, 3u);
  ASSERT_EQ(r.metrics.calls.size(), 2u);
  EXPECT_EQ(r.metrics.calls[0].call, "RecordingDouble#0");
  EXPECT_EQ(r.metrics.calls[1].call, "AddConst#1");
  EXPECT_EQ(r.metrics.calls[0].batch_size, 3);
  EXPECT_EQ(r.metrics.calls[1].batch_size, 5);
  for (const auto& [size, count] : r.metrics.calls[1].batch_size_histogram) EXPECT_LE(size, 5u);
  EXPECT_EQ(r.metrics.calls[0].actors, 3);
  ASSERT_EQ(r.metrics.pools.size(), 1u);
  EXPECT_EQ(r.metrics.pools[0].pool, "RecordingDouble+AddConst");
}

TEST(CoLocatedInstance, OutputsAreThoseWithoutCoLocationOnEveryExecutor) {
  Pipeline apart("");
  auto reference = apart.compile();
  ro::testing::SyncExecutor sync_reference(reference);
  const auto want = values(sync_reference.run(inputs(), quiet()).outputs);
  ASSERT_EQ(want, expected());

  Pipeline together("page");
  auto program = together.compile();
  ro::testing::SyncExecutor sync(program);
  EXPECT_EQ(values(sync.run(inputs(), quiet()).outputs), want);
  ro::Executor local(program);
  EXPECT_EQ(values(local.run(inputs(), quiet()).outputs), want);

  Pipeline isolated("page");
  isolated.dbl.isolation(ro::Isolation::process);
  isolated.add.isolation(ro::Isolation::process);
  auto isolated_program = isolated.compile();
  ro::Executor processes(isolated_program);
  EXPECT_EQ(values(processes.run(inputs(), quiet()).outputs), want);
}

struct Throws {
  explicit Throws(int) { throw std::runtime_error("no model file"); }
  std::vector<int> run(ro::Column<int> x) {
    std::vector<int> out;
    for (int v : x) out.push_back(v);
    return out;
  }
};

TEST(CoLocatedInstance, AMemberWhoseConstructorThrowsFailsTheActorsStartNamingThePool) {
  ro::Module<AddConst> add = ro::Module<AddConst>().colocate("page");
  ro::Module<Throws> throws = ro::Module<Throws>(1).colocate("page");
  auto program = ro::compile([&](ro::Port<int> x) { return throws(add(x, 1)); });
  try {
    ro::Executor ex(program);
    ex.run(inputs(), quiet());
    ADD_FAILURE() << "expected the actor's start to fail";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("AddConst+Throws"));
    EXPECT_THAT(e.what(), HasSubstr("no model file"));
  }
}

}  // namespace
