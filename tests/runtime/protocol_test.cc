// The worker protocol is plain data: every message survives a trip through bytes unchanged,
// malformed bytes are refused with a message that says what was wrong, and the engine
// releases every block once nothing needs it (value lifetime, DESIGN 6.2).
#include "support/runtime_harness.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

#include "runtime/protocol_codec.h"

namespace {

namespace ro = rayorch;
namespace rd = rayorch::detail;
using runtime_test::EngineRig;

rd::Invocation sample_invocation() {
  rd::Invocation v;
  v.id = 0x1122334455667788ull;
  v.input_batch = 7;
  v.call = 3;
  v.grains = {0, 5, 0xFFFFFFFFu};
  v.generations = {0, 2, 1};
  v.inputs = {{{rd::make_block_id(7, 0), 0}, {rd::make_block_id(7, 0), 5}, {1, 2}}, {}};
  v.outputs = {{rd::make_block_id(7, 9), rd::make_block_id(7, 10), false},
               {rd::make_block_id(7, 11), 0, true}};
  return v;
}

rd::Report sample_report() {
  rd::Report v;
  v.invocation = 42;
  v.input_batch = 7;
  v.failures = {{1, rd::RowKind::group_failure, "document is encrypted"},
                {2, rd::RowKind::record_failure, std::string("with\0nul", 8)}};
  v.outputs = {{{3, 0, 0}, {}}, {{}, {1, 0, 0}}};
  v.contract_error = "";
  return v;
}

TEST(Protocol, MessagesSurviveBytesUnchanged) {
  const rd::Invocation inv = sample_invocation();
  EXPECT_EQ(rd::decode_invocation(rd::encode(inv)), inv);
  const rd::Report rep = sample_report();
  EXPECT_EQ(rd::decode_report(rd::encode(rep)), rep);
  rd::StoreCommand c;
  c.kind = rd::StoreCommand::Kind::compose_group;
  c.block = rd::make_block_id(2, 4);
  c.reduce = 1;
  c.value = 0;
  c.members = {{rd::make_block_id(2, 1), 3}, {rd::make_block_id(2, 1), 4}};
  EXPECT_EQ(rd::decode_store_command(rd::encode(c)), c);
  rd::StoreCommand release;
  release.block = 99;
  EXPECT_EQ(rd::decode_store_command(rd::encode(release)), release);
}

TEST(Protocol, MalformedBytesAreRefused) {
  const std::string bytes = rd::encode(sample_report());
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    try {
      (void)rd::decode_report(bytes.substr(0, cut));
      ADD_FAILURE() << "a report cut at byte " << cut << " was accepted";
    } catch (const rd::ProtocolError& e) {
      EXPECT_NE(std::string(e.what()).find("a report is truncated"), std::string::npos) << e.what();
    }
  }
  try {
    (void)rd::decode_invocation(rd::encode(sample_invocation()) + "x");
    ADD_FAILURE() << "trailing bytes were accepted";
  } catch (const rd::ProtocolError& e) {
    EXPECT_STREQ(e.what(), "protocol: an invocation has 1 trailing bytes");
  }
  // A count that the remaining bytes cannot hold is refused before anything is allocated.
  std::string huge =
      rd::encode(sample_invocation()).substr(0, 20) + std::string("\xff\xff\xff\x7f");
  EXPECT_THROW((void)rd::decode_invocation(huge), rd::ProtocolError);
}

// ---- Value lifetime ---------------------------------------------------------------------

struct Frames {
  std::vector<std::vector<int>> run(ro::Column<int> n) {
    std::vector<std::vector<int>> out;
    for (int k : n) {
      out.emplace_back();
      for (int i = 0; i < k; ++i) out.back().push_back(i);
    }
    return out;
  }
};
struct Decode {
  std::vector<std::vector<char>> run(ro::Column<int> frame) {
    std::vector<std::vector<char>> out;
    for (int f : frame) out.emplace_back(1024, static_cast<char>(f));
    return out;
  }
};
struct Summarise {
  std::vector<int> run(ro::Column<std::vector<char>> payload) {
    std::vector<int> out;
    for (const auto& p : payload) out.push_back(p.empty() ? -1 : p[0]);
    return out;
  }
};
struct Sum {
  std::vector<int> run(ro::Column<ro::Group<int>> g) {
    std::vector<int> out;
    for (const auto& group : g) {
      int s = 0;
      for (int v : group) s += v;
      out.push_back(s);
    }
    return out;
  }
};

// Driving the engine by hand: each payload block is released as soon as its summary is
// committed, long before the input batch retires, and nothing is left once the root is
// delivered.
TEST(ValueLifetime, PayloadsAreReleasedAsSoonAsTheirConsumerCommits) {
  ro::Module<Frames> frames;
  ro::Module<Decode> decode = ro::Module<Decode>().batch_size(2);
  ro::Module<Summarise> summarise = ro::Module<Summarise>().batch_size(2);
  ro::Module<Sum> sum;
  auto program = ro::compile([&](ro::Port<int> n) {
    return sum(ro::F::reduce(summarise(decode(ro::F::expand(frames(n))))));
  });
  EngineRig rig(program, {6});
  rig.commit(rig.reserve(rig.call("Frames#0")), std::vector<std::vector<int>>{{0, 1, 2, 3, 4, 5}});
  const int dc = rig.call("Decode#1");
  const int sc = rig.call("Summarise#2");
  std::vector<rd::Invocation> decodes;
  for (int i = 0; i < 3; ++i) decodes.push_back(rig.reserve(dc));
  for (const auto& d : decodes) {
    std::vector<std::vector<char>> payloads;
    for (std::size_t r = 0; r < d.grains.size(); ++r)
      payloads.emplace_back(1024, static_cast<char>(rig.input<int>(d, 0, r)));
    rig.commit(d, payloads);
  }
  auto payloads_live = [&] {
    int n = 0;
    for (const auto& d : decodes) {
      try {
        (void)rig.store().block(d.outputs[0].block);
        ++n;
      } catch (const std::logic_error&) {
      }
    }
    return n;
  };
  EXPECT_EQ(payloads_live(), 3);
  // Each payload block goes as soon as the summaries of its rows commit.
  for (int i = 0; i < 3; ++i) {
    auto s = rig.reserve(sc);
    const rd::BlockId payload_block = s.inputs[0][0].block;
    rig.commit(s, std::vector<int>{1, 1});
    EXPECT_EQ(payloads_live(), 2 - i) << "after summary RPC " << i;
    EXPECT_THROW((void)rig.store().block(payload_block), std::logic_error);
  }
  // What is left: the composed group of summaries (the summaries' own blocks are released).
  EXPECT_EQ(rig.store().live_blocks(), 1u);
  rig.commit(rig.reserve(rig.call("Sum#3")), std::vector<int>{6});
  ASSERT_EQ(rig.finished(), std::vector<std::uint32_t>{0});
  EXPECT_EQ(*static_cast<const int*>(rig.value(program.plan()->outputs[0], 0)), 6);
  rig->root_delivered(0);
  rig.advance();
  EXPECT_EQ(rig->live_blocks(), 0u);
  EXPECT_EQ(rig.store().live_blocks(), 0u);
}

}  // namespace
