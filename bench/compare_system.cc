// `rayorch bench compare-system`: this project as one system of `bench compare`, run in its
// own process like every peer, so that its CPU seconds and peak memory are measured the same
// way (over its process tree) and nothing of the comparing process is counted.
//
// It reads the corpus file the peers read and writes a result in the peers' format
// (bench/peers/common.py write_result), OCR batches from the run's RPC events, OCR actors'
// readiness from their start events.
#include <time.h>

#include <array>
#include <chrono>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "bench.h"
#include <fmt/format.h>

#include <rayorch/report_page.h>

namespace rayorch::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Records the OCR Call's RPCs (rows, start, end in seconds since the run started) per actor,
// and when each OCR actor became ready (seconds since the executor was made).
class OcrEvents final : public ro::RunObserver {
 public:
  void on_run_start(const ro::RunStartEvent& e) override {
    for (std::size_t i = 0; i < e.calls.size(); ++i)
      if (e.calls[i].find("Ocr") != std::string::npos) ocr_call_ = static_cast<int>(i);
    for (std::size_t i = 0; i < e.pools.size(); ++i)
      if (e.pools[i].find("Ocr") != std::string::npos) {
        ocr_pool_ = static_cast<int>(i);
        actors.resize(static_cast<std::size_t>(e.actors_per_pool[i]));
      }
  }
  void on_actor_start(const ro::ActorStartEvent& e) override {
    if (e.pool == ocr_pool_ && e.error.empty()) actor(e.actor).ready = e.seconds;
  }
  void on_rpc(const ro::RpcEvent& e) override {
    if (e.call == ocr_call_ && e.status == "ok")
      actor(e.actor).batches.push_back(
          {static_cast<double>(e.rows), e.start_seconds, e.end_seconds});
  }

  struct Actor {
    std::optional<double> ready;  // unset: not ready before the run ended
    std::vector<std::array<double, 3>> batches;
  };
  std::vector<Actor> actors;

 private:
  Actor& actor(int index) {
    const auto i = static_cast<std::size_t>(index);
    if (i >= actors.size()) actors.resize(i + 1);
    return actors[i];
  }
  int ocr_call_ = -1;
  int ocr_pool_ = -1;
};

double process_cpu() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

template <class Pipeline, class Result, class Check>
nlohmann::json run_system(const std::vector<Doc>& docs, const WorkloadOptions& w,
                          Pipeline& pipeline, const std::string& report_path, Check check) {
  const auto t0 = Clock::now();
  const double cpu0 = process_cpu();
  auto program = ro::compile(pipeline);
  // ActorStartEvent::seconds count from here; the actors' constructors run in the background.
  const double made = std::chrono::duration<double>(Clock::now() - t0).count();
  ro::LocalBackend backend;
  backend.budget.cpus = w.topology.budget_cpus;
  ro::Executor<Pipeline> executor(program, backend);
  const double built = std::chrono::duration<double>(Clock::now() - t0).count();
  ro::RunOptions options;
  options.input_batch_size = w.input_batch_size;
  options.max_active_input_batches = w.max_active_input_batches;
  options.progress = false;
  options.report_path = report_path;
  auto events = std::make_shared<OcrEvents>();
  options.observers.push_back(events);
  auto run = executor.run(docs, options);
  const double e2e = std::chrono::duration<double>(Clock::now() - t0).count();
  ro::write_report_page(report_path, report_page_of(report_path));
  nlohmann::json out = {{"system", "rayorch (local executor)"},
                        {"version", "this build"},
                        {"startup_seconds", 0.0},
                        {"end_to_end_seconds", e2e},
                        {"driver_cpu_seconds", process_cpu()},
                        {"run_driver_cpu_seconds", process_cpu() - cpu0},
                        {"documents", nlohmann::json::object()}};
  std::vector<double> completions;
  for (double s : run.metrics.root_completed_seconds) completions.push_back(built + s);
  out["first_document_seconds"] = completions.empty() ? e2e : stats_of(completions).min;
  out["document_completion_seconds"] = completions;
  nlohmann::json ready = nlohmann::json::array(), batches = nlohmann::json::array(),
                 actors = nlohmann::json::array();
  for (const auto& a : events->actors) {
    // An actor with no start event became ready only after the run (the executor's close
    // waits for it): it took no part.
    if (!a.ready) continue;
    const double at = made + *a.ready;
    nlohmann::json own = nlohmann::json::array();
    for (const auto& b : a.batches) own.push_back({b[0], built + b[1], built + b[2]});
    ready.push_back(at);
    for (const auto& b : own) batches.push_back(b);
    actors.push_back({{"ready", at}, {"batches", own}});
  }
  out["ocr_ready_seconds"] = ready;
  out["ocr_batches"] = batches;
  out["ocr_actors"] = actors;
  // Per Call: its busy time and the actors its pool held over the run (a self-sizing pool's
  // targets; a fixed pool's replicas throughout), for the untuned regime's report.
  nlohmann::json calls = nlohmann::json::array();
  for (const auto& c : run.metrics.calls) {
    nlohmann::json held = nlohmann::json::array();
    for (const auto& p : run.metrics.pools)
      if (p.pool == c.udf)
        for (const auto& [at, n] : p.actors_over_time) held.push_back({at, n});
    if (held.empty()) held.push_back({0.0, c.actors});
    calls.push_back({{"call", c.call},
                     {"busy_seconds", c.busy_seconds},
                     {"run_seconds", run.metrics.elapsed_seconds},
                     {"actors_over_time", held}});
  }
  out["calls"] = calls;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const auto& o = run.outputs[i];
    if (!o.ok()) throw std::runtime_error(fmt::format("document {}: {}", i, o.issue().cause));
    out["documents"][std::to_string(docs[i].id)] = check(docs[i], o.value());
  }
  return out;
}

}  // namespace

