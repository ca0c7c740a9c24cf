// A lazy source in Python: source columns given as iterables (generators, iterators, files,
// map objects) are pulled row by row as the run admits input batches, instead of being read
// whole before the first row runs (DESIGN 6.1.2).
//
// Threading: next() runs on the driver's thread, the thread that called run() (for stream(),
// its background thread), and takes the GIL for as long as it pulls one chunk; the user's
// iterators run there, one at a time, never concurrently with a UDF holding the GIL.
// Errors: an exception raised by an iterator (or by the journal's key function), and a
// ValueError for columns that end at different rows or a mask row that is not a bool, are
// kept in the run's CallbackError and unwind the run as CallbackAbort (the driver waits for
// the RPCs in flight, then run() raises the exception with its traceback).
// Ownership: the feed owns its iterators and releases them under the GIL wherever it dies.
#pragma once

#include <cstddef>
#include <vector>

#include "callback_error.h"
#include "py_values.h"

#include "rayorch/detail/executor_impl.h"

namespace rayorch::python {

class PythonFeed final : public rd::SourceFeed {
 public:
  /// `columns`: one iterable per source column (the caller holds the GIL; iter() is taken
  /// here and raises TypeError for what is not iterable). `mask_columns`: the columns read
  /// as F.filter masks. `row_key`: None, or key(row, values) -> str, the journal key of a
  /// row (`values`: a tuple of the row's source values), called as each row is pulled.
  PythonFeed(PyObject* columns, std::vector<int> mask_columns, PyObject* row_key,
             CallbackError& error);

  rd::SourceChunk next(std::size_t rows) override;

  /// Rows pulled so far (every row of the source once ended()).
  std::size_t pulled() const { return pulled_; }
  bool ended() const { return ended_; }

 private:
  // Raises `type` with `message` in Python and unwinds the run (the caller holds the GIL).
  [[noreturn]] void fail(PyObject* type, const std::string& message);
  // The next item of column `c`, or nullptr at its end; unwinds the run when it raised.
  PyObject* pull(std::size_t c);

  std::vector<Ref> iterators_;
  std::vector<int> mask_columns_;
  Ref row_key_;
  CallbackError& error_;
  std::size_t pulled_ = 0;
  bool ended_ = false;
};

}  // namespace rayorch::python
