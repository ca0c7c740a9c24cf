// The misuse catalogue, the contracts of a run: source columns of the wrong count, type or
// length, invalid RunOptions, and UDF results that break the row contract (too few or too
// many rows, aligned lists of different lengths), each with the error a user sees and the
// executor still open afterwards, losing no row.
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "support/misuse_testing.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace ro = rayorch;
using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

using misuse_testing::Add;
using misuse_testing::Count;
using misuse_testing::error_of;
using misuse_testing::expect_open_after_abort;
using misuse_testing::Inc;
using misuse_testing::kRows;

// Two lists per row, for F::expand_aligned; the second is one longer when the input is 3.
struct TwoLists {
  std::tuple<std::vector<std::vector<int>>, std::vector<std::vector<int>>> run(ro::Column<int> n) {
    std::tuple<std::vector<std::vector<int>>, std::vector<std::vector<int>>> out;
    for (int v : n) {
      std::get<0>(out).emplace_back(static_cast<std::size_t>(v), 0);
      std::get<1>(out).emplace_back(static_cast<std::size_t>(v == 3 ? v + 1 : v), 1);
    }
    return out;
  }
};

// Returns one row too few.
struct ShortResult {
  std::vector<int> run(ro::Column<int> x) { return std::vector<int>(x.size() - 1, 0); }
};

// Returns one row too many.
struct LongResult {
  std::vector<int> run(ro::Column<int> x) { return std::vector<int>(x.size() + 1, 0); }
};

// The second of two outputs has the wrong number of rows.
struct LopsidedPair {
  std::tuple<std::vector<int>, std::vector<int>> run(ro::Column<int> x) {
    return {std::vector<int>(x.size(), 1), std::vector<int>(x.size() + 2, 2)};
  }
};

// ---- Source columns --------------------------------------------------------------------------

template <class Ex>
concept RunsWithOneIntColumn = requires(Ex& ex, const std::vector<int>& c) {
  ex.run(c);
};
template <class Ex>
concept RunsWithStrings = requires(Ex& ex, const std::vector<std::string>& c) {
  ex.run(c, c);
};

TEST(Misuse, SourceColumnsOfTheWrongCountOrTypeDoNotCompile) {
  ro::Module<Add> add;
  auto program = ro::compile([&](ro::Port<int> a, ro::Port<int> b) { return add(a, b); });
  // The column count and element types are part of run()'s signature.
  ro::testing::SyncExecutor sync(program);
  static_assert(!RunsWithOneIntColumn<decltype(sync)>);
  static_assert(!RunsWithStrings<decltype(sync)>);
  ro::Executor local(program);
  static_assert(!RunsWithOneIntColumn<decltype(local)>);
  static_assert(!RunsWithStrings<decltype(local)>);
  EXPECT_EQ(sync.run({1, 2}, {10, 20}).outputs.size(), 2u);
  EXPECT_EQ(local.run({1, 2}, {10, 20}).outputs.size(), 2u);
}

