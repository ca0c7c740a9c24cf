// `rayorch bench engine | ablation | failure | scaling | compare | memory | isolation`: the
// benchmark programs of bench/ behind one command (and `bench video`, video_bench_commands.cc, with
// the video workload). Each prints a table, or one JSON object with --json.
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <vector>

#include "bench.h"
#include "bench_options.h"
#include "commands.h"

namespace rayorch::cli {
namespace {

namespace rb = rayorch::bench;

void add_engine(CLI::App* bench) {
  auto o = std::make_shared<rb::EngineBenchOptions>();
  auto c = std::make_shared<Common>();
  auto* sub = bench->add_subcommand(
      "engine",
      "Control-plane throughput: the runtime alone (one thread, no-op commits) and the local "
      "executor with no-op UDFs; Grains/s and bytes per live Grain");
  add_common(sub, *c);
  sub->add_option("--docs", o->corpus.documents, "Documents in the corpus")->capture_default_str();
  sub->add_option("--seed", o->corpus.seed, "Corpus seed")->capture_default_str();
  sub->add_option("--batch", o->batch, "Batch size of every Call")->capture_default_str();
  sub->add_option("--local-ocr-replicas", o->local_ocr_replicas, "OCR actors of the local run")
      ->capture_default_str();
  sub->add_option("--input-batch-size", o->input_batch_size, "Rows per input batch (0: all)")
      ->capture_default_str();
  sub->add_option("--repeats", o->repeats, "Runs per layer")->capture_default_str();
  sub->add_option("--journal", o->journal_dir,
                  "Also time the local runs with a run journal written in this directory "
                  "(overhead against runs without, in alternating pairs) and the restore of the "
                  "finished journal");
  sub->add_flag("--live", o->live,
                "The local runs serve the live page and a client asks for it every 100 ms (what "
                "the page costs the driver)");
  sub->callback([sub, o, c] {
    if (c->quick) {
      quick_default(sub, "--docs", o->corpus.documents, std::size_t{200});
      quick_default(sub, "--repeats", o->repeats, 1);
    }
    finish(rb::run_engine_bench(*o), *c);
  });
}

void add_ablation(CLI::App* bench) {
  auto o = std::make_shared<rb::AblationOptions>();
  auto c = std::make_shared<Common>();
  auto* sub = bench->add_subcommand(
      "ablation",
      "Parent-bound batching, elastic LIFO and elastic FIFO (the full system) on one workload");
  add_common(sub, *c);
  add_workload(sub, o->workload);
  sub->add_option("--repeats", o->repeats, "Interleaved runs per configuration")
      ->capture_default_str();
  auto regime = std::make_shared<std::string>("overhead");
  sub->add_option("--regime", *regime,
                  "overhead: today's stage costs; assembly: a post-OCR stage (assemble + upload) "
                  "that costs most of what OCR costs, on few actors (4 OCR, 2 render, 1 "
                  "assemble at 2 ms/doc + 0.2 ms/page), so that a document finished early "
                  "overlaps its assembly with other documents' OCR")
      ->check(CLI::IsMember({"overhead", "assembly"}))
      ->capture_default_str();
  sub->callback([sub, o, c, regime] {
    if (*regime == "assembly") {
      auto& w = o->workload;
      quick_default(sub, "--ocr-replicas", w.topology.ocr_replicas, 4);
      quick_default(sub, "--render-replicas", w.topology.render_replicas, 2);
      quick_default(sub, "--assemble-replicas", w.topology.assemble_replicas, 1);
      quick_default(sub, "--assemble-ms-per-doc", w.costs.assemble_per_doc, 2.0);
      quick_default(sub, "--assemble-ms-per-page", w.costs.assemble_per_page, 0.2);
    }
    if (c->quick) {
      quick_workload(sub, o->workload);
      quick_default(sub, "--repeats", o->repeats, 1);
    }
    finish(rb::run_ablation(*o), *c);
  });
}

void add_failure(CLI::App* bench) {
  auto o = std::make_shared<rb::FailureOptions>();
  auto c = std::make_shared<Common>();
  // The paper's failure-containment parameters: 4 OCR actors, batch 48, a fixed 50 ms page
  // UDF call, page 0 of the largest 5% of documents poisoned.
  o->workload.topology.ocr_replicas = 4;
  o->workload.topology.ocr_batch = 48;
  o->workload.costs.ocr_per_batch = 50.0;
  o->workload.costs.ocr_per_page = 0.0;
  auto* sub = bench->add_subcommand(
      "failure",
      "A clean run against one where page 0 of the largest documents returns GroupFailure "
      "(the paper's parameters by default: 4 OCR actors, batch 48, 50 ms per OCR call)");
  add_common(sub, *c);
  add_workload(sub, o->workload);
  sub->add_option("--poison-fraction", o->poison_fraction, "Share of the largest documents")
      ->capture_default_str();
  sub->add_option("--repeats", o->repeats, "Paired runs")->capture_default_str();
  sub->add_option("--peers", o->peers,
                  "Also run these peers on the same corpora, each <peer>[:<arm>] (e.g. "
                  "reference,ray:groupby,daft:groupby,rayorch-ray; as root: Ray runs in a private "
                  "network namespace)");
  add_peer_options(sub, *o);
  sub->callback([sub, o, c] {
    if (c->quick) {
      quick_workload(sub, o->workload);
      quick_default(sub, "--repeats", o->repeats, 1);
    }
    finish(rb::run_failure(*o), *c);
  });
}

void add_scaling(CLI::App* bench) {
  auto o = std::make_shared<rb::ScalingOptions>();
  auto c = std::make_shared<Common>();
  // Enough pages for many OCR rounds at 64 accelerators, and CPU stages that never limit.
  auto& w = o->workload;
  w.corpus.documents = 4000;
  w.costs.render_per_page = 0.05;
  w.costs.ocr_per_batch = 10.0;
  w.costs.ocr_per_page = 0.5;
  w.costs.assemble_per_doc = 0.2;
  w.costs.assemble_per_page = 0.0;
  w.topology.render_replicas = 8;
  w.topology.ocr_batch = 16;
  w.topology.assemble_replicas = 4;
  w.input_batch_size = 256;
  w.max_active_input_batches = 4;
  auto* sub = bench->add_subcommand(
      "scaling", "The same input at several simulated accelerator (OCR replica) counts");
  add_common(sub, *c);
  add_workload(sub, o->workload);
  sub->add_option("--accelerators", o->replicas, "Comma-separated OCR replica counts")
      ->capture_default_str();
  sub->add_option("--repeats", o->repeats, "Runs per point")->capture_default_str();
  sub->callback([sub, o, c] {
    if (c->quick) {
      quick_workload(sub, o->workload);
      quick_default(sub, "--accelerators", o->replicas, std::string("2,4"));
    }
    finish(rb::run_scaling(*o), *c);
  });
}

void add_compare(CLI::App* bench) {
  auto o = std::make_shared<rb::CompareOptions>();
  auto c = std::make_shared<Common>();
  auto full = std::make_shared<bool>(false);
  auto no_peers = std::make_shared<bool>(false);
  auto payload_kib = std::make_shared<std::size_t>(1024);
  o->workload.corpus.documents = 96;
  auto* sub = bench->add_subcommand(
      "compare",
      "This project against the reference, Ray Data and Daft (bench/peers) on the same corpus, "
      "each system in its own process tree (Ray peers in a private loopback-only network "
      "namespace); checks that every system produced the same per-document ordered outputs");
  add_common(sub, *c);
  add_workload(sub, o->workload);
  sub->add_option("--regime", o->regime,
                  "overhead: today's stage costs; realistic: every stage cost 100x and the "
                  "368-document corpus (runs of about two minutes); payload: OCR results carry "
                  "64 KiB-1 MiB payloads; startup: realistic, and every constructor a model load "
                  "(OCR 20 s, one in eight 120 s; render 1 s); untuned: realistic costs on 96 "
                  "documents, this project's pools sizing themselves (replicas=auto) within "
                  "--budget-cpus against a grid of fixed allocations of it, the peers at the "
                  "stages' actor counts")
      ->check(CLI::IsMember({"overhead", "realistic", "payload", "startup", "untuned"}))
      ->capture_default_str();
  auto& load = o->workload.startup;
  sub->add_option("--render-startup-ms", load.render_ms, "Each render constructor's model load");
  sub->add_option("--ocr-startup-ms", load.ocr_ms, "Each OCR constructor's model load");
  sub->add_option("--ocr-slow-startup-ms", load.ocr_slow_ms,
                  "The model load of one OCR constructor in --ocr-slow-every");
  sub->add_option("--ocr-slow-every", load.ocr_slow_every,
                  "One OCR constructor in this many takes --ocr-slow-startup-ms (0: none)")
      ->check(CLI::NonNegativeNumber);
  auto budget = std::make_shared<int>(0);
  sub->add_option("--budget-cpus", *budget,
                  "untuned regime: the CPUs (one per actor) every allocation spends (default: the "
                  "stages' actor counts summed, 14)")
      ->check(CLI::PositiveNumber);
  sub->add_flag("--peer-defaults", o->workload.topology.peer_defaults,
                "untuned regime: the peers at their own defaults (no actor or task counts: the "
                "reference's one actor per Module, Ray Data's and Daft's default pools) on a Ray "
                "of --budget-cpus CPUs, instead of at the stages' actor counts");
  sub->add_flag("--peer-grid", o->peer_grid,
                "untuned regime: every peer runs each allocation of the grid too (once, before "
                "the measured runs); its fastest is its best tuned allocation");
  sub->add_option("--grid-render", o->grid_render,
                  "untuned regime: the render actor counts of the grid of fixed allocations")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  sub->add_option("--grid-assemble", o->grid_assemble,
                  "untuned regime: the assemble actor counts of the grid (OCR gets the rest)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  sub->add_option("--payload-max-kib", *payload_kib,
                  "payload regime: the largest page payload (the smallest is 1/16 of it)")
      ->capture_default_str();
  sub->add_flag("--full", *full, "The full ablation-size corpus (368 documents)");
  sub->add_flag("--no-peers", *no_peers, "Run this project only");
  sub->add_option("--peers", o->peers,
                  "Comma-separated peers, each <peer>[:<arm>] (bench/peers/<peer>_peer.py; arms "
                  "of ray and daft: groupby, driver; rayorch-ray: this project on Ray, which "
                  "the targets are then evaluated with)")
      ->capture_default_str();
  sub->add_option("--peer-arg", o->peer_args, "An extra argument for every peer script");
  sub->add_option("--repeats", o->repeats, "Interleaved repeats of every system")
      ->capture_default_str();
  add_peer_options(sub, *o);
  sub->add_option("--tune-seed", o->tune_seed,
                  "Before measuring, tune the groupby partitions of the Ray Data and Daft groupby "
                  "arms on a corpus with this seed (not the measured --seed) and measure each arm "
                  "with its fastest count (0: no tuning; the peers' default is the assemble "
                  "actors)")
      ->capture_default_str();
  sub->add_option("--tune-partitions", o->tune_partitions,
                  "Partition counts to try (default: the assemble actors x 1/2, 1, 2, 4)")
      ->check(CLI::PositiveNumber);
  sub->callback([sub, o, c, full, no_peers, payload_kib, budget] {
    if (*full) quick_default(sub, "--docs", o->workload.corpus.documents, std::size_t{368});
    if (o->regime == "untuned") {
      // 96 documents keep the grid's runs (one per allocation) to minutes.
      if (!*full) quick_default(sub, "--docs", o->workload.corpus.documents, std::size_t{96});
      auto& t = o->workload.topology;
      t.auto_replicas = true;
      t.budget_cpus =
          *budget > 0 ? *budget : t.render_replicas + t.ocr_replicas + t.assemble_replicas;
    } else if (*budget > 0) {
      throw CLI::ValidationError("--budget-cpus", "applies to --regime untuned only");
    } else if (o->workload.topology.peer_defaults) {
      throw CLI::ValidationError("--peer-defaults", "applies to --regime untuned only");
    } else if (o->peer_grid) {
      throw CLI::ValidationError("--peer-grid", "applies to --regime untuned only");
    }
    if (*no_peers) o->peers.clear();
    if (o->regime == "startup") {
      auto& l = o->workload.startup;
      quick_default(sub, "--render-startup-ms", l.render_ms, 1000.0);
      quick_default(sub, "--ocr-startup-ms", l.ocr_ms, 20000.0);
      quick_default(sub, "--ocr-slow-startup-ms", l.ocr_slow_ms, 120000.0);
      quick_default(sub, "--ocr-slow-every", l.ocr_slow_every, 8);
    }
    if (o->regime == "realistic" || o->regime == "startup" || o->regime == "untuned") {
      // Every stage cost the user did not set, 100 times today's.
      auto& k = o->workload.costs;
      if (o->regime != "untuned" || *full)
        quick_default(sub, "--docs", o->workload.corpus.documents, std::size_t{368});
      quick_default(sub, "--render-ms-per-page", k.render_per_page, k.render_per_page * 100);
      quick_default(sub, "--ocr-ms-per-batch", k.ocr_per_batch, k.ocr_per_batch * 100);
      quick_default(sub, "--ocr-ms-per-page", k.ocr_per_page, k.ocr_per_page * 100);
      quick_default(sub, "--assemble-ms-per-doc", k.assemble_per_doc, k.assemble_per_doc * 100);
      quick_default(sub, "--assemble-ms-per-page", k.assemble_per_page, k.assemble_per_page * 100);
    }
    if (o->regime == "payload") o->payload_max_bytes = *payload_kib * 1024;
    if (c->quick) {
      quick_default(sub, "--docs", o->workload.corpus.documents, std::size_t{8});
      quick_default(sub, "--max-pages", o->workload.corpus.max_pages, std::uint32_t{40});
    }
    finish(rb::run_compare(*o), *c);
  });

  // The system `compare` runs for this project, in its own process.
  auto corpus = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto* self = bench->add_subcommand(
      "compare-system", "One run of this project for bench compare (reads its corpus file)");
  self->group("");  // internal: not listed in --help
  self->add_option("--corpus", *corpus, "The corpus file written by bench compare")->required();
  self->add_option("--out", *out, "Where to write the result")->required();
  self->callback([corpus, out] { rb::run_compare_system(*corpus, *out); });
}

void add_isolation(CLI::App* bench) {
  auto o = std::make_shared<rb::IsolationOptions>();
  auto c = std::make_shared<Common>();
  auto* sub = bench->add_subcommand(
      "isolation",
      "Round trip of an RPC to a process-isolated worker (empty UDF, 1 and 32 rows) and the "
      "cost of large payloads, against the same calls on threads");
  add_common(sub, *c);
  sub->add_option("--rpcs", o->rpcs, "RPCs per empty-call measurement")->capture_default_str();
  sub->add_option("--payload-rpcs", o->payload_rpcs, "Most RPCs per payload measurement")
      ->capture_default_str();
  sub->add_option("--payload-mib-per-run", o->payload_mib_per_run,
                  "Fewer RPCs for large payloads: at most this many MiB per run")
      ->capture_default_str();
  sub->add_option("--payload-kib", o->payload_kib, "Payload sizes per RPC, each way (KiB)")
      ->capture_default_str();
  sub->add_option("--repeats", o->repeats, "Runs per measurement (best of)")->capture_default_str();
  sub->callback([sub, o, c] {
    if (c->quick) {
      quick_default(sub, "--rpcs", o->rpcs, std::size_t{200});
      quick_default(sub, "--payload-rpcs", o->payload_rpcs, std::size_t{10});
      quick_default(sub, "--repeats", o->repeats, 1);
    }
    finish(rb::run_isolation(*o), *c);
  });
}

void add_memory(CLI::App* bench) {
  auto o = std::make_shared<rb::MemoryOptions>();
  auto c = std::make_shared<Common>();
  auto* sub = bench->add_subcommand(
      "memory",
      "Peak RSS of a fan-out with large child payloads (source -> frames -> 64 KiB decoded "
      "payloads -> 16-byte summaries -> one value per source) at two input sizes with the same "
      "input batching, each in its own process");
  add_common(sub, *c);
  sub->add_option("--sources", o->sources,
                  "Source counts, each run in a fresh process (e.g. 16,64 or 16 64)")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--children", o->children, "Frames per source")->capture_default_str();
  sub->add_option("--payload-kib", o->payload_kib, "Payload of one decoded frame (KiB)")
      ->capture_default_str();
  sub->add_option("--input-batch-size", o->input_batch_size, "Sources per input batch (0: all)")
      ->capture_default_str();
  sub->add_option("--max-active", o->max_active_input_batches, "Input batches admitted at once")
      ->capture_default_str();
  sub->add_option("--decode-replicas", o->decode_replicas, "Decode actors")->capture_default_str();
  sub->add_option("--decode-batch", o->decode_batch, "Decode batch size")->capture_default_str();
  sub->add_option("--summary-replicas", o->summary_replicas, "Summarise actors")
      ->capture_default_str();
  sub->add_option("--summary-batch", o->summary_batch, "Summarise batch size")
      ->capture_default_str();
  sub->add_option("--rss-cap", o->rss_cap_mib,
                  "A run stops itself when its resident memory passes this (MiB)")
      ->capture_default_str();
  sub->footer(
      "Why these defaults: each source carries 2,000 x 64 KiB = 125 MiB of payload\n"
      "(64 sources: 7.8 GiB). Input batches of 8 sources with 2 active admit 16 sources at a\n"
      "time, so 16 sources fill the admission window exactly and 64 sources pass 8 input\n"
      "batches through the same window. If values live until their input batch retires, up\n"
      "to 2 GiB of payload (the 16 admitted sources) stays resident at both sizes. If each\n"
      "value is released once its consumers are done, only the frames between decode and\n"
      "summarise stay (2 actors each, batches of 64, so 4 MiB per RPC output), which fits\n"
      "the 256 MiB target, and the peak no longer depends on the number of sources (target:\n"
      "within 20%). Nothing holds decode back while summarise lags: 'peak frames awaiting\n"
      "summary' shows how far it ran ahead, a floor for any release policy.\n"
      "Peak RSS is the kernel's high-water mark of each child process (getrusage ru_maxrss\n"
      "and VmHWM). --quick: 2 and 4 sources of 64 frames of 16 KiB, one source per batch.\n");
  sub->callback([sub, o, c] {
    if (c->quick) {
      quick_default(sub, "--sources", o->sources, std::vector<std::size_t>{2, 4});
      quick_default(sub, "--children", o->children, std::size_t{64});
      quick_default(sub, "--payload-kib", o->payload_kib, std::size_t{16});
      quick_default(sub, "--input-batch-size", o->input_batch_size, std::size_t{1});
    }
    finish(rb::run_memory(*o), *c);
  });
}

}  // namespace

void add_bench_commands(CLI::App& app) {
  auto* bench = app.add_subcommand(
      "bench",
      "Benchmarks on a seeded synthetic document workload, and on generated videos with the "
      "video workload (see BENCHMARKS.md)");
  bench->require_subcommand(1);
  add_engine(bench);
  add_ablation(bench);
  add_failure(bench);
  add_scaling(bench);
  add_compare(bench);
  add_memory(bench);
  add_isolation(bench);
#ifdef RAYORCH_WITH_VIDEO
  add_video_bench_command(*bench);
#endif
}

}  // namespace rayorch::cli
