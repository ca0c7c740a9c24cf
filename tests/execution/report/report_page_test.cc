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
    ex.run(std::vector<int>{1, 2, 3, 4, 5}, {.progress = false, .report_path = report.string()});
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
  EXPECT_NE(page.find("id='verdict'"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);             // the page has no script at all
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos);  // and loads nothing

  // Written atomically from the file, the page is the same.
  std::ofstream(dir_ / "copy.json") << report.dump();
  ro::write_report_page((dir_ / "copy.json").string(), (dir_ / "copy.html").string());
  EXPECT_EQ(count(read(dir_ / "copy.html"), "class='call'"), report.at("calls").size());
}

TEST_F(ReportPage, TextFromTheReportIsEscaped) {
  nlohmann::json report = real_report();
  report["calls"][0]["call"] = "<img src=x onerror=alert(1)>#0";
  report["pdf2md"] = {{"failed", {{{"stem", "</pre><script>alert(2)</script>"}}}}};
  report["error"] = "\"><svg onload=alert(3)>";
  report["aborted"] = true;
  const std::string page = ro::report_page_html(report.dump(), "<b>run</b>.json");
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<svg onload"), std::string::npos);
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
  EXPECT_THROW(ro::write_report_page((dir_ / "nope.json").string(), (dir_ / "p.html").string()),
               std::invalid_argument);
  EXPECT_FALSE(fs::exists(dir_ / "p.html"));
}

}  // namespace
