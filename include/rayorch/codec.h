// Byte codecs for values: rayorch::Codec<T> turns a value into bytes and back. The run
// journal (rayorch/journal.h) uses them to key source rows and to record root outputs, and
// process-isolated pools (docs/ISOLATION.md) move values between processes through them.
//
// Format: integers and floating-point values are fixed-width little-endian (bool is one
// byte, 0 or 1); strings and containers are a u64 length followed by their bytes or
// elements; std::optional is a presence byte then the value; pairs and tuples are their
// members in order. The format is the same on every platform this library builds on.
//
// A user type gets a codec by specialising rayorch::Codec. Its encode appends to a byte sink
// `out`; the simplest form takes a std::string:
//
//   template <> struct rayorch::Codec<Page> {
//     static void encode(const Page& p, std::string& out) {
//       Codec<int>::encode(p.number, out);
//       Codec<std::string>::encode(p.text, out);
//     }
//     static Page decode(std::string_view& in) {
//       Page p;
//       p.number = Codec<int>::decode(in);
//       p.text = Codec<std::string>::decode(in);
//       return p;
//     }
//   };
//
// That works everywhere codecs are used. Written as a template over the sink instead, the
// same encode also writes straight into memory that is not a std::string (a ByteWriter):
//
//     template <rayorch::ByteSink Out>
//     static void encode(const Page& p, Out& out) { ...the same body... }
//
// which is what a large value (a page image, a video frame) wants: a process-isolated pool
// encodes it directly into the memory it shares with the worker, so the value is copied
// once by its encoder and once by its decoder. A codec that only takes std::string& is
// encoded into a scratch string first and then appended, one extra copy of the value. The
// body of a sink template may use only ByteSink's members (append of bytes or of a
// string_view, push_back, size) and other codecs' encode: one that uses more of std::string
// (reserve, +=, ...) fails to compile where the engine instantiates it with a ByteWriter, so
// such a codec should take std::string& instead. To encode a member whose codec may be
// either form, call rayorch::encode_to(member, out).
//
// decode consumes the bytes it reads from the front of `in`; on truncated or malformed
// input it throws rayorch::DecodeError.
#pragma once

#include <bit>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "rayorch/column.h"
#include "rayorch/detail/byte_order.h"

namespace rayorch {

/// Thrown by Codec<T>::decode on truncated or malformed bytes.
class DecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Where encoders write: anything with these members. std::string and ByteWriter are sinks.
template <class S>
concept ByteSink = requires(S& s, const char* bytes, std::size_t n, std::string_view view, char c) {
  s.append(bytes, n);
  s.append(view);
  s.push_back(c);
  { s.size() } -> std::convertible_to<std::size_t>;
};

/// A byte sink over memory that its owner provides and grows: the owner hands it a buffer,
/// and a function to call when the bytes do not fit. It is how an encoder writes into memory
/// other than a std::string (e.g. memory shared with another process) without a virtual
/// call per write. Not thread-safe; owned and driven by one thread at a time. The buffer
/// belongs to the owner; the writer only fills it. The owner may also lend a scratch string,
/// reused by encode_to for codecs that only write to a std::string, so such a value costs a
/// copy but no new allocation.
class ByteWriter {
 public:
  /// A writable region: `data` holds `capacity` bytes.
  struct Buffer {
    char* data = nullptr;
    std::size_t capacity = 0;
  };
  /// Called when `need` bytes in all (more than the capacity) are to be written; the first
  /// `size` bytes written so far must be at the front of the returned buffer, whose
  /// capacity must be at least `need`. It throws when it cannot grow (the exception leaves
  /// the encoder; what was written is then the owner's to discard).
  using GrowFn = Buffer (*)(void* owner, std::size_t size, std::size_t need);

  ByteWriter(Buffer buffer, GrowFn grow, void* owner, std::string* scratch = nullptr) noexcept
      : data_(buffer.data),
        capacity_(buffer.capacity),
        grow_(grow),
        owner_(owner),
        scratch_(scratch) {}
  ByteWriter(const ByteWriter&) = delete;
  ByteWriter& operator=(const ByteWriter&) = delete;

  void append(const char* bytes, std::size_t n) {
    if (n > capacity_ - size_) reserve_more(n);
    if (n > 0) std::memcpy(data_ + size_, bytes, n);
    size_ += n;
  }
  void append(std::string_view bytes) { append(bytes.data(), bytes.size()); }
  void push_back(char c) {
    if (size_ == capacity_) reserve_more(1);
    data_[size_++] = c;
  }
  /// Makes room for `n` more bytes now, so that writing them moves nothing.
  void reserve(std::size_t n) {
    if (n > capacity_ - size_) reserve_more(n);
  }
  /// Bytes written.
  std::size_t size() const noexcept { return size_; }
  /// The bytes written (valid until the next write, which may move them).
  const char* data() const noexcept { return data_; }
  /// The owner's scratch string (null: none); encode_to uses it.
  std::string* scratch() const noexcept { return scratch_; }

