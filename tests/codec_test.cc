// Byte codecs (rayorch/codec.h): round-trips of every built-in, nested containers, a user
// specialisation, and clear errors on truncated or malformed input.
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <rayorch/codec.h>

namespace {

namespace ro = rayorch;

struct Page {
  int number = 0;
  std::string text;
  friend bool operator==(const Page&, const Page&) = default;
};

enum class Color : std::uint8_t { red = 1, green = 7 };

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

namespace {

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

}  // namespace
