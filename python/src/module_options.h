// A Module's options as Python spells them (RayModule.ray_options(...), Module(udf, ...)),
// parsed into the engine's rayorch::ModuleOptions: the one place where the two meet.
#pragma once

#include <string>

#include <nanobind/nanobind.h>

#include "rayorch/module_options.h"

namespace rayorch::python {

/// The engine's options of the Module named `module` from its Python options (a dict).
///
/// The Python names are the reference's where it has one (`num_cpus`, `num_gpus`, `replicas`,
/// `batch_size`, `resources`, `recovery`) and the C++ field's otherwise; durations are in
/// seconds. `name` (read by the package) and the Ray actor options the Ray backend passes to
/// Ray are accepted and left to them. Throws rayorch::CompileError naming the Module and the
/// option for a value of the wrong type and for an unknown option (with the closest known
/// names); ranges are checked by the compiler.
ModuleOptions parse_module_options(const std::string& module, nanobind::dict options);

/// The options of `options` that the Ray backend passes to a pool's actors and the engine does
/// not read (Ray's actor options, max_tasks_in_flight_per_actor), as `name=repr; ` in name
/// order: rayorch::detail::ModuleRecord::host_options, which Modules must share for the
/// compiler to co-locate them. Values are compared by their repr, so two objects that print
/// alike count as equal and two that print their address never do.
std::string host_pool_options(nanobind::dict options);

/// Binds module_options() (every option name a Module accepts) and ray_actor_options() (those
/// the Ray backend hands to Ray), so that the package reads the one list kept here.
void bind_module_options(nanobind::module_& m);

}  // namespace rayorch::python
