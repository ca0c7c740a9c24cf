// Randomized differential testing: the generator of random, well-formed programs. A Builder
// records a program twice over, as ro::Ports while ro::compile traces it and as an Ir for the
// interpreter; this header holds its Ports, Modules and Calls, generator_domains.h its
// Domains and structural operators, generator_shapes.h the shapes drawn from a stream of
// their own (programs without Calls, gathers of gathers).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/random_pipeline/ir.h"

namespace random_pipeline {

// Knobs of the generator.
struct GenConfig {
  // Faults that abort the run: poison under abort or retry policies, lost without budget.
  bool allow_abort = false;
  // Modules with a timeout, and Grains that hang past it on their first attempt.
  bool timeouts = true;
  int max_depth = 3;
  int max_calls = 14;
  int max_expands = 4;
  // Per mille of Modules that run in worker processes, chosen by hashing `isolation_salt`
  // with the Module's index (no draw from the structure stream, so the programs of cases
  // without isolation stay as they are).
  int isolated_permille = 0;
  u64 isolation_salt = 0;
  // Every Module shares one co-located pool (DESIGN 5.12); each keeps its own batch size.
  bool colocated = false;
  // Every Module takes the first one's pool options without declaring a group, and the
  // program is compiled with CompileOptions::auto_colocate: the chains the compiler finds
  // share pools.
  bool colocate_auto = false;
  // Per mille of programs without any Call (their outputs are source Ports), and of programs
  // with a reduce of an inner reduce's groups (when they have one below the root). Both are
  // drawn from a stream of their own (Builder::rx_) and the gathers are appended after
  // everything else, so every other program, and every other part of these, stays as the
  // structure stream alone makes it.
  int callless_permille = 15;
  int nested_gather_permille = 500;
};

// Records a random program twice over: as ro::Ports while ro::compile traces it, and as an Ir
// for the interpreter. The structure comes from `structure_seed`, the schedule options of each
// Module from `schedule_seed`.
class Builder {
 public:
  Builder(u64 structure_seed, u64 schedule_seed, GenConfig config, std::shared_ptr<Runtime> rt)
      : rs_(structure_seed),
        rsched_(schedule_seed),
        rx_(mix(structure_seed ^ 0x6e65737465646cULL)),
        rxsched_(mix(schedule_seed ^ 0x6e65737465646cULL)),
        config_(config),
        rt_(std::move(rt)) {}

  const Ir& ir() const { return ir_; }

  template <std::size_t NOut>
  std::array<ro::Port<i64>, NOut> build(std::vector<ro::Port<i64>> sources) {
    ir_.sources = static_cast<int>(sources.size());
    i64s_.assign(1, {});
    bools_.assign(1, {});
    for (auto& p : sources) i64s_[0].push_back(add_i64(0, p));
    std::array<int, NOut> ids{};
    if (rx_.chance(config_.callless_permille)) {
      for (int& id : ids) id = callless_output();
      return ports_of(ids, std::make_index_sequence<NOut>{});
    }
    gen_domain(0, 0);
    // A final combining Call makes the outputs depend on more of the program.
    if (rs_.chance(500) && calls_ < config_.max_calls + 2) {
      if (i64s_[0].size() >= 2 && rs_.chance(500)) {
        call_op2(0, pick_i64(0), pick_i64(0));
      } else {
        call_op3(0, pick_i64(0), pick_i64(0), pick_i64(0));
      }
    }
    for (std::size_t k = 0; k < NOut; ++k) ids[k] = pick_output(k);
    gen_nested_gathers(ids.data(), NOut);
    return ports_of(ids, std::make_index_sequence<NOut>{});
  }

 private:
  template <std::size_t NOut, std::size_t... I>
  std::array<ro::Port<i64>, NOut> ports_of(const std::array<int, NOut>& ids,
                                           std::index_sequence<I...>) {
    return {p64_.at(ids[I])...};
  }
  int pick_output(std::size_t k) {
    const auto& root = i64s_[0];
    int id;
    if (k == 0 && rs_.chance(650)) {
      id = root.back();
    } else if (k > 0 && rs_.chance(40) && !ir_.outputs.empty()) {
      id = ir_.outputs.back();  // the same Port listed twice
    } else {
      id = rs_.pick(root);
    }
    ir_.outputs.push_back(id);
    return id;
  }

