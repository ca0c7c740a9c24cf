// expect: a UDF must have exactly one non-template, non-overloaded member function `run`
#include "udfs.h"

struct Shout {  // `apply` where `run` was meant
  std::vector<std::string> apply(ro::Column<std::string> x) { return x.to_vector(); }
};

int main() {
  ro::Module<Shout> shout;
  ro::Module<Inc> inc;
  auto program = ro::compile(
      [&](ro::Port<std::string> s) { return std::make_tuple(shout(s), ro::F::reduce(shout(s))); });
  ro::testing::SyncExecutor ex(program);
  (void)inc;
  return static_cast<int>(std::get<0>(ex.run({"a"}).outputs).size());
}
