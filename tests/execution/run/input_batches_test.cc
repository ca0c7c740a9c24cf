// Input-batch admission (src/execution/run/input_batches.h) over a lazy source
// (SourceFeed): a chunk is pulled only when a batch is admitted, so the rows held are those of
// the active batches, and the row count is known once the source ended. Through the driver:
// the rows pulled when the first row is delivered, outputs as with columns, a feed that
// throws, and a run journal resumed over a lazy source.
#include "execution/run/input_batches.h"

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

#include "execution/value_store.h"

namespace {

namespace ro = rayorch;
namespace rd = rayorch::detail;

struct Double {
  std::vector<int> run(ro::Column<int> xs) {
    std::vector<int> out;
    for (int x : xs) out.push_back(2 * x);
    return out;
  }
};

struct Doubling : ro::Pipeline {
  ro::Module<Double> twice;
  ro::Port<int> forward(ro::Port<int> x) { return twice(x); }
};

ro::Compiled<Doubling> doubling() {
  return ro::compile(Doubling{});
}

// Rows 0..total-1 of one int column, each chunk its own block; counts what was pulled.
class CountingFeed final : public rd::SourceFeed {
 public:
  explicit CountingFeed(std::size_t total, bool keys = false, std::size_t fail_at = SIZE_MAX)
      : total_(total), keys_(keys), fail_at_(fail_at) {}

  rd::SourceChunk next(std::size_t rows) override {
    ++calls;
    EXPECT_FALSE(ended_) << "next() after the source ended";
    rd::SourceChunk chunk;
    std::vector<int> values;
    while (values.size() < rows && pulled < total_) {
      if (pulled == fail_at_)
        throw std::runtime_error("the source broke at row " + std::to_string(pulled));
      values.push_back(static_cast<int>(pulled));
      if (keys_) chunk.keys.push_back("row" + std::to_string(pulled));
      ++pulled;
    }
    chunk.rows = values.size();
    chunk.ended = ended_ = chunk.rows < rows;
    std::vector<const void*> pointers;
    std::vector<rd::RowKind> kinds;
    std::vector<std::string> messages;
    chunk.blocks.push_back(rd::make_block(std::move(values), pointers, kinds, messages));
    chunk.values.push_back(std::move(pointers));
    return chunk;
  }

  std::size_t pulled = 0;
  std::size_t calls = 0;

