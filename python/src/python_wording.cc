#include "python_wording.h"

#include <array>
#include <exception>
#include <stdexcept>
#include <utility>

#include <nanobind/nanobind.h>

#include "rayorch/errors.h"

namespace nb = nanobind;

namespace rayorch::python {

namespace {

// C++ spelling -> Python spelling, applied in this order (a longer spelling before the
// shorter one it contains). Every message the engine can raise for a Python pipeline that
// names its C++ API has its spelling here (python/tests/test_python_wording.py).
constexpr std::array<std::pair<std::string_view, std::string_view>, 18> kSpellings{{
    {".recovery(ro::RecoveryPolicy::retry_batch(n)), retry_tail(n) or isolate_tail()",
     "the option recovery=RecoveryPolicy.retry_batch(n), RecoveryPolicy.retry_tail(n) or "
     "RecoveryPolicy.isolate_tail()"},
    {".isolation(ro::Isolation::process)", "the option isolation=\"process\""},
    {"(Isolation::process)", "(isolation=\"process\")"},
    {"rayorch::Timeout:", "Timeout:"},
    {"ro::RecoveryPolicy::", "RecoveryPolicy."},
    {"set journal.allow_other_inputs (or force)",
     "pass journal=Journal(path, allow_other_inputs=True) (or force=True)"},
    {"set journal.force", "pass journal=Journal(path, force=True)"},
    {"RunOptions.journal.path", "journal"},
    {"RunOptions.journal records", "the run journal records"},
    {"RunOptions.dead_letters", "dead_letters"},
    {"RunOptions.trace_path", "trace"},
    {"RunOptions.report_path", "report"},
    {"RunOptions.", ""},  // max_active_input_batches, max_failed_roots, ...: run()'s keywords
    {"forward() (or the lambda)", "forward() (or the callable)"},
    {"under ro::compile", "under compile()"},
    {"while ro::compile", "while compile()"},
    {"ro::compile", "compile()"},
    {"F::", "F."},
}};

void raise(const char* type_name, const char* message) {
  nb::object type = nb::module_::import_("rayorch_cpp._core").attr(type_name);
  PyErr_SetString(type.ptr(), python_wording(message).c_str());
}

}  // namespace

std::string python_wording(std::string_view message) {
  std::string out(message);
  for (const auto& [cpp, python] : kSpellings) {
    for (std::size_t at = out.find(cpp); at != std::string::npos;
         at = out.find(cpp, at + python.size())) {
      out.replace(at, cpp.size(), python);
    }
  }
  return out;
}

void register_python_wording() {
  // Tried before the translators nb::exception registered (the latest registered first).
  nb::register_exception_translator([](const std::exception_ptr& error, void*) {
    try {
      std::rethrow_exception(error);
    } catch (const CompileError& e) {
      raise("CompileError", e.what());
    } catch (const ExecutionError& e) {
      raise("ExecutionError", e.what());
    } catch (const std::invalid_argument& e) {
      PyErr_SetString(PyExc_ValueError, python_wording(e.what()).c_str());
    }
  });
}

}  // namespace rayorch::python
