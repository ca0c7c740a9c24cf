// Re-materialisation of lost values (DESIGN 5.13), on the deterministic pools with a "node"
// that holds the blocks some pools produced and goes away once: the readers find their
// inputs lost (as Ray reports an ObjectLostError), the producers run again at the next
// generation, and the outputs are those of the run without a loss.
#include <algorithm>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "support/lossy_pools.h"
#include "support/runtime_harness.h"
#include "support/runtime_udfs.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

namespace ro = rayorch;
namespace rd = rayorch::detail;
namespace F = ro::F;
using lossy::LossyExecutor;
using lossy::LossyPools;

// Every UDF call, in order, with its inputs; and how many times Pages has run (a Pages that
// is not deterministic adds 100 per earlier run to its values).
struct Log {
  std::vector<std::string> calls;
  int pages_runs = 0;
  bool pages_vary = false;
  bool pages_grow = false;  // documents get one more page on every later run
};

std::string join(const ro::Column<int>& c) {
  std::string s;
  for (int v : c) s += (s.empty() ? "" : " ") + std::to_string(v);
  return s;
}

// Logs the call as "<name> <values>" and maps each value through `f`.
template <class F>
std::vector<int> logged_map(Log& log, const char* name, const ro::Column<int>& c, F f) {
  log.calls.push_back(std::string(name) + " " + join(c));
  std::vector<int> out;
  for (int v : c) out.push_back(f(v));
  return out;
}

struct Pages {  // document n -> pages 10n, 10n+1, ... (n of them)
  explicit Pages(std::shared_ptr<Log> log) : log_(std::move(log)) {}
  std::vector<std::vector<int>> run(ro::Column<int> n) {
    log_->calls.push_back("Pages " + join(n));
    const int shift = log_->pages_vary ? 100 * log_->pages_runs : 0;
    const int extra = log_->pages_grow ? log_->pages_runs : 0;
    ++log_->pages_runs;
    std::vector<std::vector<int>> out;
    for (int d : n) {
      out.emplace_back();
      for (int k = 0; k < d + extra; ++k) out.back().push_back(10 * d + k + shift);
    }
    return out;
  }
  std::shared_ptr<Log> log_;
};

struct Ocr {
  explicit Ocr(std::shared_ptr<Log> log) : log_(std::move(log)) {}
  std::vector<int> run(ro::Column<int> p) {
    return logged_map(*log_, "Ocr", p, [](int v) { return v * 2; });
  }
  std::shared_ptr<Log> log_;
};

struct Post {
  explicit Post(std::shared_ptr<Log> log) : log_(std::move(log)) {}
  std::vector<int> run(ro::Column<int> p) {
    return logged_map(*log_, "Post", p, [](int v) { return v + 1; });
  }
  std::shared_ptr<Log> log_;
};

struct PostOfPage {  // the page's text plus one, read with the page it came from
  explicit PostOfPage(std::shared_ptr<Log> log) : log_(std::move(log)) {}
  std::vector<int> run(ro::Column<int> page, ro::Column<int> text) {
    log_->calls.push_back("PostOfPage " + join(page));
    return logged_map(*log_, "Post", text, [](int v) { return v + 1; });
  }
  std::shared_ptr<Log> log_;
};

struct Join {
  std::vector<int> run(ro::Column<ro::Group<int>> docs) {
    std::vector<int> out;
    for (const auto& pages : docs) out.push_back(std::accumulate(pages.begin(), pages.end(), 0));
    return out;
  }
};

const std::vector<int> kDocs = {3, 1, 2, 4};

struct Options {
  int pages_batch = 8;
  int ocr_batch = 2;
  int ocr_infra = 1;
  bool post = false;  // Pages -> Ocr -> Post -> reduce, else Pages -> Ocr -> reduce
  // Pages -> Ocr -> PostOfPage(page, text) -> reduce: one call reads two producers' blocks.
  bool post_of_page = false;
  int post_infra = 1;
};

