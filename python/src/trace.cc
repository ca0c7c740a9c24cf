#include "trace.h"

#include <unistd.h>

#include <utility>

#include "cpp_udf.h"
#include "module_options.h"
#include "pickle_codec.h"
#include "replica_context.h"
#include <fmt/format.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "rayorch/errors.h"

#include "execution/worker_server.h"
#include "program/plan.h"

namespace rayorch::python {

namespace nb = nanobind;

namespace {

/// A worker process whose UDF ran out of memory (its memory_limit, or the machine's) may be
/// in any state: it ends as a C++ worker does when an allocation fails, which the executor
/// reports as a worker loss ("worker exceeded its memory limit").
[[noreturn]] void end_worker_out_of_memory(const rd::ForeignError& e) {
  const std::string line = fmt::format("rayorch worker: MemoryError: {}\n", e.what());
  const ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
  ::_exit(rd::kMemoryLimitExit);
}

rd::ListOps python_list_ops() {
  rd::ListOps ops;
  ops.size = [](const void* list) { return static_cast<const PyValue*>(list)->child_count; };
  ops.at = [](const void* list, std::size_t i) -> const void* {
    return &static_cast<const PyValue*>(list)->children[i];
  };
  return ops;
}

/// reduce: the members' values, in ordinal order, as one Python list.
rd::BlockRef make_group(std::vector<const void*> members, std::shared_ptr<const void> /*keep*/,
                        const void** group) {
  auto block = std::make_shared<PyBlock>();
  Gil gil;
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(members.size()));
  if (list == nullptr) throw_foreign();
  for (std::size_t i = 0; i < members.size(); ++i) {
    PyObject* o = object_at(members[i]);
    Py_INCREF(o);
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), o);
  }
  block->rows.push_back(PyValue{false, list, nullptr, 0});
  *group = &block->rows[0];
  return block;
}

/// The C++ UDF named `cpp` after checking how a Call passes its inputs to it.
const CppUdf& cpp_udf(const std::string& cpp, std::size_t inputs, nb::list keyword_names,
                      nb::handle static_kwargs) {
  auto found = cpp_udfs().find(cpp);
  if (found == cpp_udfs().end()) throw CompileError("CppModule: no C++ UDF named " + cpp);
  const CppUdf& native = found->second;
  if (inputs != native.inputs || !keyword_names.empty() || !static_kwargs.is_none()) {
    throw CompileError(fmt::format(
        "CppModule({}) takes {} positional Port input(s) and no keyword arguments; got {} "
        "Port input(s){}",
        cpp, native.inputs, inputs,
        static_kwargs.is_none() ? "" : " and static keyword arguments"));
  }
  return native;
}

}  // namespace

Trace::Trace() : graph_(std::make_shared<rd::Graph>()) {}

void Trace::enter() {
  scope_ = std::make_unique<rd::TraceScope>(graph_);
}
void Trace::exit() {
  scope_.reset();
}

int Trace::add_source() {
  const int id = graph_->add_source("object");
  origins_[id] = PortOrigin{PortOrigin::Kind::source, sources_++, nullptr, 0};
  return id;
}

const std::shared_ptr<ModuleSpec>& Trace::module(nb::handle module_key, nb::handle udf,
                                                 nb::handle init_args, nb::handle init_kwargs,
                                                 const std::string& name, nb::dict options,
                                                 const std::string& cpp) {
  std::shared_ptr<ModuleSpec>& spec = modules_[module_key.ptr()];
  if (spec) return spec;
  ModuleOptions parsed = parse_module_options(name, options);
  rd::Factory native_factory;
  if (!cpp.empty()) {
    try {
      native_factory = cpp_udfs().at(cpp).factory(init_args);
    } catch (const nb::cast_error&) {
      throw CompileError(fmt::format(
          "CppModule({}): the constructor arguments given to pre_init() do not convert to {}", cpp,
          cpp_udfs().at(cpp).signature));
    }
  }
  keys_.push_back(nb::borrow(module_key));
  spec = std::make_shared<ModuleSpec>();
  spec->udf = Ref::borrow(udf.ptr());
  spec->args = Ref::borrow(init_args.ptr());
  spec->kwargs = init_kwargs.is_none() ? Ref() : Ref::borrow(init_kwargs.ptr());
  names_[spec.get()] = name;
  options_[spec.get()] = std::move(parsed);
  host_options_[spec.get()] = host_pool_options(options);
  if (native_factory) native_factories_[spec.get()] = std::move(native_factory);
  return spec;
}

