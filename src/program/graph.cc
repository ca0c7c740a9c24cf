// Trace recording: the Graph API used by the typed front end.
#include <memory>

#include <fmt/format.h>

#include "rayorch/errors.h"

#include "program/logical.h"

namespace rayorch::detail {

namespace {
// The one piece of global mutable state: the trace target of this thread.
thread_local std::shared_ptr<Graph> tracing;
}  // namespace

Graph* current_graph() {
  return tracing.get();
}
std::shared_ptr<Graph> current_graph_shared() {
  return tracing;
}

TraceScope::TraceScope(std::shared_ptr<Graph> graph) : previous_(std::move(tracing)) {
  tracing = std::move(graph);
}
TraceScope::~TraceScope() {
  tracing = std::move(previous_);
}

Graph::Graph() : impl_(std::make_unique<Impl>()) {}
Graph::~Graph() = default;

int Graph::Impl::new_port(PortKind kind, std::string type, int op, int slot) {
  if (sealed) {
    throw CompileError(
        "the pipeline's trace is finished: Ports can only be created while "
        "forward() runs under ro::compile");
  }
  ports.push_back(LogicalPort{kind, std::move(type), op, slot});
  return static_cast<int>(ports.size()) - 1;
}

void Graph::Impl::check_port(int port, const char* what) const {
  if (port < 0 || port >= static_cast<int>(ports.size())) {
    throw CompileError(fmt::format("{}: p{} is not a Port of this pipeline", what, port));
  }
}

int Graph::add_source(std::string type) {
  int id = impl_->new_port(PortKind::source, std::move(type),
                           static_cast<int>(impl_->sources.size()), 0);
  impl_->sources.push_back(id);
  return id;
}

std::vector<int> Graph::add_call(ModuleRecord module, CallRecord call) {
  Impl& g = *impl_;
  for (int in : call.inputs) g.check_port(in, "Module call");
  int module_index = -1;
  for (std::size_t m = 0; m < g.modules.size(); ++m) {
    if (g.modules[m].record.identity == module.identity) module_index = static_cast<int>(m);
  }
  if (module_index < 0) {
    g.modules.push_back(LogicalModule{std::move(module)});
    module_index = static_cast<int>(g.modules.size()) - 1;
  }
  const int call_index = static_cast<int>(g.calls.size());
  std::vector<int> outputs;
  for (std::size_t i = 0; i < call.output_types.size(); ++i) {
    outputs.push_back(
        g.new_port(PortKind::call_output, call.output_types[i], call_index, static_cast<int>(i)));
  }
  g.calls.push_back(LogicalCall{module_index, std::move(call), outputs});
  return outputs;
}

std::vector<int> Graph::add_expand(std::vector<int> lists, std::vector<ListOps> ops,
                                   std::vector<std::string> element_types) {
  Impl& g = *impl_;
  for (int l : lists) g.check_port(l, "F::expand");
  const int op = static_cast<int>(g.expands.size());
  std::vector<int> children;
  for (std::size_t i = 0; i < lists.size(); ++i) {
    children.push_back(g.new_port(PortKind::expand, element_types[i], op, static_cast<int>(i)));
  }
  g.expands.push_back(LogicalExpand{std::move(lists), children, std::move(ops)});
  return children;
}

std::vector<int> Graph::add_reduce(std::vector<int> values, int members,
                                   std::vector<GroupMaker> makers,
                                   std::vector<std::string> group_types) {
  Impl& g = *impl_;
  for (int v : values) g.check_port(v, "F::reduce");
  if (members >= 0) g.check_port(members, "F::reduce members");
  const int op = static_cast<int>(g.reduces.size());
  std::vector<int> outputs;
  for (std::size_t i = 0; i < values.size(); ++i) {
    outputs.push_back(g.new_port(PortKind::reduce, group_types[i], op, static_cast<int>(i)));
  }
  g.reduces.push_back(LogicalReduce{std::move(values), members, outputs, std::move(makers)});
  return outputs;
}

namespace {
// A filter or a broadcast: one output Port of `source`'s type, recorded in `ops` as
// Op{source, other, output} (`other` is the mask or the Port whose Domain is wanted).
template <class Op>
int add_source_typed(Graph::Impl& g, std::vector<Op>& ops, PortKind kind, const char* what,
                     int source, int other) {
  g.check_port(source, what);
  g.check_port(other, what);
  const int op = static_cast<int>(ops.size());
  const int out = g.new_port(kind, g.ports[source].type, op, 0);
  ops.push_back(Op{source, other, out});
  return out;
}
}  // namespace

int Graph::add_filter(int source, int mask) {
  return add_source_typed(*impl_, impl_->filters, PortKind::filter, "F::filter", source, mask);
}

int Graph::add_broadcast(int source, int like) {
  return add_source_typed(*impl_, impl_->broadcasts, PortKind::broadcast, "F::broadcast", source,
                          like);
}

void Graph::set_outputs(std::vector<int> outputs) {
  impl_->outputs = std::move(outputs);
}
void Graph::allow_outputs_below_root() {
  impl_->outputs_below_root = true;
}
void Graph::seal() {
  impl_->sealed = true;
}

std::string Graph::describe(int port) const {
  const Impl& g = *impl_;
  if (port < 0 || port >= static_cast<int>(g.ports.size())) return fmt::format("p{}", port);
  const LogicalPort& p = g.ports[port];
  switch (p.kind) {
    case PortKind::source:
      return fmt::format("p{} (source {})", port, p.op);
    case PortKind::call_output: {
      const LogicalCall& c = g.calls[p.op];
      return fmt::format("p{} (output {} of {}#{})", port, p.slot,
                         g.modules[c.module].record.udf_name, p.op);
    }
    case PortKind::expand:
      return fmt::format("p{} (expand of p{})", port, g.expands[p.op].lists[p.slot]);
    case PortKind::reduce:
      return fmt::format("p{} (reduce of p{})", port, g.reduces[p.op].values[p.slot]);
    case PortKind::filter:
      return fmt::format("p{} (filter of p{})", port, g.filters[p.op].source);
    case PortKind::broadcast:
      return fmt::format("p{} (broadcast of p{})", port, g.broadcasts[p.op].source);
  }
  return fmt::format("p{}", port);
}

void throw_foreign_port(const Graph* port_graph, int port, const char* what) {
  if (current_graph() == nullptr) {
    throw CompileError(fmt::format(
        "{}: Port p{} was used outside a trace; use Ports only inside forward() (or the lambda) "
        "while ro::compile traces it",
        what, port));
  }
  throw CompileError(fmt::format(
      "{}: Port {} belongs to another pipeline; build every Port inside this pipeline's "
      "forward() instead of reusing Ports from another trace",
      what, port_graph ? port_graph->describe(port) : fmt::format("p{}", port)));
}

}  // namespace rayorch::detail
