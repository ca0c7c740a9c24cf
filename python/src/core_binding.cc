// The Python binding of Core (rayorch_cpp._core.Core): its factories, each backend's budget
// given as plain numbers, and its run surface. The Core itself is in core.cc.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core.h"
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace rayorch::python {

namespace nb = nanobind;

namespace {

ResourceBudget budget_of(double cpus, double gpus, std::map<std::string, double> resources) {
  return ResourceBudget{.cpus = cpus, .gpus = gpus, .resources = std::move(resources)};
}

}  // namespace

void bind_core(nb::module_& m) {
  nb::class_<Core>(m, "Core", "An executor core: the local backend or the synchronous core.")
      .def_static(
          "local",
          [](const Program& program, std::optional<std::vector<std::string>> command,
             nb::bytes payload, double cpus, double gpus, std::map<std::string, double> resources,
             std::uint64_t seed) {
            return Core::local(program, std::move(command), std::move(payload),
                               budget_of(cpus, gpus, std::move(resources)), seed);
          },
          nb::arg("program"), nb::arg("server_command").none() = nb::none(),
          nb::arg("server_payload") = nb::bytes(""), nb::arg("budget_cpus") = 0.0,
          nb::arg("budget_gpus") = 0.0,
          nb::arg("budget_resources") = std::map<std::string, double>{},
          nb::arg("random_resize_seed") = 0)
      .def_static("sync", &Core::sync, nb::arg("program"), nb::arg("wire") = false)
      .def_static(
          "ray",
          [](const Program& program, nb::object backend, double cpus, double gpus,
             std::map<std::string, double> resources, std::uint64_t seed) {
            return Core::ray(program, std::move(backend),
                             budget_of(cpus, gpus, std::move(resources)), seed);
          },
          nb::arg("program"), nb::arg("backend"), nb::arg("budget_cpus") = 0.0,
          nb::arg("budget_gpus") = 0.0,
          nb::arg("budget_resources") = std::map<std::string, double>{},
          nb::arg("random_resize_seed") = 0)
      .def("run", &Core::run, nb::arg("columns"), nb::arg("options"),
           nb::arg("journal_keys").none() = nb::none(), nb::arg("on_row").none() = nb::none(),
           nb::arg("on_progress").none() = nb::none(), nb::arg("lazy") = false,
           nb::arg("sink_format").none() = nb::none())
      .def("await_actors", &Core::await_actors)
      .def("close", &Core::close)
      .def_prop_ro("closed", &Core::closed)
      .def("rpc_log", &Core::rpc_log);
}

}  // namespace rayorch::python
