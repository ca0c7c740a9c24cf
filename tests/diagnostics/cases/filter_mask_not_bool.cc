// expect: F::filter(source, mask): the mask must be a ro::Port<bool>
#include "udfs.h"

int main() {
  ro::Module<Inc> inc;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto kept = ro::F::filter(x, inc(x));  // an int is no mask
    return inc(kept);
  });
  ro::testing::SyncExecutor ex(program);
  return static_cast<int>(ex.run({1}).outputs.size());
}