 private:
  void reserve_more(std::size_t n) {
    if (n > SIZE_MAX - size_) throw std::length_error("rayorch::ByteWriter: size overflow");
    const std::size_t need = size_ + n;
    const Buffer b = grow_ != nullptr ? grow_(owner_, size_, need) : Buffer{};
    if (b.data == nullptr || b.capacity < need) {
      throw std::length_error("rayorch::ByteWriter: its owner gave no room for " +
                              std::to_string(need) + " bytes");
    }
    data_ = b.data;
    capacity_ = b.capacity;
  }

  char* data_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
  GrowFn grow_ = nullptr;
  void* owner_ = nullptr;
  std::string* scratch_ = nullptr;
};

static_assert(ByteSink<std::string> && ByteSink<ByteWriter>);

/// Encodes and decodes a T; specialise it for your own types. The primary template has no
/// members: has_codec<T> is false for a type without a specialisation.
template <class T, class Enable = void>
struct Codec;

/// True when Codec<T> can encode and decode T (encode taking at least a std::string).
template <class T>
concept has_codec = requires(const T& v, std::string& out, std::string_view& in) {
  Codec<T>::encode(v, out);
  { Codec<T>::decode(in) } -> std::convertible_to<T>;
};

/// True when Codec<T>::encode writes straight into sink S (a template over the sink, or a
/// codec written for S itself).
template <class T, class S>
concept encodes_to = has_codec<T> && requires(const T& v, S& out) {
  Codec<T>::encode(v, out);
};

/// Appends the encoding of `v` to `out`: directly when Codec<T> can write to S, else (a
/// codec that takes only std::string&) through a scratch string, one extra copy (the
/// ByteWriter's scratch() when it lends one, else a new string).
template <class T, ByteSink S>
requires has_codec<T>
void encode_to(const T& v, S& out) {
  if constexpr (encodes_to<T, S>) {
    Codec<T>::encode(v, out);
  } else {
    std::string local;
    std::string* scratch = &local;
    if constexpr (std::is_same_v<S, ByteWriter>) {
      // Not re-entered while in use: the codec below writes to a std::string, so whatever it
      // encodes never reaches this ByteWriter.
      if (out.scratch() != nullptr) scratch = out.scratch();
    }
    scratch->clear();
    Codec<T>::encode(v, *scratch);
    out.append(std::string_view(*scratch));
  }
}

namespace detail {

inline std::string_view take_bytes(std::string_view& in, std::size_t n, const char* what) {
  if (in.size() < n) {
    throw DecodeError(std::string("rayorch::Codec: truncated input while decoding ") + what +
                      ": needs " + std::to_string(n) + " bytes, " + std::to_string(in.size()) +
                      " left");
  }
  std::string_view bytes = in.substr(0, n);
  in.remove_prefix(n);
  return bytes;
}

template <class U, ByteSink S>
void put_le(U v, S& out) {
  static_assert(std::is_unsigned_v<U>);
  // One append per field, not one per byte: encoding sits on hot paths (the run journal,
  // the worker protocol).
  char bytes[sizeof(U)];
  store_le(bytes, v);
  out.append(static_cast<const char*>(bytes), sizeof(U));
}

template <class U>
U get_le(std::string_view& in, const char* what) {
  static_assert(std::is_unsigned_v<U>);
  return load_le<U>(take_bytes(in, sizeof(U), what).data());
}

template <std::size_t N>
using uint_of = std::conditional_t<
    N == 1, std::uint8_t,
    std::conditional_t<N == 2, std::uint16_t,
                       std::conditional_t<N == 4, std::uint32_t, std::uint64_t>>>;

/// A length prefix, checked against the bytes left (each element takes at least
/// `min_element_bytes`), so a corrupt length cannot make decode allocate without bound.
inline std::size_t get_length(std::string_view& in, std::size_t min_element_bytes) {
  const std::uint64_t n = get_le<std::uint64_t>(in, "a length");
  if (min_element_bytes > 0 && n > in.size() / min_element_bytes) {
    throw DecodeError("rayorch::Codec: bad length " + std::to_string(n) + " with only " +
                      std::to_string(in.size()) + " bytes left");
  }
  return static_cast<std::size_t>(n);
}

}  // namespace detail

/// Integers (fixed-width little-endian, two's complement) and enums (as their underlying
/// type).
template <class T>
struct Codec<
    T, std::enable_if_t<(std::is_integral_v<T> && !std::is_same_v<T, bool>) || std::is_enum_v<T>>> {
  using U = detail::uint_of<sizeof(T)>;
  template <ByteSink S>
  static void encode(const T& v, S& out) {
    if constexpr (std::is_enum_v<T>) {
      detail::put_le(static_cast<U>(static_cast<std::underlying_type_t<T>>(v)), out);
    } else {
      detail::put_le(static_cast<U>(v), out);
    }
  }
  static T decode(std::string_view& in) {
    const U u = detail::get_le<U>(in, "an integer");
    if constexpr (std::is_enum_v<T>) {
      return static_cast<T>(static_cast<std::underlying_type_t<T>>(u));
    } else {
      return static_cast<T>(u);
    }
  }
};

/// bool: one byte, 0 or 1 (anything else is a DecodeError).
template <>
struct Codec<bool> {
  template <ByteSink S>
  static void encode(const bool& v, S& out) {
    out.push_back(v ? '\1' : '\0');
  }
  static bool decode(std::string_view& in) {
    const char c = detail::take_bytes(in, 1, "a bool")[0];
    if (c != '\0' && c != '\1') throw DecodeError("rayorch::Codec: a bool byte is not 0 or 1");
    return c == '\1';
  }
};

/// float and double: their IEEE-754 bits, little-endian.
template <class T>
struct Codec<T, std::enable_if_t<std::is_floating_point_v<T>>> {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "rayorch::Codec: unsupported floating type");
  using U = detail::uint_of<sizeof(T)>;
  template <ByteSink S>
  static void encode(const T& v, S& out) {
    detail::put_le(std::bit_cast<U>(v), out);
  }
  static T decode(std::string_view& in) {
    return std::bit_cast<T>(detail::get_le<U>(in, "a floating-point value"));
  }
};

