// expect: this type has no codec
// expect-anywhere: T = Point
#include "udfs.h"

struct Point {
  int x = 0;
};

struct MakePoint {
  std::vector<Point> run(ro::Column<int> in) {
    std::vector<Point> out;
    for (int v : in) out.push_back(Point{v});
    return out;
  }
};

int main() {
  // Point crosses a process boundary but has no rayorch::Codec<Point>.
  ro::Module<MakePoint> make = ro::Module<MakePoint>().isolation(ro::Isolation::process);
  auto program = ro::compile([&](ro::Port<int> x) { return make(x); });
  ro::testing::SyncExecutor ex(program);
  return static_cast<int>(ex.run({1}).outputs.size());
}
