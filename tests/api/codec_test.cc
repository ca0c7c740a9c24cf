// Byte codecs (rayorch/codec.h): round-trips of every built-in, nested containers, a user
// specialisation, clear errors on truncated or malformed input, and the ByteWriter sink: its
// growth, and every built-in writing the same bytes into it as into a std::string.
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <rayorch/codec.h>
#include <rayorch/detail/erased_codec.h>

namespace {

namespace ro = rayorch;

struct Page {
  int number = 0;
  std::string text;
  friend bool operator==(const Page&, const Page&) = default;
};

enum class Color : std::uint8_t { red = 1, green = 7 };

// The same fields as Page, with a codec written as a template over the sink.
struct SinkPage {
  int number = 0;
  std::string text;
  friend bool operator==(const SinkPage&, const SinkPage&) = default;
};

struct NoCodec {};

}  // namespace

template <>
struct rayorch::Codec<Page> {
  static void encode(const Page& p, std::string& out) {
    Codec<int>::encode(p.number, out);
    Codec<std::string>::encode(p.text, out);
  }
  static Page decode(std::string_view& in) {
    Page p;
    p.number = Codec<int>::decode(in);
    p.text = Codec<std::string>::decode(in);
    return p;
  }
};

template <>
struct rayorch::Codec<SinkPage> {
  template <ByteSink S>
  static void encode(const SinkPage& p, S& out) {
    Codec<int>::encode(p.number, out);
    Codec<std::string>::encode(p.text, out);
  }
  static SinkPage decode(std::string_view& in) {
    SinkPage p;
    p.number = Codec<int>::decode(in);
    p.text = Codec<std::string>::decode(in);
    return p;
  }
};

namespace {

// Owns the memory a ByteWriter fills: a vector that grows by `step` bytes beyond what is
// asked (0: exactly), or refuses to grow past `limit` by returning too little.
struct VectorOwner {
  std::vector<char> bytes;
  std::size_t step = 0;
  std::size_t limit = SIZE_MAX;
  int grows = 0;
  std::size_t last_size = 0;

