// Process-isolated actors (DESIGN 6.3, docs/ISOLATION.md): values cross through their
// codecs. Values of every shape match the SyncExecutor, large payloads cross both ways
// through the shared arena, a codec written as a template over the sink writes values
// straight into the memory shared with the worker, both ways; a codec that takes only
// std::string& still works (what a worker's failure costs is in process_isolation_test.cc).
// Not part of the sanitizer subsets: fork and sanitizers do not mix.
#include <cctype>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/isolation_testing.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace ro = rayorch;
using isolation_testing::Poison;
using isolation_testing::quiet;

namespace {

// Values of every shape cross: strings, lists that are expanded, groups, masks.
struct Words {
  std::vector<std::vector<std::string>> run(ro::Column<std::string> s) {
    std::vector<std::vector<std::string>> out;
    for (const std::string& w : s) {
      std::vector<std::string> parts;
      for (char c : w) parts.emplace_back(1, c);
      out.push_back(std::move(parts));
    }
    return out;
  }
};
struct Upper {
  std::vector<std::string> run(ro::Column<std::string> s) {
    std::vector<std::string> out;
    for (std::string w : s) {
      for (char& c : w) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      out.push_back(std::move(w));
    }
    return out;
  }
};
struct NotSeven {
  std::vector<bool> run(ro::Column<std::string> s) {
    std::vector<bool> out;
    for (const std::string& w : s) out.push_back(w != "7");
    return out;
  }
};
struct Join {
  std::vector<std::string> run(ro::Column<ro::Group<std::string>> g) {
    std::vector<std::string> out;
    for (const auto& group : g) {
      std::string s;
      for (const std::string& w : group) s += w + ".";
      out.push_back(s);
    }
    return out;
  }
};

auto shapes_program(ro::Isolation iso) {
  auto poison = ro::Module<Poison>("none", -1, "").replicas(3).batch_size(3).isolation(iso);
  auto words = ro::Module<Words>().replicas(2).batch_size(2).isolation(iso);
  ro::Module<Upper> upper;
  auto keep = ro::Module<NotSeven>().isolation(iso);
  auto join = ro::Module<Join>().replicas(2).isolation(iso);
  return ro::compile([&](ro::Port<int> x) {
    auto parts = ro::F::expand(words(poison(x)));
    auto kept = ro::F::filter(parts, keep(parts));
    return join(ro::F::reduce(upper(kept)));
  });
}

}  // namespace

TEST(ProcessIsolation, ValuesOfEveryShapeCrossAndMatchTheSyncExecutor) {
  std::vector<int> in;
  for (int i = 0; i < 60; ++i) in.push_back(i * 7);
  ro::testing::SyncExecutor sync(shapes_program(ro::Isolation::threads));
  auto want = sync.run(in);
  ro::Executor ex(shapes_program(ro::Isolation::process));
  auto got = ex.run(in, quiet());
  ASSERT_EQ(got.outputs.size(), want.outputs.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    ASSERT_TRUE(got.outputs[i].ok()) << got.outputs[i].issue().cause;
    EXPECT_EQ(got.outputs[i].value(), want.outputs[i].value()) << i;
  }
  EXPECT_EQ(got.outputs[1].value(), "V.2.1.");  // 7 * 3 = 21; no "7" to filter
}

namespace {

struct Reverse {
  std::vector<std::string> run(ro::Column<std::string> x) {
    std::vector<std::string> out;
    for (std::string s : x) out.emplace_back(s.rbegin(), s.rend());
    return out;
  }
};

}  // namespace

