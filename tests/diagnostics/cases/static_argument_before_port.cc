// expect: this argument must be a ro::Port<T>
#include "udfs.h"

int main() {
  ro::Module<AddConst> add;
  auto program = ro::compile([&](ro::Port<int> x) { return add(3, x); });  // add(x, 3)
  ro::testing::SyncExecutor ex(program);
  return static_cast<int>(ex.run({1}).outputs.size());
}
