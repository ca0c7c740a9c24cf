// expect: a static argument does not convert to the type of the UDF's run() parameter
#include "udfs.h"

int main() {
  ro::Module<AddConst> add;
  auto program = ro::compile([&](ro::Port<int> x) { return add(x, std::string("3")); });
  ro::testing::SyncExecutor ex(program);
  return static_cast<int>(ex.run({1}).outputs.size());
}
