// C++ UDFs shipped with the Python package, usable in Python pipelines next to Python UDFs
// (rayorch_cpp.CppModule). They run without the GIL: the adapter in core.cc converts their
// Python inputs before the call and their results after it.
//
// The sim_* stages are the synthetic document workload (workloads/synthetic/documents.h, whose
// costs are sleeps), with Python's row types: a document is (id, pages), a page (doc, index),
// a page's value synthetic::page_value(doc, index).
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "synthetic/documents.h"

#include "rayorch/column.h"
#include "rayorch/outcome.h"

namespace rayorch::python_udfs {

namespace ro = rayorch;

using DocRow = std::tuple<std::int64_t, std::int64_t>;   ///< (document id, page count)
using PageRow = std::tuple<std::int64_t, std::int64_t>;  ///< (document id, page index)

/// Upper-cases strings (a trivial C++ stage).
struct Upper {
  std::vector<std::string> run(ro::Column<std::string> texts) {
    std::vector<std::string> out;
    out.reserve(texts.size());
    for (const std::string& t : texts) {
      std::string u = t;
      std::transform(u.begin(), u.end(), u.begin(),
                     [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
      out.push_back(std::move(u));
    }
    return out;
  }
};

/// Sums each group of integers; an empty group is a RecordFailure (to show typed failures).
struct SumNonEmpty {
  std::vector<ro::Row<std::int64_t>> run(ro::Column<ro::Group<std::int64_t>> groups) {
    std::vector<ro::Row<std::int64_t>> out;
    for (const auto& g : groups) {
      if (g.empty()) {
        out.push_back(ro::RecordFailure{"empty group"});
        continue;
      }
      std::int64_t s = 0;
      for (std::int64_t v : g) s += v;
      out.push_back(s);
    }
    return out;
  }
};

/// render: one document -> its pages; costs per_page_ms per page.
struct SimRender {
  explicit SimRender(double per_page_ms) { costs.render_per_page = per_page_ms; }
  std::vector<std::vector<PageRow>> run(ro::Column<DocRow> docs) {
    std::vector<std::vector<PageRow>> out;
    for (const auto& [id, pages] : docs) {
      synthetic::simulate_ms(synthetic::render_ms(costs, static_cast<double>(pages)));
      std::vector<PageRow> p;
      for (std::int64_t i = 0; i < pages; ++i) p.emplace_back(id, i);
      out.push_back(std::move(p));
    }
    return out;
  }
  synthetic::Costs costs;
};

/// ocr: a batch of pages -> their values; costs per_batch_ms + per_page_ms per page.
struct SimOcr {
  SimOcr(double per_batch_ms, double per_page_ms) {
    costs.ocr_per_batch = per_batch_ms;
    costs.ocr_per_page = per_page_ms;
  }
  std::vector<std::int64_t> run(ro::Column<PageRow> pages) {
    synthetic::simulate_ms(synthetic::ocr_ms(costs, pages.size()));
    std::vector<std::int64_t> out;
    for (const auto& [doc, index] : pages) out.push_back(synthetic::page_value(doc, index));
    return out;
  }
  synthetic::Costs costs;
};

/// assemble: a document's page values (in page order) -> (id, values); costs per_doc_ms +
/// per_page_ms per page.
struct SimAssemble {
  SimAssemble(double per_doc_ms, double per_page_ms) {
    costs.assemble_per_doc = per_doc_ms;
    costs.assemble_per_page = per_page_ms;
  }
  std::vector<std::tuple<std::int64_t, std::vector<std::int64_t>>> run(
      ro::Column<ro::Group<std::int64_t>> pages, ro::Column<DocRow> docs) {
    std::vector<std::tuple<std::int64_t, std::vector<std::int64_t>>> out;
    for (std::size_t i = 0; i < docs.size(); ++i) {
      synthetic::simulate_ms(synthetic::assemble_ms(costs, pages[i].size()));
      out.emplace_back(std::get<0>(docs[i]), pages[i].to_vector());
    }
    return out;
  }
  synthetic::Costs costs;
};

}  // namespace rayorch::python_udfs
