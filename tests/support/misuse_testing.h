// Shared by the misuse catalogue (tests/api/misuse_*_test.cc): the small UDFs most entries
// use, the message of an expected exception, and the check that an aborted run left the
// executor open.
#pragma once

#include <exception>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace misuse_testing {

namespace ro = rayorch;

struct Inc {
  std::vector<int> run(ro::Column<int> x) {
    std::vector<int> out;
    for (int v : x) out.push_back(v + 1);
    return out;
  }
};

struct Add {
  std::vector<int> run(ro::Column<int> a, ro::Column<int> b) {
    std::vector<int> out;
    for (std::size_t i = 0; i < a.size(); ++i) out.push_back(a[i] + b[i]);
    return out;
  }
};

struct Count {
  std::vector<int> run(ro::Column<ro::Group<int>> g) {
    std::vector<int> out;
    for (const auto& group : g) out.push_back(static_cast<int>(group.size()));
    return out;
  }
};

// The message of the `E` that `f` throws; fails the test otherwise.
template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected an exception, nothing was thrown";
  return {};
}

inline const std::vector<int> kRows = {1, 2, 3, 4, 5};

// An aborted run leaves the executor open with its actors: the same run aborts the same way
// again instead of finding the executor closed.
template <class Ex>
void expect_open_after_abort(Ex& ex, const std::string& fragment) {
  EXPECT_FALSE(ex.closed());
  EXPECT_THAT(error_of<ro::ExecutionError>([&] { ex.run(kRows); }), ::testing::HasSubstr(fragment));
}

}  // namespace misuse_testing
