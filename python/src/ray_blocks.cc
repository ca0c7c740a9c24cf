// Blocks of the Ray backend. See ray_blocks.h.
#include "ray_blocks.h"

namespace rayorch::python {

using Clock = std::chrono::steady_clock;

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
