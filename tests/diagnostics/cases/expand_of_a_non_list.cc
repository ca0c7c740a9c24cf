// expect: each argument must be a ro::Port<std::vector<T>>
#include "udfs.h"

int main() {
  ro::Module<Inc> inc;
  ro::Module<Text> text;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto [a, b] = ro::F::expand_aligned(inc(x), text(x));  // neither returns a list
    return std::make_tuple(ro::F::reduce(a), ro::F::reduce(b));
  });
  ro::testing::SyncExecutor ex(program);
  return static_cast<int>(std::get<0>(ex.run({1}).outputs).size());
}
