// Python values as the engine addresses them, and the GIL discipline of the extension: the
// pieces that the bindings (trace, core, the UDF adapters) and the Ray backend (ray_*.cc)
// share.
//
// Every place that touches a Python object takes the GIL itself (Gil), from any thread; Ref
// releases its object under the GIL wherever it is dropped.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string>
#include <utility>
#include <vector>

#include "rayorch/detail/erased.h"
#include "rayorch/errors.h"
#include "rayorch/outcome.h"

namespace rayorch::python {

namespace rd = rayorch::detail;

// ---------------------------------------------------------------------------------------
// GIL and references
// ---------------------------------------------------------------------------------------

/// False once the interpreter is shutting down: Python objects still held then are leaked
/// on purpose (taking the GIL during finalization is not allowed from other threads).
inline bool python_alive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() != 0 && Py_IsFinalizing() == 0;
#else
  return Py_IsInitialized() != 0 && _Py_IsFinalizing() == 0;
#endif
}

/// Keeps the Python thread state of a thread that Python did not start (an actor, a pool's
/// proxy, the driver's loop) from its first Gil to its exit. Without it every Gil on such a
/// thread would create a thread state and destroy it again, and the interpreter's frame stack
/// with it: an mmap and an munmap (a TLB shootdown across the process's cores) each time the
/// thread runs Python code. One per thread (thread_local), touched only by its own thread.
class KeptThreadState {
 public:
  /// Called with the GIL held through a PyGILState_Ensure that created this thread's state:
  /// one more Ensure keeps the state alive after that Gil's Release.
  void keep() {
    if (kept_) return;
    PyGILState_Ensure();
    kept_ = true;
  }
  ~KeptThreadState() {
    // At thread exit: give the state back (the last Release deletes it). Past finalization
    // it is left to the interpreter, as objects are (python_alive).
    if (!kept_ || !python_alive()) return;
    const PyGILState_STATE state = PyGILState_Ensure();
    PyGILState_Release(PyGILState_LOCKED);  // the keep()'s count; the GIL stays held
    PyGILState_Release(state);              // the last count: the state goes, the GIL too
  }

 private:
  bool kept_ = false;
};

/// Holds the GIL for its scope, from any thread (re-entrant).
class Gil {
 public:
  Gil() {
    const bool fresh = PyGILState_GetThisThreadState() == nullptr;
    state_ = PyGILState_Ensure();
    if (fresh) kept_thread_state().keep();
  }
  ~Gil() { PyGILState_Release(state_); }
  Gil(const Gil&) = delete;
  Gil& operator=(const Gil&) = delete;

 private:
  static KeptThreadState& kept_thread_state() {
    thread_local KeptThreadState kept;
    return kept;
  }
  PyGILState_STATE state_;
};

/// An owned reference that may be released on any thread: its destructor takes the GIL.
class Ref {
 public:
  Ref() = default;
  /// Takes a new reference (the caller holds the GIL).
  static Ref borrow(PyObject* o) {
    Py_XINCREF(o);
    return Ref(o);
  }
  /// Adopts a reference (the caller holds the GIL).
  static Ref steal(PyObject* o) { return Ref(o); }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  Ref(Ref&& o) noexcept : obj_(std::exchange(o.obj_, nullptr)) {}
  Ref& operator=(Ref&& o) noexcept {
    if (this != &o) {
      reset();
      obj_ = std::exchange(o.obj_, nullptr);
    }
    return *this;
  }
  ~Ref() { reset(); }
  PyObject* get() const { return obj_; }
  explicit operator bool() const { return obj_ != nullptr; }

 private:
  explicit Ref(PyObject* o) : obj_(o) {}
  void reset() {
    if (obj_ == nullptr) return;
    if (python_alive()) {
      Gil gil;
      Py_DECREF(obj_);
    }
    obj_ = nullptr;
  }
  PyObject* obj_ = nullptr;
};

/// Classes and callables the pure-Python package registers at import.
struct Registry {
  PyObject* record_failure = nullptr;
  PyObject* group_failure = nullptr;
  PyObject* make_issue = nullptr;    ///< (outcome, cause, call, entity, attempts) -> OutputIssue
  PyObject* output_issue = nullptr;  ///< the OutputIssue class: never a value (reserved)
  PyObject* actor_lost = nullptr;    ///< the exception class a UDF raises to model a lost actor
  /// The __cause__ of an ExecutionError that a UDF's exception decided: (traceback text).
  PyObject* udf_traceback = nullptr;
  PyObject* execution_error = nullptr;  ///< the ExecutionError class
  PyObject* pickle_dumps = nullptr;     ///< pickle.dumps (values crossing a process)
  PyObject* pickle_loads = nullptr;     ///< pickle.loads
  PyObject* in_place_buffer = nullptr;  ///< the InPlaceBuffer type (in_place_buffer.h)
};
inline Registry registry;  // set once at import by configure(), then read-only

