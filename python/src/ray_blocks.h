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

/// A block whose values live in Ray's object store, or in the actor that made it: the driver
/// holds its ObjectRef only.
///
/// A kept block (DESIGN 5.12) stayed in the actor that made it, since only Calls of that
/// actor's pool read it: its ObjectRef holds None until the block is exported (that actor
/// puts it into the object store for a reader elsewhere, set_exported()). Which actor holds it
/// is the pools' record (execution/actor_block_cache.h), which the store starts when the block
/// is put. Driver's thread only.
/// The actor that kept a block, as (pool, actor): pool -1 for a block no actor kept, actor -1
/// for one whose actor was replaced before the block came back (lost).
struct BlockHolder {
  int pool = -1;
  int actor = -1;
};

class RemoteBlock final : public rd::Block {
 public:
  RemoteBlock(rd::BlockId id, Ref ref, BlockHolder kept_by = {})
      : id_(id), ref_(std::move(ref)), kept_by_(kept_by), kept_(kept_by.pool >= 0) {}
  const void* at(std::size_t) const override { return nullptr; }  // never read in the driver
  std::size_t size() const override { return 0; }
  rd::BlockId id() const { return id_; }
  PyObject* ref() const { return ref_.get(); }
  /// True while the values are in the actor that made them only.
  bool kept() const { return kept_; }
  /// The actor that kept the block when it was made (the store records it as the holder when
  /// the block is put), even once exported.
  BlockHolder kept_by() const { return kept_by_; }
  /// The values are in the object store now, behind `ref` (the caller holds the GIL). Const:
  /// where a block's values are is not part of its value, and blocks are shared as const.
  void set_exported(Ref ref) const {
    ref_ = std::move(ref);
    kept_ = false;
  }

 private:
  rd::BlockId id_;
  mutable Ref ref_;
  BlockHolder kept_by_;
  mutable bool kept_;
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
