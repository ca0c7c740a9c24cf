// Minimal program built against the *installed* rayorch package: a real expand -> map ->
// reduce pipeline run deterministically. A non-zero exit status reports a wrong result.
#include <cstdio>
#include <vector>

#include <rayorch/rayorch.h>

namespace ro = rayorch;

namespace {

// n -> [0, 1, ..., n-1]
struct Split {
  std::vector<std::vector<int>> run(ro::Column<int> n) {
    std::vector<std::vector<int>> out;
    for (int v : n) {
      std::vector<int> children;
      for (int i = 0; i < v; ++i) children.push_back(i);
      out.push_back(children);
    }
    return out;
  }
};

struct Square {
  std::vector<int> run(ro::Column<int> x) {
    std::vector<int> out;
    for (int v : x) out.push_back(v * v);
    return out;
  }
};

struct Sum {
  std::vector<int> run(ro::Column<ro::Group<int>> groups) {
    std::vector<int> out;
    for (const auto& g : groups) {
      int s = 0;
      for (int v : g) s += v;
      out.push_back(s);
    }
    return out;
  }
};

}  // namespace

int main() {
  ro::Module<Split> split;
  ro::Module<Square> square = ro::Module<Square>().batch_size(3);
  ro::Module<Sum> sum;
  auto program = ro::compile(
      [&](ro::Port<int> n) { return sum(ro::F::reduce(square(ro::F::expand(split(n))))); });
  ro::testing::SyncExecutor ex(program);
  const std::vector<int> input = {4, 0, 1, 3};
  ro::RunOptions options;
  options.input_batch_size = 2;  // two input batches
  auto result = ex.run(input, options);
  const std::vector<int> expected = {0 + 1 + 4 + 9, 0, 0, 0 + 1 + 4};
  if (result.outputs.size() != expected.size()) {
    std::fprintf(stderr, "consumer: %zu outputs, expected %zu\n", result.outputs.size(),
                 expected.size());
    return 1;
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (!result.outputs[i].ok() || result.outputs[i].value() != expected[i]) {
      std::fprintf(stderr, "consumer: wrong output for row %zu\n", i);
      return 1;
    }
  }
  std::printf("consumer: %zu rows OK\n", expected.size());
  return 0;
}
