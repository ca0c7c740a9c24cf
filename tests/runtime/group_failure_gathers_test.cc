// A GroupFailure decides its parent's gathers (DESIGN 5): whatever the membership, a reduce
// over that parent of a Port downstream of the failing Call is SUPPRESSED with the
// GroupFailure's cause, so outputs do not depend on which siblings committed first.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

namespace ro = rayorch;
namespace F = ro::F;

struct Frames {  // video v -> frames "v/0" .. "v/n-1"
  std::vector<std::vector<std::string>> run(ro::Column<int> counts) {
    std::vector<std::vector<std::string>> out;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      out.emplace_back();
      for (int f = 0; f < counts[i]; ++f) out.back().push_back("f" + std::to_string(f));
    }
    return out;
  }
};
struct Caption {  // frame f3 of every video poisons its video
  std::vector<ro::Row<std::string>> run(ro::Column<std::string> frames) {
    std::vector<ro::Row<std::string>> out;
    for (const auto& f : frames) {
      if (f == "f3")
        out.push_back(ro::GroupFailure{"bad " + f});
      else
        out.push_back(f + ";");
    }
    return out;
  }
};
struct KeepAllButF3 {  // the membership leaves the failing frame out
  std::vector<bool> run(ro::Column<std::string> frames) {
    std::vector<bool> out;
    for (const auto& f : frames) out.push_back(f != "f3");
    return out;
  }
};
struct Join {
  std::vector<std::string> run(ro::Column<ro::Group<std::string>> groups) {
    std::vector<std::string> out;
    for (const auto& g : groups) {
      std::string s;
      for (const auto& x : g) s += x;
      out.push_back(s);
    }
    return out;
  }
};

std::vector<std::string> show(const std::vector<ro::Output<std::string>>& outputs) {
  std::vector<std::string> v;
  for (const auto& o : outputs)
    v.push_back(o.ok() ? "present " + o.value()
                       : std::string(ro::to_string(o.issue().outcome)) + " " + o.issue().cause);
  return v;
}

std::vector<std::string> run_with(bool sync, int batch, int replicas) {
  ro::Module<Frames> frames;
  ro::Module<Caption> caption = ro::Module<Caption>().batch_size(batch).replicas(replicas);
  ro::Module<KeepAllButF3> keep = ro::Module<KeepAllButF3>().batch_size(batch);
  ro::Module<Join> join;
  auto program = ro::compile([&](ro::Port<int> n) {
    auto f = F::expand(frames(n));
    auto kept = F::filter(f, keep(f));
    return join(F::reduce(caption(f), F::members(kept)));
  });
  const std::vector<int> videos = {6, 3, 5};
  if (sync) {
    ro::testing::SyncExecutor ex(program);
    return show(ex.run(videos, {.progress = false}).outputs);
  }
  ro::Executor ex(program);
  return show(ex.run(videos, {.progress = false}).outputs);
}

TEST(GroupFailureGathers, OutputsDoNotDependOnBatchSizeOrExecutor) {
  const std::vector<std::string> expected = {"suppressed bad f3", "present f0;f1;f2;",
                                             "suppressed bad f3"};
  for (int batch : {1, 2, 16}) {
    SCOPED_TRACE("batch_size " + std::to_string(batch));
    EXPECT_EQ(run_with(true, batch, 1), expected);
  }
  for (int batch : {1, 16}) {
    for (int replicas : {1, 3}) {
      SCOPED_TRACE("local executor, batch_size " + std::to_string(batch) + ", replicas " +
                   std::to_string(replicas));
      for (int repeat = 0; repeat < 5; ++repeat)
        EXPECT_EQ(run_with(false, batch, replicas), expected);
    }
  }
}

}  // namespace
