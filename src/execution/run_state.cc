// Driver-side run state. See run_state.h.
#include "execution/run_state.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "rayorch/errors.h"

namespace rayorch::detail {

RunState::RunState(std::shared_ptr<const RuntimePlan> plan, SourceData sources,
                   const RunOptions& options, const RootSink& sink,
                   std::vector<int> actors_per_pool)
    : plan_(std::move(plan)),
      sources_(std::move(sources)),
      options_(options),
      sink_(sink),
      start_(std::chrono::steady_clock::now()) {
  if (options_.max_active_input_batches < 1) {
    throw std::invalid_argument(
        fmt::format("RunOptions.max_active_input_batches must be >= 1, got {}",
                    options_.max_active_input_batches));
  }
  const std::size_t rows = sources_.rows;
  batch_rows_ =
      options_.input_batch_size == 0 ? std::max<std::size_t>(rows, 1) : options_.input_batch_size;
  batch_count_ = rows == 0 ? 0 : (rows + batch_rows_ - 1) / batch_rows_;
  rr_.assign(plan_->pools.size(), 0);
  metrics_.root_completed_seconds.assign(rows, 0.0);
  done_per_call_.assign(plan_->calls.size(), 0);
  in_flight_per_call_.assign(plan_->calls.size(), 0);
  for (std::size_t c = 0; c < plan_->calls.size(); ++c) {
    CallMetrics m;
    m.call = plan_->calls[c].name;
    m.udf = plan_->calls[c].udf;
    m.actors = actors_per_pool[plan_->calls[c].pool];
    metrics_.calls.push_back(std::move(m));
  }
}

double RunState::now_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void RunState::admit() {
  while (next_batch_ < batch_count_ && active_.size() < options_.max_active_input_batches) {
    const std::size_t first = next_batch_ * batch_rows_;
    const std::size_t rows = std::min(batch_rows_, sources_.rows - first);
    EngineOptions eo;
    eo.batch_index = next_batch_;
    eo.queue_order = options_.queue_order;
    eo.reservation = options_.reservation;
    active_.push_back(
        std::make_unique<Engine>(plan_, eo, sources_.blocks, sources_.values, first, rows));
    InputBatchMetrics bm;
    bm.index = next_batch_;
    bm.first_row = first;
    bm.rows = rows;
    bm.admitted_seconds = now_seconds();
    metrics_.input_batches.push_back(bm);
    ++next_batch_;
    metrics_.peak_active_input_batches =
        std::max(metrics_.peak_active_input_batches, active_.size());
    active_.back()->advance();
  }
}

std::optional<Dispatch> RunState::pick(int pool) {
  const auto& calls = plan_->pools[pool].calls;
  const std::size_t n = calls.size();
  for (auto& engine : active_) {
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t idx = (rr_[pool] + k) % n;
      const int call = calls[idx];
      if (!engine->has_work(call)) continue;
      auto batch = engine->reserve(call);
      if (!batch) continue;
      rr_[pool] = idx + 1;
      in_flight_per_call_[call] += batch->grains.size();
      return Dispatch{engine.get(), std::move(*batch)};
    }
  }
  return std::nullopt;
}

void RunState::fold_counters(const Engine& e) {
  for (std::size_t c = 0; c < plan_->calls.size(); ++c) {
    metrics_.calls[c].requeues += e.counters(static_cast<int>(c)).requeues;
    metrics_.calls[c].suppressed_by_barrier +=
        e.counters(static_cast<int>(c)).suppressed_by_barrier;
  }
  metrics_.stale_reports_rejected += e.stale_reports();
  auto& bm = metrics_.input_batches[e.batch_index()];
  bm.grains = e.grains_total();
  bm.completed_seconds = now_seconds();
}

void RunState::retire(std::size_t slot) {
  fold_counters(*active_[slot]);
  active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(slot));
}

