// Small UDFs shared by the runtime tests. The rule tables drive the engine by hand and never
// call them; the scenario tests run them through testing::SyncExecutor.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <rayorch/rayorch.h>

namespace runtime_test {

namespace ro = rayorch;

/// Identity that may fail a row.
struct Q {
  std::vector<ro::Row<int>> run(ro::Column<int> x) {
    std::vector<ro::Row<int>> out;
    for (int v : x) out.emplace_back(v);
    return out;
  }
};

/// A value plus a keep flag, the raw material of a filter.
struct P {
  std::tuple<std::vector<ro::Row<int>>, std::vector<bool>> run(ro::Column<int> x) {
    std::tuple<std::vector<ro::Row<int>>, std::vector<bool>> out;
    for (int v : x) {
      std::get<0>(out).emplace_back(v);
      std::get<1>(out).push_back(true);
    }
    return out;
  }
};

/// A mask value plus a keep flag.
struct PMask {
  std::tuple<std::vector<ro::Row<bool>>, std::vector<bool>> run(ro::Column<int> x) {
    std::tuple<std::vector<ro::Row<bool>>, std::vector<bool>> out;
    for (int v : x) {
      std::get<0>(out).emplace_back(v % 2 == 0);
      std::get<1>(out).push_back(true);
    }
    return out;
  }
};

/// A list of `v` elements.
struct S {
  std::vector<ro::Row<std::vector<int>>> run(ro::Column<int> x) {
    std::vector<ro::Row<std::vector<int>>> out;
    for (int v : x) out.emplace_back(std::vector<int>(static_cast<std::size_t>(v), v));
    return out;
  }
};

/// Two lists, for expand_aligned.
struct S2 {
  std::tuple<std::vector<std::vector<int>>, std::vector<std::vector<int>>> run(ro::Column<int> x) {
    std::tuple<std::vector<std::vector<int>>, std::vector<std::vector<int>>> out;
    for (int v : x) {
      std::get<0>(out).emplace_back(static_cast<std::size_t>(v), v);
      std::get<1>(out).emplace_back(static_cast<std::size_t>(v), -v);
    }
    return out;
  }
};

struct Sum2 {
  std::vector<int> run(ro::Column<int> a, ro::Column<int> b) {
    std::vector<int> out;
    for (std::size_t i = 0; i < a.size(); ++i) out.push_back(a[i] + b[i]);
    return out;
  }
};

struct Sum3 {
  std::vector<int> run(ro::Column<int> a, ro::Column<int> b, ro::Column<int> c) {
    std::vector<int> out;
    for (std::size_t i = 0; i < a.size(); ++i) out.push_back(a[i] + b[i] + c[i]);
    return out;
  }
};

}  // namespace runtime_test
