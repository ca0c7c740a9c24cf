// Module::batch_wait (DESIGN 5, Queues): an idle actor waits for a fuller batch while
// upstream work for its Call is still pending, and never when nothing more can arrive.
//
// A fast upstream expands each document into kPages pages, one document per RPC; a slower
// downstream Call with batch_size kBatch and several replicas captions them and records the
// size of every RPC it receives. With batch_wait every RPC is full except the last one of
// each input batch; without it the first document's pages already split into a full and a
// partial RPC. Nothing here measures time: the wait (an hour) never expires during a test,
// and whether the last batch waited is shown causally, by an RPC that blocks until the last
// batch has started.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

namespace ro = rayorch;
namespace F = ro::F;

constexpr int kPages = 10;  // pages per document
constexpr int kBatch = 8;   // the captioner's batch_size: 10 pages leave a remainder of 2

struct SizeLog {
  std::mutex mutex;
  std::vector<std::size_t> sizes;         // Grains per captioner RPC, in the order they ran
  std::vector<std::vector<int>> batches;  // the pages of each captioner RPC
};
using SizeLogPtr = std::shared_ptr<SizeLog>;

struct Pages {
  std::vector<std::vector<int>> run(ro::Column<int> docs) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::vector<std::vector<int>> out;
    for (int d : docs) {
      out.emplace_back();
      for (int p = 0; p < kPages; ++p) out.back().push_back(d * 100 + p);
    }
    return out;
  }
};

