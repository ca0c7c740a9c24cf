#include "pickle_codec.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "in_place_buffer.h"
#include "plain_arrays.h"
#include "py_values.h"

#include "rayorch/codec.h"
#include "rayorch/detail/byte_order.h"

namespace rayorch::python {

namespace {

// Buffers from this size on are copied with the GIL released: other threads (the proxies of
// other workers, the driver's callbacks) run Python meanwhile. The exporter keeps its memory
// while its Py_buffer is held.
constexpr std::size_t kCopyWithoutGil = std::size_t{256} << 10;

// Buffers from this size on are written on a page of their own into a worker's frame, where
// the worker reads them in place. Below it a copy costs less than the bookkeeping (measured:
// 64 KiB echoes were no faster in place) and the padding, up to a page, is a larger share.
constexpr std::size_t kInPlaceFrom = std::size_t{256} << 10;

// Presence bytes of a row: no value, a value, a value whose large buffers start on a page, a
// plain array (plain_arrays.h), a plain array whose data starts on a page.
constexpr char kAbsent = '\0';
constexpr char kPresent = '\1';
constexpr char kPresentAligned = '\2';
constexpr char kArray = '\3';
constexpr char kArrayAligned = '\4';

// numpy's limit on an array's dimensions (NPY_MAXDIMS): a larger count is a corrupt row.
constexpr std::uint64_t kMaxDimensions = 64;

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

/// A C-contiguous read-only view of an exporter's memory (with its shape); released under the
/// GIL.
class BufferView {
 public:
  explicit BufferView(PyObject* exporter) {
    if (!take(exporter)) throw_foreign();
  }
  /// The view, or null (no Python error set) when `exporter` has no C-contiguous buffer.
  static std::unique_ptr<BufferView> of_contiguous(PyObject* exporter) {
    std::unique_ptr<BufferView> view(new BufferView());
    if (view->take(exporter)) return view;
    PyErr_Clear();
    return nullptr;
  }
  ~BufferView() {
    if (view_.obj != nullptr) PyBuffer_Release(&view_);
  }
  BufferView(const BufferView&) = delete;
  BufferView& operator=(const BufferView&) = delete;
  const char* data() const { return static_cast<const char*>(view_.buf); }
  std::size_t size() const { return static_cast<std::size_t>(view_.len); }
  std::size_t dimensions() const { return static_cast<std::size_t>(view_.ndim); }
  std::uint64_t extent(std::size_t dimension) const {
    return static_cast<std::uint64_t>(view_.shape[dimension]);
  }

