// A sink whose parts Python objects write (rayorch_cpp.io: JSON lines, Parquet, one file
// per root, or the user's own): the engine's commit protocol (rayorch/sink.h) around them.
//
// The Python side (rayorch_cpp/io/_sink_format.py) is an object with
//   part_name(sequence: int, key: str, row: int, outputs: tuple) -> str
//   max_rows() -> int
//   open(path: str) -> writer
// and each writer has write(key, row, outputs) (which may return the bytes written so far, in
// place of a call of bytes()), bytes() -> int and finish() (which flushes the file to disk).
// `outputs` is the root's flat output tuple, as on_row gets it.
//
// Threading: called on the thread that delivers roots, with the GIL released; each call
// takes the GIL. A Python exception is kept in the run's CallbackError and unwinds the run
// (CallbackAbort); the engine then does not commit the part being written.
#pragma once

#include <cstddef>
#include <memory>

#include "callback_error.h"
#include <nanobind/nanobind.h>

#include "rayorch/sink.h"

namespace rayorch::python {

/// The PartFormat of a Python sink format object; `outputs` is the program's output count.
/// Reads max_rows() at once (the caller holds the GIL). `error` outlives the run.
std::shared_ptr<const PartFormat> python_part_format(nanobind::object format, std::size_t outputs,
                                                     CallbackError& error);

}  // namespace rayorch::python