struct Caption {
  explicit Caption(SizeLogPtr l) : log(std::move(l)) {}
  std::vector<int> run(ro::Column<int> pages) {
    {
      std::lock_guard<std::mutex> lock(log->mutex);
      log->sizes.push_back(pages.size());
      log->batches.push_back(pages.to_vector());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return pages.to_vector();
  }
  SizeLogPtr log;
};

// The captioner RPC that holds page 0 blocks until the RPC with `last_page` has started (or
// a deadline passes, which the test reports as a failure).
struct GatedCaption {
  struct Gate {
    std::mutex mutex;
    std::condition_variable cv;
    int last_page = -1;
    bool last_started = false;
    bool gave_up = false;
    std::vector<std::size_t> sizes;
  };
  explicit GatedCaption(std::shared_ptr<Gate> g) : gate(std::move(g)) {}
  std::vector<int> run(ro::Column<int> pages) {
    const std::vector<int> v = pages.to_vector();
    std::unique_lock<std::mutex> lock(gate->mutex);
    gate->sizes.push_back(v.size());
    if (std::find(v.begin(), v.end(), gate->last_page) != v.end()) {
      gate->last_started = true;
      gate->cv.notify_all();
    }
    if (std::find(v.begin(), v.end(), 0) != v.end()) {
      if (!gate->cv.wait_for(lock, std::chrono::seconds(30), [&] { return gate->last_started; }))
        gate->gave_up = true;
    }
    return v;
  }
  std::shared_ptr<Gate> gate;
};

struct Count {
  std::vector<int> run(ro::Column<ro::Group<int>> groups) {
    std::vector<int> out;
    for (const auto& g : groups) out.push_back(static_cast<int>(g.size()));
    return out;
  }
};

struct Seen {
  std::vector<std::size_t> sizes;         // as the UDF saw them
  std::vector<std::vector<int>> batches;  // the pages of each RPC
  ro::CallMetrics caption;                // the captioner's metrics
  std::vector<int> counts;                // pages per document, from the outputs
};

Seen run(std::chrono::milliseconds wait, int docs, std::size_t input_batch_size) {
  auto log = std::make_shared<SizeLog>();
  ro::Module<Pages> pages;  // one actor, one document per RPC
  ro::Module<Caption> caption =
      ro::Module<Caption>(log).batch_size(kBatch).replicas(3).batch_wait(wait);
  ro::Module<Count> count;
  auto program = ro::compile(
      [&](ro::Port<int> doc) { return count(F::reduce(caption(F::expand(pages(doc))))); });
  std::vector<int> input(static_cast<std::size_t>(docs));
  std::iota(input.begin(), input.end(), 0);
  ro::RunOptions o;
  o.progress = false;
  o.input_batch_size = input_batch_size;
  o.max_active_input_batches = 1;  // input batches one after another: each has its own end
  ro::Executor ex(program);
  auto r = ex.run(input, o);
  Seen out;
  out.sizes = log->sizes;
  out.batches = log->batches;
  for (const auto& c : r.metrics.calls) {
    if (c.call.rfind("Caption", 0) == 0) out.caption = c;
  }
  for (const auto& row : r.outputs) out.counts.push_back(row.ok() ? row.value() : -1);
  return out;
}

// Full batches of kBatch, then the remainder, for each input batch of `docs_per_batch`.
std::map<std::size_t, std::uint64_t> full_then_remainder(const std::vector<int>& docs_per_batch) {
  std::map<std::size_t, std::uint64_t> h;
  for (int d : docs_per_batch) {
    const int grains = d * kPages;
    if (grains / kBatch > 0) h[kBatch] += static_cast<std::uint64_t>(grains / kBatch);
    if (grains % kBatch > 0) h[static_cast<std::size_t>(grains % kBatch)] += 1;
  }
  return h;
}

// A wait that never expires during a test (ctest stops a test after 300 s).
constexpr std::chrono::milliseconds kForever = std::chrono::hours(1);

TEST(BatchWait, FillsEveryBatchUntilNothingMoreCanArrive) {
  const int docs = 7;  // 70 pages: eight full RPCs and one of 6
  const Seen o = run(kForever, docs, 0);
  EXPECT_EQ(o.counts, std::vector<int>(docs, kPages));
  ASSERT_EQ(std::accumulate(o.sizes.begin(), o.sizes.end(), std::size_t{0}),
            static_cast<std::size_t>(docs * kPages));
  // Every RPC is full but one: the remainder sent when the last document's pages arrived.
  const auto partial =
      std::count_if(o.sizes.begin(), o.sizes.end(), [](std::size_t s) { return s != kBatch; });
  EXPECT_EQ(partial, 1);
  EXPECT_EQ(o.caption.batch_size_histogram, full_then_remainder({docs}));
  EXPECT_EQ(o.caption.rpcs, 9u);
  EXPECT_DOUBLE_EQ(o.caption.mean_batch_fill, 70.0 / (9.0 * kBatch));
}

TEST(BatchWait, EachInputBatchEndsWithoutWaiting) {
  // Input batches of 3, 3 and 1 documents, one active at a time: each ends with its own
  // remainder (30 -> 8 8 8 6, 30 -> 8 8 8 6, 10 -> 8 2), dispatched as soon as its last
  // document's pages arrive, although the wait never expires.
  const Seen o = run(kForever, 7, 3);
  EXPECT_EQ(o.counts, std::vector<int>(7, kPages));
  EXPECT_EQ(o.caption.batch_size_histogram, full_then_remainder({3, 3, 1}));
}

TEST(BatchWait, TheLastBatchGoesOutWhileAnotherRpcStillRuns) {
  // Two documents, 20 pages. Document 0's pages: one RPC takes pages 0-7 and blocks; the
  // remainder (8, 9) is held while document 1 is still being expanded. Document 1's pages
  // arrive: 8 go out, and the remainder of 4 (with the run's last page) can be held no
  // longer, since nothing more can arrive. It must go out at once, while the first RPC is
  // still blocked and before the wait expires: that first RPC waits for it to start.
  auto gate = std::make_shared<GatedCaption::Gate>();
  gate->last_page = 100 + kPages - 1;
  ro::Module<Pages> pages;
  ro::Module<GatedCaption> caption =
      ro::Module<GatedCaption>(gate).batch_size(kBatch).replicas(3).batch_wait(kForever);
  ro::Module<Count> count;
  auto program = ro::compile(
      [&](ro::Port<int> doc) { return count(F::reduce(caption(F::expand(pages(doc))))); });
  ro::RunOptions o;
  o.progress = false;
  ro::Executor ex(program);
  const auto r = ex.run(std::vector<int>{0, 1}, o);
  ASSERT_EQ(r.outputs.size(), 2u);
  EXPECT_EQ(r.outputs[0].value(), kPages);
  EXPECT_EQ(r.outputs[1].value(), kPages);
  std::lock_guard<std::mutex> lock(gate->mutex);
  EXPECT_TRUE(gate->last_started);
  EXPECT_FALSE(gate->gave_up) << "the last batch waited for the other RPC to finish";
  std::vector<std::size_t> sizes = gate->sizes;
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes, (std::vector<std::size_t>{4, 8, 8}));
}

TEST(BatchWait, WithoutItSmallBatchesGoOutWhileMoreIsComing) {
  // The same pipeline with batch_wait 0: when the first document's 10 pages arrive, two idle
  // captioners take 8 and 2 of them at once, so the run needs more RPCs than full batches
  // would (this test fails if batch_wait were honoured with a wait of 0, and the two above
  // fail if batch_wait were ignored).
  const int docs = 7;
  const Seen o = run(std::chrono::milliseconds(0), docs, 0);
  EXPECT_EQ(o.counts, std::vector<int>(docs, kPages));
  // Document 0's pages 8 and 9 went out on their own, in the same dispatch as pages 0-7.
  const auto rest = std::find_if(o.batches.begin(), o.batches.end(), [](const auto& b) {
    return std::find(b.begin(), b.end(), 8) != b.end();
  });
  ASSERT_NE(rest, o.batches.end());
  EXPECT_EQ(*rest, (std::vector<int>{8, 9}));
  EXPECT_GT(o.caption.rpcs, 9u);
  const auto partial =
      std::count_if(o.sizes.begin(), o.sizes.end(), [](std::size_t s) { return s != kBatch; });
  EXPECT_GE(partial, 2);
  EXPECT_LT(o.caption.mean_batch_fill, 70.0 / (9.0 * kBatch));
}

}  // namespace
