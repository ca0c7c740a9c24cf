// A Python object exposing bytes that a worker process read in place from the memory it shares
// with the executor (rayorch/detail/in_place_reads.h): the out-of-band buffer of a large
// pickled value (a numpy array's data), which the unpickled value then uses without a copy.
// Read-only, as the bytes objects that copies would be. If the value is still referenced when
// its call is settled, keep_if_referenced() moves its pages out of the frame and the object
// owns them from then on.
//
// Threading: every function here is called with the GIL held.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string_view>

#include "rayorch/detail/in_place_reads.h"

namespace rayorch::python {

/// Creates the type (once, when the extension module is initialised); false with a Python
/// error set when it cannot be made.
bool make_in_place_buffer_type();

/// A new reference to an InPlaceBuffer over `bytes`, or null with a Python error set.
PyObject* new_in_place_buffer(std::string_view bytes);

/// When something besides the caller's one reference holds `buffer` (an InPlaceBuffer), moves
/// its pages out of the frame (reads.keep) and makes it their owner. False when that failed.
bool keep_if_referenced(PyObject* buffer, rayorch::detail::InPlaceReads& reads);

}  // namespace rayorch::python