  // ---- Ports
  int new_port(PortType t, int domain) {
    ir_.ports.push_back(IrPort{t, domain});
    return static_cast<int>(ir_.ports.size()) - 1;
  }
  int add_i64(int domain, ro::Port<i64> p) {
    const int id = new_port(PortType::integer, domain);
    p64_.emplace(id, std::move(p));
    return id;
  }
  int add_bool(int domain, ro::Port<bool> p) {
    const int id = new_port(PortType::boolean, domain);
    pbool_.emplace(id, std::move(p));
    bools_[domain].push_back(id);
    return id;
  }
  int add_list(int domain, ro::Port<std::vector<i64>> p) {
    const int id = new_port(PortType::list, domain);
    plist_.emplace(id, std::move(p));
    return id;
  }
  int add_group(int domain, ro::Port<ro::Group<i64>> p) {
    const int id = new_port(PortType::group, domain);
    pgroup_.emplace(id, std::move(p));
    return id;
  }
  int add_nested(int domain, ro::Port<ro::Group<ro::Group<i64>>> p) {
    const int id = new_port(PortType::nested, domain);
    pnested_.emplace(id, std::move(p));
    return id;
  }
  // Recent Ports are preferred so that chains grow deep.
  int pick_i64(int domain) {
    const auto& v = i64s_[domain];
    if (rs_.chance(450)) return v.back();
    return rs_.pick(v);
  }

  // ---- Modules and Calls
  template <class U>
  std::vector<std::pair<std::unique_ptr<ro::Module<U>>, int>>& modules_of() {
    static_assert(sizeof(U) > 0);
    return std::get<std::vector<std::pair<std::unique_ptr<ro::Module<U>>, int>>>(modules_);
  }

  // A Module of UDF `U`: an existing one (its Calls then share one pool) or a new one.
  template <class U>
  std::pair<ro::Module<U>*, int> module(Udf kind) {
    auto& mods = modules_of<U>();
    if (!mods.empty() && rs_.chance(250)) {
      auto& [m, index] = mods[rs_.next() % mods.size()];
      return {m.get(), index};
    }
    IrModule im;
    im.udf = kind;
    const int policy = rs_.weighted({30, 20, 20, 30});
    switch (policy) {
      case 0:
        im.recovery = ro::RecoveryPolicy::abort();
        break;
      case 1:
        im.recovery = ro::RecoveryPolicy::retry_batch(rs_.range(1, 2));
        break;
      case 2:
        im.recovery = ro::RecoveryPolicy::retry_tail(rs_.range(1, 2));
        break;
      default:
        im.recovery = ro::RecoveryPolicy::isolate_tail();
        break;
    }
    im.infra_retries = rs_.range(1, 2);
    if (config_.allow_abort && rs_.chance(150)) im.infra_retries = 0;
    if (config_.timeouts && rs_.chance(25)) {
      // A generous replay budget absorbs timeouts that a loaded machine causes on its own.
      im.timeout_ms = 10;
      im.infra_retries = 8;
    }
    // Schedule options from the other stream.
    const int r = rsched_.weighted({50, 30, 15, 5});
    im.replicas = r == 0 ? 1 : r == 1 ? rsched_.range(2, 3) : r == 2 ? rsched_.range(4, 6) : 8;
    const int b = rsched_.weighted({25, 25, 25, 15, 10});
    im.batch_size = b == 0   ? 1
                    : b == 1 ? rsched_.range(2, 3)
                    : b == 2 ? rsched_.range(4, 8)
                    : b == 3 ? rsched_.range(9, 32)
                             : 64;
    im.reservation = rsched_.chance(300) ? ro::Reservation::parent_bound : ro::Reservation::elastic;
    im.isolated = config_.isolated_permille > 0 &&
                  static_cast<int>(mix(config_.isolation_salt + ir_.modules.size()) % 1000) <
                      config_.isolated_permille;
    if (im.isolated) im.timeout_ms = 0;  // a hang cannot be scripted once only in a process
    if ((config_.colocated || config_.colocate_auto) && !ir_.modules.empty()) {
      // the first Module's pool options
      const IrModule& lead = ir_.modules.front();
      std::tie(im.replicas, im.reservation, im.isolated, im.timeout_ms) =
          std::tie(lead.replicas, lead.reservation, lead.isolated, lead.timeout_ms);
      if (im.timeout_ms > 0) im.infra_retries = 8;  // as for a timeout of its own: load causes them
    }
    auto m = std::make_unique<ro::Module<U>>(rt_);
    if (config_.colocated) m->colocate("all");
    if (im.isolated) m->isolation(ro::Isolation::process);
    m->replicas(im.replicas)
        .batch_size(im.batch_size)
        .reservation(im.reservation)
        .recovery(im.recovery)
        .infra_retries(im.infra_retries)
        .timeout(std::chrono::milliseconds(im.timeout_ms));
    ir_.modules.push_back(im);
    const int index = static_cast<int>(ir_.modules.size()) - 1;
    mods.emplace_back(std::move(m), index);
    return {mods.back().first.get(), index};
  }