auto documents(std::shared_ptr<Log> log, const Options& o) {
  ro::Module<Pages> pages = ro::Module<Pages>(log).batch_size(o.pages_batch);
  ro::Module<Ocr> ocr = ro::Module<Ocr>(log).batch_size(o.ocr_batch).infra_retries(o.ocr_infra);
  ro::Module<Post> post = ro::Module<Post>(log).batch_size(2);
  ro::Module<PostOfPage> post_of_page =
      ro::Module<PostOfPage>(log).batch_size(2).infra_retries(o.post_infra);
  ro::Module<Join> join_docs;
  const bool with_post = o.post;
  const bool with_post_of_page = o.post_of_page;
  return ro::compile([=](ro::Port<int> n) mutable {
    auto page = F::expand(pages(n));
    auto text = ocr(page);
    if (with_post) text = post(text);
    if (with_post_of_page) text = post_of_page(page, text);
    return join_docs(F::reduce(text));
  });
}

int pool_of(const rd::RuntimePlan& plan, const std::string& call) {
  for (const auto& c : plan.calls)
    if (c.name.rfind(call + "#", 0) == 0) return c.pool;
  throw std::logic_error("no Call " + call);
}

std::vector<std::string> texts(const ro::RunResult<int>& r) {
  std::vector<std::string> out;
  for (const auto& o : r.outputs) {
    out.push_back(o.ok() ? std::to_string(o.value())
                         : std::string(ro::to_string(o.issue().outcome)) + "(" + o.issue().cause +
                               ")");
  }
  return out;
}

std::vector<std::string> reference(const Options& o) {
  auto log = std::make_shared<Log>();
  auto program = documents(log, o);
  ro::testing::SyncExecutor ex(program);
  return texts(ex.run(kDocs));
}

struct Loss {
  std::vector<std::string> on_node;
  std::string trigger;
  int after = 0;
  bool lose_inputs = false;
  int results_before_loss = -1;  // >= 0: the node goes once that many results came back
  bool one_per_report = false;   // a report names one lost block (as Ray's does)
};

struct Outcome {
  std::vector<std::string> outputs;
  std::vector<std::string> rpcs;
  std::shared_ptr<Log> log;
  ro::RunMetrics metrics;
};

Outcome run_with_loss(const Options& o, const Loss& loss, bool vary = false, bool grow = false) {
  auto log = std::make_shared<Log>();
  log->pages_vary = vary;
  log->pages_grow = grow;
  auto program = documents(log, o);
  std::set<int> on_node;
  for (const auto& c : loss.on_node) on_node.insert(pool_of(*program.plan(), c));
  auto pools = std::make_unique<LossyPools>(rd::make_inline_pools(program.plan(), false), on_node,
                                            pool_of(*program.plan(), loss.trigger), loss.after,
                                            loss.lose_inputs, loss.results_before_loss);
  if (loss.one_per_report) pools->name_one_lost_block_per_report();
  LossyExecutor ex(program, std::move(pools));
  try {
    auto r = ex.run(kDocs, {.progress = false});
    return Outcome{texts(r), ex.rpcs(), log, r.metrics};
  } catch (...) {
    ADD_FAILURE() << ::testing::PrintToString(ex.rpcs()) << ::testing::PrintToString(log->calls);
    throw;
  }
}

std::size_t count_prefix(const std::vector<std::string>& v, const std::string& p) {
  return static_cast<std::size_t>(
      std::count_if(v.begin(), v.end(), [&](const std::string& s) { return s.rfind(p, 0) == 0; }));
}

