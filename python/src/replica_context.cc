#include "replica_context.h"

#include <cmath>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "py_values.h"
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace rayorch::python {

namespace nb = nanobind;

namespace {

// Per thread by design (see the header): the replica whose constructor or call runs here,
// and the Module and index of the last instance this thread built (a rebuilt actor keeps it).
thread_local ReplicaContext current;
thread_local const ReplicaRegistry* last_built_by = nullptr;
thread_local int last_index = -1;
thread_local int preset_index = -1;
thread_local bool worker_process = false;

/// The entries of CUDA_VISIBLE_DEVICES; false when it is not set.
bool visible_devices(std::vector<std::string>& out) {
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");  // NOLINT(concurrency-mt-unsafe)
  if (env == nullptr) return false;
  std::string_view rest(env);
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return true;
}

/// Replica `index` of a Module with `gpus` per actor takes devices [index*gpus, ...): ceil(gpus)
/// of them (one when gpus < 1, shared with the other replicas of that device), modulo the
/// visible ones when CUDA_VISIBLE_DEVICES lists them.
std::vector<std::string> devices_of(int index, double gpus) {
  std::vector<std::string> out;
  if (gpus <= 0) return out;
  const auto first = static_cast<long>(std::floor(index * gpus));
  const long count = gpus < 1 ? 1 : static_cast<long>(std::ceil(gpus));
  std::vector<std::string> visible;
  const bool listed = visible_devices(visible);
  if (listed && visible.empty()) return out;
  for (long k = 0; k < count; ++k) {
    const long d = first + k;
    out.push_back(listed ? visible[static_cast<std::size_t>(d) % visible.size()]
                         : std::to_string(d));
  }
  return out;
}

/// Sets CUDA_VISIBLE_DEVICES through os.environ, so that both the process environment (what
/// CUDA reads) and Python's view of it change. A worker process is this replica alone.
void set_visible_devices(const std::string& visible) {
  Gil gil;
  Ref os = Ref::steal(PyImport_ImportModule("os"));
  Ref environ = os ? Ref::steal(PyObject_GetAttrString(os.get(), "environ")) : Ref();
  Ref value = Ref::steal(PyUnicode_FromString(visible.c_str()));
  if (!environ || !value ||
      PyMapping_SetItemString(environ.get(), "CUDA_VISIBLE_DEVICES", value.get()) != 0) {
    throw_foreign();
  }
}

}  // namespace

ReplicaRegistry::ReplicaRegistry(std::string module, int replicas, double cpus, double gpus)
    : module_(std::move(module)),
      replicas_(replicas < 1 ? 1 : replicas),
      cpus_(cpus),
      gpus_(gpus) {}

ReplicaContext ReplicaRegistry::next() {
  int index = preset_index >= 0 ? preset_index % replicas_ : last_index;
  if (preset_index < 0 && (last_built_by != this || index < 0)) {
    std::lock_guard<std::mutex> lock(mutex_);
    index = built_++ % replicas_;
  }
  last_built_by = this;
  last_index = index;
  ReplicaContext context{module_, index, replicas_, cpus_, gpus_, devices_of(index, gpus_)};
  if (worker_process && !context.devices.empty()) {
    std::string visible;
    for (const std::string& d : context.devices) visible += (visible.empty() ? "" : ",") + d;
    set_visible_devices(visible);
  }
  return context;
}

void ReplicaRegistry::built(const rd::UdfInstance* instance, ReplicaContext context) {
  std::lock_guard<std::mutex> lock(mutex_);
  contexts_[instance] = std::move(context);
}

ReplicaContext ReplicaRegistry::of(const rd::UdfInstance* instance) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = contexts_.find(instance);
  return it != contexts_.end() ? it->second
                               : ReplicaContext{module_, -1, replicas_, cpus_, gpus_, {}};
}

void enter_worker_process(int replica) {
  preset_index = replica;
  worker_process = true;
}

bool in_worker_process() {
  return worker_process;
}

ReplicaPreset::ReplicaPreset(int index) {
  preset_index = index;
}

ReplicaPreset::~ReplicaPreset() {
  preset_index = -1;
}

ReplicaScope::ReplicaScope(ReplicaContext context) : previous_(std::move(current)) {
  current = std::move(context);
}

ReplicaScope::~ReplicaScope() {
  current = std::move(previous_);
}

void bind_replica_context(nb::module_& m) {
  m.def(
      "replica_context",
      []() -> nb::object {
        if (current.index < 0) return nb::none();
        nb::dict d;
        d["module"] = current.module;
        d["index"] = current.index;
        d["replicas"] = current.replicas;
        d["num_cpus"] = current.cpus;
        d["num_gpus"] = current.gpus;
        d["devices"] = current.devices;
        return d;
      },
      "The calling thread's replica: {module, index, replicas, num_cpus, num_gpus, devices}, or "
      "None outside a UDF instance's constructor or call.");
}

}  // namespace rayorch::python