std::vector<int> Trace::add_call(nb::handle module_key, nb::handle udf, nb::handle init_args,
                                 nb::handle init_kwargs, const std::string& name, nb::dict options,
                                 const std::vector<int>& inputs, std::size_t positional,
                                 nb::list keyword_names, nb::handle static_kwargs,
                                 const std::vector<std::string>& statics, std::size_t outputs,
                                 const std::string& cpp) {
  const CppUdf* native =
      cpp.empty() ? nullptr : &cpp_udf(cpp, inputs.size(), keyword_names, static_kwargs);
  if (native != nullptr) outputs = native->outputs;
  std::shared_ptr<ModuleSpec> spec =
      module(module_key, udf, init_args, init_kwargs, name, options, cpp);

  auto info = std::make_shared<CallInfo>();
  info->positional = positional;
  for (nb::handle k : keyword_names) info->keyword_names.push_back(Ref::borrow(k.ptr()));
  info->static_kwargs = static_kwargs.is_none() ? Ref() : Ref::borrow(static_kwargs.ptr());
  info->outputs = outputs;
  info->expanded.assign(outputs, 0);
  info->mask.assign(outputs, 0);

  rd::ModuleRecord record;
  record.identity = spec.get();
  record.udf_name = names_[spec.get()];
  record.options = options_[spec.get()];
  record.host_options = host_options_[spec.get()];
  if (native != nullptr) {
    record.factory = native_factories_[spec.get()];
  } else {
    std::shared_ptr<ReplicaRegistry>& replicas = replicas_[spec.get()];
    if (!replicas) {
      const ModuleOptions& o = options_[spec.get()];
      replicas =
          std::make_shared<ReplicaRegistry>(names_[spec.get()], pool_slots(o), o.cpus, o.gpus);
    }
    record.factory = [spec, replicas]() {
      ReplicaContext context = replicas->next();
      ReplicaScope scope(context);
      std::unique_ptr<rd::UdfInstance> instance = build_python_udf(*spec);
      replicas->built(instance.get(), std::move(context));
      return instance;
    };
  }
  record.owner = spec;
  rd::CallRecord call;
  call.inputs = inputs;
  call.output_types.assign(outputs, "object");
  call.static_args = statics;
  // Blocks hold Python objects: they cross to worker processes pickled (pickle_codec.h).
  call.codecs = python_call_codecs(inputs.size(), outputs);
  if (native != nullptr) {
    call.invoker = native->invoker(info, names_[spec.get()]);
  } else {
    call.invoker = [info, replicas = replicas_[spec.get()]](rd::UdfInstance& instance,
                                                            std::span<const rd::ColumnInput> in) {
      ReplicaScope scope(replicas->of(&instance));
      try {
        return invoke_python_udf(*info, instance, in);
      } catch (const rd::ForeignError& e) {
        if (e.type() == "MemoryError" && in_worker_process()) end_worker_out_of_memory(e);
        throw;
      }
    };
  }
  std::vector<int> ids = graph_->add_call(std::move(record), std::move(call));
  for (std::size_t k = 0; k < ids.size(); ++k)
    origins_[ids[k]] = PortOrigin{PortOrigin::Kind::call_output, -1, info, k};
  return ids;
}

std::vector<int> Trace::add_expand(const std::vector<int>& lists) {
  for (int l : lists) {
    auto it = origins_.find(l);
    if (it != origins_.end() && it->second.kind == PortOrigin::Kind::call_output)
      it->second.call->expanded[it->second.output] = 1;
  }
  std::vector<rd::ListOps> ops(lists.size(), python_list_ops());
  std::vector<int> ids =
      graph_->add_expand(lists, std::move(ops), std::vector<std::string>(lists.size(), "object"));
  for (int id : ids) origins_[id] = PortOrigin{PortOrigin::Kind::expand, -1, nullptr, 0};
  return ids;
}

std::vector<int> Trace::add_reduce(const std::vector<int>& values, int members) {
  std::vector<int> ids =
      graph_->add_reduce(values, members, std::vector<rd::GroupMaker>(values.size(), &make_group),
                         std::vector<std::string>(values.size(), "list[object]"));
  for (int id : ids) origins_[id] = PortOrigin{PortOrigin::Kind::reduce, -1, nullptr, 0};
  return ids;
}

int Trace::add_filter(int source, int mask) {
  mark_mask(mask);
  const int id = graph_->add_filter(source, mask);
  origins_[id] = PortOrigin{PortOrigin::Kind::filter, source, nullptr, 0};
  return id;
}

int Trace::add_broadcast(int source, int like) {
  const int id = graph_->add_broadcast(source, like);
  origins_[id] = PortOrigin{PortOrigin::Kind::broadcast, source, nullptr, 0};
  return id;
}

std::string Trace::describe(int port) const {
  return graph_->describe(port);
}

Program Trace::compile(const std::vector<int>& outputs, bool optimize, bool auto_colocate) {
  graph_->set_outputs(outputs);
  graph_->allow_outputs_below_root();  // as the reference: the rows below each root, in order
  graph_->seal();
  CompileOptions options;
  options.optimize = optimize;
  options.auto_colocate = auto_colocate;
  auto plan = rd::compile_graph(*graph_, options);
  return Program{std::move(plan), mask_sources_, static_cast<std::size_t>(sources_),
                 outputs.size()};
}