 private:
  BufferView() = default;
  bool take(PyObject* exporter) {
    return PyObject_GetBuffer(exporter, &view_, PyBUF_CONTIG_RO) == 0;
  }
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

// Writes one out-of-band buffer: its length, then (aligned rows) the padding that puts a large
// one on a page of its own, then its bytes. Into a ByteWriter, whose memory is a frame's: the
// page is the address's (a frame's arena offsets are page-aligned).
template <class Sink>
void put_buffer(Sink& out, const BufferView& buffer, bool aligned) {
  put_u64(out, buffer.size());
  if (aligned) {
    std::size_t pad = 0;
    if (buffer.size() >= kInPlaceFrom) {
      if constexpr (std::is_same_v<Sink, ByteWriter>) {
        const std::size_t page = rd::InPlaceReads::page_size();
        // Room for the rest at once: nothing moves while the padding is measured and written.
        out.reserve(8 + page + buffer.size());
        const auto end = reinterpret_cast<std::uintptr_t>(out.data() + out.size() + 8);
        pad = (page - end % page) % page;
      }
    }
    put_u64(out, pad);
    static constexpr char kZeros[4096] = {};
    for (std::size_t left = pad; left > 0;) {
      const std::size_t n = std::min(left, sizeof kZeros);
      out.append(kZeros, n);
      left -= n;
    }
  }
  append_bytes(out, buffer.data(), buffer.size());
}

// Writes a plain array's row (plain_arrays.h): presence, dtype (u64 length, bytes), the number
// of dimensions (u64) and each extent (u64), then its data as one buffer. False, with nothing
// written, when `array` is not one.
template <class Sink>
bool encode_plain_array(PyObject* array, Sink& out) {
  const std::string dtype = plain_array_dtype(array);
  if (dtype.empty()) return false;
  const std::unique_ptr<BufferView> data = BufferView::of_contiguous(array);
  if (!data) return false;
  const bool aligned = std::is_same_v<Sink, ByteWriter> && data->size() >= kInPlaceFrom;
  out.push_back(aligned ? kArrayAligned : kArray);
  put_u64(out, dtype.size());
  out.append(dtype.data(), dtype.size());
  put_u64(out, data->dimensions());
  for (std::size_t d = 0; d < data->dimensions(); ++d) put_u64(out, data->extent(d));
  put_buffer(out, *data, aligned);
  return true;
}

template <class Sink>
void encode_row(const void* value, Sink& out) {
  if (value == nullptr) {
    out.push_back(kAbsent);
    return;
  }
  Gil gil;
  if (encode_plain_array(object_at(value), out)) return;
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
  const auto count = static_cast<std::size_t>(PyList_GET_SIZE(buffers.get()));
  std::vector<std::unique_ptr<BufferView>> views;
  bool aligned = false;
  for (std::size_t i = 0; i < count; ++i) {
    views.push_back(
        std::make_unique<BufferView>(PyList_GET_ITEM(buffers.get(), static_cast<Py_ssize_t>(i))));
    aligned = aligned || (std::is_same_v<Sink, ByteWriter> && views.back()->size() >= kInPlaceFrom);
  }
  out.push_back(aligned ? kPresentAligned : kPresent);
  const BufferView in_band(stream.get());
  put_u64(out, in_band.size());
  out.append(in_band.data(), in_band.size());
  put_u64(out, count);
  for (const auto& buffer : views) put_buffer(out, *buffer, aligned);
}

/// One buffer of an aligned row: its length, its padding, its bytes.
std::string_view get_aligned_bytes(std::string_view& in) {
  const std::uint64_t n = get_u64(in);
  const std::uint64_t pad = get_u64(in);
  if (pad > in.size() || n > in.size() - pad) {
    throw DecodeError("a pickled Python value is truncated");
  }
  std::string_view bytes = in.substr(static_cast<std::size_t>(pad), static_cast<std::size_t>(n));
  in.remove_prefix(static_cast<std::size_t>(pad + n));
  return bytes;
}

/// A new reference to the object holding one buffer of a row. With `reads` (a worker's inputs),
/// a large buffer of an aligned row is read in place: it becomes an InPlaceBuffer, appended to
/// `in_place` for the settle step.
PyObject* decode_buffer(std::string_view& in, bool aligned, rd::InPlaceReads* reads,
                        PyObject* in_place) {
  const std::string_view bytes = aligned ? get_aligned_bytes(in) : get_bytes(in);
  if (reads != nullptr && bytes.size() >= kInPlaceFrom && reads->can_read_in_place(bytes)) {
    PyObject* buffer = new_in_place_buffer(bytes);
    if (buffer == nullptr || PyList_Append(in_place, buffer) != 0) {
      Py_XDECREF(buffer);
      throw_foreign();
    }
    return buffer;
  }
  // The value outlives the frame it came in, so its buffer gets memory of its own: a bytes
  // object (read-only, so an array over it is read-only too).
  PyObject* buffer = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(bytes.size()));
  if (buffer == nullptr) throw_foreign();
  copy_bytes(PyBytes_AS_STRING(buffer), bytes.data(), bytes.size());
  return buffer;
}

/// A new reference to the plain array of one row (encode_plain_array).
PyObject* decode_plain_array(std::string_view& in, bool aligned, rd::InPlaceReads* reads,
                             PyObject* in_place) {
  const std::string_view dtype = get_bytes(in);
  const std::uint64_t dimensions = get_u64(in);
  if (dimensions > kMaxDimensions) throw DecodeError("a Python array has too many dimensions");
  Ref shape = Ref::steal(PyTuple_New(static_cast<Py_ssize_t>(dimensions)));
  if (!shape) throw_foreign();
  for (std::uint64_t d = 0; d < dimensions; ++d) {
    PyObject* extent = PyLong_FromUnsignedLongLong(get_u64(in));
    if (extent == nullptr) throw_foreign();
    PyTuple_SET_ITEM(shape.get(), static_cast<Py_ssize_t>(d), extent);
  }
  const Ref buffer = Ref::steal(decode_buffer(in, aligned, reads, in_place));
  PyObject* array = new_plain_array(dtype, shape.get(), buffer.get());
  if (array == nullptr) throw_foreign();
  return array;
}

/// A new reference to the value unpickled from one row's stream and buffers (decode_buffer).
PyObject* decode_value(std::string_view& in, bool aligned, rd::InPlaceReads* reads,
                       PyObject* in_place) {
  const std::string_view stream = get_bytes(in);
  const std::uint64_t count = get_u64(in);
  if (count > in.size() / 8) throw DecodeError("a pickled Python value is truncated");
  Ref buffers = Ref::steal(PyList_New(static_cast<Py_ssize_t>(count)));
  if (!buffers) throw_foreign();
  for (std::uint64_t i = 0; i < count; ++i) {
    PyList_SET_ITEM(buffers.get(), static_cast<Py_ssize_t>(i),
                    decode_buffer(in, aligned, reads, in_place));
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

// Settles what one block read in place: every InPlaceBuffer still referenced besides the list
// moves its pages out of the frame. The list goes with the step.
void settle_in_place(const std::shared_ptr<Ref>& in_place, rd::InPlaceReads& reads) {
  Gil gil;
  PyObject* list = in_place->get();
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); ++i) {
    if (!keep_if_referenced(PyList_GET_ITEM(list, i), reads)) break;
  }
  *in_place = Ref();
}

void decode_values(std::string_view& in, PyBlock& block, rd::InPlaceReads* reads,
                   PyObject* in_place);

rd::BlockRef decode_rows_with(std::string_view& in, std::size_t rows, rd::InPlaceReads* reads) {
  auto block = std::make_shared<PyBlock>();
  block->rows.resize(rows);
  Gil gil;
  std::shared_ptr<Ref> in_place;
  if (reads != nullptr) {
    in_place = std::make_shared<Ref>(Ref::steal(PyList_New(0)));
    if (!*in_place) throw_foreign();
  }
  // What was read in place is settled with the call, also when decoding fails part-way.
  const auto register_settle = [&] {
    if (!in_place || PyList_GET_SIZE(in_place->get()) == 0) return;
    reads->on_settle([in_place](rd::InPlaceReads& r) { settle_in_place(in_place, r); });
  };
  try {
    decode_values(in, *block, reads, in_place ? in_place->get() : nullptr);
  } catch (...) {
    register_settle();
    throw;
  }
  register_settle();
  return block;
}

// Decodes the rows of `block` (sized) from `in`.
void decode_values(std::string_view& in, PyBlock& block, rd::InPlaceReads* reads,
                   PyObject* in_place) {
  std::size_t elements = 0;
  for (std::size_t r = 0; r < block.rows.size(); ++r) {
    if (in.empty()) throw DecodeError("a pickled Python value is truncated");
    const char present = in.front();
    in.remove_prefix(1);
    if (present == kAbsent) continue;
    PyValue& v = block.rows[r];
    if (present == kPresent || present == kPresentAligned) {
      v.obj = decode_value(in, present == kPresentAligned, reads, in_place);
    } else if (present == kArray || present == kArrayAligned) {
      v.obj = decode_plain_array(in, present == kArrayAligned, reads, in_place);
    } else {
      throw DecodeError("a pickled Python value has an unknown presence byte");
    }
    v.truth = v.obj == Py_True;
    if (PyList_Check(v.obj) || PyTuple_Check(v.obj))
      elements += static_cast<std::size_t>(Py_SIZE(v.obj));
  }
  // A list or tuple may be an expanded output: its elements get addresses as children
  // (py_values.h), as the UDF's own output would.
  block.children.resize(elements);
  std::size_t next = 0;
  for (PyValue& v : block.rows) {
    if (v.obj == nullptr || !(PyList_Check(v.obj) || PyTuple_Check(v.obj))) continue;
    PyObject** items = PySequence_Fast_ITEMS(v.obj);
    v.child_count = static_cast<std::size_t>(Py_SIZE(v.obj));
    v.children = block.children.data() + next;
    for (std::size_t i = 0; i < v.child_count; ++i) {
      PyValue& child = block.children[next++];
      child.obj = Py_NewRef(items[i]);
      child.truth = items[i] == Py_True;
    }
  }
}

rd::BlockRef decode_rows(std::string_view& in, std::size_t rows) {
  return decode_rows_with(in, rows, nullptr);
}

rd::BlockRef decode_rows_in_place(std::string_view& in, std::size_t rows, rd::InPlaceReads& reads) {
  return decode_rows_with(in, rows, &reads);
}

}  // namespace

rd::ErasedCodec python_value_codec() {
  rd::ErasedCodec c;
  c.encode_row = &encode_row<std::string>;
  c.write_row = &encode_row<ByteWriter>;
  c.decode_rows = &decode_rows;
  c.decode_rows_in_place = &decode_rows_in_place;
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
