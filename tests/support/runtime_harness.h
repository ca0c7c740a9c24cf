// Helpers for driving one detail::Engine by hand: the tests reserve batches and commit,
// fail or lose them in an order of their choosing, which is how arrival order is controlled
// exactly. Also small formatting helpers for outcomes and groups.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

#include "execution/invoke.h"
#include "execution/value_store.h"
#include "program/plan.h"
#include "runtime/engine.h"

namespace runtime_test {

namespace ro = rayorch;
namespace rd = rayorch::detail;

/// The outcome an input Item is made to take in a rule table.
enum class Fate { present, dropped, failed, suppressed };

inline const char* fate_name(Fate f) {
  switch (f) {
    case Fate::present:
      return "present";
    case Fate::dropped:
      return "dropped";
    case Fate::failed:
      return "failed";
    case Fate::suppressed:
      return "suppressed";
  }
  return "?";
}

inline const char* state_name(rd::ItemState s) {
  switch (s) {
    case rd::ItemState::unresolved:
      return "unresolved";
    case rd::ItemState::present:
      return "present";
    case rd::ItemState::dropped:
      return "dropped";
    case rd::ItemState::failed:
      return "failed";
    case rd::ItemState::suppressed:
      return "suppressed";
  }
  return "?";
}

inline const char* phase_name(rd::GrainPhase p) {
  switch (p) {
    case rd::GrainPhase::waiting:
      return "waiting";
    case rd::GrainPhase::ready:
      return "ready";
    case rd::GrainPhase::in_flight:
      return "in_flight";
    case rd::GrainPhase::sealed:
      return "sealed";
  }
  return "?";
}

/// Every permutation of 0..n-1, in lexicographic order.
inline std::vector<std::vector<int>> permutations(int n) {
  std::vector<int> p(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = i;
  std::vector<std::vector<int>> out;
  do {
    out.push_back(p);
  } while (std::next_permutation(p.begin(), p.end()));
  return out;
}

/// Every assignment of `choices` to `n` slots.
template <class T>
std::vector<std::vector<T>> assignments(const std::vector<T>& choices, int n) {
  std::vector<std::vector<T>> out{{}};
  for (int i = 0; i < n; ++i) {
    std::vector<std::vector<T>> next;
    for (const auto& prefix : out) {
      for (const T& c : choices) {
        auto v = prefix;
        v.push_back(c);
        next.push_back(std::move(v));
      }
    }
    out = std::move(next);
  }
  return out;
}

/// Converts a (possibly nested) Group into plain vectors for comparisons and messages.
template <class T>
auto plain(const T& v) {
  return v;
}
template <class T>
auto plain(const ro::Group<T>& g) {
  std::vector<decltype(plain(std::declval<const T&>()))> out;
  for (const T& x : g) out.push_back(plain(x));
  return out;
}

/// An Engine over a compiled program with one int source column and the worker side's
/// value store, plus lookups of Calls by name and helpers that turn UDF-shaped results into
/// reports the way the worker boundary does.
class EngineRig {
 public:
  template <class P>
  EngineRig(const ro::Compiled<P>& program, std::vector<int> rows, rd::EngineOptions options = {})
      : plan_(program.plan()), store_(plan_) {
    const std::size_t n = rows.size();
    const rd::BlockId source = rd::make_block_id(options.batch_index, 0);
    retained_.emplace(source, std::make_shared<rd::VectorBlock<int>>(std::move(rows)));
    store_.put(source, retained_.at(source));
    engine_ = std::make_unique<rd::Engine>(plan_, options, 0, n);
    advance();
  }

  /// Advances the engine and applies what it asks of the store.
  void advance() {
    engine_->advance();
    for (const rd::StoreCommand& c : engine_->take_store_commands()) {
      store_.apply({c});
      if (c.kind == rd::StoreCommand::Kind::compose_group)
        retained_.emplace(c.block, store_.block(c.block));
    }
  }

  rd::Engine& engine() { return *engine_; }
  rd::Engine* operator->() { return engine_.get(); }
  const rd::RuntimePlan& plan() const { return *plan_; }

  /// The index of the Call printed as `name` (e.g. "Split#0").
  int call(const std::string& name) const {
    for (std::size_t c = 0; c < plan_->calls.size(); ++c) {
      if (plan_->calls[c].name == name) return static_cast<int>(c);
    }
    throw std::invalid_argument("no Call named " + name);
  }
  int domain_of_port(int port) const { return plan_->ports[port].domain; }

  /// Reserves one batch of `call`; fails the test when nothing is dispatchable.
  rd::Invocation reserve(int call) {
    auto b = engine_->reserve(call);
    if (!b) throw std::logic_error("nothing to reserve for " + plan_->calls[call].name);
    return std::move(*b);
  }

  /// Entity keys of a reserved batch, e.g. "0/1 0/2".
  std::string keys(const rd::Invocation& b) const {
    std::string s;
    for (std::uint32_t e : b.grains) {
      s += (s.empty() ? "" : " ") + engine_->entity_key(plan_->calls[b.call].domain, e);
    }
    return s;
  }

  /// Commits `result` (a UDF-shaped result: vector or tuple of vectors) for batch `b`.
  template <class R>
  rd::CommitStatus commit(const rd::Invocation& b, R result) {
    rd::RpcOutput out = rd::convert_result(std::move(result), b.grains.size());
    std::vector<std::pair<rd::BlockId, rd::BlockRef>> blocks;
    rd::Report report = rd::make_report(*plan_, b, std::move(out), blocks);
    std::vector<rd::BlockId> created;
    for (auto& [id, block] : blocks) {
      retained_.emplace(id, block);
      store_.put(id, std::move(block));
      created.push_back(id);
    }
    const rd::CommitStatus st = engine_->commit(report, created);
    advance();
    return st;
  }

  /// The value of a PRESENT Item (null for any other), even after the engine released it (the rig
  /// retains every block it ever stored, so rule tests can inspect values that nothing needs any
  /// more).
  const void* value(int port, std::uint32_t entity) const {
    const rd::Binding b = engine_->item_binding(port, entity);
    if (b.block == 0) return nullptr;  // not PRESENT: no value
    auto it = retained_.find(b.block);
    if (it == retained_.end()) throw std::logic_error("the Item has no value");
    return it->second->at(b.row);
  }
  /// The value of input `input` of row `row` of a reserved batch.
  template <class T>
  const T& input(const rd::Invocation& b, std::size_t input, std::size_t row) const {
    return *static_cast<const T*>(store_.address(b.inputs[input][row]));
  }
  const rd::ValueStore& store() const { return store_; }

  /// The outcome and cause of an Item, as "state" or "state(cause)".
  std::string item(int port, std::uint32_t entity) const {
    const rd::ItemState s = engine_->item_state(port, entity);
    const std::string* c = engine_->item_cause(port, entity);
    std::string out = state_name(s);
    if (c != nullptr) out += "(" + *c + ")";
    return out;
  }

  /// The root rows finished so far (accumulated across calls).
  const std::vector<std::uint32_t>& finished() {
    for (std::uint32_t r : engine_->take_finished_roots()) finished_.push_back(r);
    return finished_;
  }

 private:
  std::shared_ptr<const rd::RuntimePlan> plan_;
  rd::ValueStore store_;
  std::map<rd::BlockId, rd::BlockRef> retained_;
  std::unique_ptr<rd::Engine> engine_;
  std::vector<std::uint32_t> finished_;
};

}  // namespace runtime_test