/// std::string: u64 length, then its bytes.
template <>
struct Codec<std::string> {
  template <ByteSink S>
  static void encode(const std::string& v, S& out) {
    detail::put_le(static_cast<std::uint64_t>(v.size()), out);
    out.append(std::string_view(v));
  }
  static std::string decode(std::string_view& in) {
    const std::size_t n = detail::get_length(in, 1);
    return std::string(detail::take_bytes(in, n, "a string"));
  }
};

/// std::vector<T>: u64 count, then each element.
template <class T>
struct Codec<std::vector<T>, std::enable_if_t<has_codec<T>>> {
  template <ByteSink S>
  static void encode(const std::vector<T>& v, S& out) {
    detail::put_le(static_cast<std::uint64_t>(v.size()), out);
    for (const auto& x : v) encode_to(x, out);
  }
  static std::vector<T> decode(std::string_view& in) {
    // Every element encodes to at least one byte except empty tuples; bound by 1 anyway.
    const std::size_t n = detail::get_length(in, std::is_empty_v<T> ? 0 : 1);
    std::vector<T> v;
    v.reserve(n);
    for (std::size_t i = 0; i < n; ++i) v.push_back(Codec<T>::decode(in));
    return v;
  }
};

/// Group<T> (the result of F::reduce): encoded like a std::vector<T>; a decoded Group owns
/// its values.
template <class T>
struct Codec<Group<T>, std::enable_if_t<has_codec<T>>> {
  template <ByteSink S>
  static void encode(const Group<T>& v, S& out) {
    detail::put_le(static_cast<std::uint64_t>(v.size()), out);
    for (const auto& x : v) encode_to(x, out);
  }
  static Group<T> decode(std::string_view& in) {
    auto values = std::make_shared<const std::vector<T>>(Codec<std::vector<T>>::decode(in));
    std::vector<const void*> members;
    members.reserve(values->size());
    for (const T& x : *values) members.push_back(&x);
    return Group<T>(std::move(members), std::move(values));
  }
};

/// std::optional<T>: a presence byte, then the value when present.
template <class T>
struct Codec<std::optional<T>, std::enable_if_t<has_codec<T>>> {
  template <ByteSink S>
  static void encode(const std::optional<T>& v, S& out) {
    Codec<bool>::encode(v.has_value(), out);
    if (v) encode_to(*v, out);
  }
  static std::optional<T> decode(std::string_view& in) {
    if (!Codec<bool>::decode(in)) return std::nullopt;
    return Codec<T>::decode(in);
  }
};

/// std::pair<A, B>: first, then second.
template <class A, class B>
struct Codec<std::pair<A, B>, std::enable_if_t<has_codec<A> && has_codec<B>>> {
  template <ByteSink S>
  static void encode(const std::pair<A, B>& v, S& out) {
    encode_to(v.first, out);
    encode_to(v.second, out);
  }
  static std::pair<A, B> decode(std::string_view& in) {
    A a = Codec<A>::decode(in);
    B b = Codec<B>::decode(in);
    return {std::move(a), std::move(b)};
  }
};

/// std::tuple<T...>: each member in order.
template <class... T>
struct Codec<std::tuple<T...>, std::enable_if_t<(has_codec<T> && ...)>> {
  template <ByteSink S>
  static void encode(const std::tuple<T...>& v, S& out) {
    std::apply([&](const T&... x) { (encode_to(x, out), ...); }, v);
  }
  static std::tuple<T...> decode(std::string_view& in) {
    // Braced initialisation evaluates left to right.
    return std::tuple<T...>{Codec<T>::decode(in)...};
  }
};

/// Encodes `v` into a new string.
template <has_codec T>
std::string encode_value(const T& v) {
  std::string out;
  Codec<T>::encode(v, out);
  return out;
}

/// Decodes a whole string; trailing bytes are a DecodeError.
template <has_codec T>
T decode_value(std::string_view bytes) {
  T v = Codec<T>::decode(bytes);
  if (!bytes.empty()) {
    throw DecodeError("rayorch::Codec: " + std::to_string(bytes.size()) +
                      " trailing bytes after the value");
  }
  return v;
}

}  // namespace rayorch
