#include "plain_arrays.h"

#include <cstring>
#include <memory>

namespace rayorch::python {

namespace {

// A reference owned for one scope while the GIL is held throughout (cheaper than Ref, which
// takes the GIL again to let go).
using Owned = std::unique_ptr<PyObject, decltype(&Py_DecRef)>;
Owned owned(PyObject* o) {
  return Owned(o, &Py_DecRef);
}

// numpy.ndarray, looked up when the first array crosses and kept for the process's life, as
// the registry's objects are (py_values.h): an immutable type object, read and set under the
// GIL only. Null with a Python error set when numpy cannot be imported.
PyObject* ndarray_type() {
  static PyObject* type = nullptr;
  if (type != nullptr) return type;
  const Owned numpy = owned(PyImport_ImportModule("numpy"));
  if (!numpy) return nullptr;
  type = PyObject_GetAttrString(numpy.get(), "ndarray");
  return type;
}

// The dtype kinds whose `dtype.str` names them completely: bool, signed and unsigned integers,
// floats, complex, fixed-width bytes and str. Structured ("V"), object ("O"), datetime ("M",
// "m") and numpy's variable-width strings ("T") are not.
bool plain_kind(PyObject* kind) {
  Py_ssize_t n = 0;
  const char* text = PyUnicode_AsUTF8AndSize(kind, &n);
  return text != nullptr && n == 1 && std::strchr("biufcSU", text[0]) != nullptr;
}

std::string dtype_of(PyObject* value) {
  const Owned dtype = owned(PyObject_GetAttrString(value, "dtype"));
  if (!dtype) return {};
  const Owned kind = owned(PyObject_GetAttrString(dtype.get(), "kind"));
  if (!kind || !plain_kind(kind.get())) return {};
  const Owned metadata = owned(PyObject_GetAttrString(dtype.get(), "metadata"));
  if (!metadata || metadata.get() != Py_None) return {};
  const Owned str = owned(PyObject_GetAttrString(dtype.get(), "str"));
  if (!str) return {};
  Py_ssize_t n = 0;
  const char* text = PyUnicode_AsUTF8AndSize(str.get(), &n);
  return text != nullptr ? std::string(text, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

std::string plain_array_dtype(PyObject* value) {
  // The name first: a value of any other type never imports numpy.
  if (std::strcmp(Py_TYPE(value)->tp_name, "numpy.ndarray") != 0) return {};
  PyObject* type = ndarray_type();
  std::string dtype;
  if (type != nullptr && Py_TYPE(value) == reinterpret_cast<PyTypeObject*>(type)) {
    dtype = dtype_of(value);
  }
  PyErr_Clear();  // whatever failed above, the value is pickled instead
  return dtype;
}

PyObject* new_plain_array(std::string_view dtype, PyObject* shape, PyObject* buffer) {
  PyObject* type = ndarray_type();
  if (type == nullptr) return nullptr;
  const Owned name =
      owned(PyUnicode_FromStringAndSize(dtype.data(), static_cast<Py_ssize_t>(dtype.size())));
  if (!name) return nullptr;
  const Owned args = owned(PyTuple_Pack(3, shape, name.get(), buffer));
  if (!args) return nullptr;
  return PyObject_Call(type, args.get(), nullptr);
}

}  // namespace rayorch::python
