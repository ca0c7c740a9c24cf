// Randomized differential testing: the outputs a run of a generated program gave, one
// observation per row and output, comparable across executors, and how they and the
// reference interpreter's expectations print in a report.
#pragma once

#include <cstddef>
#include <string>
#include <tuple>
#include <vector>

#include "support/random_pipeline/model.h"
#include "support/random_pipeline/random.h"
#include <fmt/format.h>

#include <rayorch/rayorch.h>

namespace random_pipeline {

// ---- Observed outputs ------------------------------------------------------------------------

struct Obs {
  ro::Outcome outcome = ro::Outcome::present;
  i64 value = 0;
  std::string cause;
};
using Table = std::vector<std::vector<Obs>>;  // [row][output]

inline Obs observe(const ro::Output<i64>& o) {
  if (o.ok()) return Obs{ro::Outcome::present, o.value(), {}};
  return Obs{o.issue().outcome, 0, o.issue().cause};
}

inline std::vector<Obs> observe_row(const ro::Output<i64>& o) {
  return {observe(o)};
}
template <class... O>
std::vector<Obs> observe_row(const std::tuple<O...>& row) {
  return std::apply([](const auto&... o) { return std::vector<Obs>{observe(o)...}; }, row);
}

inline Table to_table(const std::vector<ro::Output<i64>>& outs) {
  Table t(outs.size());
  for (std::size_t r = 0; r < outs.size(); ++r) t[r].push_back(observe(outs[r]));
  return t;
}
template <class... V>
Table to_table(const std::tuple<V...>& outs) {
  Table t(std::get<0>(outs).size());
  std::apply(
      [&](const auto&... column) {
        (
            [&] {
              for (std::size_t r = 0; r < column.size(); ++r) t[r].push_back(observe(column[r]));
            }(),
            ...);
      },
      outs);
  return t;
}

inline std::string show(const Obs& o) {
  if (o.outcome == ro::Outcome::present) return fmt::format("present({})", o.value);
  return fmt::format("{}(\"{}\")", ro::to_string(o.outcome), o.cause);
}
inline std::string show(const Expected& e) {
  if (e.tainted) return "tainted";
  if (e.outcome == ro::Outcome::present) return fmt::format("present({})", e.value);
  std::string causes;
  for (const auto& c : e.causes) causes += fmt::format("{}\"{}\"", causes.empty() ? "" : "|", c);
  return fmt::format("{}({})", ro::to_string(e.outcome), e.any_cause ? "any" : causes);
}

inline std::string show_natural(const Expected& e) {
  Expected natural = e;
  natural.tainted = false;
  natural.any_cause = true;
  return show(natural);
}

}  // namespace random_pipeline
