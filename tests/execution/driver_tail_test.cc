// The driver's tail split (execution/driver_tail.cc, execution/run/tail_split.h) on the local
// executor: once the pool's call cost is known and nothing more can reach it, the last work is
// cut so that its actors end together; before that, full batches.
//
// A document expands into its pages; two OCR actors with batch_size 8 read them, each call
// sleeping 300 ms plus 100 ms per page. Documents go one after the other (one input batch
// each). Document 0 (11 pages): no cost is known yet, so 8 + 3 (and the fit comes from those
// two sizes). Document 1 (24 pages) is the last: one full call while more than one call per
// actor is left, then the last 16 pages are cut (8 + 8 on one actor and the other's 8 would end
// at 2.2 s; cut, the actors end together at 1.8 s), so no other call is full. Outputs are
// checked exactly.
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

namespace ro = rayorch;
namespace F = ro::F;

constexpr int kBatch = 8;
const std::vector<int> kPages{11, 24};  // pages per document

struct CallLog {
  std::mutex mutex;
  std::vector<std::vector<int>> calls;  // the pages of each OCR call, in the order they started
};
using CallLogPtr = std::shared_ptr<CallLog>;

struct Pages {
  std::vector<std::vector<int>> run(ro::Column<int> docs) {
    std::vector<std::vector<int>> out;
    for (int d : docs) {
      out.emplace_back();
      for (int p = 0; p < kPages[static_cast<std::size_t>(d)]; ++p)
        out.back().push_back(d * 100 + p);
    }
    return out;
  }
};

struct Ocr {
  explicit Ocr(CallLogPtr l) : log(std::move(l)) {}
  std::vector<int> run(ro::Column<int> pages) {
    {
      std::lock_guard<std::mutex> lock(log->mutex);
      log->calls.push_back(pages.to_vector());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300 + 100 * pages.size()));
    return pages.to_vector();
  }
  CallLogPtr log;
};

struct Count {
  std::vector<int> run(ro::Column<ro::Group<int>> groups) {
    std::vector<int> out;
    for (const auto& g : groups) out.push_back(static_cast<int>(g.size()));
    return out;
  }
};

TEST(DriverTail, CutsThePoolsLastWorkOnceItsCallCostIsKnown) {
  auto log = std::make_shared<CallLog>();
  ro::Module<Pages> pages;
  ro::Module<Ocr> ocr = ro::Module<Ocr>(log).batch_size(kBatch).replicas(2);
  ro::Module<Count> count;
  auto program =
      ro::compile([&](ro::Port<int> doc) { return count(F::reduce(ocr(F::expand(pages(doc))))); });
  ro::RunOptions o;
  o.progress = false;
  o.input_batch_size = 1;
  o.max_active_input_batches = 1;
  ro::Executor ex(program);
  const auto r = ex.run(std::vector<int>{0, 1}, o);
  ASSERT_EQ(r.outputs.size(), 2u);
  EXPECT_EQ(r.outputs[0].value(), kPages[0]);
  EXPECT_EQ(r.outputs[1].value(), kPages[1]);

  std::lock_guard<std::mutex> lock(log->mutex);
  std::map<int, std::vector<std::size_t>> sizes;  // per document, in start order
  std::vector<int> seen;
  for (const auto& call : log->calls) {
    ASSERT_FALSE(call.empty());
    sizes[call.front() / 100].push_back(call.size());
    for (int page : call) EXPECT_EQ(page / 100, call.front() / 100) << "one document per call";
    seen.insert(seen.end(), call.begin(), call.end());
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end()) << "a page read twice";
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kPages[0] + kPages[1]));
  // Document 0: no call cost known yet, full batches (its two calls start together).
  std::sort(sizes[0].rbegin(), sizes[0].rend());
  EXPECT_EQ(sizes[0], (std::vector<std::size_t>{8, 3}));
  // Document 1: one full call, then the last 16 pages in calls that are not (the first two
  // calls start together, so the log may have them in either order).
  const auto& last = sizes[1];
  ASSERT_GE(last.size(), 4u) << "the last 16 pages went out in full calls";
  EXPECT_EQ(std::count(last.begin(), last.end(), std::size_t{8}), 1);
  for (std::size_t n : last) EXPECT_LE(n, 8u);
  EXPECT_EQ(std::accumulate(last.begin(), last.end(), std::size_t{0}), 24u);
}

}  // namespace
