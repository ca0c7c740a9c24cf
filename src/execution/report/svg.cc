// Inline SVG charts. See svg.h.
#include "execution/report/svg.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace rayorch::detail {
namespace {

constexpr int kWidth = 720;
constexpr int kLabelWidth = 200;
constexpr int kPlotWidth = kWidth - kLabelWidth - 120;
constexpr const char* kColours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                    "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};

const char* colour(std::size_t i) {
  return kColours[i % std::size(kColours)];
}

std::string seconds_axis(double x_max, int y, int x0, int width) {
  std::string out;
  for (int tick = 0; tick <= 4; ++tick) {
    const double t = x_max * tick / 4.0;
    const int x = x0 + width * tick / 4;
    out += fmt::format(
        "<line x1='{0}' y1='{1}' x2='{0}' y2='{2}' stroke='#ccc'/><text x='{0}' y='{3}' "
        "font-size='11' text-anchor='middle'>{4:.1f} s</text>",
        x, 4, y, y + 14, t);
  }
  return out;
}

}  // namespace

std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string bar_chart(const std::vector<Bar>& bars, double max_value) {
  const int row = 22;
  std::string out = fmt::format("<svg class='chart' width='{}' height='{}' role='img'>", kWidth,
                                row * static_cast<int>(bars.size()) + 4);
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const int y = static_cast<int>(i) * row + 2;
    const double share = max_value > 0 ? std::clamp(bars[i].value / max_value, 0.0, 1.0) : 0.0;
    out += fmt::format(
        "<text x='0' y='{}' font-size='12'>{}</text><rect x='{}' y='{}' width='{:.1f}' "
        "height='{}' fill='{}'/><text x='{:.1f}' y='{}' font-size='11'>{}</text>",
        y + 14, escape_html(bars[i].label), kLabelWidth, y + 2, share * kPlotWidth, row - 6,
        colour(i), kLabelWidth + share * kPlotWidth + 6, y + 14, escape_html(bars[i].note));
  }
  return out + "</svg>";
}

std::string step_chart(const std::vector<Series>& series, double x_max, std::string_view y_label) {
  const int height = 160;
  const int x0 = 40;
  const int width = kWidth - x0 - 160;
  double y_max = 1;
  for (const auto& [name, points] : series) {
    for (const auto& [x, y] : points) y_max = std::max(y_max, y);
  }
  x_max = std::max(x_max, 1e-9);
  std::string out =
      fmt::format("<svg class='chart' width='{}' height='{}' role='img'>", kWidth, height + 24);
  out += seconds_axis(x_max, height, x0, width);
  out +=
      fmt::format("<text x='0' y='12' font-size='11'>{} {:g}</text>", escape_html(y_label), y_max);
  for (std::size_t s = 0; s < series.size(); ++s) {
    const auto& [name, points] = series[s];
    std::string path;
    double last_y = 0;
    for (const auto& [x, y] : points) {
      const double px = x0 + width * std::clamp(x / x_max, 0.0, 1.0);
      path +=
          fmt::format("{:.1f},{:.1f} {:.1f},{:.1f} ", px, height - (height - 8) * last_y / y_max,
                      px, height - (height - 8) * y / y_max);
      last_y = y;
    }
    path += fmt::format("{:.1f},{:.1f}", static_cast<double>(x0 + width),
                        height - (height - 8) * last_y / y_max);
    out += fmt::format(
        "<polyline fill='none' stroke='{}' stroke-width='2' points='{}'/><text x='{}' y='{}' "
        "font-size='12' fill='{}'>{}</text>",
        colour(s), path, x0 + width + 8, 14 + 16 * static_cast<int>(s), colour(s),
        escape_html(name));
  }
  return out + "</svg>";
}

