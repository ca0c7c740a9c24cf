// The synthetic document workload of every benchmark: its stages' costs and values are
// defined once in workloads/synthetic/documents.h; this adds a seeded corpus of documents with
// a long-tailed page count, the stages as UDFs of this project's pipelines, and the
// benchmarks' statistics.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
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

/// A constructor's simulated model load (the startup regime of `bench compare`): it sleeps
/// `ms`, except every `slow_every`-th claim of one pool, which sleeps `slow_ms` (a node that
/// must first pull its environment). Copies share one claim counter, so the replicas built
/// from one Module's captured arguments draw distinct claims; the counter is atomic because
/// replicas may be constructed on several threads at once.
class ModelLoad {
 public:
  ModelLoad() = default;
  ModelLoad(double ms, double slow_ms = 0, int slow_every = 0)
      : ms_(ms), slow_ms_(slow_ms), slow_every_(slow_every) {}
  /// Sleeps for this constructor's load.
  void operator()() const;
  double ms() const { return ms_; }

 private:
  double ms_ = 0;
  double slow_ms_ = 0;
  int slow_every_ = 0;  ///< 0: no slow loads
  std::shared_ptr<std::atomic<int>> claims_ = std::make_shared<std::atomic<int>>(0);
};

/// The model loads of every Module of the simulated pipeline (all zero outside the startup
/// regime; the assemble stage loads no model).
struct ModelLoads {
  ModelLoad render;
  ModelLoad ocr;
};

/// The startup regime's model loads in milliseconds, as plain options (all zero: none).
struct StartupCosts {
  double render_ms = 0;
  double ocr_ms = 0;
  double ocr_slow_ms = 0;
  int ocr_slow_every = 0;  ///< one OCR constructor in this many takes ocr_slow_ms (0: none)
};

/// Fresh loads (their own claim counters) for one pipeline.
inline ModelLoads model_loads(const StartupCosts& s) {
  return {ModelLoad(s.render_ms), ModelLoad(s.ocr_ms, s.ocr_slow_ms, s.ocr_slow_every)};
}

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
  /// This project on Ray only (rayorch-ray): render, OCR and assemble share one co-located
  /// pool of ocr_replicas actors (DESIGN 5.12), so the run starts that many actor processes
  /// instead of the three pools' sum.
  bool ray_colocate = false;
  /// This project only (the untuned regime of bench compare): every Module sizes itself
  /// (auto_replicas, up to budget_cpus actors each) within a budget of budget_cpus CPUs, one
  /// per actor; the *_replicas above are then unused. Peers keep their fixed counts.
  bool auto_replicas = false;
  int budget_cpus = 0;
  /// The untuned regime: the peers run at their own defaults (no actor or task counts; the
  /// reference's one actor per Module, Ray Data's default pools) on a Ray of budget_cpus CPUs,
  /// instead of at the counts above.
  bool peer_defaults = false;
};

/// `module` with its pool sized as `t` says: `replicas` actors, or sizing itself.
template <class M>
M sized(M&& module, int replicas, const Topology& t) {
  if (t.auto_replicas)
    module.auto_replicas(0, std::max(1, t.budget_cpus));
  else
    module.replicas(replicas);
  return std::forward<M>(module);
}

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
  explicit RenderUdf(Costs c, const ModelLoad& load = {}) : costs(c) { load(); }
  std::vector<std::vector<Page>> run(ro::Column<Doc> docs);
  Costs costs;
};

struct OcrUdf {
  explicit OcrUdf(Costs c, const ModelLoad& load = {}) : costs(c) { load(); }
  std::vector<ro::Row<std::uint64_t>> run(ro::Column<Page> pages);
  Costs costs;
};

struct AssembleUdf {
  explicit AssembleUdf(Costs c) : costs(c) {}
  std::vector<DocResult> run(ro::Column<ro::Group<std::uint64_t>> pages, ro::Column<Doc> docs);
  Costs costs;
};

/// render -> expand -> ocr -> reduce -> assemble, with the UDFs `Ocr` (made from the costs, its
/// model load and `ocr_args`) and `Assemble`, whose documents are `Result`s: SimPipeline and
/// PayloadPipeline.
template <class Ocr, class Assemble, class Result>
struct DocumentPipeline : ro::Pipeline {
  template <class... OcrArgs>
  DocumentPipeline(const Costs& costs, const Topology& t, const ModelLoads& loads,
                   OcrArgs... ocr_args)
      : render(sized(ro::Module<RenderUdf>(costs, loads.render), t.render_replicas, t)
                   .batch_size(t.render_batch)),
        ocr(sized(ro::Module<Ocr>(costs, loads.ocr, ocr_args...), t.ocr_replicas, t)
                .batch_size(t.ocr_batch)
                .batch_wait(std::chrono::milliseconds(t.ocr_batch_wait_ms))),
        assemble(sized(ro::Module<Assemble>(costs), t.assemble_replicas, t)
                     .batch_size(t.assemble_batch)) {}

  ro::Module<RenderUdf> render;
  ro::Module<Ocr> ocr;
  ro::Module<Assemble> assemble;

  ro::Port<Result> forward(ro::Port<Doc> doc) {
    auto pages = ro::F::expand(render(doc));
    return assemble(ro::F::reduce(ocr(pages)), doc);
  }
};

/// The simulated workload: SimPipeline(costs, topology, loads).
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
  PayloadOcrUdf(Costs c, const ModelLoad& load, std::size_t largest)
      : costs(c), max_bytes(largest) {
    load();
  }
  std::vector<PagePayload> run(ro::Column<Page> pages);
  Costs costs;
  std::size_t max_bytes;
};

struct PayloadAssembleUdf {
  explicit PayloadAssembleUdf(Costs c) : costs(c) {}
  std::vector<PayloadDocResult> run(ro::Column<ro::Group<PagePayload>> pages, ro::Column<Doc> docs);
  Costs costs;
};

/// SimPipeline with payload-carrying OCR results: PayloadPipeline(costs, topology, loads,
/// max_bytes), `max_bytes` > 0.
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