void RunState::settle() {
  for (;;) {
    bool retired = false;
    for (std::size_t i = 0; i < active_.size(); ++i) {
      Engine& e = *active_[i];
      e.advance();
      if (!e.fatal_error().empty()) throw ExecutionError(e.fatal_error());
      for (std::uint32_t root : e.take_finished_roots()) {
        const std::size_t row = e.first_row() + root;
        e.root_outputs(root, outcomes_, causes_, values_);
        erased_.resize(outcomes_.size());
        for (std::size_t k = 0; k < outcomes_.size(); ++k) {
          erased_[k] = ErasedOutput{outcomes_[k], causes_[k], values_[k]};
        }
        metrics_.root_completed_seconds[row] = now_seconds();
        ++roots_delivered_;
        sink_(row, erased_);
      }
      if (e.complete()) {
        retire(i);
        retired = true;
        break;
      }
      if (e.stuck()) throw ExecutionError(e.deadlock_report());
    }
    if (!retired) break;
    admit();
  }
}

bool RunState::done() const {
  return next_batch_ >= batch_count_ && active_.empty();
}

void RunState::record_rpc(const Dispatch& d, int actor, std::chrono::steady_clock::time_point start,
                          std::chrono::steady_clock::time_point end, const char* status) {
  CallMetrics& m = metrics_.calls[d.batch.call];
  in_flight_per_call_[d.batch.call] -= d.batch.grains.size();
  ++m.rpcs;
  m.grain_dispatches += d.batch.grains.size();
  ++m.batch_size_histogram[d.batch.grains.size()];
  const double seconds = std::chrono::duration<double>(end - start).count();
  m.busy_seconds += seconds;
  if (std::string_view(status) != "ok") ++m.failed_rpcs;
  if (d.engine != nullptr) {
    ++metrics_.input_batches[d.engine->batch_index()].rpcs;
  }
  if (!options_.trace_path.empty()) {
    TimelineEntry t;
    t.pool = plan_->calls[d.batch.call].pool;
    t.actor = actor;
    t.call = d.batch.call;
    t.input_batch = d.engine ? d.engine->batch_index() : 0;
    t.rows = d.batch.grains.size();
    std::set<std::string> parents;
    const int domain = plan_->calls[d.batch.call].domain;
    for (std::uint32_t g : d.batch.grains) {
      std::string key = d.engine->entity_key(domain, g);
      const auto slash = key.rfind('/');
      parents.insert(slash == std::string::npos ? key : key.substr(0, slash));
    }
    t.parents = parents.size();
    t.start_us = std::chrono::duration<double, std::micro>(start - start_).count();
    t.duration_us = std::chrono::duration<double, std::micro>(end - start).count();
    t.status = status;
    timeline_.push_back(std::move(t));
  }
}

void RunState::apply_result(Dispatch& d, RpcOutput&& out) {
  const PlanCall& pc = plan_->calls[d.batch.call];
  const CommitStatus st = d.engine->commit(d.batch.id, std::move(out));
  if (st == CommitStatus::contract_error) {
    throw ExecutionError(fmt::format(
        "contract error: Call {} (UDF {}) returned a result that breaks the UDF contract for an "
        "RPC of {} rows: {}; run() must return one element per input row for every output",
        pc.name, pc.udf, d.batch.grains.size(), out.contract_error));
  }
  if (st == CommitStatus::accepted) done_per_call_[d.batch.call] += d.batch.grains.size();
}

void RunState::apply_failure(Dispatch& d, const std::string& error) {
  FailureVerdict v = d.engine->fail(d.batch.id, error);
  if (v.abort) throw ExecutionError(v.message);
}

void RunState::apply_lost(Dispatch& d, const std::string& reason) {
  FailureVerdict v = d.engine->lost(d.batch.id, reason);
  if (v.abort) throw ExecutionError(v.message);
}

void RunState::reject_late(std::size_t input_batch, std::uint64_t batch_id, RpcOutput&& out) {
  for (auto& e : active_) {
    if (e->batch_index() == input_batch) {
      if (e->commit(batch_id, std::move(out)) != CommitStatus::stale) {
        throw ExecutionError(
            "internal error: the late report of an abandoned attempt was accepted");
      }
      return;
    }
  }
  ++metrics_.stale_reports_rejected;  // its input batch is already complete
}

