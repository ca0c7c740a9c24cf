#include "module_options.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "rayorch/errors.h"

namespace rayorch::python {

namespace nb = nanobind;

namespace {

/// One option's value, with the Module and option names for its messages.
struct OptionValue {
  const std::string& module;
  std::string_view option;
  nb::handle value;

  [[noreturn]] void bad(std::string_view want) const {
    throw CompileError(fmt::format("Module<{}>: option {} must be {}, got {}", module, option, want,
                                   nb::cast<std::string>(nb::repr(value))));
  }
  bool is_none() const { return value.is_none(); }
  bool is_number() const {
    return !PyBool_Check(value.ptr()) && (PyLong_Check(value.ptr()) || PyFloat_Check(value.ptr()));
  }
  /// A Python int (not a bool).
  long long integer() const {
    if (!PyLong_CheckExact(value.ptr())) bad("an integer");
    try {
      return nb::cast<long long>(value);
    } catch (const nb::cast_error&) {
      bad("an integer in range");
    }
  }
  int small_integer() const {
    const long long v = integer();
    if (v < INT32_MIN || v > INT32_MAX) bad("an integer in range");
    return static_cast<int>(v);
  }
  double number() const {
    if (!is_number()) bad("a number");
    return nb::cast<double>(value);
  }
  /// Seconds, rounded up to whole milliseconds.
  std::chrono::milliseconds seconds() const {
    if (!is_number() || !(nb::cast<double>(value) >= 0)) bad("a non-negative number of seconds");
    return std::chrono::milliseconds(
        static_cast<std::int64_t>(std::ceil(nb::cast<double>(value) * 1000)));
  }
  std::string one_of(std::string_view a, std::string_view b) const {
    const std::string want = fmt::format("'{}' or '{}'", a, b);
    if (!PyUnicode_Check(value.ptr())) bad(want);
    std::string s = nb::cast<std::string>(value);
    if (s != a && s != b) bad(want);
    return s;
  }
};

/// One option the engine reads, and how its value is applied.
struct EngineOption {
  std::string_view name;
  void (*apply)(const OptionValue& v, ModuleOptions& o);
};

// Applies an option read by `Read` to `Field`.
template <auto Field, auto Read>
void set_from(const OptionValue& v, ModuleOptions& o) {
  o.*Field = (v.*Read)();
}

// Applies an option read by `Read` to `Field`, leaving the default where the value is None.
template <auto Field, auto Read>
void set_unless_none(const OptionValue& v, ModuleOptions& o) {
  if (!v.is_none()) o.*Field = (v.*Read)();
}

RecoveryPolicy recovery_policy(const OptionValue& v, int& infra_retries) {
  // The package's RecoveryPolicy (rayorch_cpp._values) carries mode, max_retries and
  // infra_retries, already checked by its constructor.
  nb::handle cls = nb::module_::import_("rayorch_cpp._values").attr("RecoveryPolicy");
  if (!nb::isinstance(v.value, cls)) v.bad("a RecoveryPolicy");
  const auto mode = nb::cast<std::string>(v.value.attr("mode"));
  const int retries = nb::cast<int>(v.value.attr("max_retries"));
  infra_retries = nb::cast<int>(v.value.attr("infra_retries"));
  if (mode == "abort") return RecoveryPolicy::abort();
  if (mode == "retry_batch") return RecoveryPolicy::retry_batch(retries);
  if (mode == "retry_tail") return RecoveryPolicy::retry_tail(retries);
  if (mode == "isolate_tail") return RecoveryPolicy::isolate_tail();
  throw CompileError("unknown recovery policy " + mode);
}

// The options the engine reads. `recovery` is handled apart (it also sets infra_retries).
// A None value leaves the default, except for the three integer options.
constexpr std::array kEngineOptions = {
    EngineOption{"replicas",
                 [](const OptionValue& v, ModuleOptions& o) {
                   // "auto": the pool sizes itself (DESIGN 6.1.7).
                   if (PyUnicode_Check(v.value.ptr())) {
                     if (nb::cast<std::string>(v.value) != "auto") v.bad("an integer or 'auto'");
                     o.auto_replicas = true;
                     return;
                   }
                   o.replicas = v.small_integer();
                 }},
    EngineOption{"min_replicas",
                 &set_unless_none<&ModuleOptions::min_replicas, &OptionValue::small_integer>},
    EngineOption{"max_replicas",
                 &set_unless_none<&ModuleOptions::max_replicas, &OptionValue::small_integer>},
    EngineOption{"batch_size", &set_from<&ModuleOptions::batch_size, &OptionValue::small_integer>},
    EngineOption{"infra_retries",
                 &set_from<&ModuleOptions::infra_retries, &OptionValue::small_integer>},
    EngineOption{"num_cpus", &set_unless_none<&ModuleOptions::cpus, &OptionValue::number>},
    EngineOption{"num_gpus", &set_unless_none<&ModuleOptions::gpus, &OptionValue::number>},
    EngineOption{"resources",
                 [](const OptionValue& v, ModuleOptions& o) {
                   if (PyObject_IsTrue(v.value.ptr()) != 1) return;  // None or empty
                   if (!PyDict_Check(v.value.ptr())) v.bad("a dict of resource name -> amount");
                   for (auto [name, amount] : nb::borrow<nb::dict>(v.value)) {
                     if (!PyUnicode_Check(name.ptr()) ||
                         !(PyLong_Check(amount.ptr()) || PyFloat_Check(amount.ptr())))
                       v.bad("a dict of resource name -> amount");
                     o.resources[nb::cast<std::string>(name)] = nb::cast<double>(amount);
                   }
                 }},
    EngineOption{"timeout", &set_unless_none<&ModuleOptions::timeout, &OptionValue::seconds>},
    EngineOption{"batch_wait", &set_unless_none<&ModuleOptions::batch_wait, &OptionValue::seconds>},
    EngineOption{"reservation",
                 [](const OptionValue& v, ModuleOptions& o) {
                   if (v.is_none()) return;
                   o.reservation = v.one_of("elastic", "parent_bound") == "parent_bound"
                                       ? Reservation::parent_bound
                                       : Reservation::elastic;
                 }},
    EngineOption{"isolation",
                 [](const OptionValue& v, ModuleOptions& o) {
                   if (v.is_none()) return;
                   o.isolation = v.one_of("threads", "process") == "process" ? Isolation::process
                                                                             : Isolation::threads;
                 }},
    EngineOption{"colocate",
                 [](const OptionValue& v, ModuleOptions& o) {
                   if (v.is_none()) return;
                   if (!PyUnicode_Check(v.value.ptr())) v.bad("a group name (str) or None");
                   o.colocate = nb::cast<std::string>(v.value);
                 }},
    EngineOption{"memory_limit",
                 [](const OptionValue& v, ModuleOptions& o) {
                   if (v.is_none()) return;
                   const long long bytes = v.integer();
                   if (bytes < 0) v.bad("a non-negative number of bytes");
                   o.memory_limit = static_cast<std::uint64_t>(bytes);
                 }},
};

// Options the engine does not read, accepted for those that do: `name` (the package: the
// Module's Call names), `version` (the package: what the run journal takes for the UDF's
// code, python/rayorch_cpp/_journal_modules.py) and the Ray backend's
// (python/rayorch_cpp/_ray_backend.py): the calls it keeps at each actor and the actor options
// it passes to Ray's `.options(...)` (kRayActorOptions).
constexpr std::array<std::string_view, 3> kPackageOptions = {
    "name",
    "version",
    "max_tasks_in_flight_per_actor",
};

// Every actor option of Ray 2.60 (ray._common.ray_option_utils.actor_options) except those
// the engine reads itself (num_cpus, num_gpus, resources) and `name` (here the Module's Call
// name; a named Ray actor could not have replicas). python/tests/test_ray_placement.py checks
// the list against the installed Ray's.
constexpr std::array<std::string_view, 23> kRayActorOptions = {
    "_actor_generator_backpressure_num_objects",
    "_labels",
    "accelerator_type",
    "allow_out_of_order_execution",
    "concurrency_groups",
    "enable_task_events",
    "enable_tensor_transport",
    "fallback_strategy",
    "get_if_exists",
    "label_selector",
    "lifetime",
    "max_concurrency",
    "max_pending_calls",
    "max_restarts",
    "max_task_retries",
    "memory",
    "namespace",
    "object_store_memory",
    "placement_group",
    "placement_group_bundle_index",
    "placement_group_capture_child_tasks",
    "runtime_env",
    "scheduling_strategy",
};

bool is_passed_option(std::string_view name) {
  return std::find(kPackageOptions.begin(), kPackageOptions.end(), name) != kPackageOptions.end() ||
         std::find(kRayActorOptions.begin(), kRayActorOptions.end(), name) !=
             kRayActorOptions.end();
}

std::vector<std::string> known_options() {
  std::vector<std::string> known{"recovery"};
  for (const EngineOption& e : kEngineOptions) known.emplace_back(e.name);
  for (std::string_view p : kPackageOptions) known.emplace_back(p);
  // Ray's private options (a leading '_') are accepted but not offered.
  for (std::string_view a : kRayActorOptions)
    if (!a.starts_with('_')) known.emplace_back(a);
  std::sort(known.begin(), known.end());
  return known;
}

[[noreturn]] void unknown_option(const std::string& module, const std::string& option) {
  const std::vector<std::string> known = known_options();
  const auto close = nb::cast<std::vector<std::string>>(
      nb::module_::import_("difflib").attr("get_close_matches")(option, known));
  std::string hint;
  if (!close.empty()) {
    hint = fmt::format("; did you mean '{}'?", fmt::join(close, "' or '"));
  }
  throw CompileError(fmt::format("Module '{}': unknown option '{}'{} Known options: {}", module,
                                 option, hint.empty() ? "." : hint, fmt::join(known, ", ")));
}

}  // namespace

ModuleOptions parse_module_options(const std::string& module, nb::dict options) {
  ModuleOptions o;
  bool infra_retries_set = false;
  int policy_infra_retries = o.infra_retries;
  bool has_policy = false;
  for (auto [key, value] : options) {
    const auto name = nb::cast<std::string>(key);
    const OptionValue v{module, name, value};
    if (name == "recovery") {
      if (value.is_none()) continue;
      o.recovery = recovery_policy(v, policy_infra_retries);
      has_policy = true;
      continue;
    }
    auto engine = std::find_if(kEngineOptions.begin(), kEngineOptions.end(),
                               [&](const EngineOption& e) { return e.name == name; });
    if (engine != kEngineOptions.end()) {
      engine->apply(v, o);
      infra_retries_set = infra_retries_set || name == "infra_retries";
      continue;
    }
    if (!is_passed_option(name)) unknown_option(module, name);
  }
  if (has_policy && !infra_retries_set) o.infra_retries = policy_infra_retries;
  return o;
}

std::string host_pool_options(nb::dict options) {
  std::vector<std::pair<std::string, std::string>> passed;
  for (auto [key, value] : options) {
    const auto name = nb::cast<std::string>(key);
    const bool pool_level =
        name == "max_tasks_in_flight_per_actor" ||
        std::find(kRayActorOptions.begin(), kRayActorOptions.end(), name) != kRayActorOptions.end();
    if (pool_level && !value.is_none())
      passed.emplace_back(name, nb::cast<std::string>(nb::repr(value)));
  }
  std::sort(passed.begin(), passed.end());
  std::string text;
  for (const auto& [name, value] : passed) text += fmt::format("{}={}; ", name, value);
  return text;
}

void bind_module_options(nb::module_& m) {
  m.def("module_options", &known_options,
        "Every option a Module accepts, sorted: the engine's, the package's and Ray's.");
  m.def(
      "ray_actor_options",
      [] { return std::vector<std::string>(kRayActorOptions.begin(), kRayActorOptions.end()); },
      "The Module options the Ray backend passes to Ray's actor .options(...) as they are.");
}

}  // namespace rayorch::python
