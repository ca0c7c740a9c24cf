// expect: operator bool
// expect-anywhere: a Port has no truth value: use F::filter
#include "udfs.h"

int main() {
  ro::Module<Inc> inc;
  auto program = ro::compile([&](ro::Port<int> x) {
    if (x) return inc(x);  // data-dependent branching is F::filter
    return x;
  });
  ro::testing::SyncExecutor ex(program);
  return static_cast<int>(ex.run({1}).outputs.size());
}