TEST(Rebuild, ProducedPagesLostBeforeTheyWereReadAreRebuiltAndEveryDocumentIsPresent) {
  const Options o;
  const Outcome got = run_with_loss(o, {.on_node = {"Pages"}, .trigger = "Ocr"});
  EXPECT_EQ(got.outputs, reference(o));
  // Pages ran again once, at the next generation, for every document (no page had been
  // read), reading its source rows again; the first Ocr RPC found its pages lost.
  EXPECT_EQ(count_prefix(got.log->calls, "Pages 3 1 2 4"), 2u)
      << ::testing::PrintToString(got.log->calls);
  EXPECT_EQ(got.rpcs.at(0), "Pages#0 [0 1 2 3] g0");
  EXPECT_EQ(got.rpcs.at(1), "Ocr#1 [0/0 0/1] g0 failed");
  EXPECT_EQ(got.rpcs.at(2), "Pages#0 [0 1 2 3] g1");
  EXPECT_EQ(got.rpcs.at(3), "Ocr#1 [0/0 0/1] g1");
  EXPECT_EQ(got.metrics.grains_reexecuted, 4u);
  EXPECT_GE(got.metrics.values_rebuilt, 10u);  // the 10 pages, at least
}

TEST(Rebuild, ValuesReadBeforeTheLossAreNotReadAgain) {
  const Options o{.ocr_batch = 1};
  const Outcome got = run_with_loss(o, {.on_node = {"Pages"}, .trigger = "Ocr", .after = 2});
  EXPECT_EQ(got.outputs, reference(o));
  // Pages 30 and 31 were read before the node went: Ocr never reads them again, and the
  // re-execution concerns only the documents whose pages were still needed.
  EXPECT_EQ(count_prefix(got.log->calls, "Ocr 30"), 1u);
  EXPECT_EQ(count_prefix(got.log->calls, "Ocr 31"), 1u);
  EXPECT_EQ(count_prefix(got.log->calls, "Ocr 32"), 1u);
  EXPECT_EQ(got.log->pages_runs, 2);
}

TEST(Rebuild, AProducerThatDiffersOnReexecutionChangesOnlyTheValuesNotYetRead) {
  // The rebuilt value replaces the lost one for the readers that had not read it; readers
  // that had keep what they read (DESIGN 5.13). Pages adds 100 on its second run.
  const Options o{.ocr_batch = 1};
  const Outcome got =
      run_with_loss(o, {.on_node = {"Pages"}, .trigger = "Ocr", .after = 2}, /*vary=*/true);
  // Document 3: pages 30, 31 read first, page 32 rebuilt as 132; the others rebuilt whole.
  const int doc3 = 2 * (30 + 31 + 132);
  const int doc1 = 2 * 110;
  const int doc2 = 2 * (120 + 121);
  const int doc4 = 2 * (140 + 141 + 142 + 143);
  EXPECT_EQ(got.outputs, (std::vector<std::string>{std::to_string(doc3), std::to_string(doc1),
                                                   std::to_string(doc2), std::to_string(doc4)}));
}

TEST(Rebuild, AListThatChangesLengthOnReexecutionCannotStandForTheLostOne) {
  // The children of a list that came back longer no longer line up with the Entities the
  // first list made: their readers fail with a cause that says why.
  const Options o;
  const Outcome got =
      run_with_loss(o, {.on_node = {"Pages"}, .trigger = "Ocr"}, /*vary=*/false, /*grow=*/true);
  EXPECT_EQ(got.log->pages_runs, 2);
  const std::string cause =
      "suppressed(rayorch::BlockLost: ObjectLostError: the node holding it is gone; it could "
      "not be rebuilt: Pages#0 returned 4 list elements on re-execution, 3 before)";
  EXPECT_EQ(got.outputs.at(0), cause);
  for (const std::string& out : got.outputs)
    EXPECT_NE(out.find("on re-execution"), std::string::npos) << out;
}

