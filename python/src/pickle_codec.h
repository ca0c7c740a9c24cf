// How Python values cross to and from a worker process (isolation="process"): pickle
// protocol 5, with every out-of-band buffer (a numpy array's data, a PickleBuffer of a page
// image) copied straight into the frame, e.g. the memory file shared with the worker, and out
// of it into one new bytes object that the unpickled value then uses without another copy.
// So such a buffer is copied once by the sender and once by the receiver, as C++ values are
// by their codecs (docs/ISOLATION.md); the in-band pickle stream is read in place. A worker
// reads buffers of 256 KiB and more in place instead (decode_rows_in_place, in_place_buffer.h).
//
// Row format: a presence byte (0: no value, e.g. a failed row; 1: a value; 2: a value whose
// large buffers start on a page of their own), then the pickle stream's length (u64) and
// bytes, the number of out-of-band buffers (u64), and each buffer's length (u64), with
// presence 2 its padding's length (u64) and padding, and its bytes; integers little-endian.
// Presence 2 is written only into a ByteWriter (a frame), whose pages are the frame's. A plain
// numpy array (plain_arrays.h) is not pickled: presence 3 (4: its data on a page of its own),
// its dtype's length (u64) and text, its number of dimensions (u64) and extents (u64 each),
// then its data as one buffer, written as above.
//
// Threading: encode and decode take the GIL themselves, from any thread, and release it while
// they copy a large buffer. Values received are read-only where their type allows (a numpy
// array over a bytes object), as on the Ray backend.
#pragma once

#include <cstddef>

#include "rayorch/detail/erased_codec.h"

namespace rayorch::python {

/// The codec of one Python value (any picklable object).
rayorch::detail::ErasedCodec python_value_codec();

/// The codecs of a Call of the Python package: every input and output is a Python value.
rayorch::detail::CallCodecs python_call_codecs(std::size_t inputs, std::size_t outputs);

}  // namespace rayorch::python
