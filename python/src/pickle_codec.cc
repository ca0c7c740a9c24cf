#include "pickle_codec.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "py_values.h"

#include "rayorch/codec.h"
#include "rayorch/detail/byte_order.h"

namespace rayorch::python {

namespace {

// Buffers from this size on are copied with the GIL released: other threads (the proxies of
// other workers, the driver's callbacks) run Python meanwhile. The exporter keeps its memory
// while its Py_buffer is held.
constexpr std::size_t kCopyWithoutGil = std::size_t{256} << 10;

template <class Sink>
void put_u64(Sink& out, std::uint64_t v) {
  char bytes[8];
  rd::store_le(bytes, v);
  out.append(bytes, sizeof bytes);
}

std::uint64_t get_u64(std::string_view& in) {
  if (in.size() < 8) throw DecodeError("a pickled Python value is truncated");
  const auto v = rd::load_le<std::uint64_t>(in.data());
  in.remove_prefix(8);
  return v;
}

std::string_view get_bytes(std::string_view& in) {
  const std::uint64_t n = get_u64(in);
  if (n > in.size()) throw DecodeError("a pickled Python value is truncated");
  std::string_view bytes = in.substr(0, static_cast<std::size_t>(n));
  in.remove_prefix(static_cast<std::size_t>(n));
  return bytes;
}

/// Releases a Py_buffer under the GIL.
class BufferView {
 public:
  explicit BufferView(PyObject* exporter) {
    if (PyObject_GetBuffer(exporter, &view_, PyBUF_CONTIG_RO) != 0) throw_foreign();
  }
  ~BufferView() { PyBuffer_Release(&view_); }
  BufferView(const BufferView&) = delete;
  BufferView& operator=(const BufferView&) = delete;
  const char* data() const { return static_cast<const char*>(view_.buf); }
  std::size_t size() const { return static_cast<std::size_t>(view_.len); }

 private:
  Py_buffer view_{};
};

/// Copies `n` bytes, without the GIL when they are many (the caller holds it).
void copy_bytes(char* to, const char* from, std::size_t n) {
  if (n < kCopyWithoutGil) {
    std::memcpy(to, from, n);
    return;
  }
  Py_BEGIN_ALLOW_THREADS std::memcpy(to, from, n);
  Py_END_ALLOW_THREADS
}

template <class Sink>
void append_bytes(Sink& out, const char* from, std::size_t n) {
  if (n < kCopyWithoutGil) {
    out.append(from, n);
    return;
  }
  Py_BEGIN_ALLOW_THREADS out.append(from, n);
  Py_END_ALLOW_THREADS
}

template <class Sink>
void encode_row(const void* value, Sink& out) {
  if (value == nullptr) {
    out.push_back('\0');
    return;
  }
  Gil gil;
  Ref buffers = Ref::steal(PyList_New(0));
  if (!buffers) throw_foreign();
  Ref callback = Ref::steal(PyObject_GetAttrString(buffers.get(), "append"));
  if (!callback) throw_foreign();
  Ref protocol = Ref::steal(PyLong_FromLong(5));
  Ref kwargs = Ref::steal(PyDict_New());
  if (!protocol || !kwargs || PyDict_SetItemString(kwargs.get(), "protocol", protocol.get()) != 0 ||
      PyDict_SetItemString(kwargs.get(), "buffer_callback", callback.get()) != 0) {
    throw_foreign();
  }
  Ref args = Ref::steal(PyTuple_Pack(1, object_at(value)));
  if (!args) throw_foreign();
  Ref stream = Ref::steal(PyObject_Call(registry.pickle_dumps, args.get(), kwargs.get()));
  if (!stream) throw_foreign();
  out.push_back('\1');
  const BufferView in_band(stream.get());
  put_u64(out, in_band.size());
  out.append(in_band.data(), in_band.size());
  const auto count = static_cast<std::size_t>(PyList_GET_SIZE(buffers.get()));
  put_u64(out, count);
  for (std::size_t i = 0; i < count; ++i) {
    const BufferView buffer(PyList_GET_ITEM(buffers.get(), static_cast<Py_ssize_t>(i)));
    put_u64(out, buffer.size());
    append_bytes(out, buffer.data(), buffer.size());
  }
}

/// A new reference to the value unpickled from one row's stream and buffers.
PyObject* decode_value(std::string_view& in) {
  const std::string_view stream = get_bytes(in);
  const std::uint64_t count = get_u64(in);
  if (count > in.size() / 8) throw DecodeError("a pickled Python value is truncated");
  Ref buffers = Ref::steal(PyList_New(static_cast<Py_ssize_t>(count)));
  if (!buffers) throw_foreign();
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::string_view bytes = get_bytes(in);
    // The value outlives the frame it came in, so its buffer gets memory of its own: a
    // bytes object (read-only, so an array over it is read-only too).
    PyObject* copy = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(bytes.size()));
    if (copy == nullptr) throw_foreign();
    copy_bytes(PyBytes_AS_STRING(copy), bytes.data(), bytes.size());
    PyList_SET_ITEM(buffers.get(), static_cast<Py_ssize_t>(i), copy);
  }
  // The stream itself is read in place: nothing keeps it after loads() returns.
  Ref view = Ref::steal(PyMemoryView_FromMemory(
      const_cast<char*>(stream.data()), static_cast<Py_ssize_t>(stream.size()), PyBUF_READ));
  if (!view) throw_foreign();
  Ref args = Ref::steal(PyTuple_Pack(1, view.get()));
  Ref kwargs = Ref::steal(PyDict_New());
  if (!args || !kwargs || PyDict_SetItemString(kwargs.get(), "buffers", buffers.get()) != 0) {
    throw_foreign();
  }
  PyObject* value = PyObject_Call(registry.pickle_loads, args.get(), kwargs.get());
  if (value == nullptr) throw_foreign();
  return value;
}