  CallSpec make_spec(int module, int domain, bool rows_can_fail) {
    const IrModule& m = ir_.modules[module];
    CallSpec s;
    s.seed = rs_.next();
    s.call = calls_++;
    s.rt = rt_;
    s.max_len = rs_.pick(std::vector<int>{0, 1, 2, 2, 3, 3, 4, 6});
    // Now and then a wide expansion below the root: batches full of one parent's siblings.
    if (ir_.domains[domain].depth == 0 && rs_.chance(30)) s.max_len = 40;
    s.true_permille = rs_.pick(std::vector<int>{0, 300, 600, 800, 1000});
    Faults& f = s.faults;
    if (rows_can_fail) {
      if (rs_.chance(350)) f.record = rs_.range(20, 250);
      // A GroupFailure below the root taints its siblings: keep it rarer there.
      if (rs_.chance(domain == 0 ? 300 : 150)) f.group = rs_.range(20, 200);
    }
    const auto kind = m.recovery.kind();
    if (kind != ro::RecoveryPolicy::Kind::abort && rs_.chance(400)) f.flaky = rs_.range(30, 300);
    if (kind == ro::RecoveryPolicy::Kind::isolate_tail && rs_.chance(350)) {
      f.poison = rs_.range(20, 200);
    }
    if (config_.allow_abort && kind != ro::RecoveryPolicy::Kind::isolate_tail && rs_.chance(100)) {
      f.poison = rs_.range(10, 100);
    }
    if ((m.infra_retries >= 1 || config_.allow_abort) && rs_.chance(300)) {
      f.lost = rs_.range(20, 200);
    }
    if (m.timeout_ms > 0 && rs_.chance(700)) f.hang = rs_.range(20, 150);
    if (m.isolated) {
      f.flaky = 0;
      f.lost = 0;
      f.hang = 0;
    }
    return s;
  }

  IrOp& record_call(int module, const CallSpec& spec, std::vector<int> in) {
    IrOp op;
    op.kind = OpKind::call;
    op.module = module;
    op.spec = spec;
    op.in = std::move(in);
    ir_.ops.push_back(std::move(op));
    return ir_.ops.back();
  }

  template <class U>
  int call_single(Udf kind, int domain, std::vector<int> in) {
    auto [m, index] = module<U>(kind);
    CallSpec spec = make_spec(index, domain, kind != Udf::op1_plain);
    ro::Port<i64> out = [&] {
      if constexpr (std::is_same_v<U, Op2>) {
        return (*m)(p64_.at(in[0]), p64_.at(in[1]), spec);
      } else if constexpr (std::is_same_v<U, Op3>) {
        return (*m)(p64_.at(in[0]), p64_.at(in[1]), p64_.at(in[2]), spec);
      } else {
        return (*m)(p64_.at(in[0]), spec);
      }
    }();
    record_call(index, spec, in);
    const int id = add_i64(domain, out);
    ir_.ops.back().out = {id};
    i64s_[domain].push_back(id);
    return id;
  }
  int call_op2(int domain, int a, int b) { return call_single<Op2>(Udf::op2, domain, {a, b}); }
  int call_op3(int domain, int a, int b, int c) {
    return call_single<Op3>(Udf::op3, domain, {a, b, c});
  }

  void gen_call(int domain) {
    const int k = rs_.weighted({25, 10, 20, 10, 10, 10});
    switch (k) {
      case 0:
        call_single<Op1>(Udf::op1, domain, {pick_i64(domain)});
        break;
      case 1:
        call_single<Op1Plain>(Udf::op1_plain, domain, {pick_i64(domain)});
        break;
      case 2:
        call_op2(domain, pick_i64(domain), pick_i64(domain));
        break;
      case 3:
        call_op3(domain, pick_i64(domain), pick_i64(domain), pick_i64(domain));
        break;
      case 4: {
        auto [m, index] = module<Split2>(Udf::split2);
        const int a = pick_i64(domain);
        CallSpec spec = make_spec(index, domain, true);
        auto [x, y] = (*m)(p64_.at(a), spec);
        record_call(index, spec, {a});
        const int ix = add_i64(domain, x);
        const int iy = add_i64(domain, y);
        ir_.ops.back().out = {ix, iy};
        i64s_[domain].push_back(ix);
        i64s_[domain].push_back(iy);
        break;
      }
      default: {
        auto [m, index] = module<Op2x2>(Udf::op2x2);
        const int a = pick_i64(domain);
        const int b = pick_i64(domain);
        CallSpec spec = make_spec(index, domain, true);
        auto [x, y] = (*m)(p64_.at(a), p64_.at(b), spec);
        record_call(index, spec, {a, b});
        const int ix = add_i64(domain, x);
        const int iy = add_i64(domain, y);
        ir_.ops.back().out = {ix, iy};
        i64s_[domain].push_back(iy);
        i64s_[domain].push_back(ix);
        break;
      }
    }
  }

