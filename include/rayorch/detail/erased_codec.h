// Type-erased codecs: how the values of one Call cross a process boundary (DESIGN 6.2). The
// typed front end records one per input and output type of a Call when every such type has
// a rayorch::Codec (codec.h); a process-isolated pool encodes the rows it sends and decodes
// the rows it receives through them, without knowing the types.
//
// Column format: per row a presence byte (0: the row holds no value, e.g. a failed row;
// 1: a value follows) then the value's Codec bytes.
//
// A row is written to a std::string or to a ByteWriter (codec.h), e.g. straight into memory
// shared with a worker process; a Codec<T> that only takes std::string& is encoded into a
// scratch string and appended to the ByteWriter (one extra copy of that value).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "rayorch/codec.h"
#include "rayorch/detail/erased.h"
#include "rayorch/detail/in_place_reads.h"
#include "rayorch/detail/udf_traits.h"

namespace rayorch::detail {

/// A block of decoded values; rows without a value (failed rows) have no address.
template <class T>
class DecodedBlock final : public Block {
 public:
  explicit DecodedBlock(std::vector<std::optional<T>> v) : values(std::move(v)) {}
  const void* at(std::size_t row) const override { return values[row] ? &*values[row] : nullptr; }
  std::size_t size() const override { return values.size(); }
  std::vector<std::optional<T>> values;
};

/// Encodes and decodes the rows of one type.
struct ErasedCodec {
  /// Appends one row: `value` (null: no value) as presence byte plus bytes.
  void (*encode_row)(const void* value, std::string& out) = nullptr;
  /// The same bytes, written to a ByteWriter.
  void (*write_row)(const void* value, ByteWriter& out) = nullptr;
  /// Reads `rows` rows from the front of `in` into a new block; throws rayorch::DecodeError.
  BlockRef (*decode_rows)(std::string_view& in, std::size_t rows) = nullptr;
  /// Optional: the same, leaving large values in the frame where `reads` allows it (the
  /// worker of a process-isolated pool; in_place_reads.h states what the codec must then do).
  BlockRef (*decode_rows_in_place)(std::string_view& in, std::size_t rows,
                                   InPlaceReads& reads) = nullptr;
};

/// The codecs of one Call. `available` is false when some type has no codec; such a Call
/// cannot run in an isolated pool (the typed Module::isolation() rejects it at compile
/// time; this flag lets the pool report it for options set any other way).
struct CallCodecs {
  bool available = false;
  std::string missing;                ///< a type without a codec, when not available
  std::vector<ErasedCodec> inputs;    ///< per Column input
  std::vector<ErasedCodec> outputs;   ///< per output
  std::vector<ErasedCodec> elements;  ///< per output: its list elements (expand), if a list
};

template <class T, ByteSink S>
void encode_erased_row(const void* value, S& out) {
  if (value == nullptr) {
    out.push_back('\0');
    return;
  }
  out.push_back('\1');
  encode_to(*static_cast<const T*>(value), out);
}

template <class T>
ErasedCodec erased_codec() {
  ErasedCodec c;
  c.encode_row = &encode_erased_row<T, std::string>;
  c.write_row = &encode_erased_row<T, ByteWriter>;
  c.decode_rows = [](std::string_view& in, std::size_t rows) -> BlockRef {
    std::vector<std::optional<T>> values;
    values.reserve(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      if (Codec<bool>::decode(in))
        values.emplace_back(Codec<T>::decode(in));
      else
        values.emplace_back(std::nullopt);
    }
    return std::make_shared<DecodedBlock<T>>(std::move(values));
  };
  return c;
}

template <class T>
struct ErasedListElement {
  static ErasedCodec get() { return {}; }
};
template <class E, class A>
struct ErasedListElement<std::vector<E, A>> {
  static ErasedCodec get() {
    if constexpr (has_codec<E>) {
      return erased_codec<E>();
    } else {
      return {};
    }
  }
};

/// The codecs of a Call with Column inputs `In...` and output values `Out...`, or
/// `available == false` naming the first type without a codec.
template <class... In, class... Out>
CallCodecs call_codecs(std::tuple<In...>*, std::tuple<Out...>*) {
  CallCodecs c;
  if constexpr ((has_codec<In> && ...) && (has_codec<Out> && ...)) {
    c.available = true;
    c.inputs = {erased_codec<In>()...};
    c.outputs = {erased_codec<Out>()...};
    c.elements = {ErasedListElement<Out>::get()...};
  } else {
    std::vector<std::pair<bool, std::string>> all{{has_codec<In>, type_name<In>()}...,
                                                  {has_codec<Out>, type_name<Out>()}...};
    for (const auto& [ok, name] : all) {
      if (!ok) {
        c.missing = name;
        break;
      }
    }
  }
  return c;
}

}  // namespace rayorch::detail