std::string window_chart(const std::vector<WindowRow>& rows, const std::vector<std::string>& series,
                         double x_max) {
  const int line = 4;  // one line per series in a row
  const int row = std::max(12, line * static_cast<int>(series.size()) + 4);
  const int legend = 16 * static_cast<int>(series.size());
  const int height = row * static_cast<int>(rows.size()) + 4;
  x_max = std::max(x_max, 1e-9);
  std::string out = fmt::format("<svg class='chart' width='{}' height='{}' role='img'>", kWidth,
                                std::max(height, legend) + 20);
  out += seconds_axis(x_max, height, kLabelWidth, kPlotWidth);
  for (std::size_t s = 0; s < series.size(); ++s) {
    out += fmt::format("<text x='{}' y='{}' font-size='12' fill='{}'>{}</text>",
                       kLabelWidth + kPlotWidth + 8, 14 + 16 * static_cast<int>(s), colour(s),
                       escape_html(series[s]));
  }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const int y = static_cast<int>(r) * row + 2;
    out += fmt::format("<text x='0' y='{}' font-size='10'>{}</text>", y + row - 3,
                       escape_html(rows[r].label));
    for (std::size_t s = 0; s < rows[r].windows.size() && s < series.size(); ++s) {
      if (!rows[r].windows[s]) continue;
      const auto [start, end] = *rows[r].windows[s];
      const double a = kLabelWidth + kPlotWidth * std::clamp(start / x_max, 0.0, 1.0);
      const double b = kLabelWidth + kPlotWidth * std::clamp(end / x_max, 0.0, 1.0);
      out += fmt::format("<rect x='{:.1f}' y='{}' width='{:.1f}' height='{}' fill='{}'/>", a,
                         y + 2 + line * static_cast<int>(s), std::max(1.0, b - a), line - 1,
                         colour(s));
    }
  }
  return out + "</svg>";
}

std::string span_chart(const std::vector<Span>& spans, double x_max) {
  const int row = 14;
  const int height = row * static_cast<int>(spans.size()) + 4;
  x_max = std::max(x_max, 1e-9);
  std::string out =
      fmt::format("<svg class='chart' width='{}' height='{}' role='img'>", kWidth, height + 20);
  out += seconds_axis(x_max, height, kLabelWidth, kPlotWidth);
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const double a = kLabelWidth + kPlotWidth * std::clamp(spans[i].start / x_max, 0.0, 1.0);
    const double b = kLabelWidth + kPlotWidth * std::clamp(spans[i].end / x_max, 0.0, 1.0);
    const int y = static_cast<int>(i) * row + 2;
    out += fmt::format(
        "<text x='0' y='{}' font-size='10'>{}</text><rect x='{:.1f}' y='{}' width='{:.1f}' "
        "height='{}' fill='{}'/>",
        y + 10, escape_html(spans[i].label), a, y + 1, std::max(1.0, b - a), row - 3, colour(i));
  }
  return out + "</svg>";
}

std::string histogram(const std::vector<std::pair<std::string, double>>& buckets,
                      std::string_view x_label) {
  const int height = 120;
  const int n = std::max<int>(1, static_cast<int>(buckets.size()));
  const int step = std::min(60, (kWidth - 40) / n);
  double max_count = 1;
  for (const auto& [label, count] : buckets) max_count = std::max(max_count, count);
  std::string out =
      fmt::format("<svg class='chart' width='{}' height='{}' role='img'>", kWidth, height + 34);
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    const double h = (height - 14) * buckets[i].second / max_count;
    const int x = 20 + static_cast<int>(i) * step;
    out += fmt::format(
        "<rect x='{}' y='{:.1f}' width='{}' height='{:.1f}' fill='{}'/><text x='{}' y='{:.1f}' "
        "font-size='10' text-anchor='middle'>{:g}</text><text x='{}' y='{}' font-size='10' "
        "text-anchor='middle'>{}</text>",
        x, height - h, step - 4, h, colour(0), x + (step - 4) / 2, height - h - 2,
        buckets[i].second, x + (step - 4) / 2, height + 12, escape_html(buckets[i].first));
  }
  out += fmt::format("<text x='20' y='{}' font-size='11'>{}</text>", height + 28,
                     escape_html(x_label));
  return out + "</svg>";
}

}  // namespace rayorch::detail
