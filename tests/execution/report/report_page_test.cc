// The report page (src/execution/report/report_page.cc, rayorch/report_page.h): drawn from
// a real run's report with every Call and the right counts; text from a report escaped, so
// nothing in one runs in the page; malformed, cut or foreign reports refused naming what is
// wrong.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <rayorch/rayorch.h>
#include <rayorch/report_page.h>

namespace {

namespace ro = rayorch;
namespace fs = std::filesystem;

struct Split {  // a document into pages: n -> n pages
  std::vector<ro::Row<std::vector<int>>> run(ro::Column<int> xs) {
    std::vector<ro::Row<std::vector<int>>> out;
    for (int x : xs) {
      if (x == 3) {
        out.push_back(ro::RecordFailure{"three cannot be split"});
        continue;
      }
      out.push_back(std::vector<int>(static_cast<std::size_t>(x), x));
    }
    return out;
  }
};
struct Page {
  std::vector<ro::Row<int>> run(ro::Column<int> xs) {
    std::vector<ro::Row<int>> out(xs.begin(), xs.end());
    return out;
  }
};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class ReportPage : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("rayorch-report-page-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A report of a two-stage run over 5 parents, one failing.
  nlohmann::json real_report() {
    ro::Module<Split> split;
    ro::Module<Page> page;
    auto program = ro::compile(
        [&](ro::Port<int> doc) { return ro::F::reduce(page(ro::F::expand(split(doc)))); });
    ro::Executor ex(program);
    const fs::path report = dir_ / "run.json";
    // Three input batches, so the fan-out is summed over every batch's expansions.
    ex.run(std::vector<int>{1, 2, 3, 4, 5},
           {.input_batch_size = 2, .progress = false, .report_path = report.string()});
    return nlohmann::json::parse(read(report));
  }
  std::string error_of(const std::string& text) {
    try {
      ro::report_page_html(text, "r.json");
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    ADD_FAILURE() << "drawn without an error";
    return "";
  }
  fs::path dir_;
};

TEST_F(ReportPage, ARealRunShowsEveryCallAndItsParents) {
  const nlohmann::json report = real_report();
  const std::string page = ro::report_page_html(report.dump(), "run.json");
  for (const auto& call : report.at("calls")) {
    EXPECT_EQ(count(page, "<td class='call-name'>" + call.at("call").get<std::string>() + "<"), 1u)
        << call.at("call");
  }
  EXPECT_NE(page.find("<th>parents delivered</th><td>5</td>"), std::string::npos);
  EXPECT_NE(page.find("<th>parents present</th><td>4</td>"), std::string::npos);
  // The failing parent under the outcome the run gave it, whatever its name.
  ASSERT_EQ(report.at("roots_by_outcome").size(), 2u) << report.at("roots_by_outcome");
  for (const auto& [outcome, n] : report.at("roots_by_outcome").items()) {
    if (outcome == "present") continue;
    EXPECT_EQ(n.get<int>(), 1);
    EXPECT_NE(page.find("<th>parents " + outcome + "</th><td>1</td>"), std::string::npos);
  }
  // The failure grouped by its Call and cause, with the failing parent's Entity key.
  ASSERT_EQ(report.at("failures").size(), 1u) << report.at("failures");
  const auto& group = report.at("failures")[0];
  EXPECT_EQ(group.at("call"), "Split#0");
  EXPECT_EQ(group.at("cause"), "three cannot be split");
  EXPECT_EQ(group.at("roots"), 1);
  EXPECT_EQ(group.at("examples"), nlohmann::json::parse(R"([{"entity": "2", "row": 2}])"));
  EXPECT_NE(page.find("<td>Split#0</td><td>" + group.at("outcome").get<std::string>() +
                      "</td><td class='cause'>three cannot be split</td><td>1</td>"
                      "<td>2 (row 2)</td>"),
            std::string::npos);
  // Each parent's stage windows (5 parents: every one is kept): a parent's pages are read
  // after its Split RPC ended; the failed parent (row 2) had no page read.
  ASSERT_EQ(report.at("parent_windows").size(), 5u) << report.at("parent_windows");
  ASSERT_EQ(report.at("calls")[0].at("call"), "Split#0");
  for (const auto& p : report.at("parent_windows")) {
    const auto& split = p.at("windows")[0];
    const auto& pages = p.at("windows")[1];
    ASSERT_TRUE(split.is_array()) << p;
    EXPECT_LE(split[0].get<double>(), split[1].get<double>()) << p;
    if (p.at("row") == 2) {
      EXPECT_TRUE(pages.is_null()) << p;
    } else {
      ASSERT_TRUE(pages.is_array()) << p;
      EXPECT_LE(split[1].get<double>(), pages[0].get<double>()) << p;
    }
    EXPECT_NE(page.find(fmt::format(">parent {}<", p.at("row").get<int>())), std::string::npos);
  }
  EXPECT_NE(page.find("<h3 id='stage-windows'>"), std::string::npos);
  // Split's fan-out: rows 1, 2, 4 and 5 made that many pages; row 3's list failed.
  ASSERT_EQ(report.at("expands").size(), 1u) << report.at("expands");
  const auto& fan_out = report.at("expands")[0];
  EXPECT_EQ(fan_out.at("call"), "Split#0");
  EXPECT_EQ(fan_out.at("parents"), 4);
  EXPECT_EQ(fan_out.at("children"), 12);
  EXPECT_EQ(fan_out.at("fan_out_histogram"),
            nlohmann::json::parse(R"({"1": 1, "2": 1, "4": 1, "5": 1})"));
  EXPECT_NE(page.find("<p class='fan-out'>4 parents made 12 children: 3.0 per parent, median 2, "
                      "p90 5, most 5</p>"),
            std::string::npos);
  EXPECT_NE(page.find("id='verdict'"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);             // the page has no script at all
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos);  // and loads nothing

  // Written atomically from the file, the page is the same.
  std::ofstream(dir_ / "copy.json") << report.dump();
  ro::write_report_page((dir_ / "copy.json").string(), (dir_ / "copy.html").string());
  EXPECT_EQ(count(read(dir_ / "copy.html"), "class='call'"), report.at("calls").size());
}

TEST_F(ReportPage, RpcDurationsAndBusyActorsOverTimeAddUpToTheCallsCounters) {
  const nlohmann::json report = real_report();
  const std::string page = ro::report_page_html(report.dump(), "run.json");
  EXPECT_NE(page.find("Actors busy per Call over time"), std::string::npos);
  for (const auto& call : report.at("calls")) {
    const auto& q = call.at("rpc_seconds");
    EXPECT_LE(q.at("p50").get<double>(), q.at("p90").get<double>()) << call;
    EXPECT_LE(q.at("p90").get<double>(), q.at("p99").get<double>()) << call;
    EXPECT_LE(q.at("p99").get<double>(), q.at("max").get<double>()) << call;
    const auto& over = call.at("busy_over_time");
    const auto& busy = over.at("actors_busy");
    EXPECT_EQ(busy.size(), 60u);
    double busy_seconds = 0;
    for (const auto& b : busy)
      busy_seconds += b.get<double>() * over.at("bucket_seconds").get<double>();
    // The same RPCs, sliced: their busy time is the Call's (to the floats they are kept in).
    EXPECT_NEAR(busy_seconds, call.at("busy_seconds").get<double>(),
                1e-5 + 1e-4 * call.at("busy_seconds").get<double>())
        << call;
  }
}

TEST_F(ReportPage, TheCurveOfParentsFinishedKeepsItsSizeWhateverTheParents) {
  nlohmann::json report = real_report();
  std::vector<double> times;
  for (int i = 1; i <= 20000; ++i) times.push_back(0.001 * i);
  report["root_completed_seconds"] = times;
  const std::string page = ro::report_page_html(report.dump(), "run.json");
  const std::size_t chart = page.find("<h3>Parents finished over time</h3>");
  ASSERT_NE(chart, std::string::npos);
  const std::size_t from = page.find("points='", chart) + 8;
  const std::string points = page.substr(from, page.find('\'', from) - from);
  // Two corners per point and the closing one: 600 points, the last the 20,000th parent.
  EXPECT_EQ(count(points, " ") + 1, 2 * 600 + 1u);
  EXPECT_NE(page.find(">parents 20000<", chart), std::string::npos);
}

TEST_F(ReportPage, ManyInputBatchesAreDrawnInRunsOfConsecutiveBatches) {
  nlohmann::json report = real_report();
  nlohmann::json batches = nlohmann::json::array();
  for (int i = 0; i < 1000; ++i) {
    batches.push_back({{"index", i},
                       {"first_row", 10 * i},
                       {"rows", 10},
                       {"grains", 10},
                       {"rpcs", 1},
                       {"admitted_seconds", 0.01 * i},
                       {"completed_seconds", 0.01 * i + (i == 7 ? 50.0 : 1.0)}});
  }
  report["input_batches"] = batches;
  const std::string page = ro::report_page_html(report.dump(), "run.json");
  // 1,000 batches in 63 rows of 16 and one of 8; a row ends with its last completion.
  EXPECT_EQ(count(page, ">batches "), 63u);
  EXPECT_NE(page.find(">batches 0-15 (rows 0-159)<"), std::string::npos);
  EXPECT_NE(page.find(">batches 992-999 (rows 9920-9999)<"), std::string::npos);
  EXPECT_EQ(count(page, ">batch "), 0u);
}

TEST_F(ReportPage, TextFromTheReportIsEscaped) {
  nlohmann::json report = real_report();
  report["calls"][0]["call"] = "<img src=x onerror=alert(1)>#0";
  report["pdf2md"] = {{"failed", {{{"stem", "</pre><script>alert(2)</script>"}}}}};
  report["error"] = "\"><svg onload=alert(3)>";
  report["failures"][0]["cause"] = "<iframe src=x>";
  report["expands"][0]["call"] = "<object data=x>#0";
  report["aborted"] = true;
  const std::string page = ro::report_page_html(report.dump(), "<b>run</b>.json");
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<svg onload"), std::string::npos);
  EXPECT_EQ(page.find("<iframe"), std::string::npos);
  EXPECT_NE(page.find("&lt;iframe src=x&gt;"), std::string::npos);
  EXPECT_EQ(page.find("<object"), std::string::npos);
  EXPECT_NE(page.find("&lt;object data=x&gt;#0 p"), std::string::npos);
  EXPECT_EQ(page.find("<b>run"), std::string::npos);
  EXPECT_NE(page.find("&lt;img src=x onerror=alert(1)&gt;#0"), std::string::npos);
  EXPECT_NE(page.find("&lt;/pre&gt;&lt;script&gt;"), std::string::npos);
}

TEST_F(ReportPage, ABadReportIsRefusedNamingWhatIsWrong) {
  const nlohmann::json report = real_report();
  const std::string text = report.dump();
  EXPECT_NE(
      error_of(text.substr(0, text.size() / 2)).find("r.json: not a complete JSON document (byte"),
      std::string::npos);
  EXPECT_NE(error_of("{\"calls\": []}").find("r.json: not a rayorch run report"),
            std::string::npos);
  nlohmann::json later = report;
  later["version"] = 2;
  EXPECT_NE(error_of(later.dump()).find("report version 2 is not one this build reads"),
            std::string::npos);
  nlohmann::json wrong = report;
  wrong["calls"][1]["busy_seconds"] = "slow";
  EXPECT_EQ(error_of(wrong.dump()), "r.json: calls[1].busy_seconds must be a number, not string");
  nlohmann::json missing = report;
  missing["pools"][0].erase("actors");
  EXPECT_EQ(error_of(missing.dump()), "r.json: pools[0].actors is missing");
  nlohmann::json negative = report;
  negative["roots_delivered"] = -1;
  EXPECT_EQ(error_of(negative.dump()), "r.json: roots_delivered must be a count, not number");
  nlohmann::json busy = report;
  busy["calls"][0]["busy_over_time"]["actors_busy"][3] = "x";
  EXPECT_EQ(error_of(busy.dump()),
            "r.json: calls[0].busy_over_time.actors_busy[3] must be a number, not string");
  nlohmann::json rpc = report;
  rpc["calls"][1]["rpc_seconds"].erase("p99");
  EXPECT_EQ(error_of(rpc.dump()), "r.json: calls[1].rpc_seconds.p99 is missing");
  nlohmann::json fan_out = report;
  fan_out["expands"][0]["fan_out_histogram"]["2x"] = 1;
  EXPECT_EQ(error_of(fan_out.dump()),
            "r.json: expands[0].fan_out_histogram key '2x' must be a number of children");
  nlohmann::json windows = report;
  windows["parent_windows"][1]["windows"][0] = "soon";
  EXPECT_EQ(error_of(windows.dump()),
            "r.json: parent_windows[1].windows[0] must be [start, end] or null");
  windows["parent_windows"][1]["windows"].erase(0);
  EXPECT_EQ(error_of(windows.dump()),
            "r.json: parent_windows[1].windows has 1 windows for 2 Calls");
  EXPECT_THROW(ro::write_report_page((dir_ / "nope.json").string(), (dir_ / "p.html").string()),
               std::invalid_argument);
  EXPECT_FALSE(fs::exists(dir_ / "p.html"));
}

}  // namespace
