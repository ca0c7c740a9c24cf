// The per-input-batch semantic engine (engine.h, DESIGN 5): construction, completion and
// what the driver reads of finished roots. The rules and the engine's other parts live in
// the engine_*.cc and rule_*.cc files next to this one (README, "where things are").
#include "runtime/engine.h"

#include <stdexcept>

#include <fmt/format.h>

#include "runtime/engine_internal.h"

namespace rayorch::detail {

Engine::Engine(std::shared_ptr<const RuntimePlan> plan, EngineOptions options,
               std::size_t first_row, std::size_t rows,
               const std::vector<std::vector<std::uint8_t>>& source_truth)
    : plan_(std::move(plan)), p_(*plan_), options_(options), first_row_(first_row), rows_(rows) {
  const std::size_t nd = p_.domains.size();
  parent_.resize(nd);
  ordinal_.resize(nd);
  child_domains_.resize(nd);
  reduce_.into.resize(nd);
  for (std::size_t d = 1; d < nd; ++d)
    child_domains_[p_.domains[d].parent].push_back(static_cast<int>(d));
  reduce_.guarded.resize(p_.calls.size());
  reduce_.unsealed.resize(p_.calls.size());
  for (std::size_t r = 0; r < p_.reduces.size(); ++r) {
    reduce_.into[p_.reduces[r].parent_domain].push_back(static_cast<int>(r));
    for (int g : p_.reduces[r].guards) reduce_.guarded[g].push_back(static_cast<int>(r));
  }
  items_.resize(p_.ports.size());
  expand_.expansions.resize(nd);
  reduce_.progress.resize(p_.reduces.size());
  grains_.resize(p_.calls.size());
  barriers_.resize(p_.calls.size());
  queues_.resize(p_.calls.size());
  counters_.resize(p_.calls.size());
  call_inputs_.resize(p_.calls.size());
  for (std::size_t c = 0; c < p_.calls.size(); ++c) call_inputs_[c] = p_.calls[c].inputs.size();
  root_outputs_resolved_.assign(rows, 0);
  root_delivered_.assign(rows, 0);
  expand_.splits.resize(p_.ports.size());
  init_outputs_below_root();

  create_entities(0, static_cast<std::uint32_t>(rows), kNoEntity);
  for (std::size_t s = 0; s < p_.sources.size(); ++s) {
    const std::int32_t block = new_block();  // source column s is local block s
    make_live(block);
    rebuild_.lineage[block] =
        BlockLineage{BlockLineage::Kind::source, static_cast<std::uint32_t>(s), 0, 0};
    const int port = p_.sources[s];
    const bool truth = p_.ports[port].needs_truth;
    if (truth && (s >= source_truth.size() || source_truth[s].size() != rows)) {
      throw std::logic_error(fmt::format(
          "internal error: source column {} feeds a mask but its booleans were not given", s));
    }
    for (std::size_t r = 0; r < rows; ++r) {
      const std::uint8_t flags = truth && source_truth[s][r] ? kTruth : 0;
      publish(port, static_cast<std::uint32_t>(r), ItemState::present, block,
              static_cast<std::uint32_t>(r), -1, flags);
    }
    release_if_unused(block);
  }
}

Engine::~Engine() = default;

bool Engine::complete() const {
  return fact_head_ >= facts_.size() && in_flight_.empty() && grains_sealed_ == grains_total_ &&
         roots_finished_ == rows_ && rebuild_.roots.empty() && fatal_.empty();
}

bool Engine::stuck() const {
  if (complete() || fact_head_ < facts_.size() || !in_flight_.empty()) return false;
  for (std::size_t c = 0; c < queues_.size(); ++c) {
    if (has_work(static_cast<int>(c))) return false;
  }
  return true;
}

std::string Engine::deadlock_report() const {
  std::string calls;
  for (std::size_t c = 0; c < p_.calls.size(); ++c) {
    std::uint64_t waiting = 0, ready = 0, in_flight = 0;
    for (const Grain& g : grains_[c]) {
      if (g.phase == GrainPhase::waiting) ++waiting;
      if (g.phase == GrainPhase::ready) ++ready;
      if (g.phase == GrainPhase::in_flight) ++in_flight;
    }
    calls += fmt::format("; {}: {} sealed, {} waiting, {} ready, {} in flight", p_.calls[c].name,
                         counters_[c].sealed, waiting, ready, in_flight);
  }
  if (rebuild_.active) {
    std::string rows;
    for (const auto& [block, row] : rebuild_.pending) rows += fmt::format(" {}:{}", block, row);
  }
  return fmt::format(
      "deadlock in input batch {} (rows {}..{}): nothing in flight and nothing dispatchable, but "
      "{} of {} Grains are sealed and {} of {} roots are terminal{}",
      options_.batch_index, first_row_, first_row_ + rows_, grains_sealed_, grains_total_,
      roots_finished_, rows_, calls);
}

bool Engine::upstream_unsealed(int call) const {
  for (int u : p_.call_consumers.upstream[static_cast<std::size_t>(call)]) {
    if (counters_[u].sealed < counters_[u].total) return true;
  }
  return false;
}

std::vector<std::uint32_t> Engine::take_finished_roots() {
  std::vector<std::uint32_t> out;
  out.swap(finished_roots_);
  return out;
}

void Engine::root_outputs(std::uint32_t root, std::vector<Outcome>& outcomes,
                          std::vector<const std::string*>& causes, std::vector<Binding>& values,
                          std::vector<std::uint32_t>& items) const {
  outcomes.clear();
  causes.clear();
  values.clear();
  items.clear();
  std::vector<std::uint32_t> entities;
  for (std::size_t k = 0; k < p_.outputs.size(); ++k) {
    const int out = p_.outputs[k];
    if (output_below_root(k)) {
      output_entities(root, k, entities);
    } else {
      entities.assign(1, root);
    }
    items.push_back(static_cast<std::uint32_t>(entities.size()));
    for (std::uint32_t e : entities) {
      const Item& it = items_[out][e];
      std::int32_t lost = -1;
      if (rebuild_.active && output_availability(it, lost) == Avail::failed) {
        // Lost before delivery and not rebuilt (DESIGN 5.13).
        outcomes.push_back(Outcome::failed);
        causes.push_back(&causes_[lost].message);
        values.push_back(Binding{});
        continue;
      }
      outcomes.push_back(to_outcome(it.state));
      causes.push_back(it.cause >= 0 ? &causes_[it.cause].message : nullptr);
      values.push_back(it.block >= 0 ? bound(it.block, it.row) : Binding{});
    }
  }
}

bool Engine::root_issue_origin(std::uint32_t root, std::size_t k, std::size_t i,
                               IssueOrigin& origin) const {
  std::uint32_t entity = root;
  if (output_below_root(k)) {
    std::vector<std::uint32_t> entities;
    output_entities(root, k, entities);
    entity = entities.at(i);
  }
  const std::int32_t c = items_[p_.outputs[k]][entity].cause;
  if (c < 0 || causes_[c].call < 0) return false;
  const Cause& cause = causes_[c];
  const PlanCall& pc = p_.calls[cause.call];
  origin.call = pc.name;
  origin.call_index = cause.call;
  origin.entity = entity_key(pc.domain, cause.entity);
  origin.attempts = cause.attempts;
  return true;
}

void Engine::root_delivered(std::uint32_t root) {
  root_delivered_[root] = 1;
  std::vector<std::uint32_t> entities;
  for (std::size_t k = 0; k < p_.outputs.size(); ++k) {
    if (!output_below_root(k)) {
      maybe_release(p_.outputs[k], root);
      continue;
    }
    output_entities(root, k, entities);
    for (std::uint32_t e : entities) maybe_release(p_.outputs[k], e);
  }
}

std::vector<StoreCommand> Engine::take_store_commands() {
  std::vector<StoreCommand> out;
  out.swap(store_commands_);
  return out;
}

}  // namespace rayorch::detail
