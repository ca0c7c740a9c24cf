// Randomized differential testing: the UDFs of generated programs. Every output is a hash of
// the Call's seed and the Grain's inputs (support/random_pipeline/values.h).
#pragma once

#include <cstddef>
#include <memory>
#include <tuple>
#include <vector>

#include "support/random_pipeline/values.h"

namespace random_pipeline {

// The base of every UDF: its constructor takes the case's Runtime and waits out a random
// start-up delay (Runtime::start_up), as a model that loads would.
struct Starts {
  explicit Starts(const std::shared_ptr<Runtime>& rt) { rt->start_up(); }
};

struct Op1 : Starts {
  using Starts::Starts;
  std::vector<ro::Row<i64>> run(ro::Column<i64> a, const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i]}));
    rpc_prologue(s, hs);
    std::vector<ro::Row<i64>> out;
    for (u64 h : hs) out.push_back(make_row<i64>(s, h, [&] { return out_value(h, 0); }));
    return out;
  }
};

// Plain results (no ro::Row): the UDF cannot fail a row, only throw.
struct Op1Plain : Starts {
  using Starts::Starts;
  std::vector<i64> run(ro::Column<i64> a, const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i]}));
    rpc_prologue(s, hs);
    std::vector<i64> out;
    for (u64 h : hs) out.push_back(out_value(h, 0));
    return out;
  }
};

struct Op2 : Starts {
  using Starts::Starts;
  std::vector<ro::Row<i64>> run(ro::Column<i64> a, ro::Column<i64> b, const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i], b[i]}));
    rpc_prologue(s, hs);
    std::vector<ro::Row<i64>> out;
    for (u64 h : hs) out.push_back(make_row<i64>(s, h, [&] { return out_value(h, 0); }));
    return out;
  }
};

struct Op3 : Starts {
  using Starts::Starts;
  std::vector<ro::Row<i64>> run(ro::Column<i64> a, ro::Column<i64> b, ro::Column<i64> c,
                                const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i)
      hs.push_back(hash_values(s.seed, {a[i], b[i], c[i]}));
    rpc_prologue(s, hs);
    std::vector<ro::Row<i64>> out;
    for (u64 h : hs) out.push_back(make_row<i64>(s, h, [&] { return out_value(h, 0); }));
    return out;
  }
};

// One input, two outputs.
struct Split2 : Starts {
  using Starts::Starts;
  std::tuple<std::vector<ro::Row<i64>>, std::vector<ro::Row<i64>>> run(ro::Column<i64> a,
                                                                       const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i]}));
    rpc_prologue(s, hs);
    std::tuple<std::vector<ro::Row<i64>>, std::vector<ro::Row<i64>>> out;
    for (u64 h : hs) {
      std::get<0>(out).push_back(make_multi_row<i64>(s, h, 0, 2, out_value(h, 0)));
      std::get<1>(out).push_back(make_multi_row<i64>(s, h, 1, 2, out_value(h, 1)));
    }
    return out;
  }
};

// Two inputs, two outputs.
struct Op2x2 : Starts {
  using Starts::Starts;
  std::tuple<std::vector<ro::Row<i64>>, std::vector<ro::Row<i64>>> run(ro::Column<i64> a,
                                                                       ro::Column<i64> b,
                                                                       const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i], b[i]}));
    rpc_prologue(s, hs);
    std::tuple<std::vector<ro::Row<i64>>, std::vector<ro::Row<i64>>> out;
    for (u64 h : hs) {
      std::get<0>(out).push_back(make_multi_row<i64>(s, h, 0, 2, out_value(h, 0)));
      std::get<1>(out).push_back(make_multi_row<i64>(s, h, 1, 2, out_value(h, 1)));
    }
    return out;
  }
};

inline std::vector<i64> make_list(const CallSpec& s, u64 h, int list) {
  std::vector<i64> v(list_length(s, h));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = list_element(h, list, k);
  return v;
}

// One list output, for F::expand.
struct List1 : Starts {
  using Starts::Starts;
  std::vector<ro::Row<std::vector<i64>>> run(ro::Column<i64> a, const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i]}));
    rpc_prologue(s, hs);
    std::vector<ro::Row<std::vector<i64>>> out;
    for (u64 h : hs) {
      out.push_back(make_row<std::vector<i64>>(s, h, [&] { return make_list(s, h, 0); }));
    }
    return out;
  }
};

