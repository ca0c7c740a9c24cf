// The options and the ending the `rayorch bench` subcommands share. See bench_options.h.
#include "bench_options.h"

#include <cstdio>
#include <iostream>

#include "commands.h"

namespace rayorch::cli {

namespace rb = rayorch::bench;

void add_common(CLI::App* sub, Common& c) {
  sub->add_flag("--json", c.json, "Print one JSON object instead of the tables");
  sub->add_flag("--quick", c.quick, "Tiny sizes: proves the benchmark runs, measures nothing");
  sub->add_flag("--strict", c.strict, "Exit with status 1 when a target is missed");
}

void add_workload(CLI::App* sub, rb::WorkloadOptions& w) {
  // Every option shows its default in --help.
  auto option = [sub](const char* name, auto& value, const char* help) {
    return sub->add_option(name, value, help)->capture_default_str();
  };
  auto& k = w.corpus;
  option("--docs", k.documents, "Documents in the corpus");
  option("--max-pages", k.max_pages, "Pages of the largest document");
  option("--median-pages", k.median_pages, "Median pages per document");
  option("--sigma", k.sigma, "Spread of the log-normal page count (tail weight)");
  option("--seed", k.seed, "Corpus seed");
  auto& c = w.costs;
  option("--render-ms-per-page", c.render_per_page, "Render cost per page (ms)");
  option("--ocr-ms-per-batch", c.ocr_per_batch, "OCR fixed cost per batch (ms)");
  option("--ocr-ms-per-page", c.ocr_per_page, "OCR cost per page (ms)");
  option("--assemble-ms-per-doc", c.assemble_per_doc, "Assemble cost per document (ms)");
  option("--assemble-ms-per-page", c.assemble_per_page, "Assemble cost per page (ms)");
  auto& t = w.topology;
  option("--render-replicas", t.render_replicas, "Render actors");
  option("--ocr-replicas", t.ocr_replicas, "OCR actors (simulated accelerators)");
  option("--ocr-batch", t.ocr_batch, "OCR batch size");
  option("--ocr-batch-wait-ms", t.ocr_batch_wait_ms,
         "OCR Module::batch_wait: wait this long for a full batch while pages are still coming");
  option("--assemble-replicas", t.assemble_replicas, "Assemble actors");
  option("--ray-tasks-in-flight", t.ray_tasks_in_flight,
         "rayorch-ray only: max_tasks_in_flight_per_actor of every Module (calls kept at each "
         "Ray actor; 0: the Ray backend's default)")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--ray-colocate", t.ray_colocate,
                "rayorch-ray only: render, OCR and assemble share one co-located pool of "
                "--ocr-replicas actors (fewer actor processes to start)");
  option("--input-batch-size", w.input_batch_size, "Source rows per input batch (0: all)");
  option("--max-active", w.max_active_input_batches, "Input batches admitted at once");
}

void finish(const rb::Report& r, const Common& c) {
  if (c.json)
    std::cout << r.json.dump(2) << "\n";
  else
    std::cout << r.text;
  std::cout.flush();
  if (!r.checks_passed) {
    std::fprintf(stderr, "rayorch bench: an output check failed (see above)\n");
    throw CLI::RuntimeError(kSomeFailed);
  }
  if (c.strict && !r.targets_met) throw CLI::RuntimeError(kSomeFailed);
}

}  // namespace rayorch::cli
