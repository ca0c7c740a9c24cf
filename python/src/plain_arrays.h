// The numpy arrays that cross to and from a worker process without pickle (pickle_codec.h):
// an array whose type is exactly numpy.ndarray, C-contiguous, of a plain dtype (bool, integer,
// float, complex, or bytes or str of fixed width, without metadata) is all in its dtype string,
// shape and data, so it crosses as those three and the receiver makes numpy.ndarray(shape,
// dtype, buffer) over the bytes it received. Pickle carries the same data out of band, but
// runs its machine and looks two numpy globals up by name for each array, each way: most of
// what a small array costs (BENCHMARKS.md, "process_workers"). Anything else (a subclass, a
// strided view, an object, structured or datetime dtype) is pickled as before.
//
// Threading: every function here is called with the GIL held.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string>
#include <string_view>

namespace rayorch::python {

/// `value`'s dtype as numpy writes it (`dtype.str`, e.g. "<f4", "|S8") when `value` is a plain
/// array as above apart from its layout (the caller's buffer request tells C-contiguity);
/// empty otherwise, with no Python error set. Never imports numpy for a value that is not an
/// array.
std::string plain_array_dtype(PyObject* value);

/// A new reference to numpy.ndarray(shape, dtype, buffer=buffer), read-only when `buffer` is,
/// or null with a Python error set. `shape` is a tuple of ints.
PyObject* new_plain_array(std::string_view dtype, PyObject* shape, PyObject* buffer);

}  // namespace rayorch::python