  static ro::ByteWriter::Buffer grow(void* self, std::size_t size, std::size_t need) {
    auto& o = *static_cast<VectorOwner*>(self);
    ++o.grows;
    o.last_size = size;
    if (need > o.limit) return {o.bytes.data(), o.bytes.size()};
    o.bytes.resize(need + o.step);  // keeps the first `size` bytes
    return {o.bytes.data(), o.bytes.size()};
  }
  ro::ByteWriter writer() { return ro::ByteWriter({bytes.data(), bytes.size()}, &grow, this); }
};

// The bytes Codec<T> writes into a ByteWriter (through encode_to, as the engine does).
template <class T>
std::string through_writer(const T& v) {
  VectorOwner owner;
  ro::ByteWriter w = owner.writer();
  ro::encode_to(v, w);
  return std::string(w.data(), w.size());
}

template <class T>
T round_trip(const T& v) {
  return ro::decode_value<T>(ro::encode_value(v));
}

static_assert(ro::has_codec<int>);
static_assert(ro::has_codec<std::vector<std::optional<std::string>>>);
static_assert(ro::has_codec<Page>);
static_assert(ro::has_codec<std::vector<Page>>);
static_assert(!ro::has_codec<NoCodec>);
static_assert(!ro::has_codec<std::vector<NoCodec>>);
static_assert(!ro::has_codec<std::pair<int, NoCodec>>);
// Built-ins and sink templates write into a ByteWriter; a std::string&-only codec does not
// (encode_to goes through a scratch string), but containers of it still do.
static_assert(ro::encodes_to<std::tuple<int, std::string, std::vector<double>>, ro::ByteWriter>);
static_assert(ro::encodes_to<SinkPage, ro::ByteWriter>);
static_assert(ro::has_codec<SinkPage>);
static_assert(!ro::encodes_to<Page, ro::ByteWriter>);
static_assert(ro::encodes_to<Page, std::string>);
static_assert(ro::encodes_to<std::vector<Page>, ro::ByteWriter>);
static_assert(!ro::ByteSink<std::vector<char>>);

TEST(Codec, ArithmeticRoundTrips) {
  EXPECT_EQ(round_trip(0), 0);
  EXPECT_EQ(round_trip(-123456789), -123456789);
  EXPECT_EQ(round_trip(std::numeric_limits<std::int64_t>::min()),
            std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(round_trip(std::numeric_limits<std::uint64_t>::max()),
            std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(round_trip(static_cast<std::int8_t>(-5)), -5);
  EXPECT_EQ(round_trip('x'), 'x');
  EXPECT_EQ(round_trip(true), true);
  EXPECT_EQ(round_trip(false), false);
  EXPECT_EQ(round_trip(3.25), 3.25);
  EXPECT_EQ(round_trip(-0.5f), -0.5f);
  EXPECT_EQ(round_trip(Color::green), Color::green);
}

TEST(Codec, IntegersAreLittleEndianFixedWidth) {
  EXPECT_EQ(ro::encode_value(std::uint32_t{0x01020304}), std::string("\x04\x03\x02\x01", 4));
  EXPECT_EQ(ro::encode_value(std::int16_t{-1}), std::string("\xff\xff", 2));
  EXPECT_EQ(ro::encode_value(std::string("ab")), std::string("\x02\0\0\0\0\0\0\0ab", 10));
}

TEST(Codec, ContainersAndNestingRoundTrip) {
  EXPECT_EQ(round_trip(std::string()), "");
  EXPECT_EQ(round_trip(std::string("with\0nul", 8)), std::string("with\0nul", 8));
  const std::vector<std::vector<int>> nested{{}, {1, 2, 3}, {-4}};
  EXPECT_EQ(round_trip(nested), nested);
  const std::optional<std::vector<std::string>> some{{"a", "", "ccc"}};
  EXPECT_EQ(round_trip(some), some);
  EXPECT_EQ(round_trip(std::optional<int>()), std::nullopt);
  const std::pair<std::string, std::vector<double>> p{"k", {1.5, 2.5}};
  EXPECT_EQ(round_trip(p), p);
  const std::tuple<int, std::string, std::optional<bool>, std::vector<Page>> t{
      7, "seven", true, {{1, "one"}, {2, "two"}}};
  EXPECT_EQ(round_trip(t), t);
  EXPECT_EQ(round_trip(std::tuple<>()), std::tuple<>());
}

TEST(Codec, GroupRoundTripsAndOwnsItsValues) {
  auto storage = std::make_shared<std::vector<std::string>>(std::vector<std::string>{"a", "bb"});
  const ro::Group<std::string> g({&(*storage)[0], &(*storage)[1]}, storage);
  std::string bytes = ro::encode_value(g);
  EXPECT_EQ(bytes, ro::encode_value(std::vector<std::string>{"a", "bb"}));
  ro::Group<std::string> back = ro::decode_value<ro::Group<std::string>>(bytes);
  bytes.assign(bytes.size(), 'x');  // the decoded Group does not point into the bytes
  storage.reset();
  EXPECT_EQ(back.to_vector(), (std::vector<std::string>{"a", "bb"}));
}

TEST(Codec, DecodeConsumesOnlyItsValue) {
  std::string bytes;
  ro::Codec<int>::encode(5, bytes);
  ro::Codec<std::string>::encode("rest", bytes);
  std::string_view in = bytes;
  EXPECT_EQ(ro::Codec<int>::decode(in), 5);
  EXPECT_EQ(ro::Codec<std::string>::decode(in), "rest");
  EXPECT_TRUE(in.empty());
}

TEST(Codec, TruncatedInputIsADecodeError) {
  const std::string full = ro::encode_value(
      std::tuple<int, std::string, std::vector<Page>>{1, "hello", {{2, "two"}, {3, "three"}}});
  for (std::size_t n = 0; n < full.size(); ++n) {
    using T = std::tuple<int, std::string, std::vector<Page>>;
    EXPECT_THROW(ro::decode_value<T>(std::string_view(full).substr(0, n)), ro::DecodeError)
        << "prefix of " << n << " bytes";
  }
  try {
    (void)ro::decode_value<std::uint64_t>(std::string("abc"));
    FAIL() << "no error";
  } catch (const ro::DecodeError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

TEST(Codec, MalformedInputIsADecodeError) {
  EXPECT_THROW(ro::decode_value<bool>(std::string("\x02", 1)), ro::DecodeError);
  // A length far beyond the bytes left is refused before allocating.
  std::string huge;
  ro::detail::put_le(std::uint64_t{1} << 60, huge);
  EXPECT_THROW(ro::decode_value<std::string>(huge), ro::DecodeError);
  EXPECT_THROW(ro::decode_value<std::vector<int>>(huge), ro::DecodeError);
  // Trailing bytes after a whole value.
  EXPECT_THROW(ro::decode_value<int>(ro::encode_value(std::int64_t{1})), ro::DecodeError);
  // DecodeError is a std::runtime_error.
  EXPECT_THROW(ro::decode_value<int>(std::string()), std::runtime_error);
}

TEST(ByteWriter, GrowsThroughItsOwnerKeepingTheBytesWritten) {
  VectorOwner owner;  // starts with no memory at all
  ro::ByteWriter w = owner.writer();
  std::string want;
  for (int i = 0; i < 20000; ++i) {
    const std::string piece = std::to_string(i);
    switch (i % 3) {
      case 0:
        w.append(piece.data(), piece.size());
        break;
      case 1:
        w.append(std::string_view(piece));
        break;
      default:
        w.push_back(piece.back());
        want += piece.back();
        continue;
    }
    want += piece;
  }
  w.append(nullptr, 0);  // nothing to write: no growth, no copy
  ASSERT_EQ(w.size(), want.size());
  EXPECT_EQ(std::string_view(w.data(), w.size()), want);
  // The owner grows exactly to what is asked here, so every write past the end grows once.
  EXPECT_GT(owner.grows, 1000);
  EXPECT_EQ(w.data(), owner.bytes.data());
}

TEST(ByteWriter, GrowsOnlyWhenTheBytesDoNotFit) {
  VectorOwner owner;
  owner.bytes.resize(8);
  owner.step = 100;
  ro::ByteWriter w = owner.writer();
  w.append("12345678", 8);  // fills the buffer exactly
  EXPECT_EQ(owner.grows, 0);
  w.push_back('9');
  EXPECT_EQ(owner.grows, 1);
  EXPECT_EQ(owner.last_size, 8u);  // the owner was told how many bytes to keep
  w.append(std::string(100, 'x'));
  EXPECT_EQ(owner.grows, 1);  // 109 of 109 bytes: still fits
  w.push_back('y');
  EXPECT_EQ(owner.grows, 2);
  EXPECT_EQ(std::string_view(w.data(), w.size()), "123456789" + std::string(100, 'x') + "y");
}

TEST(ByteWriter, AnOwnerThatGivesTooLittleRoomIsALengthError) {
  VectorOwner owner;
  owner.limit = 64;
  ro::ByteWriter w = owner.writer();
  w.append(std::string(64, 'a'));
  try {
    w.push_back('b');
    FAIL() << "no error";
  } catch (const std::length_error& e) {
    EXPECT_NE(std::string(e.what()).find("rayorch::ByteWriter"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("65 bytes"), std::string::npos) << e.what();
  }
  EXPECT_EQ(w.size(), 64u);                              // what was written stays
  ro::ByteWriter fixed({nullptr, 0}, nullptr, nullptr);  // no owner to grow it
  EXPECT_THROW(fixed.push_back('x'), std::length_error);
}

TEST(ByteWriter, AStringOnlyCodecIsEncodedIntoTheLentScratchString) {
  VectorOwner owner;
  std::string scratch;
  ro::ByteWriter w({nullptr, 0}, &VectorOwner::grow, &owner, &scratch);
  const Page big{1, std::string(100000, 'b')};
  ro::encode_to(big, w);
  EXPECT_EQ(scratch, ro::encode_value(big));  // it went through the lent string
  const std::size_t capacity = scratch.capacity();
  const Page small{2, "two"};
  ro::encode_to(small, w);
  EXPECT_EQ(scratch, ro::encode_value(small));
  EXPECT_EQ(scratch.capacity(), capacity);  // reused, not allocated again
  ro::encode_to(SinkPage{3, "three"}, w);   // a sink codec does not touch it
  EXPECT_EQ(scratch, ro::encode_value(small));
  EXPECT_EQ(std::string_view(w.data(), w.size()), ro::encode_value(big) + ro::encode_value(small) +
                                                      ro::encode_value(SinkPage{3, "three"}));
}

TEST(ByteWriter, EveryBuiltInWritesTheSameBytesAsIntoAString) {
  auto same = [](const auto& v) {
    const std::string want = ro::encode_value(v);
    EXPECT_EQ(through_writer(v), want);
    EXPECT_EQ(ro::decode_value<std::decay_t<decltype(v)>>(through_writer(v)), v);
  };
  same(std::int8_t{-5});
  same(std::uint8_t{200});
  same(std::int16_t{-300});
  same(std::uint16_t{60000});
  same(std::int32_t{-123456789});
  same(std::uint32_t{0x01020304});
  same(std::numeric_limits<std::int64_t>::min());
  same(std::numeric_limits<std::uint64_t>::max());
  same('x');
  same(true);
  same(false);
  same(-0.5f);
  same(3.25);
  same(Color::green);
  same(std::string());
  same(std::string("with\0nul", 8));
  same(std::string(300000, 'p'));  // past any small buffer
  same(std::vector<int>{1, -2, 3});
  same(std::vector<std::vector<std::string>>{{}, {"a", "bb"}, {std::string(5000, 'c')}});
  same(std::optional<std::string>("some"));
  same(std::optional<int>());
  same(std::pair<std::string, std::vector<double>>{"k", {1.5, 2.5}});
  same(std::tuple<>());
  same(std::tuple<int, std::string, std::optional<bool>>{7, "seven", true});
  // User codecs: a sink template writes directly, a std::string& one through a scratch
  // string; the bytes are the same either way, also inside built-in containers.
  same(SinkPage{3, "three"});
  same(Page{4, "four"});
  same(std::vector<Page>{{1, "one"}, {2, std::string(70000, 't')}});
  same(std::tuple<SinkPage, std::optional<Page>>{{5, "five"}, Page{6, "six"}});
  EXPECT_EQ(ro::encode_value(SinkPage{9, "nine"}), ro::encode_value(Page{9, "nine"}));
  auto storage = std::make_shared<std::vector<std::string>>(std::vector<std::string>{"a", "bb"});
  const ro::Group<std::string> g({&(*storage)[0], &(*storage)[1]}, storage);
  EXPECT_EQ(through_writer(g), ro::encode_value(g));
}

// One value and one row without a value, through an erased codec into both sinks.
template <class T>
void expect_erased_rows_match(const T& value) {
  const ro::detail::ErasedCodec codec = ro::detail::erased_codec<T>();
  std::string want;
  codec.encode_row(&value, want);
  codec.encode_row(nullptr, want);
  VectorOwner owner;
  ro::ByteWriter w = owner.writer();
  codec.write_row(&value, w);
  codec.write_row(nullptr, w);
  EXPECT_EQ(std::string_view(w.data(), w.size()), want);
  std::string_view in = want;
  auto block = codec.decode_rows(in, 2);
  EXPECT_TRUE(in.empty());
  ASSERT_EQ(block->size(), 2u);
  ASSERT_NE(block->at(0), nullptr);
  EXPECT_EQ(*static_cast<const T*>(block->at(0)), value);
  EXPECT_EQ(block->at(1), nullptr);
}

TEST(ByteWriter, ErasedRowsWriteTheSameBytesAsIntoAString) {
  expect_erased_rows_match(Page{8, std::string(100000, 'e')});      // through a scratch string
  expect_erased_rows_match(SinkPage{8, std::string(100000, 'e')});  // directly
  expect_erased_rows_match(std::vector<std::optional<std::string>>{"x", std::nullopt});
}

}  // namespace
