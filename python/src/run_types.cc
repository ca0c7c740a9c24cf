#include "run_types.h"

#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "rayorch/journal.h"
#include "rayorch/metrics.h"
#include "rayorch/module_options.h"
#include "rayorch/report_page.h"
#include "rayorch/run_options.h"
#include "rayorch/sink.h"

namespace rayorch::python {

namespace nb = nanobind;

namespace {

double seconds_of(std::chrono::milliseconds d) {
  return static_cast<double>(d.count()) / 1000.0;
}
std::chrono::milliseconds milliseconds_of(double seconds) {
  return std::chrono::milliseconds(std::llround(seconds * 1000.0));
}

}  // namespace

void bind_run_options(nb::module_& m) {
  nb::class_<LiveOptions>(m, "LiveOptions",
                          "The live page of a run (rayorch::LiveOptions); off unless enabled.")
      .def(nb::init<>())
      .def_rw("enabled", &LiveOptions::enabled)
      .def_rw("host", &LiveOptions::host)
      .def_rw("port", &LiveOptions::port)
      .def_rw("token", &LiveOptions::token)
      .def_rw("on_listen", &LiveOptions::on_listen,
              "Called with the page's URL once it listens (None: printed on stderr)");
  m.def("write_report_page", &write_report_page, nb::arg("report_path"), nb::arg("page_path"),
        "Writes the report page of the JSON report at report_path to page_path (atomically); "
        "ValueError naming what is wrong with the report.");
  nb::class_<JournalOptions>(m, "JournalOptions",
                             "The run journal of a run (rayorch::JournalOptions); off when "
                             "`path` is empty.")
      .def(nb::init<>())
      .def_rw("path", &JournalOptions::path)
      .def_rw("retry_failed", &JournalOptions::retry_failed)
      .def_rw("force", &JournalOptions::force)
      .def_rw("allow_other_inputs", &JournalOptions::allow_other_inputs)
      .def_rw("sync_every_records", &JournalOptions::sync_every_records)
      .def_prop_rw(
          "sync_interval_s", [](const JournalOptions& o) { return seconds_of(o.sync_interval); },
          [](JournalOptions& o, double s) { o.sync_interval = milliseconds_of(s); },
          "seconds, kept in whole milliseconds")
      .def_prop_rw(
          "write_interval_s", [](const JournalOptions& o) { return seconds_of(o.write_interval); },
          [](JournalOptions& o, double s) { o.write_interval = milliseconds_of(s); },
          "seconds, kept in whole milliseconds");

  nb::class_<SinkOptions>(m, "SinkOptions",
                          "Where a run's sink commits its parts (rayorch::SinkOptions, without "
                          "the format: run() takes the Python format object); off when "
                          "directory is empty.")
      .def(nb::init<>())
      .def_rw("directory", &SinkOptions::directory)
      .def_rw("rows_per_part", &SinkOptions::rows_per_part)
      .def_rw("bytes_per_part", &SinkOptions::bytes_per_part)
      .def_prop_rw(
          "max_part_age_s", [](const SinkOptions& o) { return seconds_of(o.max_part_age); },
          [](SinkOptions& o, double s) { o.max_part_age = milliseconds_of(s); },
          "seconds, kept in whole milliseconds (0: no limit)");

  nb::class_<RunOptions>(m, "RunOptions", "The options of one run (rayorch::RunOptions).")
      .def(nb::init<>())
      .def_rw("input_batch_size", &RunOptions::input_batch_size)
      .def_rw("max_active_input_batches", &RunOptions::max_active_input_batches)
      .def_prop_rw(
          "queue_order",
          [](const RunOptions& o) { return o.queue_order == QueueOrder::lifo ? "lifo" : "fifo"; },
          [](RunOptions& o, const std::string& order) {
            if (order != "fifo" && order != "lifo")
              throw std::invalid_argument("queue_order must be 'fifo' or 'lifo'");
            o.queue_order = order == "lifo" ? QueueOrder::lifo : QueueOrder::fifo;
          },
          "'fifo' or 'lifo'")
      .def_prop_rw(
          "reservation",
          [](const RunOptions& o) -> std::optional<std::string> {
            if (!o.reservation) return std::nullopt;
            return *o.reservation == Reservation::parent_bound ? "parent_bound" : "elastic";
          },
          [](RunOptions& o, std::optional<std::string> r) {
            if (r && *r != "elastic" && *r != "parent_bound")
              throw std::invalid_argument("reservation must be None, 'elastic' or 'parent_bound'");
            o.reservation = !r ? std::nullopt
                               : std::optional(*r == "parent_bound" ? Reservation::parent_bound
                                                                    : Reservation::elastic);
          },
          "None (each Module's own), 'elastic' or 'parent_bound'")
      .def_rw("backpressure", &RunOptions::backpressure)
      .def_rw("progress", &RunOptions::progress)
      .def_rw("crash_record", &RunOptions::crash_record)
      .def_prop_rw(
          "progress_log_interval_s",
          [](const RunOptions& o) { return seconds_of(o.progress_log_interval); },
          [](RunOptions& o, double s) { o.progress_log_interval = milliseconds_of(s); })
      .def_rw("trace_path", &RunOptions::trace_path)
      .def_rw("report_path", &RunOptions::report_path)
      .def_rw("live", &RunOptions::live)
      .def_rw("journal", &RunOptions::journal)
      .def_rw("sink", &RunOptions::sink)
      .def_rw("max_failed_roots", &RunOptions::max_failed_roots)
      .def_rw("max_failed_fraction", &RunOptions::max_failed_fraction)
      .def_rw("min_roots_for_failed_fraction", &RunOptions::min_roots_for_failed_fraction)
      .def_rw("dead_letters", &RunOptions::dead_letters)
      .def_rw("dead_letter_fields", &RunOptions::dead_letter_fields);
}

void bind_run_metrics(nb::module_& m) {
  nb::class_<CallMetrics>(m, "CallMetrics", "One Call's counters for one run.")
      .def_ro("call", &CallMetrics::call)
      .def_ro("udf", &CallMetrics::udf)
      .def_ro("actors", &CallMetrics::actors)
      .def_ro("batch_size", &CallMetrics::batch_size)
      .def_ro("mean_batch_fill", &CallMetrics::mean_batch_fill)
      .def_ro("rpcs", &CallMetrics::rpcs)
      .def_ro("grain_dispatches", &CallMetrics::grain_dispatches)
      .def_ro("requeues", &CallMetrics::requeues)
      .def_ro("failed_rpcs", &CallMetrics::failed_rpcs)
      .def_ro("suppressed_by_barrier", &CallMetrics::suppressed_by_barrier)
      .def_ro("batch_size_histogram", &CallMetrics::batch_size_histogram)
      .def_ro("rpc_sizes", &CallMetrics::rpc_sizes)
      .def_ro("busy_seconds", &CallMetrics::busy_seconds)
      .def_ro("actors_replaced", &CallMetrics::actors_replaced);

  nb::class_<InputBatchMetrics>(m, "InputBatchMetrics", "Counters of one input batch.")
      .def_ro("index", &InputBatchMetrics::index)
      .def_ro("first_row", &InputBatchMetrics::first_row)
      .def_ro("rows", &InputBatchMetrics::rows)
      .def_ro("grains", &InputBatchMetrics::grains)
      .def_ro("rpcs", &InputBatchMetrics::rpcs)
      .def_ro("admitted_seconds", &InputBatchMetrics::admitted_seconds)
      .def_ro("completed_seconds", &InputBatchMetrics::completed_seconds)
      .def_ro("entities", &InputBatchMetrics::entities)
      .def_ro("items", &InputBatchMetrics::items)
      .def_ro("expansions", &InputBatchMetrics::expansions)
      .def_ro("released_values", &InputBatchMetrics::released_values);

  nb::class_<ActorStartMetrics>(m, "ActorStartMetrics",
                                "When one actor's constructor finished (eager start).")
      .def_ro("actor", &ActorStartMetrics::actor)
      .def_ro("started_seconds", &ActorStartMetrics::started_seconds)
      .def_ro("error", &ActorStartMetrics::error);

  nb::class_<PoolResizeMetrics>(m, "PoolResizeMetrics",
                                "A self-sizing pool's decision (DESIGN 6.1.7).")
      .def_ro("seconds", &PoolResizeMetrics::seconds)
      .def_ro("from_actors", &PoolResizeMetrics::from)
      .def_ro("to_actors", &PoolResizeMetrics::to)
      .def_ro("reason", &PoolResizeMetrics::reason);

  nb::class_<PoolMetrics>(m, "PoolMetrics", "The starts of one pool's actors.")
      .def_ro("pool", &PoolMetrics::pool)
      .def_ro("actors", &PoolMetrics::actors)
      .def_ro("started", &PoolMetrics::started)
      .def_ro("resizes", &PoolMetrics::resizes)
      .def_ro("actors_over_time", &PoolMetrics::actors_over_time);

  nb::class_<NodeLossMetrics>(m, "NodeLossMetrics", "A cluster node the run lost.")
      .def_ro("node", &NodeLossMetrics::node)
      .def_ro("address", &NodeLossMetrics::address)
      .def_ro("detected_seconds", &NodeLossMetrics::detected_seconds)
      .def_ro("cause", &NodeLossMetrics::cause);

  nb::class_<ExpandMetrics>(m, "ExpandMetrics", "How many children one expansion made per parent.")
      .def_ro("call", &ExpandMetrics::call)
      .def_ro("port", &ExpandMetrics::port)
      .def_ro("parents", &ExpandMetrics::parents)
      .def_ro("children", &ExpandMetrics::children)
      .def_ro("fan_out_histogram", &ExpandMetrics::fan_out_histogram);

  nb::class_<RunMetrics>(m, "RunMetrics", "Metrics of one run (rayorch::RunMetrics).")
      .def_ro("elapsed_seconds", &RunMetrics::elapsed_seconds)
      .def_ro("calls", &RunMetrics::calls)
      .def_ro("pools", &RunMetrics::pools)
      .def_ro("input_batches", &RunMetrics::input_batches)
      .def_ro("peak_active_input_batches", &RunMetrics::peak_active_input_batches)
      .def_ro("expands", &RunMetrics::expands)
      .def_ro("root_completed_seconds", &RunMetrics::root_completed_seconds)
      .def_ro("stale_reports_rejected", &RunMetrics::stale_reports_rejected)
      .def_ro("actors_replaced", &RunMetrics::actors_replaced)
      .def_ro("values_rebuilt", &RunMetrics::values_rebuilt)
      .def_ro("grains_reexecuted", &RunMetrics::grains_reexecuted)
      .def_ro("rebuild_seconds", &RunMetrics::rebuild_seconds)
      .def_ro("node_losses", &RunMetrics::node_losses)
      .def_ro("roots_by_outcome", &RunMetrics::roots_by_outcome)
      .def_ro("roots_restored", &RunMetrics::roots_restored)
      .def_ro("journal_discarded_bytes", &RunMetrics::journal_discarded_bytes)
      .def_ro("file_errors", &RunMetrics::file_errors);
}

}  // namespace rayorch::python
