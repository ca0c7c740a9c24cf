// How a Python run journals its root outputs (docs/JOURNAL.md): with pickle, so any picklable
// value can be recorded and restored.
#pragma once

#include <cstddef>

#include "callback_error.h"

#include "rayorch/executor.h"

namespace rayorch::python {

/// The codec of a run with `outputs` output Ports. Runs on the driver thread and takes the
/// GIL itself; a pickling error is kept in `error` and aborts the run.
rd::OutputCodec pickle_codec(std::size_t outputs, CallbackError& error);

}  // namespace rayorch::python
