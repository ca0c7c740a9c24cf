// A Python exception raised by a callback the engine calls while run() has the GIL released
// (the row and progress callbacks, pickling of journaled outputs, the signal check): it is
// kept here, the run is unwound with CallbackAbort, and run() raises it again once it holds
// the GIL. A KeyboardInterrupt unwinds it as rayorch::RunInterrupted too, which stops the
// run without closing the executor.
#pragma once

#include "py_values.h"

#include "rayorch/errors.h"
#include "rayorch/observer.h"

namespace rayorch::python {

/// Thrown through the engine after a callback raised; carries nothing (see CallbackError).
struct CallbackAbort {};

/// Thrown instead of CallbackAbort for a KeyboardInterrupt (Ctrl-C).
struct InterruptAbort : CallbackAbort, RunInterrupted {};

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
    if (type_ != nullptr) {
      PyErr_Clear();  // the run is unwinding already; the first exception is the one kept
      throw CallbackAbort{};
    }
    PyErr_Fetch(&type_, &value_, &traceback_);
    if (type_ != nullptr && PyErr_GivenExceptionMatches(type_, PyExc_KeyboardInterrupt) != 0)
      throw InterruptAbort{};
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

/// Runs Python's signal handlers while run() waits with the GIL released, so that Ctrl-C
/// stops a run: Python runs them only between bytecodes of the main thread, which is the
/// driver's thread during run() (a run on another thread has no handlers to run). The
/// driver sends a progress event about every 250 ms while the run goes on.
class SignalCheck final : public RunObserver {
 public:
  explicit SignalCheck(CallbackError& error) : error_(error) {}

  void on_progress(const ProgressEvent& e) override {
    if (e.final) return;  // the run is over (or unwinding): nothing left to stop
    Gil gil;
    if (PyErr_CheckSignals() != 0) error_.fetch_and_abort();
  }

 private:
  CallbackError& error_;
};

}  // namespace rayorch::python