 private:
  std::size_t total_;
  bool keys_;
  std::size_t fail_at_;
  bool ended_ = false;
};

rd::SourceData lazy(std::shared_ptr<CountingFeed> feed) {
  rd::SourceData s;
  s.feed = std::move(feed);
  return s;
}

TEST(InputBatches, PullsOneChunkPerAdmittedBatchAndLearnsTheCountAtTheEnd) {
  const auto program = doubling();
  auto feed = std::make_shared<CountingFeed>(25);
  rd::ValueStore store(program.plan());
  rd::RunRecorder recorder(*program.plan(), rd::SourceData{}, {1});
  rd::InputBatches batches(program.plan(), lazy(feed),
                           {.input_batch_size = 10, .max_active_input_batches = 2});
  EXPECT_EQ(feed->pulled, 0u);  // nothing before admission
  batches.admit(store, recorder);
  EXPECT_EQ(feed->pulled, 20u);  // two batches of 10, no more
  EXPECT_EQ(batches.active().size(), 2u);
  EXPECT_FALSE(batches.rows_known());
  EXPECT_EQ(batches.rows(), 20u);
  batches.admit(store, recorder);  // at the active limit: pulls nothing
  EXPECT_EQ(feed->pulled, 20u);
  batches.retire(0);
  batches.admit(store, recorder);
  EXPECT_EQ(feed->pulled, 25u);
  EXPECT_TRUE(batches.rows_known());
  EXPECT_EQ(batches.rows(), 25u);
  EXPECT_EQ(batches.count(), 3u);
  EXPECT_EQ(batches.active().back()->first_row(), 20u);
  EXPECT_FALSE(batches.done());
  batches.retire(0);
  batches.retire(0);
  EXPECT_TRUE(batches.done());
  EXPECT_EQ(feed->calls, 3u);  // the short chunk ended the source: no further call
}

TEST(InputBatches, ALazySourceWithoutABatchSizeIsCutIntoDefaultBatches) {
  const auto program = doubling();
  auto feed = std::make_shared<CountingFeed>(5000);
  rd::ValueStore store(program.plan());
  rd::RunRecorder recorder(*program.plan(), rd::SourceData{}, {1});
  rd::InputBatches batches(program.plan(), lazy(feed), {});
  batches.admit(store, recorder);
  EXPECT_EQ(feed->pulled, rd::kLazyInputBatchSize);
}

TEST(InputBatches, AnEmptyLazySourceIsDoneAfterOnePull) {
  const auto program = doubling();
  auto feed = std::make_shared<CountingFeed>(0);
  rd::ValueStore store(program.plan());
  rd::RunRecorder recorder(*program.plan(), rd::SourceData{}, {1});
  rd::InputBatches batches(program.plan(), lazy(feed), {.input_batch_size = 4});
  EXPECT_FALSE(batches.done());
  batches.admit(store, recorder);
  EXPECT_TRUE(batches.done());
  EXPECT_EQ(batches.count(), 0u);
}

TEST(InputBatchesDriver, TheFirstRowIsDeliveredBeforeTheSourceIsPulledPastTwoBatches) {
  const auto program = doubling();
  auto core = rd::make_sync_core(program.plan());
  auto feed = std::make_shared<CountingFeed>(1000);
  std::vector<std::size_t> pulled_at(1000, 0);
  std::vector<int> out(1000, -1);
  const rd::RootCallback sink = [&](std::size_t row, std::span<const rd::ErasedOutput> e) {
    pulled_at[row] = feed->pulled;
    out[row] = *static_cast<const int*>(e[0].value);
  };
  const ro::RunMetrics m = core->run(
      lazy(feed), {.input_batch_size = 10, .max_active_input_batches = 1, .progress = false}, sink);
  EXPECT_LE(pulled_at[0], 20u);
  EXPECT_LE(pulled_at[999], 1000u);
  for (std::size_t r = 0; r < out.size(); ++r) {
    EXPECT_EQ(out[r], 2 * static_cast<int>(r)) << "row " << r;
    // Row r is delivered while at most its own batch and the next one were pulled.
    EXPECT_LE(pulled_at[r], (r / 10 + 2) * 10) << "row " << r;
  }
  EXPECT_EQ(m.input_batches.size(), 100u);
  // A stream keeps nothing per root: no completion time each (RunMetrics).
  EXPECT_TRUE(m.root_completed_seconds.empty());
  std::size_t rows = 0;
  for (const ro::InputBatchMetrics& b : m.input_batches) rows += b.rows;
  EXPECT_EQ(rows, 1000u);
  EXPECT_EQ(m.peak_active_input_batches, 1u);
}

// Records what observers learn of a lazy source's row count.
class CountWatcher final : public ro::RunObserver {
 public:
  void on_run_start(const ro::RunStartEvent& e) override {
    start_rows_known = e.rows_known;
    start_rows = e.rows;
  }
  void on_root(const ro::RootEvent&) override { ++roots; }
  void on_progress(const ro::ProgressEvent& e) override {
    if (!e.final) return;
    final_total_known = e.total_known;
    final_total = e.roots_total;
    final_done = e.roots_done;
  }
  bool start_rows_known = true;
  std::size_t start_rows = 99;
  std::size_t roots = 0;
  bool final_total_known = false;
  std::size_t final_total = 0;
  std::size_t final_done = 0;
};

TEST(InputBatchesDriver, ObserversLearnTheRowCountWhenTheSourceEnded) {
  const auto program = doubling();
  auto core = rd::make_sync_core(program.plan());
  auto watcher = std::make_shared<CountWatcher>();
  ro::RunOptions options{.input_batch_size = 8, .progress = false};
  options.observers.push_back(watcher);
  const ro::RunMetrics m = core->run(lazy(std::make_shared<CountingFeed>(30)), options,
                                     [](std::size_t, std::span<const rd::ErasedOutput>) {});
  EXPECT_FALSE(watcher->start_rows_known);
  EXPECT_EQ(watcher->start_rows, 0u);
  EXPECT_EQ(watcher->roots, 30u);
  EXPECT_TRUE(watcher->final_total_known);
  EXPECT_EQ(watcher->final_total, 30u);
  EXPECT_EQ(watcher->final_done, 30u);
  EXPECT_EQ(m.input_batches.size(), 4u);
}

TEST(InputBatchesDriver, AFeedThatThrowsAbortsTheRunAndKeepsTheExecutor) {
  const auto program = doubling();
  auto core = rd::make_sync_core(program.plan());
  std::size_t delivered = 0;
  const rd::RootCallback sink = [&](std::size_t, std::span<const rd::ErasedOutput>) {
    ++delivered;
  };
  EXPECT_THROW(core->run(lazy(std::make_shared<CountingFeed>(100, false, 35)),
                         {.input_batch_size = 10, .progress = false}, sink),
               std::runtime_error);
  EXPECT_EQ(delivered, 30u);  // the batches before the broken one finished
  EXPECT_FALSE(core->closed());
  delivered = 0;
  core->run(lazy(std::make_shared<CountingFeed>(7)), {.input_batch_size = 3, .progress = false},
            sink);
  EXPECT_EQ(delivered, 7u);
}

TEST(InputBatchesDriver, AJournalResumesOverALazySource) {
  const auto program = doubling();
  auto core = rd::make_sync_core(program.plan());
  const auto path = std::filesystem::temp_directory_path() / "rayorch_lazy_journal_test.journal";
  std::filesystem::remove(path);
  rd::OutputCodec codec;
  codec.outputs = 1;
  codec.available = true;
  codec.encode = [](std::size_t, const void* v, std::string& out) {
    ro::Codec<int>::encode(*static_cast<const int*>(v), out);
  };
  std::vector<int> out(50, -1);
  codec.restore = [&](std::size_t row, const rd::JournalEntry& e, const rd::RootCallback&) {
    out[row] = ro::decode_value<int>(e.ports[0].value);
  };
  ro::RunOptions options{.input_batch_size = 10, .progress = false};
  options.journal.path = path.string();
  std::size_t computed = 0;
  const rd::RootCallback stop_after_25 = [&](std::size_t row, std::span<const rd::ErasedOutput> e) {
    if (computed == 25) throw std::runtime_error("stopped");
    ++computed;
    out[row] = *static_cast<const int*>(e[0].value);
  };
  EXPECT_THROW(rd::run_journaled(*core, lazy(std::make_shared<CountingFeed>(50, true)), {}, options,
                                 stop_after_25, codec),
               std::runtime_error);
  EXPECT_EQ(computed, 25u);
  std::fill(out.begin(), out.end(), -1);
  computed = 0;
  const rd::RootCallback sink = [&](std::size_t row, std::span<const rd::ErasedOutput> e) {
    ++computed;
    out[row] = *static_cast<const int*>(e[0].value);
  };
  const ro::RunMetrics m = rd::run_journaled(*core, lazy(std::make_shared<CountingFeed>(50, true)),
                                             {}, options, sink, codec);
  EXPECT_EQ(m.roots_restored, 25u);
  EXPECT_EQ(computed, 25u);
  EXPECT_TRUE(m.root_completed_seconds.empty());  // a stream keeps nothing per root
  for (std::size_t r = 0; r < out.size(); ++r) EXPECT_EQ(out[r], 2 * static_cast<int>(r)) << r;
  std::filesystem::remove(path);
}

}  // namespace
