// The synthetic document workload of every benchmark: its stages' costs and values are
// defined once in workloads/synthetic/documents.h; this adds a seeded corpus of documents with
// a long-tailed page count, the stages as UDFs of this project's pipelines, and the
// benchmarks' statistics.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "synthetic/documents.h"

#include <rayorch/rayorch.h>

namespace rayorch::bench {

namespace ro = rayorch;

/// A seeded corpus: page counts drawn from a log-normal law clipped to [1, max_pages], with
/// the largest document set to exactly max_pages. The defaults give 368 documents and about
/// 7,000 pages: median 6 pages, a few hundred-page documents, one of 427 pages.
struct CorpusSpec {
  std::size_t documents = 368;
  std::uint32_t max_pages = 427;
  double median_pages = 6.0;
  double sigma = 1.5;  ///< of the underlying normal law; larger means a heavier tail
  std::uint64_t seed = 4;
};

/// Page counts, one per document.
std::vector<std::uint32_t> make_corpus(const CorpusSpec& spec);

/// Simulated stage costs in milliseconds.
using synthetic::Costs;

/// Actor counts and batch sizes of the simulated pipeline.
struct Topology {
  int render_replicas = 4;
  int render_batch = 1;
  int ocr_replicas = 8;  ///< the simulated accelerators
  int ocr_batch = 32;
  int ocr_batch_wait_ms = 0;  ///< Module::batch_wait of the OCR stage
  int assemble_replicas = 2;
  int assemble_batch = 1;
  /// This project on Ray only (rayorch-ray): max_tasks_in_flight_per_actor of every Module;
  /// 0 leaves the Ray backend's default.
  int ray_tasks_in_flight = 0;
};

/// A source row.
struct Doc {
  std::uint32_t id = 0;
  std::uint32_t pages = 0;
  bool poison_first_page = false;  ///< OCR of page 0 returns ro::GroupFailure
};

}  // namespace rayorch::bench

/// Documents key the rows of a run journal by their encoded value (bench engine --journal).
template <>
struct rayorch::Codec<rayorch::bench::Doc> {
  template <ByteSink S>
  static void encode(const rayorch::bench::Doc& d, S& out) {
    Codec<std::uint32_t>::encode(d.id, out);
    Codec<std::uint32_t>::encode(d.pages, out);
    Codec<bool>::encode(d.poison_first_page, out);
  }
  static rayorch::bench::Doc decode(std::string_view& in) {
    rayorch::bench::Doc d;
    d.id = Codec<std::uint32_t>::decode(in);
    d.pages = Codec<std::uint32_t>::decode(in);
    d.poison_first_page = Codec<bool>::decode(in);
    return d;
  }
};

namespace rayorch::bench {

/// A child of a document.
struct Page {
  std::uint32_t doc = 0;
  std::uint32_t index = 0;
  bool poison = false;
};

/// The simulated OCR result of one page (synthetic::page_value).
inline std::uint64_t page_value(std::uint32_t doc, std::uint32_t page) {
  return static_cast<std::uint64_t>(synthetic::page_value(doc, page));
}

/// The assembled document: its page values in page order.
struct DocResult {
  std::uint32_t doc = 0;
  std::vector<std::uint64_t> pages;
  friend bool operator==(const DocResult&, const DocResult&) = default;
};

/// Sleeps for `ms` milliseconds (nothing when ms <= 0).
using synthetic::simulate_ms;

struct RenderUdf {
  explicit RenderUdf(Costs c) : costs(c) {}
  std::vector<std::vector<Page>> run(ro::Column<Doc> docs);
  Costs costs;
};

struct OcrUdf {
  explicit OcrUdf(Costs c) : costs(c) {}
  std::vector<ro::Row<std::uint64_t>> run(ro::Column<Page> pages);
  Costs costs;
};

struct AssembleUdf {
  explicit AssembleUdf(Costs c) : costs(c) {}
  std::vector<DocResult> run(ro::Column<ro::Group<std::uint64_t>> pages, ro::Column<Doc> docs);
  Costs costs;
};

/// render -> expand -> ocr -> reduce -> assemble, with the UDFs `Ocr` (made from the costs and
/// `ocr_args`) and `Assemble`, whose documents are `Result`s: SimPipeline and PayloadPipeline.
template <class Ocr, class Assemble, class Result>
struct DocumentPipeline : ro::Pipeline {
  template <class... OcrArgs>
  DocumentPipeline(const Costs& costs, const Topology& t, OcrArgs... ocr_args)
      : render(ro::Module<RenderUdf>(costs).replicas(t.render_replicas).batch_size(t.render_batch)),
        ocr(ro::Module<Ocr>(costs, ocr_args...)
                .replicas(t.ocr_replicas)
                .batch_size(t.ocr_batch)
                .batch_wait(std::chrono::milliseconds(t.ocr_batch_wait_ms))),
        assemble(ro::Module<Assemble>(costs)
                     .replicas(t.assemble_replicas)
                     .batch_size(t.assemble_batch)) {}

  ro::Module<RenderUdf> render;
  ro::Module<Ocr> ocr;
  ro::Module<Assemble> assemble;

  ro::Port<Result> forward(ro::Port<Doc> doc) {
    auto pages = ro::F::expand(render(doc));
    return assemble(ro::F::reduce(ocr(pages)), doc);
  }
};

/// The simulated workload: SimPipeline(costs, topology).
using SimPipeline = DocumentPipeline<OcrUdf, AssembleUdf, DocResult>;

/// The payload regime: each page's OCR result carries synthetic::page_payload_size bytes.
using synthetic::page_payload_size;

/// An OCR result with its payload.
struct PagePayload {
  std::uint64_t value = 0;
  std::string bytes;
};

/// An assembled document of the payload regime: its values plus its pages' payload bytes.
struct PayloadDocResult {
  DocResult result;
  std::uint64_t payload_bytes = 0;
};

struct PayloadOcrUdf {
  PayloadOcrUdf(Costs c, std::size_t largest) : costs(c), max_bytes(largest) {}
  std::vector<PagePayload> run(ro::Column<Page> pages);
  Costs costs;
  std::size_t max_bytes;
};

struct PayloadAssembleUdf {
  explicit PayloadAssembleUdf(Costs c) : costs(c) {}
  std::vector<PayloadDocResult> run(ro::Column<ro::Group<PagePayload>> pages, ro::Column<Doc> docs);
  Costs costs;
};

/// SimPipeline with payload-carrying OCR results: PayloadPipeline(costs, topology, max_bytes),
/// `max_bytes` > 0.
using PayloadPipeline = DocumentPipeline<PayloadOcrUdf, PayloadAssembleUdf, PayloadDocResult>;

/// Source rows for a corpus; `poison[i]` marks document i (empty: none).
std::vector<Doc> make_docs(const std::vector<std::uint32_t>& pages,
                           const std::vector<bool>& poison = {});

/// The indices of the largest `fraction` of documents (at least one), largest first.
std::vector<std::size_t> largest_documents(const std::vector<std::uint32_t>& pages,
                                           double fraction);

/// The expected (clean) result of a document.
DocResult expected_result(std::uint32_t doc, std::uint32_t pages);

/// Summary statistics of a sample.
struct Stats {
  double min = 0, median = 0, mean = 0, p95 = 0, max = 0;
};
Stats stats_of(std::vector<double> sample);

/// Median of a sample (0 for an empty one).
double median_of(std::vector<double> sample);

/// Thread CPU seconds of the calling thread, and process CPU seconds.
double thread_cpu_seconds();
double process_cpu_seconds();

/// A plain text table with right-aligned numeric columns.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string str() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace rayorch::bench
