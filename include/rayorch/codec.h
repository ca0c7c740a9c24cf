// Byte codecs for values: rayorch::Codec<T> turns a value into bytes and back. The run
// journal (rayorch/journal.h) uses them to key source rows and to record root outputs.
//
// Format: integers and floating-point values are fixed-width little-endian (bool is one
// byte, 0 or 1); strings and containers are a u64 length followed by their bytes or
// elements; std::optional is a presence byte then the value; pairs and tuples are their
// members in order. The format is the same on every platform this library builds on.
//
// A user type gets a codec by specialising rayorch::Codec:
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

namespace rayorch {

/// Thrown by Codec<T>::decode on truncated or malformed bytes.
class DecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Encodes and decodes a T; specialise it for your own types. The primary template has no
/// members: has_codec<T> is false for a type without a specialisation.
template <class T, class Enable = void>
struct Codec;

/// True when Codec<T> can encode and decode T.
template <class T>
concept has_codec = requires(const T& v, std::string& out, std::string_view& in) {
  Codec<T>::encode(v, out);
  { Codec<T>::decode(in) } -> std::convertible_to<T>;
};

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

template <class U>
void put_le(U v, std::string& out) {
  static_assert(std::is_unsigned_v<U>);
  // One append per field, not one per byte: encoding sits on hot paths (the run journal,
  // the worker protocol).
  char bytes[sizeof(U)];
  for (std::size_t i = 0; i < sizeof(U); ++i) {
    bytes[i] = static_cast<char>(static_cast<unsigned char>(v >> (8 * i)));
  }
  out.append(bytes, sizeof(U));
}

template <class U>
U get_le(std::string_view& in, const char* what) {
  static_assert(std::is_unsigned_v<U>);
  const std::string_view b = take_bytes(in, sizeof(U), what);
  U v = 0;
  for (std::size_t i = 0; i < sizeof(U); ++i) {
    v |= static_cast<U>(static_cast<unsigned char>(b[i])) << (8 * i);
  }
  return v;
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
  static void encode(const T& v, std::string& out) {
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
  static void encode(const bool& v, std::string& out) { out.push_back(v ? '\1' : '\0'); }
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
  static void encode(const T& v, std::string& out) { detail::put_le(std::bit_cast<U>(v), out); }
  static T decode(std::string_view& in) {
    return std::bit_cast<T>(detail::get_le<U>(in, "a floating-point value"));
  }
};

/// std::string: u64 length, then its bytes.
template <>
struct Codec<std::string> {
  static void encode(const std::string& v, std::string& out) {
    detail::put_le(static_cast<std::uint64_t>(v.size()), out);
    out.append(v);
  }
  static std::string decode(std::string_view& in) {
    const std::size_t n = detail::get_length(in, 1);
    return std::string(detail::take_bytes(in, n, "a string"));
  }
};

/// std::vector<T>: u64 count, then each element.
template <class T>
struct Codec<std::vector<T>, std::enable_if_t<has_codec<T>>> {
  static void encode(const std::vector<T>& v, std::string& out) {
    detail::put_le(static_cast<std::uint64_t>(v.size()), out);
    for (const auto& x : v) Codec<T>::encode(x, out);
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
  static void encode(const Group<T>& v, std::string& out) {
    detail::put_le(static_cast<std::uint64_t>(v.size()), out);
    for (const auto& x : v) Codec<T>::encode(x, out);
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
  static void encode(const std::optional<T>& v, std::string& out) {
    Codec<bool>::encode(v.has_value(), out);
    if (v) Codec<T>::encode(*v, out);
  }
  static std::optional<T> decode(std::string_view& in) {
    if (!Codec<bool>::decode(in)) return std::nullopt;
    return Codec<T>::decode(in);
  }
};

/// std::pair<A, B>: first, then second.
template <class A, class B>
struct Codec<std::pair<A, B>, std::enable_if_t<has_codec<A> && has_codec<B>>> {
  static void encode(const std::pair<A, B>& v, std::string& out) {
    Codec<A>::encode(v.first, out);
    Codec<B>::encode(v.second, out);
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
  static void encode(const std::tuple<T...>& v, std::string& out) {
    std::apply([&](const T&... x) { (Codec<T>::encode(x, out), ...); }, v);
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
