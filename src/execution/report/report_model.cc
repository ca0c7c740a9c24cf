// Reading a JSON report back. See report_model.h.
#include "execution/report/report_model.h"

#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace rayorch::detail {
namespace {

using Json = nlohmann::json;

// Reads fields of one object, naming each by its path for errors.
class Fields {
 public:
  Fields(const Json& object, std::string path, std::string_view source)
      : object_(object), path_(std::move(path)), source_(source) {
    if (!object_.is_object()) fail(path_, "an object", object_);
  }
  const Json& at(std::string_view name, Json::value_t type, const char* what) const {
    const std::string path = path_of(name);
    const auto it = object_.find(name);
    if (it == object_.end()) {
      throw std::invalid_argument(fmt::format("{}: {} is missing", source_, path));
    }
    const bool ok = type == Json::value_t::number_float ? it->is_number()
                    : type == Json::value_t::number_unsigned
                        ? it->is_number_unsigned() || (it->is_number_integer() && *it >= 0)
                        : it->type() == type;
    if (!ok) fail(path, what, *it);
    return *it;
  }
  double number(std::string_view name) const {
    return at(name, Json::value_t::number_float, "a number").get<double>();
  }
  std::uint64_t count(std::string_view name) const {
    return at(name, Json::value_t::number_unsigned, "a count").get<std::uint64_t>();
  }
  std::string text(std::string_view name) const {
    return at(name, Json::value_t::string, "a string").get<std::string>();
  }
  const Json& array(std::string_view name) const {
    return at(name, Json::value_t::array, "an array");
  }
  bool has(std::string_view name) const { return object_.contains(name); }
  /// The path of a field of this object, for errors ("calls[1].rpc_seconds").
  std::string path_of(std::string_view name) const {
    return path_.empty() ? std::string(name) : fmt::format("{}.{}", path_, name);
  }
  std::string child(std::string_view name, std::size_t i) const {
    return fmt::format("{}{}{}[{}]", path_, path_.empty() ? "" : ".", name, i);
  }
  std::string_view source() const { return source_; }

