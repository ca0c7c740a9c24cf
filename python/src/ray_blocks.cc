// Blocks of the Ray backend. See ray_blocks.h.
#include "ray_blocks.h"

#include "runtime/protocol_codec.h"

namespace rayorch::python {

using Clock = std::chrono::steady_clock;

namespace {

// Builds the node at layout[at] (advancing `at` past its subtree and `next` past its values).
PyObject* compose_node(const std::vector<rd::Binding>& members,
                       const std::vector<std::uint32_t>& layout, std::size_t& at, std::size_t& next,
                       const std::function<PyObject*(const rd::Binding&)>& value) {
  if (at >= layout.size()) throw rd::ProtocolError("a nested group's layout ends early");
  const std::uint32_t n = layout[at++];
  if (n == rd::kGroupLeaf) {
    if (next >= members.size()) throw rd::ProtocolError("a nested group lacks members");
    return Py_NewRef(value(members[next++]));
  }
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(n));
  if (list == nullptr) throw_foreign();
  for (std::uint32_t k = 0; k < n; ++k) {
    PyObject* item = nullptr;
    try {
      item = compose_node(members, layout, at, next, value);
    } catch (...) {
      Py_DECREF(list);
      throw;
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(k), item);
  }
  return list;
}

}  // namespace

PyObject* compose_group(const std::vector<rd::Binding>& members,
                        const std::vector<std::uint32_t>& layout,
                        const std::function<PyObject*(const rd::Binding&)>& value) {
  if (layout.empty()) {
    PyObject* list = PyList_New(static_cast<Py_ssize_t>(members.size()));
    if (list == nullptr) throw_foreign();
    try {
      for (std::size_t i = 0; i < members.size(); ++i)
        PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), Py_NewRef(value(members[i])));
    } catch (...) {
      Py_DECREF(list);  // the items not set yet are NULL, which a list's deallocation skips
      throw;
    }
    return list;
  }
  std::size_t at = 0;
  std::size_t next = 0;
  PyObject* list = compose_node(members, layout, at, next, value);
  if (at != layout.size() || next != members.size()) {
    Py_DECREF(list);
    throw rd::ProtocolError("a nested group's layout does not match its members");
  }
  return list;
}

PyObject* block_to_list(const rd::Block& block) {
  const std::size_t n = block.size();
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(n));
  if (list == nullptr) throw_foreign();
  for (std::size_t i = 0; i < n; ++i) {
    const void* a = block.at(i);
    PyObject* o = a != nullptr ? object_at(a) : Py_None;
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), Py_NewRef(o));
  }
  return list;
}

std::shared_ptr<PyBlock> list_to_block(PyObject* seq) {
  PyObject* fast = PySequence_Fast(seq, "a Ray block must be a list of values");
  if (fast == nullptr) throw_foreign();
  const auto n = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(fast));
  PyObject** items = PySequence_Fast_ITEMS(fast);
  auto block = std::make_shared<PyBlock>();
  block->rows.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    block->rows[i].obj = Py_NewRef(items[i]);
    block->rows[i].truth = items[i] == Py_True;
  }
  Py_DECREF(fast);
  return block;
}

double to_wall_seconds(Clock::time_point t) {
  const auto system = std::chrono::system_clock::now() - (Clock::now() - t);
  return std::chrono::duration<double>(system.time_since_epoch()).count();
}

Clock::time_point from_wall_seconds(double seconds) {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return Clock::now() -
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(now - seconds));
}

}  // namespace rayorch::python
