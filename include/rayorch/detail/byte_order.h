// Fixed-width little-endian integers: the one byte order of every format the library writes
// (value codecs, rayorch/codec.h; the worker protocol, runtime/protocol_codec.h; the
// process-pool frames and the Ray backend's task bytes). Each format keeps its own framing
// and bounds checks; they share only these two conversions, so their integers cannot drift
// apart.
#pragma once

#include <cstddef>
#include <type_traits>

namespace rayorch::detail {

/// Writes `v` as sizeof(U) little-endian bytes to `out`, which holds at least that many.
template <class U>
constexpr void store_le(char* out, U v) noexcept {
  static_assert(std::is_unsigned_v<U>);
  for (std::size_t i = 0; i < sizeof(U); ++i) {
    out[i] = static_cast<char>(static_cast<unsigned char>(v >> (8 * i)));
  }
}

/// Reads sizeof(U) little-endian bytes from `in`, which holds at least that many.
template <class U>
constexpr U load_le(const char* in) noexcept {
  static_assert(std::is_unsigned_v<U>);
  U v = 0;
  for (std::size_t i = 0; i < sizeof(U); ++i) {
    v |= static_cast<U>(static_cast<U>(static_cast<unsigned char>(in[i])) << (8 * i));
  }
  return v;
}

}  // namespace rayorch::detail