  // A bool Port in `domain`: reused, broadcast from an ancestor, or a new mask Call.
  int mask_port(int domain) {
    if (!bools_[domain].empty() && rs_.chance(300)) return rs_.pick(bools_[domain]);
    if (domain != 0 && rs_.chance(300)) {
      const int a = ancestor(domain);
      if (!bools_[a].empty()) {
        const int src = rs_.pick(bools_[a]);
        const int like = pick_i64(domain);
        ro::Port<bool> p = ro::F::broadcast(pbool_.at(src), p64_.at(like));
        const int id = new_port(PortType::boolean, domain);
        pbool_.emplace(id, p);
        bools_[domain].push_back(id);
        record_simple(OpKind::broadcast, {src, like}, {id});
        return id;
      }
    }
    const int src = pick_i64(domain);
    const bool plain = rs_.chance(400);
    ro::Port<bool> p = [&] {
      if (plain) {
        auto [m, index] = module<MaskPlain>(Udf::mask_plain);
        CallSpec spec = make_spec(index, domain, false);
        record_call(index, spec, {src});
        return (*m)(p64_.at(src), spec);
      }
      auto [m, index] = module<MaskRow>(Udf::mask_row);
      CallSpec spec = make_spec(index, domain, true);
      record_call(index, spec, {src});
      return (*m)(p64_.at(src), spec);
    }();
    IrOp& op = ir_.ops.back();
    const int id = add_bool(domain, p);
    op.out = {id};
    return id;
  }

  void record_simple(OpKind kind, std::vector<int> in, std::vector<int> out, int members = -1) {
    IrOp op;
    op.kind = kind;
    op.in = std::move(in);
    op.out = std::move(out);
    op.members = members;
    ir_.ops.push_back(std::move(op));
  }

  int ancestor(int domain) {
    std::vector<int> chain;
    for (int d = ir_.domains[domain].parent; d >= 0; d = ir_.domains[d].parent) chain.push_back(d);
    return rs_.pick(chain);
  }

  // Domains and the structural operators (support/random_pipeline/generator_domains.h).
  void gen_filter(int domain);
  void gen_broadcast(int domain);
  int new_domain(int parent);
  void gen_expand(int domain, int depth);
  int members_port(int child);
  // `value`: the (first) values Port, or -1 to pick one.
  template <class M>
  void reduce_with(int child, int parent, int kind, const M& members, int mid, int value = -1);
  // A reduce whose membership leaves out the children that raised a GroupFailure (DESIGN 5:
  // the GroupFailure still decides the parent's gathers). A new Call with GroupFailures on
  // some children, a MaskExclude over the same input that is false exactly there, and a
  // membership filtered by that mask; the values are the failing Call's output.
  void gen_excluding_reduce(int child, int parent);
  void gen_reduce(int child, int parent);
  void fold1(int domain, int group);
  void gen_domain(int domain, int depth);

  // The shapes drawn from the stream of their own (support/random_pipeline/generator_shapes.h).
  // While one is made, StreamSwap puts their streams in place of the Builder's, so the helpers
  // above draw from them and the structure stream is left where it was.
  struct StreamSwap;
  // An output of a program without Calls: a source Port.
  int callless_output();
  // With the configured chance, gathers of gathers appended to the program, each folded and
  // brought up to the root, where they may replace some of `outputs` (n of them).
  void gen_nested_gathers(int* outputs, std::size_t n);
  // F::reduce of the group Port `group` (an inner reduce's result, in a Domain below the
  // root) into the Domain above, folded by FoldNested and brought up to the root; returns the
  // root Port.
  int nested_gather(int group);

  Rng rs_;
  Rng rsched_;
  Rng rx_;       // the new shapes' structure
  Rng rxsched_;  // ... and their Modules' schedule options
  GenConfig config_;
  std::shared_ptr<Runtime> rt_;
  Ir ir_;
  int calls_ = 0;
  int expands_ = 0;
  std::vector<std::vector<int>> i64s_;   // per Domain
  std::vector<std::vector<int>> bools_;  // per Domain
  std::map<int, ro::Port<i64>> p64_;
  std::map<int, ro::Port<bool>> pbool_;
  std::map<int, ro::Port<std::vector<i64>>> plist_;
  std::map<int, ro::Port<ro::Group<i64>>> pgroup_;
  std::map<int, ro::Port<ro::Group<ro::Group<i64>>>> pnested_;
  std::tuple<std::vector<std::pair<std::unique_ptr<ro::Module<Op1>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<Op1Plain>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<Op2>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<Op3>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<Split2>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<Op2x2>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<List1>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<List2>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<MaskRow>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<MaskPlain>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<MaskExclude>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<Fold1>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<Fold2>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<FoldNested>>, int>>>
      modules_;
};

}  // namespace random_pipeline
