// `rayorch explain --example NAME`: prints the compiled plan of a bundled pipeline. Plans are
// compiled without running anything: engines load only in actor constructors.
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#ifdef RAYORCH_WITH_PDF2MD
#include "pdf2md/pdf2md.h"
#endif
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace rayorch::cli {
namespace {

using Explainer = std::function<std::string(bool optimize)>;

const std::map<std::string, Explainer>& examples() {
  static const std::map<std::string, Explainer> all = {
#ifdef RAYORCH_WITH_PDF2MD
      {"pdf2md", [](bool optimize) { return pdf2md::compile_pipeline({}, optimize).explain(); }},
#endif
  };
  return all;
}

}  // namespace

void add_explain_command(CLI::App& app) {
  auto name = std::make_shared<std::string>();
  auto no_optimize = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "explain", "Print the compiled plan of a bundled pipeline: one line per Port, plus rewrites");
  std::vector<std::string> names;
  for (const auto& [n, fn] : examples()) names.push_back(n);
  cmd->add_option("--example", *name,
                  fmt::format("pipeline to explain ({})", fmt::join(names, ", ")))
      ->required()
      ->check(CLI::IsMember(names));
  cmd->add_flag("--no-optimize", *no_optimize, "skip canonicalisation");
  cmd->callback([name, no_optimize] {
    const std::string text = examples().at(*name)(!*no_optimize);
    std::fputs(text.c_str(), stdout);
    if (!text.empty() && text.back() != '\n') std::fputc('\n', stdout);
  });
}

}  // namespace rayorch::cli