TEST(Rebuild, AChainOfTwoLostLevelsIsRebuiltRecursively) {
  // Ocr's outputs and the pages they were computed from are both on the node. Post finds
  // Ocr's block lost; Ocr's re-execution finds its pages lost in turn (nothing had read them
  // since the node went), so Pages runs again, then Ocr, then Post: the deeper level first.
  const Options o{.post = true};
  const Outcome got = run_with_loss(o, {.on_node = {"Pages", "Ocr"}, .trigger = "Post"});
  EXPECT_EQ(got.outputs, reference(o));
  EXPECT_EQ(std::vector<std::string>(got.rpcs.begin(), got.rpcs.begin() + 7),
            (std::vector<std::string>{"Pages#0 [0 1 2 3] g0", "Ocr#1 [0/0 0/1] g0",
                                      "Post#2 [0/0 0/1] g0 failed", "Ocr#1 [0/0 0/1] g1 failed",
                                      "Pages#0 [0 1 2 3] g1", "Ocr#1 [0/0 0/1] g2",
                                      "Post#2 [0/0 0/1] g1"}));
  EXPECT_EQ(got.log->pages_runs, 2);
  EXPECT_EQ(count_prefix(got.log->calls, "Ocr 30 31"), 2u);
  EXPECT_EQ(got.metrics.grains_reexecuted, 6u);  // Pages' 4 Grains and Ocr's 2
}

TEST(Rebuild, ALostReduceGroupIsComposedAgainFromRebuiltMembers) {
  // Join's first group is lost with the node; its members' block was freed once the group
  // held it, so Ocr runs again for the document's pages (which other documents' pages keep
  // in the store) and the group is composed again from the rebuilt members.
  const Options o;
  const Outcome got = run_with_loss(o, {.trigger = "Join", .lose_inputs = true});
  EXPECT_EQ(got.outputs, reference(o));
  EXPECT_EQ(got.log->pages_runs, 1);
  // Its pages came from two RPCs: each runs again for the document's pages only.
  EXPECT_EQ(got.rpcs.at(3), "Join#2 [0] g0 failed");
  EXPECT_EQ(count_prefix(got.rpcs, "Ocr#1 [0/0 0/1] g1"), 1u);
  EXPECT_EQ(count_prefix(got.rpcs, "Ocr#1 [0/2] g1"), 1u);
  EXPECT_EQ(got.metrics.grains_reexecuted, 3u);
}

TEST(Rebuild, PastTheBudgetTheReadersFailWithTheLossAsTheirCause) {
  const Options o{.ocr_infra = 0};
  const Outcome got = run_with_loss(o, {.on_node = {"Pages"}, .trigger = "Ocr"});
  ASSERT_EQ(got.outputs.size(), kDocs.size());
  // The first Ocr RPC (document 3's pages 0 and 1) failed past the budget of 0 replays.
  EXPECT_EQ(got.outputs[0],
            "suppressed(rayorch::BlockLost: ObjectLostError: the node holding it is gone)");
  EXPECT_EQ(got.log->pages_runs, 2);  // the pages still needed were rebuilt for the others
  EXPECT_EQ(got.outputs[1], reference(o)[1]);
}

TEST(Rebuild, LostInputsReportedOneAtATimeCountAsOneLossAgainstTheBudget) {
  // PostOfPage reads a page (a Pages block) and its text (an Ocr block), both on the node.
  // The reports name one lost block each, as Ray's do: its first call learns that the pages
  // are lost, runs again once Pages has, and only then learns that the text is lost too.
  // That is still one loss: with a budget of one replay, every document is present.
  const Options o{.post_of_page = true};
  const Outcome got = run_with_loss(
      o, {.on_node = {"Pages", "Ocr"}, .trigger = "PostOfPage", .one_per_report = true});
  EXPECT_EQ(got.outputs, reference(o)) << ::testing::PrintToString(got.rpcs);
  EXPECT_EQ(count_prefix(got.rpcs, "PostOfPage#2 [0/0 0/1] g0 failed"), 1u)
      << ::testing::PrintToString(got.rpcs);
  EXPECT_EQ(count_prefix(got.rpcs, "PostOfPage#2 [0/0 0/1] g1 failed"), 1u)
      << ::testing::PrintToString(got.rpcs);
  EXPECT_EQ(count_prefix(got.rpcs, "PostOfPage#2 [0/0 0/1] g2"), 1u)
      << ::testing::PrintToString(got.rpcs);
}

