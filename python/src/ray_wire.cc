// The bytes of one Ray call. See ray_wire.h.
#include "ray_wire.h"

#include <cstdint>

#include "rayorch/detail/byte_order.h"

#include "runtime/protocol_codec.h"

namespace rayorch::python {
namespace {

template <class U>
void put(std::string& out, U v) {
  char bytes[sizeof(U)];
  rd::store_le(bytes, v);
  out.append(static_cast<const char*>(bytes), sizeof(U));
}

void put_count(std::string& out, std::size_t n) {
  if (n > 0xFFFFFFFFu) throw rd::ProtocolError("a Ray task list is too long to encode");
  put(out, static_cast<std::uint32_t>(n));
}

class Reader {
 public:
  explicit Reader(std::string_view bytes) : in_(bytes) {}
  template <class U>
  U get() {
    if (in_.size() < sizeof(U)) throw rd::ProtocolError("truncated Ray task bytes");
    const U v = rd::load_le<U>(in_.data());
    in_.remove_prefix(sizeof(U));
    return v;
  }
  /// A u32 count of elements of at least `min_bytes` each, checked against the bytes left.
  std::size_t count(std::size_t min_bytes) {
    const std::size_t n = get<std::uint32_t>();
    if (n > in_.size() / min_bytes) throw rd::ProtocolError("truncated Ray task bytes");
    return n;
  }
  std::string_view take(std::size_t n) {
    if (in_.size() < n) throw rd::ProtocolError("truncated Ray task bytes");
    const std::string_view v = in_.substr(0, n);
    in_.remove_prefix(n);
    return v;
  }
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

}  // namespace

std::string encode_task(const RayTask& task) {
  const std::string inv = rd::encode(task.invocation);
  std::string out;
  put_count(out, inv.size());
  out += inv;
  for (const std::vector<rd::BlockId>* ids : {&task.evicted, &task.held, &task.sent, &task.kept}) {
    put_count(out, ids->size());
    for (rd::BlockId id : *ids) put<std::uint64_t>(out, id);
  }
  put_count(out, task.groups.size());
  for (const rd::GroupInput& g : task.groups) {
    put(out, g.input);
    put(out, g.row);
    put_count(out, g.members.size());
    for (const rd::Binding& m : g.members) {
      put<std::uint64_t>(out, m.block);
      put(out, m.row);
    }
    put_count(out, g.layout.size());
    for (std::uint32_t n : g.layout) put(out, n);
  }
  return out;
}

RayTask decode_task(std::string_view bytes) {
  Reader r(bytes);
  RayTask task;
  const std::size_t inv_size = r.get<std::uint32_t>();
  task.invocation = rd::decode_invocation(std::string(r.take(inv_size)));
  for (std::vector<rd::BlockId>* ids : {&task.evicted, &task.held, &task.sent, &task.kept}) {
    ids->resize(r.count(8));
    for (rd::BlockId& id : *ids) id = r.get<std::uint64_t>();
  }
  task.groups.resize(r.count(12));
  for (rd::GroupInput& g : task.groups) {
    g.input = r.get<std::uint32_t>();
    g.row = r.get<std::uint32_t>();
    g.members.resize(r.count(12));
    for (rd::Binding& m : g.members) {
      m.block = r.get<std::uint64_t>();
      m.row = r.get<std::uint32_t>();
    }
    g.layout.resize(r.count(4));
    for (std::uint32_t& n : g.layout) n = r.get<std::uint32_t>();
  }
  if (!r.done()) throw rd::ProtocolError("trailing bytes after the Ray task's group inputs");
  return task;
}

}  // namespace rayorch::python
