// A Python exception raised by a callback the engine calls while run() has the GIL released
// (the row and progress callbacks, pickling of journaled outputs): it is kept here, the run
// is unwound with CallbackAbort, and run() raises it again once it holds the GIL.
#pragma once

#include "py_values.h"

namespace rayorch::python {

/// Thrown through the engine after a callback raised; carries nothing (see CallbackError).
struct CallbackAbort {};

/// The pending Python exception of one run. Written by whichever thread ran the callback
/// (under the GIL), read by run() after the engine returned.
class CallbackError {
 public:
  CallbackError() = default;
  CallbackError(const CallbackError&) = delete;
  CallbackError& operator=(const CallbackError&) = delete;
  ~CallbackError() {
    if (type_ != nullptr || value_ != nullptr || traceback_ != nullptr) {
      Gil gil;
      Py_XDECREF(type_);
      Py_XDECREF(value_);
      Py_XDECREF(traceback_);
    }
  }

  /// Takes the current Python exception (the caller holds the GIL) and unwinds the run.
  [[noreturn]] void fetch_and_abort() {
    PyErr_Fetch(&type_, &value_, &traceback_);
    throw CallbackAbort{};
  }

  /// Makes the kept exception the current one again (the caller holds the GIL).
  void restore() {
    PyErr_Restore(type_, value_, traceback_);
    type_ = value_ = traceback_ = nullptr;
  }

 private:
  PyObject* type_ = nullptr;
  PyObject* value_ = nullptr;
  PyObject* traceback_ = nullptr;
};

}  // namespace rayorch::python
