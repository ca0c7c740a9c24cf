// Each compiler phase on its own (src/program/compiler.h): a graph recorded op by op through
// the Graph API, then verify, canonicalise, analyse, lower and verify_plan called one at a
// time on explicit inputs, and their results checked field by field.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rayorch/errors.h"
#include "rayorch/program.h"

#include "program/compiler.h"

namespace {

namespace rd = rayorch::detail;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Records a program as the typed front end would, without UDF code: the phases up to and
// including lower never run a UDF. One Module per UDF name.
class GraphBuilder {
 public:
  int source() { return graph.add_source("int"); }

  int call(const std::string& udf, std::vector<int> inputs, std::string output_type = "int") {
    std::shared_ptr<int>& owner = modules_[udf];
    if (!owner) owner = std::make_shared<int>(0);
    rd::ModuleRecord module;
    module.identity = owner.get();
    module.udf_name = udf;
    module.factory = [] { return std::unique_ptr<rd::UdfInstance>(); };
    module.owner = owner;
    rd::CallRecord record;
    record.inputs = std::move(inputs);
    record.output_types = {std::move(output_type)};
    return graph.add_call(std::move(module), std::move(record)).at(0);
  }

  int expand(int list) { return graph.add_expand({list}, {rd::ListOps{}}, {"int"}).at(0); }
  int reduce(int value) { return graph.add_reduce({value}, -1, {nullptr}, {"Group<int>"}).at(0); }

  rd::Graph graph;

