#include "python_udf.h"

#include <string>
#include <string_view>
#include <utility>

namespace rayorch::python {

namespace {

/// One Python UDF instance owned by an actor, with its bound `run` (or the callable).
class PyUdf final : public rd::UdfInstance {
 public:
  PyUdf(Ref instance, Ref run) : instance_(std::move(instance)), run_(std::move(run)) {}
  PyObject* run() const { return run_.get(); }

 private:
  Ref instance_;
  Ref run_;
};

/// Whether `o` is a numpy array (numpy.ndarray or a subclass), found by the type's name so
/// that the package does not import numpy.
bool is_ndarray(PyObject* o) {
  PyObject* mro = Py_TYPE(o)->tp_mro;
  if (mro == nullptr) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); ++i) {
    const auto* type = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, i));
    if (std::string_view(type->tp_name) == "numpy.ndarray") return true;
  }
  return false;
}

/// A new reference to what a UDF receives for `o`: for a numpy array, a read-only view of
/// it (no copy), so an in-place update raises "output array is read-only" as it does on a
/// Ray worker, where arrays arrive read-only from the object store, instead of changing the
/// value that other Calls and the caller hold; any other object as it is (python/README.md).
PyObject* received_value(PyObject* o) {
  if (!is_ndarray(o)) return Py_NewRef(o);
  PyObject* view = PyObject_CallMethod(o, "view", nullptr);
  if (view == nullptr) throw_foreign();
  PyObject* flags = PyObject_GetAttrString(view, "flags");
  const int rc = flags == nullptr ? -1 : PyObject_SetAttrString(flags, "writeable", Py_False);
  Py_XDECREF(flags);
  if (rc != 0) {
    Py_DECREF(view);
    throw_foreign();
  }
  return view;
}

/// A new list of one input column's Python objects, as the UDF receives them.
PyObject* column_list(const rd::ColumnInput& c) {
  Ref list = Ref::steal(PyList_New(static_cast<Py_ssize_t>(c.size)));
  if (!list) throw_foreign();
  for (std::size_t r = 0; r < c.size; ++r) {
    PyList_SET_ITEM(list.get(), static_cast<Py_ssize_t>(r), received_value(object_at(c.data[r])));
  }
  PyObject* out = list.get();
  Py_INCREF(out);
  return out;
}

}  // namespace

std::unique_ptr<rd::UdfInstance> build_python_udf(const ModuleSpec& spec) {
  Gil gil;
  PyObject* udf = spec.udf.get();
  PyObject* instance = nullptr;
  if (PyType_Check(udf)) {
    instance = PyObject_Call(udf, spec.args.get(), spec.kwargs.get());
    if (instance == nullptr) throw_foreign();
  } else {
    instance = Py_NewRef(udf);
  }
  Ref owned = Ref::steal(instance);
  PyObject* run = PyObject_GetAttrString(instance, "run");
  if (run == nullptr) {
    PyErr_Clear();
    if (PyCallable_Check(instance) == 0) {
      throw rd::ForeignError("TypeError", "the UDF " + type_name_of(instance) +
                                              " has no run() method and is not callable");
    }
    run = Py_NewRef(instance);
  }
  return std::make_unique<PyUdf>(std::move(owned), Ref::steal(run));
}

rd::RpcOutput invoke_python_udf(const CallInfo& info, rd::UdfInstance& instance,
                                std::span<const rd::ColumnInput> in) {
  const PyUdf& udf = static_cast<const PyUdf&>(instance);
  const std::size_t rows = in.empty() ? 0 : in[0].size;
  Gil gil;
  Ref args = Ref::steal(PyTuple_New(static_cast<Py_ssize_t>(info.positional)));
  if (!args) throw_foreign();
  for (std::size_t i = 0; i < info.positional; ++i)
    PyTuple_SET_ITEM(args.get(), static_cast<Py_ssize_t>(i), column_list(in[i]));
  Ref kwargs;
  if (info.static_kwargs || !info.keyword_names.empty()) {
    kwargs = Ref::steal(info.static_kwargs ? PyDict_Copy(info.static_kwargs.get()) : PyDict_New());
    if (!kwargs) throw_foreign();
    for (std::size_t j = 0; j < info.keyword_names.size(); ++j) {
      PyObject* col = column_list(in[info.positional + j]);
      const int rc = PyDict_SetItem(kwargs.get(), info.keyword_names[j].get(), col);
      Py_DECREF(col);
      if (rc != 0) throw_foreign();
    }
  }
  PyObject* result = PyObject_Call(udf.run(), args.get(), kwargs.get());
  if (result == nullptr) throw_foreign();
  Ref owned = Ref::steal(result);
  return checked_output(info, result, rows);
}

}  // namespace rayorch::python
