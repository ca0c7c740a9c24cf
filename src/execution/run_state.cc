// Driver-side run state. See run_state.h.
#include "execution/run_state.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "rayorch/errors.h"

#include "execution/observers/observers.h"
#include "runtime/protocol_codec.h"

namespace rayorch::detail {

RunState::RunState(std::shared_ptr<const RuntimePlan> plan, std::unique_ptr<BlockStore> store,
                   SourceData sources, const RunOptions& options, const RootSink& sink,
                   std::vector<int> actors_per_pool, bool wire)
    : plan_(std::move(plan)),
      sources_(std::move(sources)),
      store_(std::move(store)),
      wire_(wire),
      actors_per_pool_(std::move(actors_per_pool)),
      options_(options),
      sink_(sink),
      start_(std::chrono::steady_clock::now()) {
  for (const auto& [what, path] :
       {std::pair<const char*, const std::string&>{"trace_path", options_.trace_path},
        {"report_path", options_.report_path}}) {
    if (path.empty()) continue;
    namespace fs = std::filesystem;
    const fs::path p(path);
    const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      throw std::invalid_argument(fmt::format(
          "RunOptions.{} '{}' is a directory; give a file path such as '{}/{}.json'", what, path,
          path, what == std::string_view("trace_path") ? "trace" : "report"));
    }
    if (!fs::is_directory(dir, ec) || ::access(dir.c_str(), W_OK) != 0) {
      throw std::invalid_argument(fmt::format(
          "RunOptions.{} '{}': the directory '{}' does not exist or is not writable; create it "
          "or choose another path (checked before any input is admitted)",
          what, path, dir.string()));
    }
  }
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
  metrics_.roots_restored = sources_.restored.size();
  for (const auto& [row, outcome] : sources_.restored) {
    ++metrics_.roots_by_outcome[std::string(to_string(outcome))];
  }
  metrics_.journal_discarded_bytes = sources_.journal_discarded_bytes;
  done_per_call_.assign(plan_->calls.size(), 0);
  in_flight_per_call_.assign(plan_->calls.size(), 0);
  consumers_.resize(plan_->calls.size());
  backlog_limit_.resize(plan_->calls.size());
  for (std::size_t c = 0; c < plan_->calls.size(); ++c) {
    const PlanCall& pc = plan_->calls[c];
    const auto& pool = plan_->pools[pc.pool].options;
    backlog_limit_[c] = options_.backpressure * static_cast<std::size_t>(pc.batch_size) *
                        static_cast<std::size_t>(pool.replicas);
    // Values flow unchanged through filters, broadcasts and expands; a reduce or a Call
    // ends the path (the next Call downstream holds back its own producer).
    std::vector<int> ports(pc.outputs.begin(), pc.outputs.end());
    while (!ports.empty()) {
      const int port = ports.back();
      ports.pop_back();
      for (const Consumer& k : plan_->ports[port].consumers) {
        switch (k.kind) {
          case ConsumerKind::call_input:
            if (k.op != static_cast<int>(c)) consumers_[c].push_back(k.op);
            break;
          case ConsumerKind::expand_list:
            ports.push_back(plan_->expands[k.op].children[k.slot]);
            break;
          case ConsumerKind::filter_source:
            ports.push_back(plan_->filters[k.op].output);
            break;
          case ConsumerKind::broadcast_source:
            ports.push_back(plan_->broadcasts[k.op].output);
            break;
          default:
            break;
        }
      }
    }
  }
  upstream_.resize(plan_->calls.size());
  hold_since_.assign(plan_->calls.size(), std::chrono::steady_clock::time_point::max());
  for (std::size_t c = 0; c < plan_->calls.size(); ++c) {
    // consumers_ holds direct consumers; close over them for everything upstream.
    std::vector<int> stack(consumers_[c].begin(), consumers_[c].end());
    std::vector<char> seen(plan_->calls.size(), 0);
    while (!stack.empty()) {
      const int d = stack.back();
      stack.pop_back();
      if (seen[d]) continue;
      seen[d] = 1;
      upstream_[d].push_back(static_cast<int>(c));
      stack.insert(stack.end(), consumers_[d].begin(), consumers_[d].end());
    }
  }
  for (std::size_t c = 0; c < plan_->calls.size(); ++c) {
    CallMetrics m;
    m.call = plan_->calls[c].name;
    m.udf = plan_->calls[c].udf;
    m.actors = actors_per_pool_[plan_->calls[c].pool];
    m.batch_size = plan_->calls[c].batch_size;
    metrics_.calls.push_back(std::move(m));
  }
  for (std::size_t i = 0; i < options_.observers.size(); ++i) {
    if (!options_.observers[i]) {
      throw std::invalid_argument(
          fmt::format("RunOptions.observers[{}] is null; pass a std::shared_ptr to an object "
                      "derived from rayorch::RunObserver",
                      i));
    }
    observers_.push_back(options_.observers[i]);
  }
  if (options_.progress && ::isatty(STDERR_FILENO) == 1) observers_.push_back(make_progress_line());
  if (!options_.trace_path.empty()) observers_.push_back(make_chrome_trace(options_.trace_path));
  if (!options_.report_path.empty()) observers_.push_back(make_json_report(options_.report_path));
  for (const auto& o : observers_) wants_parents_ = wants_parents_ || o->wants_rpc_parents();
  last_progress_ = start_;
}