std::string report_of(const std::string& out_path) {
  return out_path + ".report.json";
}

std::string report_page_of(const std::string& report_path) {
  return report_path.substr(0, report_path.size() - std::string_view(".json").size()) + ".html";
}

void run_compare_system(const std::string& corpus_path, const std::string& out_path) {
  std::ifstream in(corpus_path);
  if (!in) throw std::runtime_error(fmt::format("cannot read the corpus {}", corpus_path));
  const nlohmann::json corpus = nlohmann::json::parse(in);
  WorkloadOptions w;
  const auto& c = corpus.at("costs_ms");
  w.costs = Costs{c.at("render_per_page"), c.at("ocr_per_batch"), c.at("ocr_per_page"),
                  c.at("assemble_per_doc"), c.at("assemble_per_page")};
  const auto& t = corpus.at("topology");
  w.topology.render_replicas = t.at("render_replicas");
  w.topology.ocr_replicas = t.at("ocr_replicas");
  w.topology.ocr_batch = t.at("ocr_batch");
  w.topology.ocr_batch_wait_ms = t.value("ocr_batch_wait_ms", 0);
  w.topology.assemble_replicas = t.at("assemble_replicas");
  w.topology.auto_replicas = t.value("auto_replicas", false);
  w.topology.budget_cpus = t.value("budget_cpus", 0);
  const auto startup = corpus.value("startup", nlohmann::json::object());
  w.startup = StartupCosts{startup.value("render_ms", 0.0), startup.value("ocr_ms", 0.0),
                           startup.value("ocr_slow_ms", 0.0), startup.value("ocr_slow_every", 0)};
  w.input_batch_size = corpus.value("input_batch_size", w.input_batch_size);
  w.max_active_input_batches = corpus.value("max_active_input_batches", w.max_active_input_batches);
  std::vector<Doc> docs;
  for (const auto& d : corpus.at("documents"))
    docs.push_back(Doc{d.at("id"), d.at("pages"), false});
  const std::size_t payload =
      corpus.value("payload", nlohmann::json::object()).value("max_bytes", 0);

  // The run's JSON report and its page beside the result (docs/REPORT.md).
  const std::string report = report_of(out_path);
  nlohmann::json out;
  if (payload == 0) {
    SimPipeline pipeline(w.costs, w.topology, model_loads(w.startup));
    out = run_system<SimPipeline, DocResult>(
        docs, w, pipeline, report, [](const Doc& d, const DocResult& r) {
          if (r.doc != d.id)
            throw std::runtime_error(fmt::format("document {} came back as {}", d.id, r.doc));
          return r.pages;
        });
  } else {
    PayloadPipeline pipeline(w.costs, w.topology, model_loads(w.startup), payload);
    out = run_system<PayloadPipeline, PayloadDocResult>(
        docs, w, pipeline, report, [payload](const Doc& d, const PayloadDocResult& r) {
          std::uint64_t want = 0;
          for (std::uint32_t p = 0; p < d.pages; ++p) want += page_payload_size(d.id, p, payload);
          if (r.payload_bytes != want)
            throw std::runtime_error(fmt::format("document {}: {} payload bytes, expected {}", d.id,
                                                 r.payload_bytes, want));
          return r.result.pages;
        });
  }
  const std::string tmp = out_path + ".tmp";
  std::ofstream(tmp) << out.dump();
  std::rename(tmp.c_str(), out_path.c_str());
}

}  // namespace rayorch::bench