/// The type name of a Python object, for messages ("int", "dict").
inline std::string type_name_of(PyObject* o) {
  return Py_TYPE(o)->tp_name;
}

/// str(o), or a placeholder when str() itself fails.
inline std::string str_of(PyObject* o) {
  PyObject* s = PyObject_Str(o);
  if (s == nullptr) {
    PyErr_Clear();
    return "<unprintable " + type_name_of(o) + ">";
  }
  Py_ssize_t n = 0;
  const char* text = PyUnicode_AsUTF8AndSize(s, &n);
  std::string out = text ? std::string(text, static_cast<std::size_t>(n)) : std::string();
  if (text == nullptr) PyErr_Clear();
  Py_DECREF(s);
  return out;
}

/// The text of traceback.format_exception(type, value, trace), ending with a newline, or
/// empty when it cannot be formatted (no traceback, or formatting raised). The caller holds the
/// GIL; leaves no Python error set.
inline std::string formatted_traceback(PyObject* type, PyObject* value, PyObject* trace) {
  if (trace == nullptr) return {};
  PyObject* module = PyImport_ImportModule("traceback");
  if (module == nullptr) {
    PyErr_Clear();
    return {};
  }
  PyObject* lines =
      PyObject_CallMethod(module, "format_exception", "OOO", type, value ? value : Py_None, trace);
  Py_DECREF(module);
  if (lines == nullptr) {
    PyErr_Clear();
    return {};
  }
  PyObject* empty = PyUnicode_FromString("");
  PyObject* joined = empty ? PyUnicode_Join(empty, lines) : nullptr;
  Py_XDECREF(empty);
  Py_DECREF(lines);
  if (joined == nullptr) {
    PyErr_Clear();
    return {};
  }
  std::string text = str_of(joined);
  Py_DECREF(joined);
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text;
}

/// Turns the Python error being raised into rd::ForeignError ("ValueError: boom", with the
/// formatted traceback of the UDF's frames), the Python counterpart of a C++ exception thrown
/// by a UDF, or into rayorch::ActorLost for the package's ActorLost. Clears the Python error.
[[noreturn]] inline void throw_foreign() {
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* trace = nullptr;
  PyErr_Fetch(&type, &value, &trace);
  PyErr_NormalizeException(&type, &value, &trace);
  if (value != nullptr && trace != nullptr) PyException_SetTraceback(value, trace);
  std::string name = type ? reinterpret_cast<PyTypeObject*>(type)->tp_name : "unknown error";
  std::string message = value ? str_of(value) : std::string();
  const bool lost = registry.actor_lost != nullptr && type != nullptr &&
                    PyErr_GivenExceptionMatches(type, registry.actor_lost) != 0;
  std::string traceback = lost ? std::string() : formatted_traceback(type, value, trace);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(trace);
  if (lost) throw rayorch::ActorLost(message);
  throw rd::ForeignError(std::move(name), message, std::move(traceback));
}

// ---------------------------------------------------------------------------------------
// Values and blocks
// ---------------------------------------------------------------------------------------

/// One value as the engine addresses it. `truth` comes first: the engine reads a mask
/// value's boolean as `*static_cast<const bool*>(address)`.
struct PyValue {
  bool truth = false;
  PyObject* obj = nullptr;            ///< strong reference; null for a failed row
  const PyValue* children = nullptr;  ///< the elements of an expanded list
  std::size_t child_count = 0;
};

/// A block of Python values: a source column, one output column of an RPC, one group.
/// Elements of expanded lists get their own PyValues (children) so every child has an
/// address. Released under the GIL on whatever thread drops the last reference.
class PyBlock final : public rd::Block {
 public:
  std::vector<PyValue> rows;
  std::vector<PyValue> children;

  PyBlock() = default;
  PyBlock(const PyBlock&) = delete;
  PyBlock& operator=(const PyBlock&) = delete;
  ~PyBlock() override {
    if (!python_alive()) return;
    Gil gil;
    for (const PyValue& v : rows) Py_XDECREF(v.obj);
    for (const PyValue& v : children) Py_XDECREF(v.obj);
  }
  const void* at(std::size_t row) const override {
    return rows[row].obj != nullptr ? &rows[row] : nullptr;
  }
  std::size_t size() const override { return rows.size(); }
};

inline PyObject* object_at(const void* address) {
  return static_cast<const PyValue*>(address)->obj;
}

}  // namespace rayorch::python