void RunState::begin() {
  if (!observers_.empty()) {
    std::vector<std::string> calls;
    for (const PlanCall& c : plan_->calls) calls.push_back(c.name);
    std::vector<std::string> pools;
    for (const PlanPool& p : plan_->pools) pools.push_back(p.name);
    const RunStartEvent e{.rows = sources_.rows,
                          .input_batches = batch_count_,
                          .calls = calls,
                          .pools = pools,
                          .actors_per_pool = actors_per_pool_,
                          .restored = sources_.restored.size()};
    for (const auto& o : observers_) o->on_run_start(e);
  }
  // Restored roots reach the caller and the observers like computed ones (delivery first,
  // then on_root), before any computed root.
  for (std::size_t i = 0; i < sources_.restored.size(); ++i) {
    if (sources_.deliver_restored) sources_.deliver_restored(i);
    if (observers_.empty()) continue;
    const RootEvent re{.row = sources_.restored[i].first,
                       .outcome = sources_.restored[i].second,
                       .seconds = now_seconds(),
                       .restored = true};
    for (const auto& o : observers_) o->on_root(re);
  }
}

std::size_t RunState::caller_row(std::size_t row) const {
  return sources_.original_rows.empty() ? row : sources_.original_rows[row];
}

double RunState::now_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void RunState::admit() {
  if (!budget_error_.empty()) return;  // the error budget is spent: admit nothing more
  while (next_batch_ < batch_count_ && active_.size() < options_.max_active_input_batches) {
    const std::size_t first = next_batch_ * batch_rows_;
    const std::size_t rows = std::min(batch_rows_, sources_.rows - first);
    EngineOptions eo;
    eo.batch_index = next_batch_;
    eo.queue_order = options_.queue_order;
    eo.reservation = options_.reservation;
    // The batch's slice of each source column becomes its own block, so the batch's engine
    // names it like any other and the store frees it with the batch.
    std::vector<std::vector<std::uint8_t>> truth(sources_.blocks.size());
    for (std::size_t c = 0; c < sources_.blocks.size(); ++c) {
      const auto begin = sources_.values[c].begin() + static_cast<std::ptrdiff_t>(first);
      std::vector<const void*> slice(begin, begin + static_cast<std::ptrdiff_t>(rows));
      if (plan_->ports[plan_->sources[c]].needs_truth) {
        for (const void* v : slice) truth[c].push_back(*static_cast<const bool*>(v) ? 1 : 0);
      }
      store_->put(
          make_block_id(next_batch_, static_cast<std::uint32_t>(c)),
          std::make_shared<ViewBlock>(std::move(slice), std::vector<BlockRef>{sources_.blocks[c]}));
    }
    active_.push_back(std::make_unique<Engine>(plan_, eo, first, rows, truth));
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

void RunState::apply_store_commands(Engine& e) {
  std::vector<StoreCommand> commands = e.take_store_commands();
  if (wire_) {
    for (StoreCommand& c : commands) c = decode_store_command(encode(c));
  }
  store_->apply(commands);
}

bool RunState::held_back(int call) const {
  if (options_.backpressure == 0) return false;
  for (int consumer : consumers_[call]) {
    std::size_t ready = 0;
    for (const auto& e : active_) ready += e->ready_count(consumer);
    if (ready >= backlog_limit_[consumer]) return true;
  }
  return false;
}

bool RunState::wait_for_batch(const Engine& e, int call,
                              std::chrono::steady_clock::time_point now) {
  const PlanCall& pc = plan_->calls[call];
  const auto wait = plan_->pools[pc.pool].options.batch_wait;
  if (wait.count() <= 0 || e.ready_count(call) >= static_cast<std::size_t>(pc.batch_size))
    return false;
  bool more_can_arrive = false;
  for (int u : upstream_[call]) {
    const auto& k = e.counters(u);
    if (k.sealed < k.total) more_can_arrive = true;
  }
  if (!more_can_arrive) return false;
  if (hold_since_[call] == std::chrono::steady_clock::time_point::max()) hold_since_[call] = now;
  return now - hold_since_[call] < wait;
}

std::chrono::steady_clock::time_point RunState::next_hold_deadline() const {
  auto t = std::chrono::steady_clock::time_point::max();
  for (std::size_t c = 0; c < hold_since_.size(); ++c) {
    if (hold_since_[c] == std::chrono::steady_clock::time_point::max()) continue;
    t = std::min(t, hold_since_[c] + plan_->pools[plan_->calls[c].pool].options.batch_wait);
  }
  return t;
}

std::optional<Dispatch> RunState::pick(int pool, bool may_wait) {
  const auto& calls = plan_->pools[pool].calls;
  const std::size_t n = calls.size();
  const auto now = std::chrono::steady_clock::now();
  for (auto& engine : active_) {
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t idx = (rr_[pool] + k) % n;
      const int call = calls[idx];
      if (!engine->has_work(call) || held_back(call)) continue;
      if (may_wait && wait_for_batch(*engine, call, now)) continue;
      auto batch = engine->reserve(call);
      if (!batch) continue;
      rr_[pool] = idx + 1;
      hold_since_[call] = std::chrono::steady_clock::time_point::max();
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
  apply_store_commands(*active_[slot]);
  store_->release_batch(active_[slot]->batch_index());
  active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(slot));
}

void RunState::settle() {
  for (;;) {
    bool retired = false;
    for (std::size_t i = 0; i < active_.size(); ++i) {
      Engine& e = *active_[i];
      e.advance();
      if (!e.fatal_error().empty()) throw ExecutionError(e.fatal_error());
      apply_store_commands(e);  // groups first: outputs may be groups
      const std::vector<std::uint32_t> roots = e.take_finished_roots();
      if (store_->fetches() && roots.size() > 1) {
        // A remote store fetches the blocks of all these outputs in one round trip.
        std::vector<Binding> wanted;
        for (std::uint32_t root : roots) {
          e.root_outputs(root, outcomes_, causes_, values_);
          for (std::size_t k = 0; k < outcomes_.size(); ++k)
            if (outcomes_[k] == Outcome::present) wanted.push_back(values_[k]);
        }
        store_->prefetch(wanted);
      }
      for (std::uint32_t root : roots) {
        const std::size_t row = e.first_row() + root;
        e.root_outputs(root, outcomes_, causes_, values_);
        erased_.resize(outcomes_.size());
        for (std::size_t k = 0; k < outcomes_.size(); ++k) {
          const void* value =
              outcomes_[k] == Outcome::present ? store_->resolve(values_[k]) : nullptr;
          erased_[k] = ErasedOutput{outcomes_[k], causes_[k], value, std::nullopt};
          IssueOrigin origin;
          if (outcomes_[k] != Outcome::present && e.root_issue_origin(root, k, origin))
            erased_[k].origin = std::move(origin);
        }
        metrics_.root_completed_seconds[row] = now_seconds();
        ++roots_delivered_;
        Outcome root_outcome = Outcome::present;
        for (Outcome o : outcomes_) {
          if (o != Outcome::present) {
            root_outcome = o;
            break;
          }
        }
        ++metrics_.roots_by_outcome[std::string(to_string(root_outcome))];
        if (root_outcome == Outcome::failed || root_outcome == Outcome::suppressed) {
          count_failed_root(row);
        }
        sink_(row, erased_);
        if (!observers_.empty()) {
          const RootEvent re{caller_row(row), root_outcome, metrics_.root_completed_seconds[row]};
          for (const auto& o : observers_) o->on_root(re);
        }
        e.root_delivered(root);
      }
      apply_store_commands(e);
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
  if (!budget_error_.empty() && active_.empty()) throw ExecutionError(budget_error_);
}

void RunState::count_failed_root(std::size_t row) {
  ++failed_roots_;
  if (first_causes_.size() < 3) {
    for (const ErasedOutput& o : erased_) {
      if (o.outcome == Outcome::present) continue;
      first_causes_.push_back(
          fmt::format("row {}: {}{}{}", caller_row(row), to_string(o.outcome),
                      o.origin ? " at " + o.origin->call : "",
                      o.cause && !o.cause->empty() ? ": " + *o.cause : std::string()));
      break;
    }
  }
  if (!budget_error_.empty()) return;
  const bool over_count = options_.max_failed_roots && failed_roots_ > *options_.max_failed_roots;
  const bool over_fraction =
      options_.max_failed_fraction < 1.0 &&
      roots_delivered_ >= options_.min_roots_for_failed_fraction &&
      static_cast<double>(failed_roots_) >
          options_.max_failed_fraction * static_cast<double>(roots_delivered_);
  if (!over_count && !over_fraction) return;
  std::string causes;
  for (const std::string& c : first_causes_) causes += "\n  " + c;
  budget_error_ = fmt::format(
      "error budget exceeded: {} of {} delivered roots failed or were suppressed (limit: {}); "
      "no further input batch was admitted and the admitted ones finished. First causes:{}",
      failed_roots_, roots_delivered_,
      over_count
          ? fmt::format("RunOptions.max_failed_roots = {}", *options_.max_failed_roots)
          : fmt::format("RunOptions.max_failed_fraction = {} after {} roots",
                        options_.max_failed_fraction, options_.min_roots_for_failed_fraction),
      causes);
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
  if (observers_.empty()) return;
  RpcEvent e;
  e.call = d.batch.call;
  e.pool = plan_->calls[d.batch.call].pool;
  e.actor = actor;
  e.input_batch = d.engine ? d.engine->batch_index() : 0;
  e.rows = d.batch.grains.size();
  if (wants_parents_ && d.engine != nullptr) {
    std::set<std::string> parents;
    const int domain = plan_->calls[d.batch.call].domain;
    for (std::uint32_t g : d.batch.grains) {
      std::string key = d.engine->entity_key(domain, g);
      const auto slash = key.rfind('/');
      parents.insert(slash == std::string::npos ? key : key.substr(0, slash));
    }
    e.parents = parents.size();
  }
  e.start_seconds = std::chrono::duration<double>(start - start_).count();
  e.end_seconds = std::chrono::duration<double>(end - start_).count();
  e.status = status;
  for (const auto& o : observers_) o->on_rpc(e);
}

void RunState::apply_result(Dispatch& d, Attempt& attempt) {
  const PlanCall& pc = plan_->calls[d.batch.call];
  std::vector<BlockId> created;
  created.reserve(attempt.blocks.size());
  for (auto& [id, block] : attempt.blocks) {
    store_->put(id, std::move(block));
    created.push_back(id);
  }
  const CommitStatus st = d.engine->commit(attempt.report, created);
  if (st == CommitStatus::contract_error) {
    throw ExecutionError(fmt::format(
        "contract error: Call {} (UDF {}) returned a result that breaks the UDF contract for an "
        "RPC of {} rows: {}; run() must return one element per input row for every output",
        pc.name, pc.udf, d.batch.grains.size(), attempt.report.contract_error));
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

void RunState::reject_late(Report& report) {
  // The attempt was abandoned: its blocks were never stored, so there is nothing to free.
  for (auto& e : active_) {
    if (e->batch_index() == report.input_batch) {
      if (e->commit(report, {}) != CommitStatus::stale) {
        throw ExecutionError(
            "internal error: the late report of an abandoned attempt was accepted");
      }
      return;
    }
  }
  ++metrics_.stale_reports_rejected;  // its input batch is already complete
}

void RunState::tick() {
  if (observers_.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_progress_ < std::chrono::milliseconds(250)) return;
  last_progress_ = now;
  emit_progress(false);
}

void RunState::emit_progress(bool final) {
  progress_.resize(plan_->calls.size());
  for (std::size_t c = 0; c < plan_->calls.size(); ++c) {
    std::size_t ready = 0;
    for (const auto& e : active_) ready += e->ready_count(static_cast<int>(c));
    progress_[c] =
        CallProgress{plan_->calls[c].name, done_per_call_[c], ready, in_flight_per_call_[c]};
  }
  const ProgressEvent e{.roots_done = roots_delivered_ + sources_.restored.size(),
                        .roots_total = sources_.rows + sources_.restored.size(),
                        .elapsed_seconds = now_seconds(),
                        .calls = progress_,
                        .final = final};
  for (const auto& o : observers_) o->on_progress(e);
}

RunMetrics RunState::finish() {
  for (const auto& e : active_) fold_counters(*e);
  metrics_.elapsed_seconds = now_seconds();
  for (CallMetrics& m : metrics_.calls) {
    if (m.rpcs > 0) {
      m.mean_batch_fill = static_cast<double>(m.grain_dispatches) /
                          (static_cast<double>(m.rpcs) * static_cast<double>(m.batch_size));
    }
  }
  emit_progress(true);
  end_run(false, {});
  return std::move(metrics_);
}

void RunState::write_aborted(const std::string& error) noexcept {
  try {
    metrics_.elapsed_seconds = now_seconds();
    try {
      emit_progress(true);
    } catch (...) {
      // The run is failing already; the report below matters more.
    }
    end_run(true, error);
  } catch (...) {
    // Nothing more can be done while the run is already failing.
  }
}

void RunState::end_run(bool aborted, const std::string& error) {
  if (ended_) return;
  ended_ = true;
  auto record = [&](const char* what) {
    std::string message = what;
    try {
      throw;
    } catch (const std::exception& e) {
      message += e.what();
    } catch (...) {
      message += "an exception that is not a std::exception";
    }
    metrics_.file_errors.push_back(message);
    std::fprintf(stderr, "rayorch: %s\n", message.c_str());
  };
  std::vector<ReportSection> sections;
  for (const auto& o : observers_) {
    try {
      ReportSection s = o->report_section();
      if (!s.name.empty()) sections.push_back(std::move(s));
    } catch (...) {
      record("an observer's report section failed: ");
    }
  }
  const RunEndEvent e{.metrics = metrics_,
                      .aborted = aborted,
                      .error = error,
                      .roots_delivered = roots_delivered_,
                      .sections = sections};
  for (const auto& o : observers_) {
    try {
      o->on_run_end(e);
    } catch (...) {
      record("");
    }
  }
}

}  // namespace rayorch::detail
