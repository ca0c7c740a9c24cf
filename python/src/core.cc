#include "core.h"

#include <chrono>
#include <map>
#include <span>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "callback_error.h"
#include "journal_codec.h"
#include "process_workers.h"
#include "python_feed.h"
#include "python_sink.h"
#include "python_wording.h"
#include "ray_pools.h"
#include "root_objects.h"
#include <fmt/format.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "rayorch/errors.h"
#include "rayorch/outcome.h"

#include "execution/cores.h"

namespace rayorch::python {

namespace nb = nanobind;

namespace {

/// Raises the engine's ExecutionError in Python, in Python's wording (python_wording.h). When a
/// UDF's exception decided it, its traceback (the cause text's lines after the first, up to the ";
/// " that continues the engine's message) moves from the message to the error's __cause__, a
/// UdfTraceback, so Python prints it as the cause and the message reads as it does without a
/// traceback.
[[noreturn]] void raise_execution_error(const std::string& engine_message) {
  const std::string message = python_wording(engine_message);
  static constexpr std::string_view start = "\nTraceback (most recent call last):\n";
  const std::size_t begin = message.find(start);
  const std::size_t end = begin == std::string::npos ? begin : message.find("\n; ", begin + 1);
  if (end == std::string::npos || registry.udf_traceback == nullptr) {
    PyErr_SetString(registry.execution_error, message.c_str());
    throw nb::python_error();
  }
  const std::string traceback = message.substr(begin + 1, end + 1 - (begin + 1));
  const std::string text = message.substr(0, begin) + message.substr(end + 1);
  PyObject* error = PyObject_CallFunction(registry.execution_error, "s#", text.data(),
                                          static_cast<Py_ssize_t>(text.size()));
  if (error == nullptr) throw nb::python_error();
  PyObject* cause = PyObject_CallFunction(registry.udf_traceback, "s#", traceback.data(),
                                          static_cast<Py_ssize_t>(traceback.size()));
  if (cause == nullptr) {
    Py_DECREF(error);
    throw nb::python_error();
  }
  PyException_SetCause(error, cause);  // steals `cause`
  PyErr_SetObject(registry.execution_error, error);
  Py_DECREF(error);
  throw nb::python_error();
}

/// Where a run's terminal rows go: into one list per output, to the row callback, or (with a
/// sink and no callback: `keep` false) nowhere but the sink; and the progress callback. Called on
/// the driver thread; takes the GIL for Python. Over a lazy source (`source`), the row count is
/// known once the source ended: the lists grow as rows arrive, and the progress callback gets None
/// as the total until then.
class RowDelivery {
 public:
  RowDelivery(std::size_t outputs, std::size_t rows, const PythonFeed* source, nb::object on_row,
              nb::object on_progress, bool keep, CallbackError& error)
      : keep_(keep || !on_row.is_none()),
        on_row_(std::move(on_row)),
        on_progress_(std::move(on_progress)),
        outputs_(outputs),
        rows_(rows),
        source_(source),
        error_(error) {
    if (!on_row_.is_none() || !keep_) return;
    for (std::size_t k = 0; k < outputs; ++k) {
      PyObject* list = PyList_New(static_cast<Py_ssize_t>(rows));
      if (list == nullptr) throw nb::python_error();
      for (std::size_t r = 0; r < rows; ++r)
        PyList_SET_ITEM(list, static_cast<Py_ssize_t>(r), Py_NewRef(Py_None));
      results_.append(nb::steal(list));
    }
  }

  const nb::list& results() const { return results_; }

  /// Wraps a journal codec's restore so that the rows it delivers reach on_row marked
  /// restored. The codec restores on the driver thread, as rows are delivered.
  rd::OutputCodec marking_restored(rd::OutputCodec codec) {
    codec.restore = [this, restore = std::move(codec.restore)](std::size_t row,
                                                               const rd::JournalEntry& entry,
                                                               const rd::RootCallback& sink) {
      struct Restoring {
        bool& flag;
        explicit Restoring(bool& f) : flag(f) { flag = true; }
        ~Restoring() { flag = false; }
        Restoring(const Restoring&) = delete;
        Restoring& operator=(const Restoring&) = delete;
      } restoring{restoring_};
      restore(row, entry, sink);
    };
    return codec;
  }

