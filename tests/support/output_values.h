// The values of a run's outputs, for comparing them with plain vectors in the tests of the
// compiler and of the authoring API.
#pragma once

#include <vector>

#include <rayorch/rayorch.h>

namespace output_values {

namespace ro = rayorch;

/// The value of every output (Output::value() throws std::logic_error on one that is not
/// PRESENT).
template <class T>
std::vector<T> values(const std::vector<ro::Output<T>>& outputs) {
  std::vector<T> out;
  for (const auto& o : outputs) out.push_back(o.value());
  return out;
}

}  // namespace output_values
