// expect: ro::function needs a function pointer or a callable with one non-template operator()
#include "udfs.h"

int main() {
  auto even = ro::function([](auto v) { return v % 2 == 0; });
  auto program = ro::compile([&](ro::Port<int> x) { return ro::F::filter(x, even(x)); });
  ro::testing::SyncExecutor ex(program);
  return static_cast<int>(ex.run({1}).outputs.size());
}
