// The bytes of one Ray call ("task"): what the driver sends an actor beside the ObjectRefs of
// the blocks the actor does not hold yet.
//
// Layout (integers little-endian, rayorch/detail/byte_order.h):
//   u32 n, then the n protocol bytes of the Invocation (runtime/protocol_codec.h);
//   four id lists, each a u32 count and u64 block ids: the blocks the actor drops first
//   (evicted), the blocks it holds from earlier calls that this call reads (held), the
//   blocks that travel with this call, in argument order (sent), and the output blocks it
//   keeps instead of returning them (kept: DESIGN 5.12; it returns None in their place);
//   the group inputs: a u32 count, then per group u32 input, u32 row, u32 member count and
//   per member u64 block, u32 row.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "execution/block_store.h"
#include "runtime/protocol.h"

namespace rayorch::python {

namespace rd = rayorch::detail;

/// One call's task, decoded.
struct RayTask {
  rd::Invocation invocation;
  std::vector<rd::BlockId> evicted;
  std::vector<rd::BlockId> held;
  std::vector<rd::BlockId> sent;
  std::vector<rd::BlockId> kept;
  std::vector<rd::GroupInput> groups;
};

std::string encode_task(const RayTask& task);

/// Throws rd::ProtocolError on truncated or trailing bytes.
RayTask decode_task(std::string_view bytes);

}  // namespace rayorch::python