std::string RunState::progress_line() const {
  std::string s = fmt::format("roots {}/{}", roots_delivered_, sources_.rows);
  for (std::size_t c = 0; c < plan_->calls.size(); ++c) {
    std::size_t ready = 0;
    for (const auto& e : active_) ready += e->ready_count(static_cast<int>(c));
    s += fmt::format(" | {} done {} ready {} in-flight {}", plan_->calls[c].name, done_per_call_[c],
                     ready, in_flight_per_call_[c]);
  }
  const double t = now_seconds();
  s += fmt::format(" | {:.1f} roots/s", t > 0 ? static_cast<double>(roots_delivered_) / t : 0.0);
  return s;
}

RunMetrics RunState::finish() {
  for (const auto& e : active_) fold_counters(*e);
  metrics_.elapsed_seconds = now_seconds();
  if (!options_.trace_path.empty()) {
    nlohmann::json events = nlohmann::json::array();
    for (const TimelineEntry& t : timeline_) {
      nlohmann::json ev;
      ev["name"] = plan_->calls[t.call].name;
      ev["cat"] = t.status;
      ev["ph"] = "X";
      ev["ts"] = t.start_us;
      ev["dur"] = t.duration_us;
      ev["pid"] = t.pool;
      ev["tid"] = t.actor;
      ev["args"] = {{"call", plan_->calls[t.call].name},
                    {"batch_size", t.rows},
                    {"parents", t.parents},
                    {"input_batch", t.input_batch},
                    {"status", t.status}};
      events.push_back(std::move(ev));
    }
    for (std::size_t p = 0; p < plan_->pools.size(); ++p) {
      events.push_back({{"name", "process_name"},
                        {"ph", "M"},
                        {"pid", p},
                        {"args", {{"name", plan_->pools[p].name}}}});
    }
    nlohmann::json doc = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
    write_file_atomically(options_.trace_path, doc.dump());
  }
  if (!options_.report_path.empty()) {
    nlohmann::json calls = nlohmann::json::array();
    for (const CallMetrics& m : metrics_.calls) {
      nlohmann::json hist = nlohmann::json::object();
      for (const auto& [size, count] : m.batch_size_histogram) hist[std::to_string(size)] = count;
      calls.push_back({{"call", m.call},
                       {"udf", m.udf},
                       {"actors", m.actors},
                       {"rpcs", m.rpcs},
                       {"grain_dispatches", m.grain_dispatches},
                       {"requeues", m.requeues},
                       {"failed_rpcs", m.failed_rpcs},
                       {"suppressed_by_barrier", m.suppressed_by_barrier},
                       {"busy_seconds", m.busy_seconds},
                       {"batch_size_histogram", hist}});
    }
    nlohmann::json batches = nlohmann::json::array();
    for (const InputBatchMetrics& b : metrics_.input_batches) {
      batches.push_back({{"index", b.index},
                         {"first_row", b.first_row},
                         {"rows", b.rows},
                         {"grains", b.grains},
                         {"rpcs", b.rpcs},
                         {"admitted_seconds", b.admitted_seconds},
                         {"completed_seconds", b.completed_seconds}});
    }
    nlohmann::json doc = {{"elapsed_seconds", metrics_.elapsed_seconds},
                          {"calls", calls},
                          {"input_batches", batches},
                          {"peak_active_input_batches", metrics_.peak_active_input_batches},
                          {"root_completed_seconds", metrics_.root_completed_seconds},
                          {"stale_reports_rejected", metrics_.stale_reports_rejected},
                          {"actors_replaced", metrics_.actors_replaced}};
    write_file_atomically(options_.report_path, doc.dump(2));
  }
  return std::move(metrics_);
}

std::string describe_current_exception() {
  std::string type = current_exception_type();
  try {
    throw;
  } catch (const std::exception& e) {
    return type + ": " + e.what();
  } catch (...) {
    return type;
  }
}

void write_file_atomically(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path tmp =
      target.parent_path() / (target.filename().string() + ".tmp." + std::to_string(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw ExecutionError(fmt::format(
          "cannot write {}: check that the directory exists and is writable", tmp.string()));
    out << content;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw ExecutionError(fmt::format("cannot write {}: disk full or not writable", tmp.string()));
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw ExecutionError(
        fmt::format("cannot move {} into place: {}", target.string(), ec.message()));
  }
}

}  // namespace rayorch::detail
