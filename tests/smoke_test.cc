#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace ro = rayorch;

namespace {

struct Split {
  std::vector<std::vector<int>> run(ro::Column<int> n) {
    std::vector<std::vector<int>> out;
    for (int v : n) {
      std::vector<int> children;
      for (int i = 0; i < v; ++i) children.push_back(v * 10 + i);
      out.push_back(children);
    }
    return out;
  }
};

struct Double {
  std::vector<int> run(ro::Column<int> x) {
    std::vector<int> out;
    for (int v : x) out.push_back(2 * v);
    return out;
  }
};

struct Sum {
  std::vector<int> run(ro::Column<ro::Group<int>> g) {
    std::vector<int> out;
    for (const auto& group : g) {
      int s = 0;
      for (int v : group) s += v;
      out.push_back(s);
    }
    return out;
  }
};

}  // namespace

TEST(Smoke, ExpandDoubleReduce) {
  ro::Module<Split> split;
  ro::Module<Double> dbl = ro::Module<Double>().batch_size(4);
  ro::Module<Sum> sum;
  auto program = ro::compile(
      [&](ro::Port<int> n) { return sum(ro::F::reduce(dbl(ro::F::expand(split(n))))); });
  std::cout << program.explain();
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({0, 1, 2, 3});
  ASSERT_EQ(r.outputs.size(), 4u);
  EXPECT_EQ(r.outputs[0].value(), 0);
  EXPECT_EQ(r.outputs[1].value(), 20);
  EXPECT_EQ(r.outputs[2].value(), 2 * (20 + 21));
  EXPECT_EQ(r.outputs[3].value(), 2 * (30 + 31 + 32));
  for (const auto& rpc : ex.rpcs()) std::cout << rpc.to_string() << "\n";

  ro::Executor local(program);
  auto r2 = local.run({0, 1, 2, 3});
  ASSERT_EQ(r2.outputs.size(), 4u);
  EXPECT_EQ(r2.outputs[3].value(), 2 * (30 + 31 + 32));
}
