// expect: wrong number of static arguments
#include "udfs.h"

int main() {
  ro::Module<AddConst> add;
  ro::Module<Inc> inc;
  auto program = ro::compile([&](ro::Port<int> x) { return inc(add(x)); });  // add(x, k)
  ro::testing::SyncExecutor ex(program);
  return static_cast<int>(ex.run({1}).outputs.size());
}