// Two lists of equal length (for F::expand_aligned) plus a scalar that stays in the parent
// Domain.
struct List2 : Starts {
  using Starts::Starts;
  using result = std::tuple<std::vector<ro::Row<std::vector<i64>>>,
                            std::vector<ro::Row<std::vector<i64>>>, std::vector<ro::Row<i64>>>;
  result run(ro::Column<i64> a, const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i]}));
    rpc_prologue(s, hs);
    result out;
    for (u64 h : hs) {
      std::get<0>(out).push_back(make_multi_row(s, h, 0, 3, make_list(s, h, 0)));
      std::get<1>(out).push_back(make_multi_row(s, h, 1, 3, make_list(s, h, 1)));
      std::get<2>(out).push_back(make_multi_row<i64>(s, h, 2, 3, out_value(h, 2)));
    }
    return out;
  }
};

struct MaskRow : Starts {
  using Starts::Starts;
  std::vector<ro::Row<bool>> run(ro::Column<i64> a, const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i]}));
    rpc_prologue(s, hs);
    std::vector<ro::Row<bool>> out;
    for (u64 h : hs) out.push_back(make_row<bool>(s, h, [&] { return mask_value(s, h); }));
    return out;
  }
};

// std::vector<bool> results take the library's packed-bool path.
struct MaskPlain : Starts {
  using Starts::Starts;
  std::vector<bool> run(ro::Column<i64> a, const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i]}));
    rpc_prologue(s, hs);
    std::vector<bool> out;
    for (u64 h : hs) out.push_back(mask_value(s, h));
    return out;
  }
};

// A membership mask that leaves out exactly the children on which another Call (same input,
// CallSpec::exclude_seed/exclude_faults) raises a GroupFailure: false there, true elsewhere.
inline bool excluded(const CallSpec& s, i64 input) {
  return classify(s.exclude_faults, hash_values(s.exclude_seed, {input})).group;
}
struct MaskExclude : Starts {
  using Starts::Starts;
  std::vector<ro::Row<bool>> run(ro::Column<i64> a, const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i]}));
    rpc_prologue(s, hs);
    std::vector<ro::Row<bool>> out;
    for (std::size_t i = 0; i < a.size(); ++i)
      out.push_back(make_row<bool>(s, hs[i], [&] { return !excluded(s, a[i]); }));
    return out;
  }
};

// Brings a reduced group back to one int64, order-sensitively.
struct Fold1 : Starts {
  using Starts::Starts;
  std::vector<ro::Row<i64>> run(ro::Column<ro::Group<i64>> g, const CallSpec& s) {
    std::vector<u64> hs;
    for (const auto& group : g) hs.push_back(hash_group(s.seed, group));
    rpc_prologue(s, hs);
    std::vector<ro::Row<i64>> out;
    for (u64 h : hs) out.push_back(make_row<i64>(s, h, [&] { return out_value(h, 0); }));
    return out;
  }
};

struct Fold2 : Starts {
  using Starts::Starts;
  std::vector<ro::Row<i64>> run(ro::Column<ro::Group<i64>> a, ro::Column<ro::Group<i64>> b,
                                const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i)
      hs.push_back(hash_group(hash_group(s.seed, a[i]), b[i]));
    rpc_prologue(s, hs);
    std::vector<ro::Row<i64>> out;
    for (u64 h : hs) out.push_back(make_row<i64>(s, h, [&] { return out_value(h, 0); }));
    return out;
  }
};

// Brings a gathered group of groups (F::reduce of an F::reduce, two expand levels up) back
// to one int64, order-sensitively at both levels.
struct FoldNested : Starts {
  using Starts::Starts;
  std::vector<ro::Row<i64>> run(ro::Column<ro::Group<ro::Group<i64>>> g, const CallSpec& s) {
    std::vector<u64> hs;
    for (const auto& groups : g) hs.push_back(hash_nested(s.seed, groups));
    rpc_prologue(s, hs);
    std::vector<ro::Row<i64>> out;
    for (u64 h : hs) out.push_back(make_row<i64>(s, h, [&] { return out_value(h, 0); }));
    return out;
  }
};

}  // namespace random_pipeline
