// rayorch_cpp._core: the module table of the C++ engine's bindings (use the rayorch_cpp
// package, not this module).
//
// Values are Python objects held by reference in blocks (no copies, no pickling); every place
// that touches one takes the GIL itself (py_values.h). The pure-Python package
// (python/rayorch_cpp) records pipelines through Trace (trace.h), compiles them into Program
// and runs them on a Core (core.h): the local executor, the deterministic sync core, or the
// Ray backend (ray_pools.h).
#include "core.h"
#include "cpp_udf.h"
#include "in_place_buffer.h"
#include "module_options.h"
#include "process_workers.h"
#include "py_values.h"
#include "python_wording.h"
#include "ray_pools.h"
#include "replica_context.h"
#include "run_types.h"
#include "trace.h"
#include "workload_bindings.h"
#include <nanobind/nanobind.h>

#include "rayorch/errors.h"

namespace nb = nanobind;

NB_MODULE(_core, m) {
  using namespace rayorch::python;  // NOLINT(google-build-using-namespace): the extension's own

  m.doc() = "Bindings of the RayOrch C++ engine (use the rayorch_cpp package, not this module).";
  // A compiled program holds its UDF classes, whose methods' globals may hold the executor
  // that holds the program: a cycle through C++ that Python's collector cannot see. Such
  // objects live until the process exits; nanobind would report them as leaks then.
  nb::set_leak_warnings(false);

  nb::exception<rayorch::CompileError>(m, "CompileError", PyExc_ValueError);
  nb::exception<rayorch::ExecutionError> execution_error(m, "ExecutionError", PyExc_RuntimeError);
  registry.execution_error = Py_NewRef(execution_error.ptr());  // kept for the process's life
  // An aborted run's error carries the rows it delivered (Core::run sets them on the
  // instance); every other ExecutionError reads these class defaults.
  execution_error.attr("partial_outputs") = nb::none();
  execution_error.attr("partial") = nb::none();
  register_python_wording();
  {
    nb::module_ pickle = nb::module_::import_("pickle");
    registry.pickle_dumps = Py_NewRef(pickle.attr("dumps").ptr());
    registry.pickle_loads = Py_NewRef(pickle.attr("loads").ptr());
  }
  if (!rayorch::python::make_in_place_buffer_type()) throw nb::python_error();

  m.def(
      "configure",
      [](nb::handle record_failure, nb::handle group_failure, nb::handle make_issue,
         nb::handle actor_lost, nb::handle udf_traceback, nb::handle output_issue) {
        // Kept for the life of the process (the classes outlive every executor).
        registry.record_failure = Py_NewRef(record_failure.ptr());
        registry.group_failure = Py_NewRef(group_failure.ptr());
        registry.make_issue = Py_NewRef(make_issue.ptr());
        registry.actor_lost = Py_NewRef(actor_lost.ptr());
        registry.udf_traceback = Py_NewRef(udf_traceback.ptr());
        registry.output_issue = Py_NewRef(output_issue.ptr());
      },
      nb::arg("record_failure"), nb::arg("group_failure"), nb::arg("make_issue"),
      nb::arg("actor_lost"), nb::arg("udf_traceback"), nb::arg("output_issue"),
      "Registers the failure classes, the OutputIssue factory, the ActorLost exception, the "
      "UdfTraceback exception and the OutputIssue class of the Python package.");

  bind_cpp_udfs(m);
#if RAYORCH_PYTHON_PDF2MD
  bind_pdf2md(m);
#endif
#if RAYORCH_PYTHON_VIDEO
  bind_video(m);
#endif
  bind_trace(m);
  bind_module_options(m);
  bind_replica_context(m);
  bind_run_options(m);
  bind_run_metrics(m);

  bind_ray_contract(m);
  nb::class_<rayorch::python::RayWorker>(
      m, "RayWorker", "The worker of one Ray actor: one pool's UDF instance and its RPCs.")
      .def(
          "__init__",
          [](rayorch::python::RayWorker* self, const Program& program, int pool, int replica) {
            nb::gil_scoped_release release;  // Python constructors take the GIL themselves
            ReplicaPreset preset(replica);
            new (self) rayorch::python::RayWorker(program.plan, pool);
          },
          nb::arg("program"), nb::arg("pool"), nb::arg("replica") = -1)
      .def("run", &rayorch::python::RayWorker::run,
           "run(task, *blocks) -> (status, *output blocks)")
      .def("exported", &rayorch::python::RayWorker::exported, nb::arg("block"),
           "The values of a block this actor keeps, as one list (for a reader elsewhere).")
      .def("cached_blocks", &rayorch::python::RayWorker::cached_blocks,
           "How many blocks this actor holds from earlier RPCs.");

  bind_core(m);
  bind_process_workers(m);
}