TEST(Misuse, SourceColumnsOfDifferentLengths) {
  ro::Module<Add> add;
  auto program = ro::compile([&](ro::Port<int> a, ro::Port<int> b) { return add(a, b); });
  for (int local = 0; local < 2; ++local) {
    auto check = [&](auto& ex) {
      EXPECT_THAT(error_of<std::invalid_argument>([&] {
                    ex.run({1, 2, 3}, {10, 20});
                  }),
                  HasSubstr("source columns are not row-aligned: column 0 has 3 rows but column 1 "
                            "has 2; pass columns of equal length"));
      // Rejected before anything ran: the executor is still open and loses nothing.
      EXPECT_FALSE(ex.closed());
      auto r = ex.run({1, 2, 3}, {10, 20, 30});
      ASSERT_EQ(r.outputs.size(), 3u);
      EXPECT_EQ(r.outputs[2].value(), 33);
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

TEST(Misuse, ZeroActiveInputBatches) {
  ro::Module<Inc> inc;
  auto program = ro::compile([&](ro::Port<int> x) { return inc(x); });
  ro::RunOptions bad;
  bad.max_active_input_batches = 0;
  ro::Executor ex(program);
  EXPECT_THAT(error_of<std::invalid_argument>([&] { ex.run(kRows, bad); }),
              HasSubstr("RunOptions.max_active_input_batches must be >= 1, got 0"));
  ro::testing::SyncExecutor sync(program);
  EXPECT_THAT(error_of<std::invalid_argument>([&] { sync.run(kRows, bad); }),
              HasSubstr("RunOptions.max_active_input_batches must be >= 1, got 0"));
  // Still usable, nothing lost.
  EXPECT_EQ(ex.run(kRows).outputs.size(), kRows.size());
  EXPECT_EQ(sync.run(kRows).outputs.size(), kRows.size());
}

// ---- UDF contract errors ---------------------------------------------------------------------

template <class U>
void expect_contract_error(int batch_size, const std::string& fragment) {
  ro::Module<U> udf = ro::Module<U>().batch_size(batch_size);
  auto program = ro::compile([&](ro::Port<int> x) { return udf(x); });
  {
    ro::testing::SyncExecutor ex(program);
    const std::string msg = error_of<ro::ExecutionError>([&] { ex.run(kRows); });
    EXPECT_THAT(msg, AllOf(HasSubstr("contract error: Call "), HasSubstr(fragment),
                           HasSubstr("run() must return one element per input row for every "
                                     "output")));
    expect_open_after_abort(ex, fragment);
  }
  {
    ro::Executor ex(program);
    const std::string msg = error_of<ro::ExecutionError>([&] { ex.run(kRows); });
    EXPECT_THAT(msg, AllOf(HasSubstr("contract error: Call "), HasSubstr(fragment)));
    expect_open_after_abort(ex, fragment);
  }
}

TEST(Misuse, UdfReturnsTooFewRows) {
  expect_contract_error<ShortResult>(
      2,
      "Call ShortResult#0 (UDF ShortResult) returned a result that breaks the UDF contract for "
      "an RPC of 2 rows: output 0 has 1 rows for 2 input rows");
}

TEST(Misuse, UdfReturnsTooManyRows) {
  expect_contract_error<LongResult>(
      1,
      "Call LongResult#0 (UDF LongResult) returned a result that breaks the UDF contract for "
      "an RPC of 1 rows: output 0 has 2 rows for 1 input rows");
}

TEST(Misuse, UdfReturnsAnOutputOfTheWrongLength) {
  ro::Module<LopsidedPair> pair = ro::Module<LopsidedPair>().batch_size(4);
  ro::Module<Add> add;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto [a, b] = pair(x);
    return add(a, b);
  });
  ro::testing::SyncExecutor ex(program);
  EXPECT_THAT(error_of<ro::ExecutionError>([&] { ex.run(kRows); }),
              HasSubstr("contract error: Call LopsidedPair#0 (UDF LopsidedPair) returned a result "
                        "that breaks the UDF contract for an RPC of 4 rows: output 1 has 6 rows "
                        "for 4 input rows"));
  EXPECT_FALSE(ex.closed());  // an aborted run keeps the executor
}

TEST(Misuse, AlignedListsOfDifferentLengths) {
  ro::Module<TwoLists> lists;
  ro::Module<Count> count;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto [l1, l2] = lists(x);
    auto [a, b] = ro::F::expand_aligned(l1, l2);
    (void)b;
    return count(ro::F::reduce(a));
  });
  for (int local = 0; local < 2; ++local) {
    auto check = [&](auto& ex) {
      EXPECT_THAT(error_of<ro::ExecutionError>([&] {
                    ex.run({1, 2, 3, 4});
                  }),
                  HasSubstr("F::expand_aligned lists of TwoLists#0 have different lengths for "
                            "entity 2: p1 has 3 elements but p2 has 4; return lists of equal "
                            "length per row"));
      EXPECT_FALSE(ex.closed());  // an aborted run keeps the executor
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

}  // namespace
