// Re-materialisation, planning (DESIGN 5.13): the lineage of every block, where a lost value
// lives now, and which Grains, groups and source columns must run again to rebuild the values
// that are still needed. Nothing here publishes a fact.
#include <algorithm>

#include <fmt/format.h>

#include "runtime/engine.h"
#include "runtime/engine_internal.h"

namespace rayorch::detail {

void Engine::record_lineage(const InFlight& in_flight, const Report& report) {
  if (!options_.record_lineage) return;
  LineageRpc rpc{in_flight.call, in_flight.grains, in_flight.outputs, {}};
  rpc.lists.resize(in_flight.outputs.size());
  const auto index = static_cast<std::uint32_t>(rebuild_.rpcs.size());
  for (std::size_t k = 0; k < in_flight.outputs.size(); ++k) {
    const auto out = static_cast<std::uint32_t>(k);
    rebuild_.lineage[block_local(in_flight.outputs[k].block)] =
        BlockLineage{BlockLineage::Kind::output, index, out, 0};
    if (in_flight.outputs[k].child_block == 0) continue;
    rebuild_.lineage[block_local(in_flight.outputs[k].child_block)] =
        BlockLineage{BlockLineage::Kind::child, index, out, 0};
    std::uint32_t offset = 0;
    for (std::uint32_t length : report.outputs[k].lengths) {
      rpc.lists[k].emplace_back(offset, length);
      offset += length;
    }
  }
  rebuild_.rpcs.push_back(std::move(rpc));
}

Binding Engine::bound_redirected(std::int32_t block, std::uint32_t row) const {
  for (;;) {
    auto it = rebuild_.redirects.find(block);
    if (it == rebuild_.redirects.end()) break;
    const Redirect& r = it->second;
    if (row >= r.block.size() || r.block[row] < 0) break;
    const std::int32_t to = r.block[row];
    row = r.row[row];
    block = to;
  }
  return Binding{block_id(block), row};
}

Engine::Avail Engine::availability(std::int32_t& block, std::uint32_t& row,
                                   std::int32_t& cause) const {
  for (;;) {
    auto it = rebuild_.redirects.find(block);
    if (it == rebuild_.redirects.end()) break;
    const Redirect& r = it->second;
    if (row >= r.block.size() || r.block[row] == -1) break;
    if (r.block[row] == Redirect::kUnrebuildable) {
      cause = r.cause[row];
      return Avail::failed;
    }
    const std::int32_t to = r.block[row];
    row = r.row[row];
    block = to;
  }
  if (rebuild_.pending.count({block, row}) != 0) return Avail::pending;
  if (rebuild_.lost[block] != 0 || !blocks_[block].live) return Avail::lost;
  return Avail::ok;
}

Engine::Avail Engine::grain_inputs(int call, std::uint32_t entity, std::int32_t& cause) {
  Avail worst = Avail::ok;
  for (int in : p_.calls[call].inputs) {
    const Item& it = items_[in][entity];
    if (it.block < 0) continue;
    std::int32_t block = it.block;
    std::uint32_t row = it.row;
    Avail a = availability(block, row, cause);
    if (a == Avail::lost) {
      demand(block, row);
      block = it.block;
      row = it.row;
      a = availability(block, row, cause);
      if (a == Avail::lost) a = Avail::pending;  // its rebuild is planned
    }
    if (a == Avail::failed) return a;
    worst = std::max(worst, a);
  }
  return worst;
}

bool Engine::item_needed(int port, std::uint32_t entity, std::int32_t block,
                         std::uint32_t row) const {
  const Item& it = items_[port][entity];
  // Items keep their first binding; a row rebuilt before is read through its redirect.
  if (it.state != ItemState::present || it.block < 0 ||
      bound(it.block, it.row) != Binding{block_id(block), row})
    return false;
  if ((it.flags & kReleased) == 0) return true;
  // A filter passes the value on without a copy: its output reads the same row.
  for (const Consumer& c : p_.ports[port].consumers) {
    if (c.kind == ConsumerKind::filter_source &&
        item_needed(p_.filters[c.op].output, entity, block, row))
      return true;
  }
  return false;
}

void Engine::mark_lost(std::int32_t block) {
  if (rebuild_.lost[block] != 0) return;
  rebuild_.lost[block] = 1;
  const BlockLineage l = rebuild_.lineage[block];
  // Every value of the block that something still needs is rebuilt now, in as few
  // re-executions as possible, not one reader at a time.
  switch (l.kind) {
    case BlockLineage::Kind::source:
      for (std::uint32_t r = 0; r < rows_; ++r) {
        if (item_needed(p_.sources[l.index], r, block, r)) demand_lost(block, r);
      }
      break;
    case BlockLineage::Kind::output: {
      const LineageRpc& rpc = rebuild_.rpcs[l.index];
      const int port = p_.calls[rpc.call].outputs[l.output];
      for (std::uint32_t i = 0; i < rpc.grains.size(); ++i) {
        if (item_needed(port, rpc.grains[i], block, i)) demand_lost(block, i);
      }
      break;
    }
    case BlockLineage::Kind::child: {
      const LineageRpc& rpc = rebuild_.rpcs[l.index];
      const int port = p_.calls[rpc.call].outputs[l.output];
      const PlanExpand& pe = p_.expands[p_.ports[port].expanded_by];
      const auto at = std::find(pe.lists.begin(), pe.lists.end(), port) - pe.lists.begin();
      const int child_port = pe.children[static_cast<std::size_t>(at)];
      for (std::uint32_t i = 0; i < rpc.grains.size(); ++i) {
        const Expansion& x = expand_.expansions[pe.child_domain][rpc.grains[i]];
        const auto [offset, length] = rebuild_.rpcs[l.index].lists[l.output][i];
        if (x.state != 1) continue;
        for (std::uint32_t j = 0; j < length && j < x.count; ++j) {
          if (item_needed(child_port, x.first + j, block, offset + j))
            demand_lost(block, offset + j);
        }
      }
      break;
    }
    case BlockLineage::Kind::group:
      if (item_needed(p_.reduces[l.index].outputs[l.output], l.parent, block, 0))
        demand_lost(block, 0);
      break;
    case BlockLineage::Kind::unknown:
      break;
  }
  // A group may hold the block's rows as members (a remote store composes groups from their
  // members' blocks): such groups are composed again from the rebuilt members.
  for (std::size_t g = 0; g < blocks_.size(); ++g) {
    const BlockLineage& gl = rebuild_.lineage[g];
    if (gl.kind != BlockLineage::Kind::group || !blocks_[g].live || rebuild_.lost[g] != 0) continue;
    const PlanReduce& pr = p_.reduces[gl.index];
    const Expansion& x = expand_.expansions[pr.child_domain][gl.parent];
    bool holds = false;
    for (std::uint32_t k = 0; k < x.count && !holds; ++k) {
      const Item& it = items_[pr.values[gl.output]][x.first + k];
      holds = it.block >= 0 && bound(it.block, it.row).block == block_id(block);
    }
    if (holds) mark_lost(static_cast<std::int32_t>(g));
  }
}

std::vector<std::pair<std::int32_t, std::uint32_t>> Engine::rows_of(std::uint32_t rpc,
                                                                    std::size_t index) const {
  const LineageRpc& l = rebuild_.rpcs[rpc];
  std::vector<std::pair<std::int32_t, std::uint32_t>> rows;
  for (std::size_t k = 0; k < l.outputs.size(); ++k) {
    rows.emplace_back(block_local(l.outputs[k].block), static_cast<std::uint32_t>(index));
    if (l.outputs[k].child_block == 0) continue;
    const auto [offset, length] = l.lists[k][index];
    for (std::uint32_t j = 0; j < length; ++j)
      rows.emplace_back(block_local(l.outputs[k].child_block), offset + j);
  }
  return rows;
}

void Engine::demand_lost(std::int32_t block, std::uint32_t row) {
  std::int32_t cause = -1;
  if (availability(block, row, cause) == Avail::lost) demand(block, row);
}

void Engine::demand(std::int32_t block, std::uint32_t row) {
  if (rebuild_.pending.count({block, row}) != 0) return;
  const BlockLineage l = rebuild_.lineage[block];
  switch (l.kind) {
    case BlockLineage::Kind::source: {
      // The driver still has the source rows: the column is put into the store again.
      const std::int32_t fresh = new_block();
      make_live(fresh);
      ++blocks_[fresh].uses;  // held until the input batch retires
      rebuild_.lineage[fresh] = l;
      rebuild_.remade[fresh] = 1;
      rebuild_.sources.emplace_back(l.index, block_id(fresh));
      for (std::uint32_t r = 0; r < rows_; ++r) redirect(block, r, fresh, r);
      rebuild_.values += rows_;
      return;
    }
    case BlockLineage::Kind::output:
    case BlockLineage::Kind::child: {
      const LineageRpc& rpc = rebuild_.rpcs[l.index];
      for (std::size_t i = 0; i < rpc.grains.size(); ++i) {
        if (l.kind == BlockLineage::Kind::output
                ? i == row
                : row >= rpc.lists[l.output][i].first &&
                      row < rpc.lists[l.output][i].first + rpc.lists[l.output][i].second) {
          queue_reexecution(l.index, rpc.grains[i]);
          return;
        }
      }
      break;
    }
    case BlockLineage::Kind::group:
      rebuild_.pending.insert({block, 0});
      rebuild_.groups.push_back(
          GroupStep{block, static_cast<int>(l.index), static_cast<int>(l.output), l.parent});
      return;
    case BlockLineage::Kind::unknown:
      break;
  }
  unrebuildable(block, row, loss_cause("no Grain's lineage names the value"));
}

void Engine::queue_reexecution(std::uint32_t rpc, std::uint32_t entity) {
  const LineageRpc& l = rebuild_.rpcs[rpc];
  if (!rebuild_.grains.insert({l.call, entity}).second) return;
  const auto at = std::find(l.grains.begin(), l.grains.end(), entity) - l.grains.begin();
  for (const auto& r : rows_of(rpc, static_cast<std::size_t>(at))) rebuild_.pending.insert(r);
  rebuild_.queued[rpc].push_back(entity);
}

void Engine::redirect(std::int32_t block, std::uint32_t row, std::int32_t to,
                      std::uint32_t to_row) {
  Redirect& r = rebuild_.redirects[block];
  if (r.block.size() <= row) {
    r.block.resize(row + 1, -1);
    r.row.resize(row + 1, 0);
    r.cause.resize(row + 1, -1);
  }
  r.block[row] = to;
  r.row[row] = to_row;
  rebuild_.pending.erase({block, row});
}

void Engine::unrebuildable(std::int32_t block, std::uint32_t row, std::int32_t cause) {
  redirect(block, row, Redirect::kUnrebuildable, 0);
  rebuild_.redirects[block].cause[row] = cause;
}

std::int32_t Engine::loss_cause(const std::string& why) {
  return intern(
      fmt::format("rayorch::BlockLost: {}; it could not be rebuilt: {}", rebuild_.reason, why));
}

}  // namespace rayorch::detail