 private:
  std::map<std::string, std::shared_ptr<int>> modules_;
};

// Numbered as the Ports they create:
//
//   p0 source            d0      p7  broadcast(p6 like p5)  d2
//   p1 IsEven#0(p0)      d0      p8  filter(p5 by p7)       d2
//   p2 Split#1(p0)       d0      p9  Double#3(p8)           d2
//   p3 expand(p2)        d1      p10 reduce(p9)             d1
//   p4 Split#2(p3)       d1      p11 Sum#4(p10)             d1
//   p5 expand(p4)        d2      p12 Double#5(p11)          d1
//   p6 broadcast(p1 like p3) d1  p13 reduce(p12)            d0, the output
//
// p1 reaches the filter as its mask through a chain of two broadcasts.
struct MaskedNesting : GraphBuilder {
  MaskedNesting() {
    const int x = source();
    const int even = call("IsEven", {x}, "bool");
    const int pages = expand(call("Split", {x}, "vector<int>"));
    const int lines = expand(call("Split", {pages}, "vector<int>"));
    const int mask = graph.add_broadcast(graph.add_broadcast(even, pages), lines);
    const int doubled = call("Double", {graph.add_filter(lines, mask)});
    const int per_page = call("Double", {call("Sum", {reduce(doubled)})});
    graph.set_outputs({reduce(per_page)});
    graph.seal();
  }
  const rd::Graph::Impl& program() const { return graph.impl(); }
};

rayorch::CompileOptions unoptimized() {
  rayorch::CompileOptions options;
  options.optimize = false;
  return options;
}

template <class F>
std::string compile_error_of(F&& f) {
  try {
    f();
  } catch (const rayorch::CompileError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no CompileError thrown";
  return {};
}

TEST(VerifyPhase, AssignsEveryPortItsDomainAndBuildsTheDomainTree) {
  const MaskedNesting g;
  const rd::DomainAssignment domains = rd::verify(g.graph);
  EXPECT_THAT(domains.port_domain, ElementsAre(0, 0, 0, 1, 1, 2, 1, 2, 2, 2, 1, 1, 1, 0));
  EXPECT_THAT(domains.expand_domain, ElementsAre(1, 2));
  ASSERT_EQ(domains.domains.size(), 3U);
  EXPECT_EQ(domains.domains[0].parent, -1);
  EXPECT_EQ(domains.domains[1].parent, 0);
  EXPECT_EQ(domains.domains[2].parent, 1);
  EXPECT_EQ(domains.domains[2].depth, 2);
  EXPECT_EQ(domains.domains[2].expand, 1);
  EXPECT_THAT(domains.domains[1].ports, IsEmpty());  // filled by lower
  EXPECT_TRUE(domains.is_ancestor_or_self(0, 2));
  EXPECT_FALSE(domains.is_ancestor_or_self(2, 1));
}

TEST(VerifyPhase, RejectsAFilterWhoseMaskLivesInAnotherDomain) {
  GraphBuilder b;
  const int x = b.source();
  const int even = b.call("IsEven", {x}, "bool");
  const int items = b.expand(b.call("Split", {x}, "vector<int>"));
  b.graph.set_outputs({b.reduce(b.graph.add_filter(items, even))});
  EXPECT_THAT(compile_error_of([&] { rd::verify(b.graph); }),
              HasSubstr("F::filter of p3 (expand of p2) (d1) by mask p1 (output 0 of "
                        "IsEven#0) (d0): source and mask must be in the same Domain; "
                        "broadcast the mask with F::broadcast(mask, like) first"));
}

TEST(VerifyPhase, RejectsAProgramWithoutOutputs) {
  GraphBuilder b;
  b.call("Double", {b.source()});
  EXPECT_EQ(compile_error_of([&] { rd::verify(b.graph); }),
            "the pipeline has no outputs: forward() must return at least one Port");
}

TEST(CanonicalisePhase, CollapsesABroadcastChainOntoItsFirstNonBroadcastSource) {
  const MaskedNesting g;
  const rd::Canonicalisation canonical = rd::canonicalise(g.program(), {});
  EXPECT_TRUE(canonical.optimized);
  EXPECT_THAT(canonical.broadcast_source, ElementsAre(1, 1));
  ASSERT_EQ(canonical.rewrites.size(), 14U);
  EXPECT_THAT(canonical.rewrites[7], ElementsAre("rewrite collapse-broadcast-chain: [p6] -> [p1]"));
  for (std::size_t p = 0; p < canonical.rewrites.size(); ++p) {
    if (p != 7) {
      EXPECT_THAT(canonical.rewrites[p], IsEmpty()) << "p" << p;
    }
  }
}

TEST(CanonicalisePhase, KeepsDeclaredSourcesWhenNotOptimizing) {
  const MaskedNesting g;
  const rd::Canonicalisation canonical = rd::canonicalise(g.program(), unoptimized());
  EXPECT_FALSE(canonical.optimized);
  EXPECT_THAT(canonical.broadcast_source, ElementsAre(1, 6));
  for (const auto& notes : canonical.rewrites) EXPECT_THAT(notes, IsEmpty());
}

TEST(AnalysePhase, MarksTheMaskAndTheProducersItReadsThroughTheCanonicalChain) {
  const MaskedNesting g;
  const rd::DomainAssignment domains = rd::verify(g.graph);
  const rd::Analysis optimized =
      rd::analyse(g.program(), domains, rd::canonicalise(g.program(), {}));
  std::vector<int> marked;
  for (std::size_t p = 0; p < optimized.needs_truth.size(); ++p) {
    if (optimized.needs_truth[p]) marked.push_back(static_cast<int>(p));
  }
  // p6, the chain's inner broadcast, is no longer read by the mask once collapsed.
  EXPECT_THAT(marked, ElementsAre(1, 7));

  const rd::Analysis declared =
      rd::analyse(g.program(), domains, rd::canonicalise(g.program(), unoptimized()));
  marked.clear();
  for (std::size_t p = 0; p < declared.needs_truth.size(); ++p) {
    if (declared.needs_truth[p]) marked.push_back(static_cast<int>(p));
  }
  EXPECT_THAT(marked, ElementsAre(1, 6, 7));
}

TEST(AnalysePhase, GuardsAreTheCallsOfTheChildDomainUpstreamOfAReduce) {
  const MaskedNesting g;
  const rd::Analysis analysis =
      rd::analyse(g.program(), rd::verify(g.graph), rd::canonicalise(g.program(), {}));
  // reduce 0 (p10) stops at the expand p5 and at the broadcast's source in d0: only
  // Double#3. reduce 1 (p13) walks Double#5 back through Sum#4 to the reduce p10.
  EXPECT_THAT(analysis.reduce_guards, ElementsAre(ElementsAre(3), ElementsAre(4, 5)));
}

TEST(LowerPhase, BuildsThePlanFromTheOtherPhasesResults) {
  const MaskedNesting g;
  const rd::DomainAssignment domains = rd::verify(g.graph);
  const rd::Canonicalisation canonical = rd::canonicalise(g.program(), {});
  const rd::Analysis analysis = rd::analyse(g.program(), domains, canonical);
  const rd::RuntimePlan plan =
      rd::lower(g.program(), domains, canonical, analysis, rd::colocate(g.program(), {}));

  EXPECT_TRUE(plan.optimized);
  ASSERT_EQ(plan.ports.size(), 14U);
  EXPECT_THAT(plan.sources, ElementsAre(0));
  EXPECT_THAT(plan.outputs, ElementsAre(13));
  EXPECT_TRUE(plan.ports[13].is_output);
  EXPECT_THAT(plan.domains[2].ports, ElementsAre(5, 7, 8, 9));
  EXPECT_THAT(plan.domains[1].calls, ElementsAre(2, 4, 5));
  EXPECT_THAT(plan.domains[1].reduces_of_children, ElementsAre(1));
  EXPECT_THAT(plan.domains[2].broadcasts_into, ElementsAre(1));

  // Pools follow Module identity: two Calls of Split share "Split", as do two of Double.
  ASSERT_EQ(plan.pools.size(), 4U);
  EXPECT_EQ(plan.pools[1].name, "Split");
  EXPECT_THAT(plan.pools[1].calls, ElementsAre(1, 2));
  EXPECT_EQ(plan.calls[3].name, "Double#3");
  EXPECT_EQ(plan.calls[3].domain, 2);
  EXPECT_EQ(plan.calls[3].barrier_domain, 1);
  EXPECT_EQ(plan.calls[0].barrier_domain, 0);  // a root Call's barrier is its own Domain

  // The broadcast reads the canonical source and keeps the declared one for explain().
  EXPECT_EQ(plan.broadcasts[1].source, 1);
  EXPECT_EQ(plan.broadcasts[1].declared_source, 6);
  EXPECT_THAT(plan.ports[7].inputs, ElementsAre(6));
  ASSERT_EQ(plan.ports[1].consumers.size(), 2U);
  EXPECT_EQ(plan.ports[1].consumers[1].kind, rd::ConsumerKind::broadcast_source);
  EXPECT_EQ(plan.ports[1].consumers[1].op, 1);
  EXPECT_THAT(plan.ports[6].consumers, IsEmpty());
  EXPECT_THAT(plan.rewrites[7], ElementsAre("rewrite collapse-broadcast-chain: [p6] -> [p1]"));

  EXPECT_EQ(plan.expands[1].call, 2);
  EXPECT_EQ(plan.ports[4].expanded_by, 1);
  EXPECT_EQ(plan.ports[8].consumers.at(0).kind, rd::ConsumerKind::call_input);
  EXPECT_EQ(plan.reduces[1].child_domain, 1);
  EXPECT_EQ(plan.reduces[1].parent_domain, 0);
  EXPECT_EQ(plan.reduces[1].members, 12);
  EXPECT_THAT(plan.reduces[1].guards, ElementsAre(4, 5));
  EXPECT_TRUE(plan.ports[1].needs_truth);
  EXPECT_FALSE(plan.ports[6].needs_truth);
  ASSERT_NE(plan.code, nullptr);
}

TEST(LowerPhase, CopiesTheAnalysisItIsGivenRatherThanRecomputingIt) {
  const MaskedNesting g;
  const rd::DomainAssignment domains = rd::verify(g.graph);
  const rd::Canonicalisation canonical = rd::canonicalise(g.program(), {});
  rd::Analysis analysis;
  analysis.needs_truth.assign(14, false);
  analysis.needs_truth[2] = true;
  analysis.reduce_guards = {{}, {5}};
  const rd::RuntimePlan plan =
      rd::lower(g.program(), domains, canonical, analysis, rd::colocate(g.program(), {}));
  EXPECT_TRUE(plan.ports[2].needs_truth);
  EXPECT_FALSE(plan.ports[1].needs_truth);
  EXPECT_THAT(plan.reduces[0].guards, IsEmpty());
  EXPECT_THAT(plan.reduces[1].guards, ElementsAre(5));
}

rd::RuntimePlan lowered(const MaskedNesting& g) {
  const rd::DomainAssignment domains = rd::verify(g.graph);
  const rd::Canonicalisation canonical = rd::canonicalise(g.program(), {});
  return rd::lower(g.program(), domains, canonical, rd::analyse(g.program(), domains, canonical),
                   rd::colocate(g.program(), {}));
}

TEST(VerifyPlanPhase, AcceptsALoweredPlan) {
  const MaskedNesting g;
  EXPECT_NO_THROW(rd::verify_plan(lowered(g)));
}

TEST(VerifyPlanPhase, RejectsAHandBrokenPlan) {
  const MaskedNesting g;
  const std::string bug = "internal error while lowering the pipeline: ";

  rd::RuntimePlan no_domain = lowered(g);
  no_domain.ports[4].domain = 3;
  EXPECT_EQ(compile_error_of([&] { rd::verify_plan(no_domain); }), bug + "p4 has no Domain");

  rd::RuntimePlan across = lowered(g);
  across.calls[3].domain = 1;  // Double#3 reads p8, which lives in d2
  EXPECT_EQ(compile_error_of([&] { rd::verify_plan(across); }),
            bug + "p8 feeds a Call across Domains");

  rd::RuntimePlan upwards = lowered(g);
  upwards.ports[1].domain = 2;  // below d1, the Domain broadcast 0 brings it into
  EXPECT_EQ(compile_error_of([&] { rd::verify_plan(upwards); }),
            bug + "p1 broadcast to a non-descendant");

  rd::RuntimePlan reduce = lowered(g);
  reduce.reduces[0].parent_domain = 0;
  EXPECT_EQ(compile_error_of([&] { rd::verify_plan(reduce); }),
            bug + "reduce Domains inconsistent");

  rd::RuntimePlan expand = lowered(g);
  expand.expands[1].parent_domain = 0;
  EXPECT_EQ(compile_error_of([&] { rd::verify_plan(expand); }),
            bug + "expand Domains inconsistent");
}

TEST(CompilePipeline, IsThePhasesInOrder) {
  MaskedNesting g;
  const auto compiled = rd::compile_graph(g.graph, {});
  EXPECT_EQ(rd::explain_plan(*compiled), rd::explain_plan(lowered(g)));
  const auto declared = rd::compile_graph(g.graph, unoptimized());
  EXPECT_FALSE(declared->optimized);
  EXPECT_EQ(declared->broadcasts[1].source, 6);
  EXPECT_TRUE(declared->ports[6].needs_truth);
}

}  // namespace
