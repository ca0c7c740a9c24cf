// The synthetic document workload. See workload.h.
#include "workload.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

#include <fmt/format.h>

namespace rayorch::bench {

std::vector<std::uint32_t> make_corpus(const CorpusSpec& spec) {
  // mt19937_64 and a hand-rolled Box-Muller keep the corpus identical across standard
  // libraries (std::normal_distribution is implementation-defined).
  std::mt19937_64 rng(spec.seed);
  auto uniform = [&] { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; };
  const double mu = std::log(std::max(spec.median_pages, 1.0));
  const std::uint32_t cap = std::max<std::uint32_t>(spec.max_pages, 1);
  std::vector<std::uint32_t> pages(spec.documents);
  for (auto& p : pages) {
    const double z = std::sqrt(-2.0 * std::log(uniform())) * std::cos(2.0 * M_PI * uniform());
    const double x = std::round(std::exp(mu + spec.sigma * z));
    p = static_cast<std::uint32_t>(std::clamp(x, 1.0, static_cast<double>(cap)));
  }
  if (!pages.empty()) *std::max_element(pages.begin(), pages.end()) = cap;
  return pages;
}

void ModelLoad::operator()() const {
  double ms = ms_;
  if (slow_every_ > 0 && claims_->fetch_add(1) % slow_every_ == slow_every_ - 1) ms = slow_ms_;
  simulate_ms(ms);
}

std::vector<std::vector<Page>> RenderUdf::run(ro::Column<Doc> docs) {
  std::vector<std::vector<Page>> out;
  out.reserve(docs.size());
  double pages = 0;
  for (const Doc& d : docs) {
    std::vector<Page> ps(d.pages);
    for (std::uint32_t i = 0; i < d.pages; ++i)
      ps[i] = Page{d.id, i, d.poison_first_page && i == 0};
    pages += d.pages;
    out.push_back(std::move(ps));
  }
  simulate_ms(synthetic::render_ms(costs, pages));
  return out;
}

std::vector<ro::Row<std::uint64_t>> OcrUdf::run(ro::Column<Page> pages) {
  std::vector<ro::Row<std::uint64_t>> out;
  out.reserve(pages.size());
  for (const Page& p : pages) out.emplace_back(page_value(p.doc, p.index));
  for (std::size_t i = 0; i < pages.size(); ++i) {
    if (pages[i].poison) {
      out[i] = ro::GroupFailure{fmt::format("page 0 of document {} is unreadable", pages[i].doc)};
    }
  }
  simulate_ms(synthetic::ocr_ms(costs, pages.size()));
  return out;
}

std::vector<DocResult> AssembleUdf::run(ro::Column<ro::Group<std::uint64_t>> pages,
                                        ro::Column<Doc> docs) {
  std::vector<DocResult> out;
  out.reserve(docs.size());
  double cost = 0;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    out.push_back(DocResult{docs[i].id, pages[i].to_vector()});
    cost += synthetic::assemble_ms(costs, pages[i].size());
  }
  simulate_ms(cost);
  return out;
}

std::vector<PagePayload> PayloadOcrUdf::run(ro::Column<Page> pages) {
  std::vector<PagePayload> out;
  out.reserve(pages.size());
  for (const Page& p : pages) {
    out.push_back(PagePayload{page_value(p.doc, p.index),
                              std::string(page_payload_size(p.doc, p.index, max_bytes), '\0')});
  }
  simulate_ms(synthetic::ocr_ms(costs, pages.size()));
  return out;
}

std::vector<PayloadDocResult> PayloadAssembleUdf::run(ro::Column<ro::Group<PagePayload>> pages,
                                                      ro::Column<Doc> docs) {
  std::vector<PayloadDocResult> out;
  out.reserve(docs.size());
  double cost = 0;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    PayloadDocResult r{DocResult{docs[i].id, {}}, 0};
    for (const PagePayload& p : pages[i]) {
      r.result.pages.push_back(p.value);
      r.payload_bytes += p.bytes.size();
    }
    out.push_back(std::move(r));
    cost += synthetic::assemble_ms(costs, pages[i].size());
  }
  simulate_ms(cost);
  return out;
}

std::vector<Doc> make_docs(const std::vector<std::uint32_t>& pages,
                           const std::vector<bool>& poison) {
  std::vector<Doc> docs(pages.size());
  for (std::size_t i = 0; i < pages.size(); ++i) {
    docs[i] = Doc{static_cast<std::uint32_t>(i), pages[i], i < poison.size() && poison[i]};
  }
  return docs;
}

std::vector<std::size_t> largest_documents(const std::vector<std::uint32_t>& pages,
                                           double fraction) {
  std::vector<std::size_t> order(pages.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  // Ties go to the lower index, so the choice is deterministic.
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return pages[a] > pages[b]; });
  const auto n = static_cast<std::size_t>(std::ceil(fraction * static_cast<double>(pages.size())));
  order.resize(std::min(pages.size(), std::max<std::size_t>(n, 1)));
  return order;
}

DocResult expected_result(std::uint32_t doc, std::uint32_t pages) {
  DocResult r{doc, {}};
  r.pages.reserve(pages);
  for (std::uint32_t i = 0; i < pages; ++i) r.pages.push_back(page_value(doc, i));
  return r;
}

double median_of(std::vector<double> s) {
  if (s.empty()) return 0;
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

Stats stats_of(std::vector<double> s) {
  Stats st;
  if (s.empty()) return st;
  std::sort(s.begin(), s.end());
  st.min = s.front();
  st.max = s.back();
  st.median = median_of(s);
  st.mean = std::accumulate(s.begin(), s.end(), 0.0) / static_cast<double>(s.size());
  st.p95 =
      s[std::min(s.size() - 1, static_cast<std::size_t>(0.95 * static_cast<double>(s.size())))];
  return st;
}

namespace {
double cpu_seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
}  // namespace

double thread_cpu_seconds() {
  return cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
}
double process_cpu_seconds() {
  return cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
}

std::string Table::str() const {
  std::vector<std::size_t> width(header_.size(), 0);
  for (std::size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
  for (const auto& r : rows_) {
    for (std::size_t c = 0; c < r.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (std::size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < r.size() ? r[c] : "";
      // The first column is a label: left-aligned; the figures are right-aligned.
      if (c == 0)
        s += fmt::format("{:<{}}", cell, width[c]);
      else
        s += fmt::format("  {:>{}}", cell, width[c]);
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = line(header_);
  std::size_t total = 0;
  for (std::size_t w : width) total += w + 2;
  out += std::string(total > 2 ? total - 2 : 0, '-') + "\n";
  for (const auto& r : rows_) out += line(r);
  return out;
}

}  // namespace rayorch::bench
