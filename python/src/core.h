// Core: one executor core (the local backend, the deterministic sync core, or the Ray
// backend's pools under the one driver) running a Program on Python source columns.
//
// run() releases the GIL for the whole run, so UDFs that release it (sleep, I/O, native code)
// overlap; every callback into Python (row delivery, progress, journal pickling) takes it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trace.h"
#include <nanobind/nanobind.h>

#include "rayorch/executor.h"
#include "rayorch/metrics.h"
#include "rayorch/run_options.h"

namespace rayorch::python {

class Core {
 public:
  /// The local backend. With `server_command`, its process-isolated pools start their
  /// worker server as that command with `server_payload` (process_workers.h).
  /// `budget`: what self-sizing pools may hold (DESIGN 6.1.7);
  /// `random_resize_seed` (testing only) draws their sizes at random.
  static Core local(const Program& program,
                    std::optional<std::vector<std::string>> server_command = std::nullopt,
                    nanobind::bytes server_payload = nanobind::bytes(""),
                    ResourceBudget budget = {}, std::uint64_t random_resize_seed = 0);
  /// The Ray backend: `backend` is a started rayorch_cpp._ray_backend.RayBackend (or an
  /// object with its contract); `budget` bounds its self-sizing pools.
  static Core ray(const Program& program, nanobind::object backend, ResourceBudget budget = {},
                  std::uint64_t random_resize_seed = 0);
  static Core sync(const Program& program, bool wire);

  /// Runs the program on one sequence per source column, or with `lazy` one iterable per
  /// column, pulled as input batches are admitted (python_feed.h). With `journal_keys`
  /// (one per row; with `lazy`, key(row, values) -> str, called as each row is pulled) the
  /// run goes through the run journal, dead letters and error budget of `options`. Without
  /// `on_row`, returns one list per output (source order) and the metrics; with it, calls
  /// on_row(row, outputs) as each row becomes terminal and the lists are empty.
  /// `on_progress(done, total)` is called at most every 200 ms and at the last row; `total`
  /// is None while a lazy source has not ended. With `options.sink` enabled, `sink_format`
  /// writes its parts (python_sink.h; `journal_keys` required: a sink keys roots as the
  /// journal does) and, without `on_row`, the lists are empty: the outputs are in the sink.
  nanobind::tuple run(nanobind::list columns, const RunOptions& options,
                      nanobind::object journal_keys, nanobind::object on_row,
                      nanobind::object on_progress, bool lazy,
                      nanobind::object sink_format = nanobind::none());

  /// Blocks until every pool has a ready actor (eager start); the GIL is released meanwhile.
  void await_actors();
  void close();
  bool closed() const { return core_->closed(); }
  nanobind::list rpc_log() const;

  Core(Core&&) noexcept = default;
  Core& operator=(Core&&) = delete;
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;
  /// Runs with the GIL held (Python drops the object): the actor threads may need it to
  /// finish and to release their UDF instances, so it is released while they stop.
  ~Core();

 private:
  Core(const Program& program, std::unique_ptr<rd::ExecutionCore> core)
      : program_(program), core_(std::move(core)) {}

  /// Throws unless there is one column per source Port.
  void check_column_count(nanobind::list columns) const;
  /// The source columns as blocks of Python values, after checking their shape.
  rd::SourceData load_sources(nanobind::list columns) const;

  Program program_;
  std::unique_ptr<rd::ExecutionCore> core_;
  bool running_ = false;  ///< set and cleared under the GIL
};

/// Binds Core.
void bind_core(nanobind::module_& m);

}  // namespace rayorch::python
