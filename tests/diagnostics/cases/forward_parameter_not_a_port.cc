// expect: every parameter of forward() (or of the lambda) must be a ro::Port<T>
#include "udfs.h"

int main() {
  ro::Module<Inc> inc;
  auto program = ro::compile([&](int x) { return x + 1; });
  ro::testing::SyncExecutor ex(program);
  return static_cast<int>(ex.run({1}).outputs.size());
}
