// expect: compiles
// The control: the same flags compile correct code, so the failures below are the mistakes.
#include "udfs.h"

struct Pipeline : ro::Pipeline {
  ro::Module<AddConst> add;
  ro::Module<Inc> inc;
  ro::Function<bool(const int&)> even{[](const int& x) { return x % 2 == 0; }};
  ro::Port<int> forward(ro::Port<int> x) { return ro::F::filter(add(inc(x), 3), even(x)); }
};

int main() {
  ro::Compiled<Pipeline> program = ro::compile(Pipeline{});
  ro::testing::SyncExecutor ex(program);
  return ex.run({1, 2}).outputs.size() == 2 ? 0 : 1;
}