// A mask's booleans must come from a Call output or a source column: those are the values
// the engine reads booleans of (through filters and broadcasts of them).
void Trace::mark_mask(int mask) {
  int port = mask;
  for (;;) {
    auto it = origins_.find(port);
    if (it == origins_.end()) return;  // reported by the compiler
    const PortOrigin& o = it->second;
    switch (o.kind) {
      case PortOrigin::Kind::call_output:
        o.call->mask[o.output] = 1;
        return;
      case PortOrigin::Kind::source:
        mask_sources_.push_back(o.index);
        return;
      case PortOrigin::Kind::filter:
      case PortOrigin::Kind::broadcast:
        port = o.index;
        continue;
      case PortOrigin::Kind::expand:
      case PortOrigin::Kind::reduce:
        throw CompileError(fmt::format(
            "F.filter mask {} is {} output: a mask must be a Call output or a source "
            "column (or a filter/broadcast of one); compute the bools with a UDF, e.g. "
            "mask = to_bool(children)",
            graph_->describe(mask), o.kind == PortOrigin::Kind::expand ? "an expand" : "a reduce"));
    }
  }
}

void bind_trace(nb::module_& m) {
  m.def(
      "foreign_port",
      [](const Trace* owner, int port, const std::string& what) {
        rd::throw_foreign_port(owner ? owner->graph() : nullptr, port, what.c_str());
      },
      nb::arg("owner").none(), nb::arg("port"), nb::arg("what"),
      "Raises the CompileError for a Port used outside its own trace.");

  nb::class_<Program>(m, "Program", "An immutable compiled program (a RuntimePlan).")
      .def(
          "explain", [](const Program& p) { return rd::explain_plan(*p.plan); },
          "One line per Port, `pN kind dD <- [inputs] => rule`, plus rewrite lines.")
      .def(
          "outputs_below_root",
          [](const Program& p) {
            std::vector<std::size_t> out;
            for (std::size_t k = 0; k < p.plan->outputs.size(); ++k)
              if (p.plan->ports[static_cast<std::size_t>(p.plan->outputs[k])].domain != 0)
                out.push_back(k);
            return out;
          },
          "The outputs (flat indices) that are Ports of a child Domain: each root delivers the "
          "list of its descendants' values of them.")
      .def(
          "pools",
          [](const Program& p) {
            nb::list out;
            for (const rd::PlanPool& pool : p.plan->pools) {
              nb::dict d;
              d["name"] = pool.name;
              d["replicas"] = pool_slots(pool.options);
              d["auto_replicas"] = sizes_itself(pool.options);
              d["min_replicas"] = pool.options.min_replicas;
              d["cpus"] = pool.options.cpus;
              d["gpus"] = pool.options.gpus;
              nb::dict resources;
              for (const auto& [k, v] : pool.options.resources) resources[nb::str(k.c_str())] = v;
              d["resources"] = resources;
              d["calls"] = pool.calls;
              d["isolation"] = pool.options.isolation == Isolation::process ? "process" : "threads";
              d["found_by_compiler"] = pool.found_by_compiler;
              out.append(d);
            }
            return out;
          },
          "The actor pools in plan order: name, replicas, cpus, gpus, resources, calls, "
          "isolation, found_by_compiler (co-located by CompileOptions::auto_colocate).")
      .def_prop_ro("sources", [](const Program& p) { return p.sources; })
      .def_prop_ro("outputs", [](const Program& p) { return p.outputs; });

  nb::class_<Trace>(m, "Trace", "Records one pipeline into the engine's graph builder.")
      .def(nb::init<>())
      .def("enter", &Trace::enter)
      .def("exit", &Trace::exit)
      .def("add_source", &Trace::add_source)
      .def("add_call", &Trace::add_call, nb::arg("module_key"), nb::arg("udf"),
           nb::arg("init_args"), nb::arg("init_kwargs").none(), nb::arg("name"), nb::arg("options"),
           nb::arg("inputs"), nb::arg("positional"), nb::arg("keyword_names"),
           nb::arg("static_kwargs").none(), nb::arg("statics"), nb::arg("outputs"),
           nb::arg("cpp") = "")
      .def("add_expand", &Trace::add_expand)
      .def("add_reduce", &Trace::add_reduce)
      .def("add_filter", &Trace::add_filter)
      .def("add_broadcast", &Trace::add_broadcast)
      .def("describe", &Trace::describe)
      .def("compile", &Trace::compile, nb::arg("outputs"), nb::arg("optimize"),
           nb::arg("auto_colocate"));
}

}  // namespace rayorch::python
