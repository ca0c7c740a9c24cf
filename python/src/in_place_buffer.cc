#include "in_place_buffer.h"

#include "py_values.h"

namespace rayorch::python {

namespace {

// The object: where its bytes are, and whether it owns their pages (after keep).
struct InPlaceBufferObject {
  PyObject ob_base;  // PyObject_HEAD
  const char* data;
  Py_ssize_t size;
  bool owns_pages;
};

int get_buffer(PyObject* self, Py_buffer* view, int flags) {
  auto* o = reinterpret_cast<InPlaceBufferObject*>(self);
  // Read-only: PyBuffer_FillInfo refuses a writable request with BufferError.
  return PyBuffer_FillInfo(view, self, const_cast<char*>(o->data), o->size, 1, flags);
}

void dealloc(PyObject* self) {
  auto* o = reinterpret_cast<InPlaceBufferObject*>(self);
  if (o->owns_pages) {
    rd::InPlaceReads::release_kept(std::string_view(o->data, static_cast<std::size_t>(o->size)));
  }
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

PyType_Slot slots[] = {
    {Py_bf_getbuffer, reinterpret_cast<void*>(&get_buffer)},
    {Py_tp_dealloc, reinterpret_cast<void*>(&dealloc)},
    {Py_tp_doc, const_cast<char*>("Bytes of a value read in place from the memory a worker "
                                  "process shares with the executor (read-only).")},
    {0, nullptr},
};

PyType_Spec spec = {
    "rayorch_cpp._core.InPlaceBuffer",
    static_cast<int>(sizeof(InPlaceBufferObject)),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    slots,
};

}  // namespace

bool make_in_place_buffer_type() {
  if (registry.in_place_buffer != nullptr) return true;
  registry.in_place_buffer = PyType_FromSpec(&spec);  // kept for the process's life
  return registry.in_place_buffer != nullptr;
}

PyObject* new_in_place_buffer(std::string_view bytes) {
  auto* type = reinterpret_cast<PyTypeObject*>(registry.in_place_buffer);
  PyObject* self = type->tp_alloc(type, 0);
  if (self == nullptr) return nullptr;
  auto* o = reinterpret_cast<InPlaceBufferObject*>(self);
  o->data = bytes.data();
  o->size = static_cast<Py_ssize_t>(bytes.size());
  o->owns_pages = false;
  return self;
}

bool keep_if_referenced(PyObject* buffer, rd::InPlaceReads& reads) {
  if (Py_REFCNT(buffer) <= 1) return true;
  auto* o = reinterpret_cast<InPlaceBufferObject*>(buffer);
  if (o->owns_pages) return true;
  if (!reads.keep(std::string_view(o->data, static_cast<std::size_t>(o->size)))) return false;
  o->owns_pages = true;
  return true;
}

}  // namespace rayorch::python
