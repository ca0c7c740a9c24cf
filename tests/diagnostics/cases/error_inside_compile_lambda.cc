// expect: Port type does not match the UDF's run() parameter
// A mistake inside the lambda given to ro::compile, with more code after it that uses the
// bad Call's result: only the mistake is reported.
#include "udfs.h"

int main() {
  ro::Module<Text> text;
  ro::Module<Inc> inc;
  ro::Module<AddConst> add;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto wrong = inc(text(x));  // a Port<std::string> where Inc takes Column<int>
    return std::make_tuple(
        add(wrong, 1), ro::F::filter(x, ro::function([](const int& v) { return v > 0; })(wrong)));
  });
  ro::testing::SyncExecutor ex(program);
  return static_cast<int>(std::get<0>(ex.run({1}).outputs).size());
}