TEST(Rebuild, WithNoReplaysTheFirstReportOfALossFailsItsReaders) {
  // A further report of a loss is not charged, but the first one is: with a budget of 0
  // replays the first PostOfPage call's Grains fail at once.
  const Options o{.post_of_page = true, .post_infra = 0};
  const Outcome got = run_with_loss(
      o, {.on_node = {"Pages", "Ocr"}, .trigger = "PostOfPage", .one_per_report = true});
  EXPECT_EQ(got.outputs[0],
            "suppressed(rayorch::BlockLost: ObjectLostError: the node holding it is gone)");
  EXPECT_EQ(count_prefix(got.rpcs, "PostOfPage#2 [0/0 0/1] g1"), 0u)
      << ::testing::PrintToString(got.rpcs);
}

TEST(Rebuild, AnOutputLostBeforeItIsDeliveredIsRebuiltAndDelivered) {
  // The node holds Join's outputs and goes as the first of them comes back, before the
  // driver reads it: Join runs again for that document, and its root is delivered once.
  const Options o;
  const Outcome got = run_with_loss(
      o, {.on_node = {"Join"}, .trigger = "Join", .after = 100, .results_before_loss = 0});
  EXPECT_EQ(got.outputs, reference(o));
  const auto first = std::find_if(got.rpcs.begin(), got.rpcs.end(),
                                  [](const std::string& r) { return r.rfind("Join#", 0) == 0; });
  ASSERT_NE(first, got.rpcs.end());
  ASSERT_EQ(first->substr(first->size() - 3), " g0");
  // The same Grains again, one generation later, once.
  const std::string again = first->substr(0, first->size() - 1) + "1";
  EXPECT_EQ(std::count(got.rpcs.begin(), got.rpcs.end(), again), 1)
      << ::testing::PrintToString(got.rpcs);
  EXPECT_GE(got.metrics.grains_reexecuted, 1u);
  EXPECT_GE(got.metrics.values_rebuilt, 1u);
  // The run's metrics name the node that went.
  ASSERT_EQ(got.metrics.node_losses.size(), 1u);
  EXPECT_EQ(got.metrics.node_losses[0].node, "node-1");
  EXPECT_EQ(got.metrics.node_losses[0].address, "127.0.0.1:6001");
  EXPECT_EQ(got.metrics.node_losses[0].cause, "ObjectLostError: the node holding it is gone");
  EXPECT_GE(got.metrics.node_losses[0].detected_seconds, 0.0);
  EXPECT_LE(got.metrics.node_losses[0].detected_seconds, got.metrics.elapsed_seconds);
}

TEST(Rebuild, ARunWithoutALossNamesNoNode) {
  const Options o;
  const Outcome got = run_with_loss(o, {.on_node = {"Join"}, .trigger = "Join", .after = 100});
  EXPECT_EQ(got.outputs, reference(o));
  EXPECT_TRUE(got.metrics.node_losses.empty());
}

// Without lineage (EngineOptions::record_lineage off: a store that cannot lose values, as the
// local executor's) a committed RPC keeps nothing for rebuilding, and a loss reported anyway
// is a broken contract between the backend and the engine, not a silent failure of rows.
TEST(Rebuild, WithoutLineageALossIsAContractErrorNamingTheSeam) {
  ro::Module<runtime_test::Q> q;
  ro::Module<runtime_test::Q> again;
  auto program = ro::compile([&](ro::Port<int> x) { return again(q(x)); });
  rd::EngineOptions options;
  options.record_lineage = false;
  runtime_test::EngineRig rig(program, {1}, options);
  const rd::Invocation first = rig.reserve(rig.call("Q#0"));
  ASSERT_EQ(rig.commit(first, std::vector<ro::Row<int>>{ro::Row<int>(3)}),
            rd::CommitStatus::accepted);
  const rd::Invocation second = rig.reserve(rig.call("Q#1"));
  try {
    rig->inputs_lost(second.id, {second.inputs[0][0].block}, "ObjectLostError: gone");
    FAIL() << "a loss was accepted without lineage";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("BlockStore::can_lose_values"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(rig->outputs_lost(0, {second.inputs[0][0].block}, "gone"), std::logic_error);
}

}  // namespace