  void operator()(std::size_t row, std::span<const rd::ErasedOutput> outputs) {
    if (keep_) deliver(row, outputs);
    ++done_;
    if (on_progress_.is_none()) return;
    const auto now = std::chrono::steady_clock::now();
    if (!last_row() && now - last_progress_ < std::chrono::milliseconds(200)) return;
    last_progress_ = now;
    report_progress();
  }

  /// After a lazy source's run (the caller holds the GIL): the lists hold every row pulled
  /// (None for rows an abort left undelivered); after a complete run, the progress callback
  /// has seen the total. Raises what the callback raised.
  void finish_lazy(bool complete) {
    if (keep_ && !pad(source_->pulled())) throw nb::python_error();
    if (!complete || on_progress_.is_none() || reported_last_) return;
    reported_last_ = true;
    on_progress_(done_, source_->pulled());
  }

 private:
  // The row count, once known.
  std::optional<std::size_t> total() const {
    if (source_ == nullptr) return rows_;
    if (source_->ended()) return source_->pulled();
    return std::nullopt;
  }
  bool last_row() const { return total() == done_; }

  void report_progress() {
    Gil gil;
    const std::optional<std::size_t> total = this->total();
    reported_last_ = total == done_;
    PyObject* r =
        total ? PyObject_CallFunction(on_progress_.ptr(), "nn", static_cast<Py_ssize_t>(done_),
                                      static_cast<Py_ssize_t>(*total))
              : PyObject_CallFunction(on_progress_.ptr(), "nO", static_cast<Py_ssize_t>(done_),
                                      Py_None);
    if (r == nullptr) error_.fetch_and_abort();
    Py_DECREF(r);
  }

  // Pads the result lists with None up to `rows` rows (the caller holds the GIL); false
  // when Python raised.
  bool pad(std::size_t rows) {
    for (std::size_t k = 0; k < results_.size(); ++k) {
      PyObject* list = PyList_GET_ITEM(results_.ptr(), static_cast<Py_ssize_t>(k));
      while (static_cast<std::size_t>(PyList_GET_SIZE(list)) < rows) {
        if (PyList_Append(list, Py_None) != 0) return false;
      }
    }
    return true;
  }

  void deliver(std::size_t row, std::span<const rd::ErasedOutput> outputs) {
    Gil gil;
    std::size_t at = 0;  // the next entry of `outputs`
    if (on_row_.is_none()) {
      if (source_ != nullptr && !pad(row + 1)) error_.fetch_and_abort();
      for (std::size_t k = 0; k < outputs_; ++k) {
        PyObject* v = next_output_object(outputs, at);
        if (v == nullptr) error_.fetch_and_abort();
        PyObject* list = PyList_GET_ITEM(results_.ptr(), static_cast<Py_ssize_t>(k));
        PyObject* old = PyList_GET_ITEM(list, static_cast<Py_ssize_t>(row));
        PyList_SET_ITEM(list, static_cast<Py_ssize_t>(row), v);
        Py_DECREF(old);
      }
      return;
    }
    PyObject* tuple = root_tuple(outputs, outputs_);
    if (tuple == nullptr) error_.fetch_and_abort();
    PyObject* r = PyObject_CallFunction(on_row_.ptr(), "nOO", static_cast<Py_ssize_t>(row), tuple,
                                        restoring_ ? Py_True : Py_False);
    Py_DECREF(tuple);
    if (r == nullptr) error_.fetch_and_abort();
    Py_DECREF(r);
  }

