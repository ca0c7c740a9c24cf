// workloads/common/convert_driver: what every conversion command counts (docs/CONVERSION.md).
// An input a pipeline drops on purpose is not a failure: it is tallied apart, leaves the
// failure list of the summary (and so the exit status) alone, and its line in failures.jsonl
// says "failed": false; an input whose stage failed is a failure, with "failed": true.
#include "common/convert_driver.h"

#include <cstddef>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "support/workload_testing.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <rayorch/rayorch.h>

namespace {

namespace ro = rayorch;
using workload_testing::TempDir;

// An input named "skip-..." is unwanted (dropped by the filter), "bad-..." cannot be read.
struct Wanted {
  std::vector<ro::Row<bool>> run(ro::Column<std::string> paths) {
    std::vector<ro::Row<bool>> out;
    for (const std::string& p : paths) {
      if (p.rfind("bad-", 0) == 0) {
        out.emplace_back(ro::RecordFailure{"cannot read " + p});
      } else {
        out.emplace_back(p.rfind("skip-", 0) != 0);
      }
    }
    return out;
  }
};

struct KeepWanted : ro::Pipeline {
  ro::Module<Wanted> wanted;
  ro::Port<std::string> forward(ro::Port<std::string> path) {
    return ro::F::filter(path, wanted(path));
  }
};

struct Failure {
  std::string name;
  std::string input;
  std::string outcome;
  std::string cause;
};

struct Options {
  std::string out_dir;
  bool resume = false;
  bool journal = true;
  std::string trace_path;
  std::string report_path;
  bool report_page = false;
  ro::LiveOptions live;
  bool progress = false;
  std::size_t input_batch_size = 2;
  std::size_t max_active_input_batches = 1;
};

const workloads::ConvertNaming kNaming{".keep-probe-", ".keep-tmp", ".keep-journal",
                                       "keep",         "name",      "convert every input again"};

TEST(ConvertDriver, ADroppedInputIsNotAFailureAndAFailedOneIs) {
  TempDir tmp("rayorch-convert-driver");
  Options options;
  options.out_dir = (tmp.path() / "out").string();
  workloads::ConvertDriver<KeepWanted, Failure> driver(
      kNaming, options, {"a.txt", "skip-b.txt", "bad-c.txt", "d.txt"}, &Failure::name);
  driver.prepare_output();
  driver.start_engines(ro::compile(KeepWanted{}));
  std::vector<std::string> delivered;
  driver.run(
      "", [&](std::size_t, const std::string& path) { delivered.push_back(path); },
      [](std::size_t) {},
      [](const workloads::ConvertTally<Failure>&) { return std::string("{}"); });

  const workloads::ConvertTally<Failure>& tally = driver.tally();
  EXPECT_EQ(tally.written, (std::vector<std::string>{"a", "d"}));
  EXPECT_EQ(tally.dropped, (std::vector<std::string>{"skip-b"}));
  ASSERT_EQ(tally.failures.size(), 1u);
  EXPECT_EQ(tally.failures[0].name, "bad-c");
  EXPECT_EQ(tally.failures[0].cause, "cannot read bad-c.txt");
  EXPECT_EQ(delivered.size(), 2u);

  std::map<std::string, nlohmann::json> lines;  // by the input's name
  std::ifstream in(driver.failures_path());
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    lines[j.at("name").get<std::string>()] = j;
  }
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines.at("skip-b").at("outcome"), "dropped");
  EXPECT_EQ(lines.at("skip-b").at("failed"), false);
  EXPECT_EQ(lines.at("skip-b").at("input"), "skip-b.txt");
  EXPECT_EQ(lines.at("bad-c").at("failed"), true);
  EXPECT_EQ(lines.at("bad-c").at("outcome"), tally.failures[0].outcome);
  EXPECT_EQ(lines.at("bad-c").at("call"), "Wanted#0");
}

TEST(ConvertDriver, ASummarySaysHowManyWereDroppedOnPurpose) {
  EXPECT_EQ(workloads::dropped_on_purpose(0), "");
  EXPECT_EQ(workloads::dropped_on_purpose(3), ", 3 dropped on purpose");
}

}  // namespace
