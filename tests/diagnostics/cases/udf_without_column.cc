// expect: UDF run() needs at least one ro::Column<T> parameter
#include "udfs.h"

struct Constant {
  std::vector<int> run(int k) { return {k}; }
};

int main() {
  ro::Module<Constant> constant;
  ro::Module<Inc> inc;
  auto program = ro::compile([&](ro::Port<int> x) { return inc(constant(x)); });
  ro::testing::SyncExecutor ex(program);
  return static_cast<int>(ex.run({1}).outputs.size());
}
