#include "root_objects.h"

#include <string>
#include <string_view>

namespace rayorch::python {

PyObject* output_object(const rd::ErasedOutput& o) {
  if (o.outcome == Outcome::present) {
    PyObject* value = object_at(o.value);
    // An OutputIssue says that a row has no value: as a value it would read as an issue the
    // engine never decided (a source row or a UDF gave one).
    if (registry.output_issue != nullptr &&
        PyObject_TypeCheck(value, reinterpret_cast<PyTypeObject*>(registry.output_issue))) {
      PyErr_SetString(registry.execution_error,
                      "OutputIssue is reserved for the results of a run: an output value is an "
                      "OutputIssue (given by a source row or a UDF); return a value, or a "
                      "RecordFailure to fail the row");
      return nullptr;
    }
    return Py_NewRef(value);
  }
  const std::string_view outcome = to_string(o.outcome);
  const std::string cause = o.cause ? *o.cause : std::string();
  if (o.origin) {
    return PyObject_CallFunction(
        registry.make_issue, "s#s#s#s#I", outcome.data(), static_cast<Py_ssize_t>(outcome.size()),
        cause.data(), static_cast<Py_ssize_t>(cause.size()), o.origin->call.data(),
        static_cast<Py_ssize_t>(o.origin->call.size()), o.origin->entity.data(),
        static_cast<Py_ssize_t>(o.origin->entity.size()),
        static_cast<unsigned>(o.origin->attempts));
  }
  return PyObject_CallFunction(registry.make_issue, "s#s#OOO", outcome.data(),
                               static_cast<Py_ssize_t>(outcome.size()), cause.data(),
                               static_cast<Py_ssize_t>(cause.size()), Py_None, Py_None, Py_None);
}

PyObject* next_output_object(std::span<const rd::ErasedOutput> entries, std::size_t& at) {
  const rd::ErasedOutput& head = entries[at++];
  if (!head.below_root) return output_object(head);
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(head.children));
  if (list == nullptr) return nullptr;
  for (std::uint32_t i = 0; i < head.children; ++i) {
    PyObject* item = output_object(entries[at++]);
    if (item == nullptr) {
      Py_DECREF(list);
      return nullptr;
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), item);
  }
  return list;
}

PyObject* root_tuple(std::span<const rd::ErasedOutput> entries, std::size_t outputs) {
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(outputs));
  if (tuple == nullptr) return nullptr;
  std::size_t at = 0;  // the next entry of `entries`
  for (std::size_t k = 0; k < outputs; ++k) {
    PyObject* v = next_output_object(entries, at);
    if (v == nullptr) {
      Py_DECREF(tuple);
      return nullptr;
    }
    PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(k), v);
  }
  return tuple;
}

}  // namespace rayorch::python
