// The actor side of the Ray backend. See ray_worker.h.
#include "ray_worker.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "ray_blocks.h"
#include "ray_contract.h"
#include "ray_wire.h"
#include <fmt/format.h>

#include "rayorch/errors.h"

#include "runtime/protocol_codec.h"

namespace nb = nanobind;

namespace rayorch::python {
namespace {

std::string bytes_of(const nb::bytes& b) {
  return std::string(b.c_str(), b.size());
}

/// The report of an attempt, with its times on this actor's wall clock.
CallReport call_report(const rd::Attempt& a, const std::string& rebuild_error) {
  CallReport r;
  r.start_s = to_wall_seconds(a.start);
  r.end_s = to_wall_seconds(a.end);
  switch (a.kind) {
    case rd::Attempt::Kind::ok:
      r.status = CallStatus::ok;
      r.report = rd::encode(a.report);
      break;
    case rd::Attempt::Kind::failed:
      r.status = CallStatus::call_failed;
      r.error = a.error;
      break;
    case rd::Attempt::Kind::lost:
      r.status = rebuild_error.empty() ? CallStatus::udf_lost : CallStatus::udf_lost_unrebuilt;
      r.error = a.error;
      r.rebuild_error = rebuild_error;
      break;
    case rd::Attempt::Kind::inputs_lost:  // made by the driver's pools, never by invoke_call
      r.status = CallStatus::block_lost;
      r.error = a.error;
      break;
  }
  return r;
}

}  // namespace

RayWorker::RayWorker(std::shared_ptr<const rd::RuntimePlan> plan, int pool)
    : plan_(std::move(plan)), pool_(pool) {
  if (pool < 0 || static_cast<std::size_t>(pool) >= plan_->pools.size())
    throw ExecutionError(fmt::format("no pool {} in this program", pool));
  std::string error;
  instance_ = rd::build_instance(*plan_, pool_, error);
  if (!instance_) throw ExecutionError(error);
}

nb::tuple RayWorker::run(nb::bytes task_bytes, nb::args blocks) {
  const RayTask task = decode_task(bytes_of(task_bytes));
  const rd::Invocation& inv = task.invocation;
  if (task.sent.size() != blocks.size()) {
    throw rd::ProtocolError(
        fmt::format("{} block ids for {} blocks", task.sent.size(), blocks.size()));
  }
  for (rd::BlockId id : task.evicted) cache_.erase(id);
  std::unordered_map<rd::BlockId, std::shared_ptr<PyBlock>> in;
  for (rd::BlockId id : task.held) {
    auto it = cache_.find(id);
    if (it == cache_.end())
      throw rd::ProtocolError(fmt::format("block {:#x} is not held by this actor", id));
    in.emplace(id, it->second);
  }
  std::size_t next_sent = 0;
  for (nb::handle b : blocks) {
    std::shared_ptr<PyBlock> block = list_to_block(b.ptr());
    cache_[task.sent[next_sent]] = block;
    in.emplace(task.sent[next_sent++], std::move(block));
  }
  auto block = [&](rd::BlockId id) -> const PyBlock& {
    auto it = in.find(id);
    if (it == in.end()) throw rd::ProtocolError(fmt::format("block {:#x} was not sent", id));
    return *it->second;
  };
  rd::ResolvedInputs resolved;
  resolved.columns.resize(inv.inputs.size());
  std::vector<std::vector<char>> is_group(inv.inputs.size());
  for (std::size_t i = 0; i < inv.inputs.size(); ++i) is_group[i].assign(inv.inputs[i].size(), 0);
  for (const rd::GroupInput& g : task.groups) is_group.at(g.input).at(g.row) = 1;
  for (std::size_t i = 0; i < inv.inputs.size(); ++i) {
    for (std::size_t row = 0; row < inv.inputs[i].size(); ++row) {
      const rd::Binding& b = inv.inputs[i][row];
      if (is_group[i][row]) {
        resolved.columns[i].push_back(nullptr);  // composed below
        continue;
      }
      const PyBlock& pb = block(b.block);
      resolved.columns[i].push_back(&pb.rows.at(b.row));
    }
  }
  for (const rd::GroupInput& g : task.groups) {
    PyObject* list = compose_group(g.members, g.layout, [&](const rd::Binding& m) {
      return block(m.block).rows.at(m.row).obj;
    });
    auto composed = std::make_shared<PyBlock>();
    composed->rows.push_back(PyValue{false, list, nullptr, 0});
    resolved.columns.at(g.input).at(g.row) = &composed->rows[0];
    resolved.keep_alive.push_back(composed);
  }
  for (auto& [id, b] : in) resolved.keep_alive.push_back(b);

  rd::Attempt a;
  std::string rebuild_error;
  {
    nb::gil_scoped_release release;  // the worker boundary takes the GIL where it needs it
    a = rd::invoke_call(*plan_, inv, *instance_, resolved);
    if (a.kind == rd::Attempt::Kind::lost) {
      // Like a local actor, a Ray actor whose UDF raised ActorLost rebuilds its instance.
      std::string error;
      auto fresh = rd::build_instance(*plan_, pool_, error);
      if (fresh) {
        instance_ = std::move(fresh);
      } else {
        rebuild_error = error;
      }
    }
  }
  std::size_t nblocks = 0;
  for (const rd::OutputSlot& s : inv.outputs) nblocks += s.child_block != 0 ? 2 : 1;
  nb::object out = nb::steal(PyTuple_New(static_cast<Py_ssize_t>(1 + nblocks)));
  if (!out.is_valid()) throw_foreign();
  PyTuple_SET_ITEM(out.ptr(), 0, nb::cast(call_report(a, rebuild_error)).release().ptr());
  std::size_t j = 1;
  // A kept output block stays in this actor's cache for the next Call of this pool, which the
  // driver sends here (DESIGN 5.12); None takes its place among the returns.
  auto find = [&](rd::BlockId id) -> PyObject* {
    for (const auto& [bid, ref] : a.blocks) {
      if (bid != id) continue;
      PyObject* list = block_to_list(*ref);
      if (std::find(task.kept.begin(), task.kept.end(), id) == task.kept.end()) return list;
      nb::object owned = nb::steal(list);
      if (!owned.is_valid()) throw_foreign();
      cache_[id] = list_to_block(owned.ptr());
      return Py_NewRef(Py_None);
    }
    return Py_NewRef(Py_None);
  };
  const bool produced = a.kind == rd::Attempt::Kind::ok && a.report.contract_error.empty();
  for (const rd::OutputSlot& s : inv.outputs) {
    PyTuple_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(j++),
                     produced ? find(s.block) : Py_NewRef(Py_None));
    if (s.child_block != 0) {
      PyTuple_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(j++),
                       produced ? find(s.child_block) : Py_NewRef(Py_None));
    }
  }
  a.blocks.clear();  // the attempt's blocks hold Python objects: dropped with the GIL held
  return nb::borrow<nb::tuple>(out);
}

nb::list RayWorker::exported(rd::BlockId id) const {
  auto it = cache_.find(id);
  if (it == cache_.end())
    throw rd::ProtocolError(fmt::format("block {:#x} is not held by this actor", id));
  return nb::steal<nb::list>(block_to_list(*it->second));
}

}  // namespace rayorch::python