 private:
  [[noreturn]] void fail(const std::string& path, const char* what, const Json& got) const {
    throw std::invalid_argument(fmt::format("{}: {} must be {}, not {}", source_,
                                            path.empty() ? "the report" : path, what,
                                            got.type_name()));
  }
  const Json& object_;
  std::string path_;
  std::string_view source_;
};

// An object of counts keyed by a whole number ({"3": 12}): batch sizes, children per parent.
std::map<std::uint64_t, std::uint64_t> read_histogram(const Fields& f, std::string_view name,
                                                      const char* key_what) {
  std::map<std::uint64_t, std::uint64_t> out;
  const Json& hist = f.at(name, Json::value_t::object, "an object");
  const Fields h(hist, f.path_of(name), f.source());
  for (auto it = hist.begin(); it != hist.end(); ++it) {
    std::size_t used = 0;
    std::uint64_t key = 0;
    try {
      key = std::stoull(it.key(), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != it.key().size()) {
      throw std::invalid_argument(fmt::format("{}: {} key '{}' must be {}", f.source(),
                                              f.path_of(name), it.key(), key_what));
    }
    out[key] = h.count(it.key());
  }
  return out;
}

ReportCall read_call(const Fields& f) {
  ReportCall c;
  c.call = f.text("call");
  c.udf = f.text("udf");
  c.actors = f.count("actors");
  c.rpcs = f.count("rpcs");
  c.grain_dispatches = f.count("grain_dispatches");
  c.failed_rpcs = f.count("failed_rpcs");
  c.requeues = f.count("requeues");
  c.suppressed_by_barrier = f.count("suppressed_by_barrier");
  c.batch_size = f.count("batch_size");
  c.busy_seconds = f.number("busy_seconds");
  c.mean_batch_fill = f.number("mean_batch_fill");
  c.batch_size_histogram = read_histogram(f, "batch_size_histogram", "a batch size");
  if (f.has("rpc_seconds")) {
    const Fields r(f.at("rpc_seconds", Json::value_t::object, "an object"),
                   f.path_of("rpc_seconds"), f.source());
    c.rpc_seconds = {r.number("p50"), r.number("p90"), r.number("p99"), r.number("max")};
  }
  if (f.has("busy_over_time")) {
    const std::string path = f.path_of("busy_over_time");
    const Fields b(f.at("busy_over_time", Json::value_t::object, "an object"), path, f.source());
    c.busy_bucket_seconds = b.number("bucket_seconds");
    const Json& busy = b.array("actors_busy");
    for (std::size_t i = 0; i < busy.size(); ++i) {
      if (!busy[i].is_number()) {
        throw std::invalid_argument(fmt::format("{}: {}.actors_busy[{}] must be a number, not {}",
                                                f.source(), path, i, busy[i].type_name()));
      }
      c.busy_over_time.push_back(busy[i].get<double>());
    }
  }
  return c;
}

ReportPool read_pool(const Fields& f) {
  ReportPool p;
  p.pool = f.text("pool");
  p.actors = f.count("actors");
  const Json& started = f.array("started");
  for (std::size_t i = 0; i < started.size(); ++i) {
    const Fields s(started[i], f.child("started", i), f.source());
    p.starts.emplace_back(s.number("started_seconds"), s.has("error") ? s.text("error") : "");
  }
  if (f.has("actors_over_time")) {
    const Json& over = f.array("actors_over_time");
    for (std::size_t i = 0; i < over.size(); ++i) {
      const Json& point = over[i];
      if (!point.is_array() || point.size() != 2 || !point[0].is_number() ||
          !point[1].is_number_unsigned()) {
        throw std::invalid_argument(fmt::format("{}: {} must be [seconds, actors]", f.source(),
                                                f.child("actors_over_time", i)));
      }
      p.actors_over_time.emplace_back(point[0].get<double>(), point[1].get<std::uint64_t>());
    }
  }
  if (f.has("resizes")) {
    const Json& resizes = f.array("resizes");
    for (std::size_t i = 0; i < resizes.size(); ++i) {
      const Fields r(resizes[i], f.child("resizes", i), f.source());
      p.resizes.push_back(fmt::format("{:.1f} s: {} -> {} ({})", r.number("seconds"),
                                      r.count("from"), r.count("to"), r.text("reason")));
    }
  }
  return p;
}

ReportExpand read_expand(const Fields& f) {
  ReportExpand x;
  x.call = f.text("call");
  x.port = f.count("port");
  x.parents = f.count("parents");
  x.children = f.count("children");
  x.fan_out_histogram = read_histogram(f, "fan_out_histogram", "a number of children");
  return x;
}

ReportParentWindows read_parent_windows(const Fields& f, std::size_t calls) {
  ReportParentWindows p;
  p.row = f.count("row");
  const Json& windows = f.array("windows");
  if (windows.size() != calls) {
    throw std::invalid_argument(fmt::format("{}: {} has {} windows for {} Calls", f.source(),
                                            f.path_of("windows"), windows.size(), calls));
  }
  for (std::size_t i = 0; i < windows.size(); ++i) {
    const Json& w = windows[i];
    if (w.is_null()) {
      p.windows.emplace_back();
    } else if (w.is_array() && w.size() == 2 && w[0].is_number() && w[1].is_number()) {
      p.windows.emplace_back(std::pair{w[0].get<double>(), w[1].get<double>()});
    } else {
      throw std::invalid_argument(fmt::format("{}: {}[{}] must be [start, end] or null", f.source(),
                                              f.path_of("windows"), i));
    }
  }
  return p;
}

// The fields the run itself writes; anything else at the top level is an observer's section.
bool is_run_field(const std::string& name) {
  static const char* const known[] = {"format",
                                      "failures",
                                      "expands",
                                      "parent_windows",
                                      "version",
                                      "elapsed_seconds",
                                      "calls",
                                      "pools",
                                      "input_batches",
                                      "peak_active_input_batches",
                                      "root_completed_seconds",
                                      "stale_reports_rejected",
                                      "actors_replaced",
                                      "values_rebuilt",
                                      "grains_reexecuted",
                                      "rebuild_seconds",
                                      "node_losses",
                                      "roots_by_outcome",
                                      "roots_restored",
                                      "journal_discarded_bytes",
                                      "roots_delivered",
                                      "aborted",
                                      "error"};
  for (const char* k : known) {
    if (name == k) return true;
  }
  return false;
}

}  // namespace

ReportModel read_report(std::string_view json, std::string_view source) {
  Json doc;
  try {
    doc = Json::parse(json);
  } catch (const Json::parse_error& e) {
    throw std::invalid_argument(fmt::format(
        "{}: not a complete JSON document (byte {}: {}); a report is written whole when its "
        "run ends, so a cut one comes from elsewhere",
        source, e.byte, e.what()));
  }
  const Fields f(doc, "", source);
  if (!f.has("format") || doc.at("format") != "rayorch-report") {
    throw std::invalid_argument(fmt::format(
        "{}: not a rayorch run report (its \"format\" is not \"rayorch-report\"); write one "
        "with --report FILE or RunOptions::report_path",
        source));
  }
  ReportModel m;
  m.version = static_cast<int>(f.count("version"));
  if (m.version != 1) {
    throw std::invalid_argument(
        fmt::format("{}: report version {} is not one this build reads (1)", source, m.version));
  }
  m.elapsed_seconds = f.number("elapsed_seconds");
  m.aborted = f.at("aborted", Json::value_t::boolean, "true or false").get<bool>();
  if (f.has("error")) m.error = f.text("error");
  m.roots_delivered = f.count("roots_delivered");
  m.roots_restored = f.count("roots_restored");
  m.values_rebuilt = f.count("values_rebuilt");
  m.grains_reexecuted = f.count("grains_reexecuted");
  m.actors_replaced = f.count("actors_replaced");
  const Json& calls = f.array("calls");
  for (std::size_t i = 0; i < calls.size(); ++i) {
    m.calls.push_back(read_call(Fields(calls[i], f.child("calls", i), source)));
  }
  const Json& pools = f.array("pools");
  for (std::size_t i = 0; i < pools.size(); ++i) {
    m.pools.push_back(read_pool(Fields(pools[i], f.child("pools", i), source)));
  }
  const Json& batches = f.array("input_batches");
  for (std::size_t i = 0; i < batches.size(); ++i) {
    const Fields b(batches[i], f.child("input_batches", i), source);
    m.input_batches.push_back({b.count("index"), b.count("first_row"), b.count("rows"),
                               b.number("admitted_seconds"), b.number("completed_seconds")});
  }
  const Json& completed = f.array("root_completed_seconds");
  for (std::size_t i = 0; i < completed.size(); ++i) {
    if (!completed[i].is_number()) {
      throw std::invalid_argument(
          fmt::format("{}: root_completed_seconds[{}] must be a number", source, i));
    }
    m.root_completed_seconds.push_back(completed[i].get<double>());
  }
  const Json& outcomes = f.at("roots_by_outcome", Json::value_t::object, "an object");
  const Fields o(outcomes, "roots_by_outcome", source);
  for (auto it = outcomes.begin(); it != outcomes.end(); ++it) {
    m.roots_by_outcome[it.key()] = o.count(it.key());
  }
  if (f.has("failures")) {
    const Json& failures = f.array("failures");
    for (std::size_t i = 0; i < failures.size(); ++i) {
      const Fields g(failures[i], f.child("failures", i), source);
      ReportFailureGroup group{
          g.text("call"), g.text("outcome"), g.text("cause"), g.count("roots"), {}};
      const Json& examples = g.array("examples");
      for (std::size_t k = 0; k < examples.size(); ++k) {
        const Fields x(examples[k], g.child("examples", k), source);
        group.examples.emplace_back(x.text("entity"), x.count("row"));
      }
      m.failures.push_back(std::move(group));
    }
  }
  if (f.has("expands")) {
    const Json& expands = f.array("expands");
    for (std::size_t i = 0; i < expands.size(); ++i) {
      m.expands.push_back(read_expand(Fields(expands[i], f.child("expands", i), source)));
    }
  }
  if (f.has("parent_windows")) {
    const Json& parents = f.array("parent_windows");
    for (std::size_t i = 0; i < parents.size(); ++i) {
      m.parent_windows.push_back(read_parent_windows(
          Fields(parents[i], f.child("parent_windows", i), source), m.calls.size()));
    }
  }
  const Json& losses = f.array("node_losses");
  for (std::size_t i = 0; i < losses.size(); ++i) {
    const Fields n(losses[i], f.child("node_losses", i), source);
    m.node_losses.push_back(fmt::format("{:.1f} s: node {} ({}) lost: {}",
                                        n.number("detected_seconds"), n.text("node"),
                                        n.text("address"), n.text("cause")));
  }
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (!is_run_field(it.key())) m.sections.emplace_back(it.key(), it.value().dump(2));
  }
  return m;
}

}  // namespace rayorch::detail
