// Charts of the report page as inline SVG text: no script, no network, nothing from the
// report reaches the page unescaped (every label goes through escape_html).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rayorch::detail {

/// `text` safe inside HTML or SVG element content and attribute values.
std::string escape_html(std::string_view text);

/// One labelled horizontal bar per row, its length value / max_value; `note` printed after.
struct Bar {
  std::string label;
  double value = 0;
  std::string note;
};
std::string bar_chart(const std::vector<Bar>& bars, double max_value);

/// Step lines over time (x: seconds 0..x_max): one series per (name, points).
using Series = std::pair<std::string, std::vector<std::pair<double, double>>>;
std::string step_chart(const std::vector<Series>& series, double x_max, std::string_view y_label);

/// Horizontal spans over time (a Gantt chart): (label, start, end) per row.
struct Span {
  std::string label;
  double start = 0, end = 0;
};
std::string span_chart(const std::vector<Span>& spans, double x_max);

/// Per row (a parent), one window per series (a Call: from its first RPC's start to its last
/// RPC's end for that parent; none when it had none), each series on its own line of the row
/// and in its own colour, named in a legend: the stage windows overlapping across parents.
struct WindowRow {
  std::string label;
  std::vector<std::optional<std::pair<double, double>>> windows;  ///< per series
};
std::string window_chart(const std::vector<WindowRow>& rows, const std::vector<std::string>& series,
                         double x_max);

/// Vertical bars of a histogram: (bucket label, count).
std::string histogram(const std::vector<std::pair<std::string, double>>& buckets,
                      std::string_view x_label);

}  // namespace rayorch::detail