TEST(ProcessIsolation, LargePayloadsCrossBothWaysThroughTheSharedArena) {
  // Frames cross through the memory shared with the worker, which grows to the largest one;
  // small frames between large ones fit in it.
  std::vector<std::string> in;
  for (std::size_t size : {std::size_t{10}, std::size_t{100} << 10, std::size_t{3} << 20,
                           std::size_t{1} << 20, std::size_t{7}, std::size_t{5} << 20}) {
    std::string s(size, '\0');
    for (std::size_t i = 0; i < size; ++i) s[i] = static_cast<char>('a' + (i * 7 + size) % 26);
    in.push_back(std::move(s));
  }
  auto reverse = ro::Module<Reverse>().isolation(ro::Isolation::process);
  auto program = ro::compile([&](ro::Port<std::string> x) { return reverse(x); });
  ro::Executor ex(program);
  for (int round = 0; round < 2; ++round) {
    auto r = ex.run(in, quiet());
    ASSERT_EQ(r.outputs.size(), in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
      EXPECT_EQ(r.outputs[i].value(), std::string(in[i].rbegin(), in[i].rend())) << i;
    }
  }
}

namespace {

// Whether `p` lies in the memory file an executor shares with a worker (by its mapping's
// name in /proc/self/maps).
bool in_worker_arena(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    std::istringstream fields(line);
    std::uintptr_t low = 0, high = 0;
    char dash = 0;
    fields >> std::hex >> low >> dash >> high;
    if (address >= low && address < high) {
      return line.find("memfd:rayorch-worker-arena") != std::string::npos;
    }
  }
  return false;
}

// A value whose codec, a template over the sink, records how it was encoded: whether it was
// handed a ByteWriter (not a std::string), and whether the bytes it wrote lie in the memory
// shared with the worker. The decoded value carries both; the UDF copies what its input
// carried into its output, so the executor sees how each side encoded.
struct Probe {
  std::string blob;
  bool input_had_writer = false;  // how the executor encoded the input (copied by the UDF)
  bool input_in_arena = false;
  bool had_writer = false;  // how this value was encoded, as decoded
  bool in_arena = false;
};

}  // namespace

template <>
struct rayorch::Codec<Probe> {
  template <ByteSink S>
  static void encode(const Probe& p, S& out) {
    Codec<std::string>::encode(p.blob, out);
    Codec<bool>::encode(p.input_had_writer, out);
    Codec<bool>::encode(p.input_in_arena, out);
    bool writer = false;
    bool arena = false;
    if constexpr (std::is_same_v<S, ByteWriter>) {
      writer = true;
      arena = in_worker_arena(out.data() + out.size() - 1);  // the last byte written
    }
    Codec<bool>::encode(writer, out);
    Codec<bool>::encode(arena, out);
  }
  static Probe decode(std::string_view& in) {
    Probe p;
    p.blob = Codec<std::string>::decode(in);
    p.input_had_writer = Codec<bool>::decode(in);
    p.input_in_arena = Codec<bool>::decode(in);
    p.had_writer = Codec<bool>::decode(in);
    p.in_arena = Codec<bool>::decode(in);
    return p;
  }
};

namespace {

// A value whose codec takes only std::string&; it records whether it was handed an empty
// string (the scratch string the engine encodes it into, not the frame itself).
struct StringOnly {
  std::string blob;
  bool input_into_scratch = false;  // how the executor encoded the input (copied by the UDF)
  bool into_scratch = false;        // how this value was encoded, as decoded
};

}  // namespace

template <>
struct rayorch::Codec<StringOnly> {
  static void encode(const StringOnly& v, std::string& out) {
    const bool scratch = out.empty();
    Codec<std::string>::encode(v.blob, out);
    Codec<bool>::encode(v.input_into_scratch, out);
    Codec<bool>::encode(scratch, out);
  }
  static StringOnly decode(std::string_view& in) {
    StringOnly v;
    v.blob = Codec<std::string>::decode(in);
    v.input_into_scratch = Codec<bool>::decode(in);
    v.into_scratch = Codec<bool>::decode(in);
    return v;
  }
};