  bool keep_;               // whether rows go to the lists or to on_row
  bool restoring_ = false;  // the row being delivered comes from the run journal
  nb::object on_row_;
  nb::object on_progress_;
  std::size_t outputs_;  // the pipeline's outputs (an output below the root is several entries)
  nb::list results_;
  std::size_t rows_;
  const PythonFeed* source_;  // a lazy source, or nullptr for columns
  std::size_t done_ = 0;
  bool reported_last_ = false;
  std::chrono::steady_clock::time_point last_progress_ =
      std::chrono::steady_clock::now() - std::chrono::seconds(1);
  CallbackError& error_;
};

}  // namespace

Core Core::local(const Program& program, std::optional<std::vector<std::string>> server_command,
                 nb::bytes server_payload, ResourceBudget budget,
                 std::uint64_t random_resize_seed) {
  rd::WorkerServerLaunch launch;
  if (server_command && !server_command->empty()) {
    launch = python_worker_server(std::move(*server_command),
                                  std::string(server_payload.c_str(), server_payload.size()));
  }
  std::unique_ptr<rd::ExecutionCore> core;
  {
    nb::gil_scoped_release release;  // the actors' constructors need the GIL
    core = rd::make_local_core(
        program.plan, launch,
        LocalBackend{.budget = std::move(budget), .random_resize_seed = random_resize_seed});
  }
  return Core(program, std::move(core));
}

Core Core::ray(const Program& program, nb::object backend, ResourceBudget budget,
               std::uint64_t random_resize_seed) {
  auto pools = make_ray_pools(program.plan, std::move(backend));
  rd::DriverOptions options;
  options.budget = std::move(budget);
  options.sizing.random_seed = random_resize_seed;
  nb::gil_scoped_release release;
  return Core(program, rd::make_driven_core(program.plan, std::move(pools), std::move(options)));
}

Core Core::sync(const Program& program, bool wire) {
  std::unique_ptr<rd::ExecutionCore> core;
  {
    nb::gil_scoped_release release;
    core = rd::make_sync_core(program.plan, wire);
  }
  return Core(program, std::move(core));
}

void Core::check_column_count(nb::list columns) const {
  if (columns.size() != program_.sources) {
    throw std::invalid_argument(
        fmt::format("the pipeline has {} source columns but {} were "
                    "given; pass one sequence or iterable per forward() parameter",
                    program_.sources, columns.size()));
  }
}

rd::SourceData Core::load_sources(nb::list columns) const {
  rd::SourceData sources;
  std::vector<Ref> fast;  // keeps each column's sequence alive while it is read
  for (std::size_t c = 0; c < columns.size(); ++c) {
    PyObject* seq = PySequence_Fast(PyList_GET_ITEM(columns.ptr(), static_cast<Py_ssize_t>(c)),
                                    "each source column must be a sequence");
    if (seq == nullptr) throw nb::python_error();
    fast.push_back(Ref::steal(seq));
    const auto n = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(seq));
    if (c == 0) {
      sources.rows = n;
    } else if (n != sources.rows) {
      throw std::invalid_argument(
          fmt::format("source columns are not row-aligned: column 0 has {} rows but column {} "
                      "has {}; pass columns of equal length",
                      sources.rows, c, n));
    }
  }
  for (int c : program_.mask_sources) {
    PyObject** items = PySequence_Fast_ITEMS(fast[static_cast<std::size_t>(c)].get());
    for (std::size_t r = 0; r < sources.rows; ++r) {
      if (!PyBool_Check(items[r])) {
        throw std::invalid_argument(
            fmt::format("source column {} is an F.filter mask, so each row must be a bool; "
                        "row {} is {}",
                        c, r, type_name_of(items[r])));
      }
    }
  }
  for (const Ref& seq : fast) {
    PyObject** items = PySequence_Fast_ITEMS(seq.get());
    auto block = std::make_shared<PyBlock>();
    block->rows.resize(sources.rows);
    std::vector<const void*> values(sources.rows);
    for (std::size_t r = 0; r < sources.rows; ++r) {
      block->rows[r].obj = Py_NewRef(items[r]);
      block->rows[r].truth = items[r] == Py_True;
      values[r] = &block->rows[r];
    }
    sources.blocks.push_back(std::move(block));
    sources.values.push_back(std::move(values));
  }
  return sources;
}

