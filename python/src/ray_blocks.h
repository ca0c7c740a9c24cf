// Blocks of the Ray backend as both of its ends hold them: on the driver, a RemoteBlock is
// the ObjectRef of a block in Ray's object store; a block crosses to or from Python as one
// list of values. Shared by the store (ray_store.h), the pools (ray_pools.cc) and the actor
// side (ray_worker.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "py_values.h"

#include "execution/block_store.h"
#include "runtime/protocol.h"

namespace rayorch::python {

/// A block whose values live in Ray's object store: the driver holds its ObjectRef only.
class RemoteBlock final : public rd::Block {
 public:
  RemoteBlock(rd::BlockId id, Ref ref) : id_(id), ref_(std::move(ref)) {}
  const void* at(std::size_t) const override { return nullptr; }  // never read in the driver
  std::size_t size() const override { return 0; }
  rd::BlockId id() const { return id_; }
  PyObject* ref() const { return ref_.get(); }

 private:
  rd::BlockId id_;
  Ref ref_;
};

/// The RemoteBlock behind a block of the Ray store (every block it hands out is one).
inline const RemoteBlock& remote(const rd::BlockRef& block) {
  return static_cast<const RemoteBlock&>(*block);
}

/// A new Python list of the block's values (None where a row failed); the caller holds the
/// GIL and owns the reference.
PyObject* block_to_list(const rd::Block& block);

/// A block over a Python sequence of values (the caller holds the GIL).
std::shared_ptr<PyBlock> list_to_block(PyObject* seq);

/// A new Python list for a group value of `members` nested as `layout` says
/// (rd::GroupInput: empty for a group of plain values): lists of lists for a group of
/// groups. `value` gives each member's object (a borrowed reference). The caller holds the
/// GIL and owns the reference; throws rd::ProtocolError when the layout does not match.
PyObject* compose_group(const std::vector<rd::Binding>& members,
                        const std::vector<std::uint32_t>& layout,
                        const std::function<PyObject*(const rd::Binding&)>& value);

/// Wall-clock seconds on the actor's machine for a point of its steady clock, and back: the
/// two ends share wall-clock time only (their clocks agree closely enough for a timeline).
double to_wall_seconds(std::chrono::steady_clock::time_point t);
std::chrono::steady_clock::time_point from_wall_seconds(double seconds);

}  // namespace rayorch::python
