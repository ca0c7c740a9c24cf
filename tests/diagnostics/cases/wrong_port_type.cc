// expect: Port type does not match the UDF's run() parameter
#include "udfs.h"

struct Pipeline : ro::Pipeline {
  ro::Module<Text> text;
  ro::Module<Inc> inc;
  ro::Port<int> forward(ro::Port<int> x) { return inc(text(x)); }  // Inc takes Column<int>
};

int main() {
  auto program = ro::compile(Pipeline{});
  ro::Executor ex(program);
  return static_cast<int>(ex.run(std::vector<int>{1}).outputs.size());
}
