// The worker boundary. See invoke.h.
#include "execution/invoke.h"

#include <fmt/format.h>

#include "rayorch/errors.h"
#include "rayorch/outcome.h"

namespace rayorch::detail {

std::string describe_current_exception() {
  std::string type = current_exception_type();
  try {
    throw;
  } catch (const ForeignError& e) {
    const std::string message = e.what();
    std::string cause = message.empty() ? e.type() : e.type() + ": " + message;
    if (!e.traceback().empty()) cause += "\n" + e.traceback();
    return cause;
  } catch (const std::exception& e) {
    return type + ": " + e.what();
  } catch (...) {
    return type;
  }
}

Report make_report(const RuntimePlan& plan, const Invocation& inv, RpcOutput&& out,
                   std::vector<std::pair<BlockId, BlockRef>>& blocks) {
  Report r;
  r.invocation = inv.id;
  r.input_batch = inv.input_batch;
  if (!out.contract_error.empty()) {
    r.contract_error = std::move(out.contract_error);
    return r;
  }
  if (out.values.size() != inv.outputs.size()) {
    r.contract_error =
        fmt::format("{} outputs for {} declared", out.values.size(), inv.outputs.size());
    return r;
  }
  const std::size_t rows = inv.grains.size();
  for (const auto& column : out.values) {
    if (column.size() != rows) {
      r.contract_error =
          fmt::format("an output has {} rows for {} input rows", column.size(), rows);
      return r;
    }
  }
  r.failures = std::move(out.failures);
  const PlanCall& pc = plan.calls[inv.call];
  r.outputs.resize(inv.outputs.size());
  for (std::size_t k = 0; k < inv.outputs.size(); ++k) {
    const OutputSlot& slot = inv.outputs[k];
    const auto& values = out.values[k];
    OutputReport& o = r.outputs[k];
    if (slot.truth) {
      o.truth.resize(rows);
      for (std::size_t row = 0; row < rows; ++row) {
        o.truth[row] = values[row] != nullptr && *static_cast<const bool*>(values[row]) ? 1 : 0;
      }
    }
    if (slot.child_block != 0) {
      // Split the lists into one child block so that every child has its own binding.
      const int port = pc.outputs[k];
      const PlanExpand& pe = plan.expands[plan.ports[port].expanded_by];
      std::size_t list = 0;
      while (pe.lists[list] != port) ++list;
      const ListOps& ops = plan.code->list_ops[plan.ports[port].expanded_by][list];
      o.lengths.resize(rows);
      std::vector<const void*> elements;
      for (std::size_t row = 0; row < rows; ++row) {
        if (values[row] == nullptr) continue;
        const std::size_t n = ops.size(values[row]);
        o.lengths[row] = static_cast<std::uint32_t>(n);
        for (std::size_t i = 0; i < n; ++i) elements.push_back(ops.at(values[row], i));
      }
      blocks.emplace_back(
          slot.child_block,
          std::make_shared<ViewBlock>(std::move(elements), std::vector<BlockRef>{out.blocks[k]}));
    }
    blocks.emplace_back(slot.block, std::move(out.blocks[k]));
  }
  return r;
}

Attempt invoke_call(const RuntimePlan& plan, const Invocation& inv, UdfInstance& instance,
                    const ResolvedInputs& inputs) {
  Attempt a;
  a.report.invocation = inv.id;  // also for failed and lost attempts: names what was tried
  a.report.input_batch = inv.input_batch;
  std::vector<ColumnInput> columns;
  columns.reserve(inputs.columns.size());
  for (const auto& in : inputs.columns) columns.push_back(ColumnInput{in.data(), in.size()});
  a.start = std::chrono::steady_clock::now();
  try {
    RpcOutput out = plan.code->invokers[inv.call](instance, columns);
    a.report = make_report(plan, inv, std::move(out), a.blocks);
    a.kind = Attempt::Kind::ok;
  } catch (const ActorLost&) {
    a.kind = Attempt::Kind::lost;
    a.error = describe_current_exception();
  } catch (...) {
    a.kind = Attempt::Kind::failed;
    a.error = describe_current_exception();
  }
  a.end = std::chrono::steady_clock::now();
  return a;
}

std::unique_ptr<UdfInstance> build_instance(const RuntimePlan& plan, int pool, std::string& error) {
  try {
    return plan.code->factories[pool]();
  } catch (...) {
    error = fmt::format("the constructor of Module<{}> threw {}", plan.pools[pool].udf,
                        describe_current_exception());
    return nullptr;
  }
}

}  // namespace rayorch::detail