nb::tuple Core::run(nb::list columns, const RunOptions& options, nb::object journal_keys,
                    nb::object on_row, nb::object on_progress, bool lazy, nb::object sink_format) {
  if (running_) {
    throw ExecutionError(
        "run() is already in progress on this executor (from another thread or from a row "
        "callback); use one executor per concurrent run");
  }
  check_column_count(columns);
  CallbackError callback_error;  // outlives the source, which reports to it
  rd::SourceData sources;
  std::shared_ptr<PythonFeed> source;
  std::vector<std::string> keys;
  const bool journaled = !journal_keys.is_none();
  const bool sinking = options.sink.enabled();
  if (sinking && sink_format.is_none()) {
    throw std::invalid_argument("options.sink has a directory but run() was given no sink format");
  }
  if (sinking && !journaled) {
    throw std::invalid_argument("a sink keys its roots as the run journal does: pass journal_keys");
  }
  if (lazy) {
    source = std::make_shared<PythonFeed>(columns.ptr(), program_.mask_sources, journal_keys.ptr(),
                                          callback_error);
    sources.feed = source;
  } else {
    sources = load_sources(columns);
    if (journaled) keys = nb::cast<std::vector<std::string>>(journal_keys);
    if (journaled && keys.size() != sources.rows) {
      throw std::invalid_argument(
          fmt::format("the run journal needs one key per source row: {} keys for {} rows",
                      keys.size(), sources.rows));
    }
  }
  RowDelivery delivery(program_.outputs, sources.rows, source.get(), std::move(on_row),
                       std::move(on_progress), !sinking, callback_error);
  auto deliver = [&delivery](std::size_t row, std::span<const rd::ErasedOutput> outputs) {
    delivery(row, outputs);
  };
  RunOptions checked = options;
  checked.observers.push_back(std::make_shared<SignalCheck>(callback_error));
  if (sinking) {
    checked.sink.format =
        python_part_format(std::move(sink_format), program_.outputs, callback_error);
  }
  RunMetrics metrics;
  bool aborted_by_callback = false;
  std::optional<std::string> engine_error;
  running_ = true;
  struct Clear {
    bool& flag;
    ~Clear() { flag = false; }
  } clear{running_};
  {
    nb::gil_scoped_release release;
    try {
      if (!journaled) {
        metrics = core_->run(std::move(sources), checked, deliver);
      } else {
        metrics = rd::run_journaled(
            *core_, std::move(sources), keys, checked, deliver,
            delivery.marking_restored(pickle_codec(program_.outputs, callback_error)));
      }
    } catch (const CallbackAbort&) {
      aborted_by_callback = true;
    } catch (const rayorch::ExecutionError& e) {
      engine_error = e.what();
    }
  }
  if (source) delivery.finish_lazy(!aborted_by_callback && !engine_error);
  if (aborted_by_callback) {
    callback_error.restore();
    throw nb::python_error();
  }
  if (engine_error) {
    try {
      raise_execution_error(*engine_error);
    } catch (nb::python_error& e) {
      // The rows delivered before the abort (None for the others; an empty list for a
      // streaming run) go with the error: Executor.run() makes them its `partial` RunResult.
      nb::setattr(e.value(), "partial_outputs", delivery.results());
      throw;
    }
  }
  return nb::make_tuple(delivery.results(), std::move(metrics));
}

void Core::await_actors() {
  nb::gil_scoped_release release;  // the actors' constructors need the GIL
  core_->await_actors();
}

void Core::close() {
  if (running_) {
    throw ExecutionError(
        "close() was called while run() is in progress on this executor; close it after "
        "the run returns");
  }
  nb::gil_scoped_release release;  // actors may be finishing a Python call
  core_->close();
}

nb::list Core::rpc_log() const {
  nb::list out;
  for (const auto& r : core_->rpc_log()) {
    nb::dict d;
    d["call"] = r.call;
    d["input_batch"] = r.input_batch;
    d["grains"] = r.grains;
    d["generations"] = r.generations;
    d["failed"] = r.failed;
    d["text"] = r.to_string();
    out.append(d);
  }
  return out;
}

Core::~Core() {
  if (!core_) return;
  if (python_alive() && PyGILState_Check() != 0) {
    nb::gil_scoped_release release;
    core_.reset();
  } else {
    core_.reset();
  }
}

}  // namespace rayorch::python