namespace {

static_assert(ro::encodes_to<Probe, ro::ByteWriter>);
static_assert(!ro::encodes_to<StringOnly, ro::ByteWriter>);

struct ProbeEcho {
  std::vector<Probe> run(ro::Column<Probe> x) {
    std::vector<Probe> out;
    for (const Probe& p : x) {
      Probe q;
      q.blob = std::string(p.blob.rbegin(), p.blob.rend());
      q.input_had_writer = p.had_writer;
      q.input_in_arena = p.in_arena;
      out.push_back(std::move(q));
    }
    return out;
  }
};

struct StringOnlyEcho {
  std::vector<StringOnly> run(ro::Column<StringOnly> x) {
    std::vector<StringOnly> out;
    for (const StringOnly& v : x) {
      StringOnly w;
      w.blob = std::string(v.blob.rbegin(), v.blob.rend());
      w.input_into_scratch = v.into_scratch;
      out.push_back(std::move(w));
    }
    return out;
  }
};

std::string blob_of(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 11 + n) % 26);
  return s;
}

}  // namespace

TEST(ProcessIsolation, ASinkCodecWritesValuesStraightIntoTheSharedMemoryBothWays) {
  // One row per RPC, so each frame holds one value: every one, large or small, is encoded
  // into a ByteWriter whose bytes are the memory shared with the worker.
  const std::vector<std::size_t> sizes{std::size_t{1} << 20, 100, std::size_t{3} << 20,
                                       std::size_t{200} << 10};
  std::vector<Probe> in;
  for (std::size_t n : sizes) in.push_back(Probe{blob_of(n)});
  auto echo = ro::Module<ProbeEcho>().batch_size(1).isolation(ro::Isolation::process);
  auto program = ro::compile([&](ro::Port<Probe> x) { return echo(x); });
  ro::Executor ex(program);
  auto r = ex.run(in, quiet());
  ASSERT_EQ(r.outputs.size(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    ASSERT_TRUE(r.outputs[i].ok()) << r.outputs[i].issue().cause;
    const Probe& p = r.outputs[i].value();
    EXPECT_EQ(p.blob, std::string(in[i].blob.rbegin(), in[i].blob.rend())) << i;
    EXPECT_TRUE(p.input_had_writer) << i;  // the executor encoded the task into a ByteWriter
    EXPECT_TRUE(p.had_writer) << i;        // the worker encoded its reply into one
    EXPECT_TRUE(p.input_in_arena) << i;    // ... writing into the shared memory
    EXPECT_TRUE(p.in_arena) << i;
  }
  // On threads nothing is encoded at all.
  auto local = ro::Module<ProbeEcho>().batch_size(1);
  ro::Executor threads(ro::compile([&](ro::Port<Probe> x) { return local(x); }));
  auto t = threads.run(in, quiet());
  ASSERT_TRUE(t.outputs[0].ok());
  EXPECT_FALSE(t.outputs[0].value().input_had_writer);
  EXPECT_FALSE(t.outputs[0].value().had_writer);
}

TEST(ProcessIsolation, AStringOnlyCodecStillCrossesThroughAScratchString) {
  std::vector<StringOnly> in;
  for (std::size_t n : {std::size_t{10}, std::size_t{100} << 10, std::size_t{3} << 20})
    in.push_back(StringOnly{blob_of(n)});
  auto echo = ro::Module<StringOnlyEcho>().batch_size(2).isolation(ro::Isolation::process);
  auto program = ro::compile([&](ro::Port<StringOnly> x) { return echo(x); });
  ro::Executor ex(program);
  for (int round = 0; round < 2; ++round) {
    auto r = ex.run(in, quiet());
    ASSERT_EQ(r.outputs.size(), in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
      ASSERT_TRUE(r.outputs[i].ok()) << r.outputs[i].issue().cause;
      const StringOnly& v = r.outputs[i].value();
      EXPECT_EQ(v.blob, std::string(in[i].blob.rbegin(), in[i].blob.rend())) << i;
      EXPECT_TRUE(v.input_into_scratch) << i;
      EXPECT_TRUE(v.into_scratch) << i;
    }
  }
}
