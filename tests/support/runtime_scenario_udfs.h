// UDFs for end-to-end runtime scenarios. Each records what it saw in a shared CallLog so tests
// can count UDF calls and check which values reached them.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <rayorch/rayorch.h>

namespace runtime_test {

namespace ro = rayorch;

/// Values seen by UDF calls, shared between a test and the UDF instances it configures.
struct CallLog {
  std::vector<int> seen;
};
using CallLogPtr = std::shared_ptr<CallLog>;

using Nested = std::vector<std::vector<int>>;

struct InnerLists {
  std::vector<Nested> run(ro::Column<Nested> x) { return x.to_vector(); }
};

struct ListOf {
  std::vector<std::vector<int>> run(ro::Column<std::vector<int>> x) { return x.to_vector(); }
};

struct AddTen {
  std::vector<int> run(ro::Column<int> x) {
    std::vector<int> out;
    for (int v : x) out.push_back(v + 10);
    return out;
  }
};

struct IsOdd {
  std::vector<bool> run(ro::Column<int> x) {
    std::vector<bool> out;
    for (int v : x) out.push_back(v % 2 != 0);
    return out;
  }
};

struct IsEven {
  std::vector<bool> run(ro::Column<int> x) {
    std::vector<bool> out;
    for (int v : x) out.push_back(v % 2 == 0);
    return out;
  }
};

struct Never {
  std::vector<bool> run(ro::Column<int> x) { return std::vector<bool>(x.size(), false); }
};

/// Identity that logs its inputs.
struct Ident {
  explicit Ident(CallLogPtr log = nullptr) : log_(std::move(log)) {}
  std::vector<int> run(ro::Column<int> x) {
    for (int v : x)
      if (log_) log_->seen.push_back(v);
    return x.to_vector();
  }
  CallLogPtr log_;
};

/// a + b, logging the rows it is called on (by `a`).
struct Add {
  explicit Add(CallLogPtr log = nullptr) : log_(std::move(log)) {}
  std::vector<int> run(ro::Column<int> a, ro::Column<int> b) {
    std::vector<int> out;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (log_) log_->seen.push_back(a[i]);
      out.push_back(a[i] + b[i]);
    }
    return out;
  }
  CallLogPtr log_;
};

/// Fails every row with a RecordFailure naming the value.
struct AlwaysFail {
  std::vector<ro::Row<int>> run(ro::Column<int> x) {
    std::vector<ro::Row<int>> out;
    for (int v : x) out.emplace_back(ro::RecordFailure{"broke on " + std::to_string(v)});
    return out;
  }
};

/// v -> [10v, 10v+1, ..., 10v+v-1].
struct Split {
  std::vector<std::vector<int>> run(ro::Column<int> x) {
    std::vector<std::vector<int>> out;
    for (int v : x) {
      std::vector<int> children;
      for (int i = 0; i < v; ++i) children.push_back(10 * v + i);
      out.push_back(std::move(children));
    }
    return out;
  }
};

/// A page stage: logs its inputs; a RecordFailure or GroupFailure on chosen values.
struct Page {
  Page(CallLogPtr log, int record_failure_on, int group_failure_on)
      : log_(std::move(log)), record_(record_failure_on), group_(group_failure_on) {}
  std::vector<ro::Row<int>> run(ro::Column<int> x) {
    std::vector<ro::Row<int>> out;
    for (int v : x) {
      log_->seen.push_back(v);
      if (v == record_) {
        out.emplace_back(ro::RecordFailure{"page " + std::to_string(v) + " unreadable"});
      } else if (v == group_) {
        out.emplace_back(ro::GroupFailure{"document is encrypted"});
      } else {
        out.emplace_back(v);
      }
    }
    return out;
  }
  CallLogPtr log_;
  int record_;
  int group_;
};

struct SumGroup {
  std::vector<int> run(ro::Column<ro::Group<int>> g) {
    std::vector<int> out;
    for (const auto& group : g) {
      int s = 0;
      for (int v : group) s += v;
      out.push_back(s);
    }
    return out;
  }
};

/// Throws std::runtime_error("boom") when a batch holds `poison`.
struct Boom {
  explicit Boom(int poison) : poison_(poison) {}
  std::vector<int> run(ro::Column<int> x) {
    for (int v : x)
      if (v == poison_) throw std::runtime_error("boom");
    return x.to_vector();
  }
  int poison_;
};

/// v -> [v + 1]: one child per level of a deep chain.
struct OneChild {
  std::vector<std::vector<int>> run(ro::Column<int> x) {
    std::vector<std::vector<int>> out;
    for (int v : x) out.push_back({v + 1});
    return out;
  }
};

/// The first element of each group, -1 for an empty one.
struct First {
  std::vector<int> run(ro::Column<ro::Group<int>> g) {
    std::vector<int> out;
    for (const auto& group : g) out.push_back(group.empty() ? -1 : group[0]);
    return out;
  }
};

}  // namespace runtime_test
