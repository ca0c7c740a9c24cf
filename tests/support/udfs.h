// Small, generic UDFs shared by tests. Each is deterministic and cheap so tests can compute
// expected outputs by hand.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <rayorch/rayorch.h>

namespace test_udfs {

namespace ro = rayorch;

/// n -> [0, 1, ..., n-1]; a negative n gives an empty list.
struct Split {
  std::vector<std::vector<int>> run(ro::Column<int> n) {
    std::vector<std::vector<int>> out;
    out.reserve(n.size());
    for (int v : n) {
      std::vector<int> children;
      for (int i = 0; i < v; ++i) children.push_back(i);
      out.push_back(std::move(children));
    }
    return out;
  }
};

/// n -> ([0, ..., n-1], ["0", ..., "n-1"]): two list outputs of equal length, for
/// F::expand_aligned.
struct SplitPair {
  std::tuple<std::vector<std::vector<int>>, std::vector<std::vector<std::string>>> run(
      ro::Column<int> n) {
    std::vector<std::vector<int>> numbers;
    std::vector<std::vector<std::string>> names;
    for (int v : n) {
      numbers.emplace_back();
      names.emplace_back();
      for (int i = 0; i < v; ++i) {
        numbers.back().push_back(i);
        names.back().push_back(std::to_string(i));
      }
    }
    return {std::move(numbers), std::move(names)};
  }
};

/// x -> 2x.
struct Double {
  std::vector<int> run(ro::Column<int> x) {
    std::vector<int> out;
    out.reserve(x.size());
    for (int v : x) out.push_back(2 * v);
    return out;
  }
};

/// (a, b) -> a + b: a Call with two Port inputs.
struct Add {
  std::vector<int> run(ro::Column<int> a, ro::Column<int> b) {
    std::vector<int> out;
    out.reserve(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) out.push_back(a[i] + b[i]);
    return out;
  }
};

/// x, static k -> x + k.
struct AddConst {
  std::vector<int> run(ro::Column<int> x, int k) {
    std::vector<int> out;
    out.reserve(x.size());
    for (int v : x) out.push_back(v + k);
    return out;
  }
};

/// Group of ints -> their sum (0 for an empty group).
struct Sum {
  std::vector<int> run(ro::Column<ro::Group<int>> groups) {
    std::vector<int> out;
    out.reserve(groups.size());
    for (const auto& g : groups) {
      int s = 0;
      for (int v : g) s += v;
      out.push_back(s);
    }
    return out;
  }
};

/// Group of T -> its size.
template <class T>
struct Count {
  std::vector<int> run(ro::Column<ro::Group<T>> groups) {
    std::vector<int> out;
    out.reserve(groups.size());
    for (const auto& g : groups) out.push_back(static_cast<int>(g.size()));
    return out;
  }
};

/// Group of strings -> the strings joined by `sep` (a constructor argument).
struct Join {
  explicit Join(std::string separator = ",") : sep(std::move(separator)) {}
  std::vector<std::string> run(ro::Column<ro::Group<std::string>> groups) {
    std::vector<std::string> out;
    out.reserve(groups.size());
    for (const auto& g : groups) {
      std::string s;
      for (std::size_t i = 0; i < g.size(); ++i) s += (i == 0 ? "" : sep) + g[i];
      out.push_back(std::move(s));
    }
    return out;
  }
  std::string sep;
};

/// x -> x (a copy).
template <class T>
struct Identity {
  std::vector<T> run(ro::Column<T> x) { return x.to_vector(); }
};

/// x -> x is even: a mask for F::filter.
struct IsEven {
  std::vector<bool> run(ro::Column<int> x) {
    std::vector<bool> out;
    out.reserve(x.size());
    for (int v : x) out.push_back(v % 2 == 0);
    return out;
  }
};

/// x -> (x * x, decimal text of x): a two-output UDF.
struct SquareAndText {
  std::tuple<std::vector<int>, std::vector<std::string>> run(ro::Column<int> x) {
    std::vector<int> squares;
    std::vector<std::string> texts;
    for (int v : x) {
      squares.push_back(v * v);
      texts.push_back(std::to_string(v));
    }
    return {std::move(squares), std::move(texts)};
  }
};

/// x -> text of x.
struct ToText {
  std::vector<std::string> run(ro::Column<int> x) {
    std::vector<std::string> out;
    out.reserve(x.size());
    for (int v : x) out.push_back(std::to_string(v));
    return out;
  }
};

/// A thread-safe log shared between a test and the UDF instances it configures (the
/// Module copies its constructor arguments onto every actor, so share through a pointer).
template <class E>
class SharedLog {
 public:
  void add(E entry) {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.push_back(std::move(entry));
  }
  std::vector<E> entries() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<E> entries_;
};

/// Like Double, but records the size of every RPC and counts constructions in `log`.
struct RecordingDouble {
  struct Log {
    SharedLog<std::size_t> batch_sizes;
    SharedLog<int> constructions;
  };
  explicit RecordingDouble(std::shared_ptr<Log> shared) : log(std::move(shared)) {
    log->constructions.add(1);
  }
  std::vector<int> run(ro::Column<int> x) {
    log->batch_sizes.add(x.size());
    std::vector<int> out;
    for (int v : x) out.push_back(2 * v);
    return out;
  }
  std::shared_ptr<Log> log;
};

}  // namespace test_udfs