rd::BlockRef decode_rows(std::string_view& in, std::size_t rows) {
  auto block = std::make_shared<PyBlock>();
  block->rows.resize(rows);
  Gil gil;
  std::size_t elements = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    if (in.empty()) throw DecodeError("a pickled Python value is truncated");
    const char present = in.front();
    in.remove_prefix(1);
    if (present == '\0') continue;
    PyValue& v = block->rows[r];
    v.obj = decode_value(in);
    v.truth = v.obj == Py_True;
    if (PyList_Check(v.obj) || PyTuple_Check(v.obj))
      elements += static_cast<std::size_t>(Py_SIZE(v.obj));
  }
  // A list or tuple may be an expanded output: its elements get addresses as children
  // (py_values.h), as the UDF's own output would.
  block->children.resize(elements);
  std::size_t next = 0;
  for (PyValue& v : block->rows) {
    if (v.obj == nullptr || !(PyList_Check(v.obj) || PyTuple_Check(v.obj))) continue;
    PyObject** items = PySequence_Fast_ITEMS(v.obj);
    v.child_count = static_cast<std::size_t>(Py_SIZE(v.obj));
    v.children = block->children.data() + next;
    for (std::size_t i = 0; i < v.child_count; ++i) {
      PyValue& child = block->children[next++];
      child.obj = Py_NewRef(items[i]);
      child.truth = items[i] == Py_True;
    }
  }
  return block;
}

}  // namespace

rd::ErasedCodec python_value_codec() {
  rd::ErasedCodec c;
  c.encode_row = &encode_row<std::string>;
  c.write_row = &encode_row<ByteWriter>;
  c.decode_rows = &decode_rows;
  return c;
}

rd::CallCodecs python_call_codecs(std::size_t inputs, std::size_t outputs) {
  rd::CallCodecs codecs;
  codecs.available = true;
  codecs.inputs.assign(inputs, python_value_codec());
  codecs.outputs.assign(outputs, python_value_codec());
  codecs.elements.assign(outputs, python_value_codec());
  return codecs;
}

}  // namespace rayorch::python
