// Randomized differential testing: what generated programs hold of the shapes the generator
// draws from a stream of its own (support/random_pipeline/generator_shapes.h), as the
// reference interpreter evaluates them, so a test can show that its seeds reach each of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "support/random_pipeline/ir.h"
#include "support/random_pipeline/model.h"
#include <fmt/format.h>

namespace random_pipeline {

struct ShapeCensus {
  std::uint64_t programs = 0;
  std::uint64_t without_calls = 0;    // programs without any Call
  std::uint64_t nested_programs = 0;  // programs with a gather of gathers
  std::uint64_t nested_gathers = 0;   // reduces of an inner reduce's groups
  // Their groups, per parent (DESIGN 5.4 applied twice): PRESENT, PRESENT holding an empty
  // inner group, PRESENT with an inner group left out (DROPPED), SUPPRESSED, SUPPRESSED with
  // the child Expansion SUCCEEDED (by a failing inner group or membership, or a barrier),
  // DROPPED, and schedule-dependent (tainted).
  std::uint64_t present = 0;
  std::uint64_t with_empty_inner = 0;
  std::uint64_t with_left_out = 0;
  std::uint64_t suppressed = 0;
  std::uint64_t suppressed_by_member = 0;
  std::uint64_t dropped = 0;
  std::uint64_t tainted = 0;

  // Counts one program, after `model` has run it.
  void count(const Ir& ir, const Model& model) {
    ++programs;
    bool calls = false;
    std::uint64_t nested = 0;
    for (const IrOp& op : ir.ops) {
      calls = calls || op.kind == OpKind::call;
      if (op.kind != OpKind::reduce || ir.ports[op.out[0]].type != PortType::nested) continue;
      ++nested;
      const int members = op.members >= 0 ? op.members : op.in[0];
      const int child = ir.ports[op.in[0]].domain;
      const auto& groups = model.items[op.out[0]];
      for (std::size_t p = 0; p < groups.size(); ++p) {
        const Model::Item& g = groups[p];
        const Model::Expansion& x = model.expands[child][p];
        if (g.taint) {
          ++tainted;
        } else if (g.outcome == ro::Outcome::suppressed) {
          ++suppressed;
          if (x.state == 1) ++suppressed_by_member;
        } else if (g.outcome == ro::Outcome::dropped) {
          ++dropped;
        } else if (g.outcome == ro::Outcome::present) {
          ++present;
          bool empty = false;
          for (const auto& inner : g.nested) empty = empty || inner.empty();
          if (empty) ++with_empty_inner;
          bool left_out = false;
          for (std::uint32_t c : x.children)
            left_out = left_out || model.items[members][c].outcome == ro::Outcome::dropped;
          if (left_out) ++with_left_out;
        }
      }
    }
    if (!calls) ++without_calls;
    if (nested > 0) ++nested_programs;
    nested_gathers += nested;
  }

  std::string text() const {
    return fmt::format(
        "{} of {} programs without Calls, {} with {} gathers of gathers; their groups: {} "
        "present ({} holding an empty inner group, {} leaving one out), {} suppressed ({} over "
        "a succeeded expansion), {} dropped, {} schedule-dependent",
        without_calls, programs, nested_programs, nested_gathers, present, with_empty_inner,
        with_left_out, suppressed, suppressed_by_member, dropped, tainted);
  }
};

}  // namespace random_pipeline
