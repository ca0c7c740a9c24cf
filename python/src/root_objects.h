// A terminal root's outputs as Python objects: what run() hands to the caller (row lists,
// on_row) and to a sink's Python part writers. The caller holds the GIL.
#pragma once

#include <cstddef>
#include <span>

#include "py_values.h"

#include "rayorch/detail/erased_output.h"

namespace rayorch::python {

/// One root output as a new reference: the value, or an OutputIssue. Null when Python raised.
PyObject* output_object(const rd::ErasedOutput& o);

/// Output `at` of a root's entries (advanced past it) as a new reference: an output below
/// the root (ErasedOutput::below_root) is the list of its Items. Null when Python raised.
PyObject* next_output_object(std::span<const rd::ErasedOutput> entries, std::size_t& at);

/// The root's `outputs` outputs as a new tuple. Null when Python raised.
PyObject* root_tuple(std::span<const rd::ErasedOutput> entries, std::size_t outputs);

}  // namespace rayorch::python
