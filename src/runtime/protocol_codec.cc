// Protocol bytes. See protocol_codec.h.
#include "runtime/protocol_codec.h"

#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "rayorch/detail/byte_order.h"

namespace rayorch::detail {
namespace {

class Writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(std::uint32_t v) { fixed(v); }
  void u64(std::uint64_t v) { fixed(v); }
  void i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
  void count(std::size_t n) {
    if (n > 0xFFFFFFFFu) throw ProtocolError("protocol: a vector or string is too long to encode");
    u32(static_cast<std::uint32_t>(n));
  }
  void str(const std::string& s) {
    count(s.size());
    out_ += s;
  }
  template <class T, class F>
  void vec(const std::vector<T>& v, F&& each) {
    count(v.size());
    for (const T& x : v) each(x);
  }
  void binding(const Binding& b) {
    u64(b.block);
    u32(b.row);
  }
  std::string take() { return std::move(out_); }

 private:
  template <class U>
  void fixed(U v) {
    char bytes[sizeof(U)];
    store_le(bytes, v);
    out_.append(static_cast<const char*>(bytes), sizeof(U));
  }
  std::string out_;
};

class Reader {
 public:
  Reader(const std::string& bytes, const char* what) : s_(bytes), what_(what) {}
  std::uint8_t u8() { return fixed<std::uint8_t>(); }
  std::uint32_t u32() { return fixed<std::uint32_t>(); }
  std::uint64_t u64() { return fixed<std::uint64_t>(); }
  std::int32_t i32() { return static_cast<std::int32_t>(u32()); }
  std::size_t count(std::size_t min_element_bytes) {
    const std::size_t n = u32();
    // Refuse counts the remaining bytes cannot hold before allocating for them.
    if (min_element_bytes > 0 && n > (s_.size() - pos_) / min_element_bytes) truncated();
    return n;
  }
  std::string str() {
    const std::size_t n = count(1);
    std::string v = s_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  template <class T, class F>
  std::vector<T> vec(std::size_t min_element_bytes, F&& each) {
    const std::size_t n = count(min_element_bytes);
    std::vector<T> v;
    v.reserve(n);
    for (std::size_t i = 0; i < n; ++i) v.push_back(each());
    return v;
  }
  Binding binding() {
    Binding b;
    b.block = u64();
    b.row = u32();
    return b;
  }
  void finish() const {
    if (pos_ != s_.size()) {
      throw ProtocolError(
          fmt::format("protocol: {} has {} trailing bytes", what_, s_.size() - pos_));
    }
  }

 private:
  [[noreturn]] void truncated() const {
    throw ProtocolError(
        fmt::format("protocol: {} is truncated at byte {} of {}", what_, pos_, s_.size()));
  }
  template <class U>
  U fixed() {
    if (s_.size() - pos_ < sizeof(U)) truncated();
    const U v = load_le<U>(s_.data() + pos_);
    pos_ += sizeof(U);
    return v;
  }
  const std::string& s_;
  const char* what_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string encode(const Invocation& v) {
  Writer w;
  w.u64(v.id);
  w.u64(v.input_batch);
  w.i32(v.call);
  w.vec(v.grains, [&](std::uint32_t g) { w.u32(g); });
  w.vec(v.generations, [&](std::uint32_t g) { w.u32(g); });
  w.vec(v.inputs, [&](const std::vector<Binding>& column) {
    w.vec(column, [&](const Binding& b) { w.binding(b); });
  });
  w.vec(v.outputs, [&](const OutputSlot& o) {
    w.u64(o.block);
    w.u64(o.child_block);
    w.u8(o.truth ? 1 : 0);
  });
  return w.take();
}

Invocation decode_invocation(const std::string& bytes) {
  Reader r(bytes, "an invocation");
  Invocation v;
  v.id = r.u64();
  v.input_batch = r.u64();
  v.call = r.i32();
  v.grains = r.vec<std::uint32_t>(4, [&] { return r.u32(); });
  v.generations = r.vec<std::uint32_t>(4, [&] { return r.u32(); });
  v.inputs = r.vec<std::vector<Binding>>(
      4, [&] { return r.vec<Binding>(12, [&] { return r.binding(); }); });
  v.outputs = r.vec<OutputSlot>(17, [&] {
    OutputSlot o;
    o.block = r.u64();
    o.child_block = r.u64();
    o.truth = r.u8() != 0;
    return o;
  });
  r.finish();
  return v;
}

std::string encode(const Report& v) {
  Writer w;
  w.u64(v.invocation);
  w.u64(v.input_batch);
  w.vec(v.failures, [&](const RowFailure& f) {
    w.u32(f.row);
    w.u8(static_cast<std::uint8_t>(f.kind));
    w.str(f.message);
  });
  w.vec(v.outputs, [&](const OutputReport& o) {
    w.vec(o.lengths, [&](std::uint32_t n) { w.u32(n); });
    w.vec(o.truth, [&](std::uint8_t t) { w.u8(t); });
  });
  w.str(v.contract_error);
  return w.take();
}

Report decode_report(const std::string& bytes) {
  Reader r(bytes, "a report");
  Report v;
  v.invocation = r.u64();
  v.input_batch = r.u64();
  v.failures = r.vec<RowFailure>(9, [&] {
    RowFailure f;
    f.row = r.u32();
    const std::uint8_t kind = r.u8();
    if (kind > static_cast<std::uint8_t>(RowKind::group_failure))
      throw ProtocolError(fmt::format("protocol: a report names failure kind {}", kind));
    f.kind = static_cast<RowKind>(kind);
    f.message = r.str();
    return f;
  });
  v.outputs = r.vec<OutputReport>(8, [&] {
    OutputReport o;
    o.lengths = r.vec<std::uint32_t>(4, [&] { return r.u32(); });
    o.truth = r.vec<std::uint8_t>(1, [&] { return r.u8(); });
    return o;
  });
  v.contract_error = r.str();
  r.finish();
  return v;
}

std::string encode(const StoreCommand& v) {
  Writer w;
  w.u8(static_cast<std::uint8_t>(v.kind));
  w.u64(v.block);
  w.i32(v.reduce);
  w.i32(v.value);
  w.vec(v.members, [&](const Binding& b) { w.binding(b); });
  return w.take();
}

StoreCommand decode_store_command(const std::string& bytes) {
  Reader r(bytes, "a store command");
  StoreCommand v;
  const std::uint8_t kind = r.u8();
  if (kind > static_cast<std::uint8_t>(StoreCommand::Kind::release))
    throw ProtocolError(fmt::format("protocol: unknown store command {}", kind));
  v.kind = static_cast<StoreCommand::Kind>(kind);
  v.block = r.u64();
  v.reduce = r.i32();
  v.value = r.i32();
  v.members = r.vec<Binding>(12, [&] { return r.binding(); });
  r.finish();
  return v;
}

}  // namespace rayorch::detail
