// Randomized differential testing: a generated program as the generator records it, for the
// reference interpreter and for a readable listing of a failing case.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "support/random_pipeline/udfs.h"
#include <fmt/format.h>

namespace random_pipeline {

// `nested`: a group of groups (ro::Group<ro::Group<i64>>), a reduce of a reduce.
enum class PortType { integer, boolean, list, group, nested };
enum class OpKind { call, expand, reduce, filter, broadcast };
enum class Udf {
  op1,
  op1_plain,
  op2,
  op3,
  split2,
  op2x2,
  list1,
  list2,
  mask_row,
  mask_plain,
  mask_exclude,
  fold1,
  fold2,
  fold_nested
};

inline const char* udf_name(Udf u) {
  switch (u) {
    case Udf::op1:
      return "Op1";
    case Udf::op1_plain:
      return "Op1Plain";
    case Udf::op2:
      return "Op2";
    case Udf::op3:
      return "Op3";
    case Udf::split2:
      return "Split2";
    case Udf::op2x2:
      return "Op2x2";
    case Udf::list1:
      return "List1";
    case Udf::list2:
      return "List2";
    case Udf::mask_row:
      return "MaskRow";
    case Udf::mask_plain:
      return "MaskPlain";
    case Udf::mask_exclude:
      return "MaskExclude";
    case Udf::fold1:
      return "Fold1";
    case Udf::fold2:
      return "Fold2";
    case Udf::fold_nested:
      return "FoldNested";
  }
  return "?";
}

struct IrPort {
  PortType type = PortType::integer;
  int domain = 0;
};

struct IrModule {
  Udf udf = Udf::op1;
  ro::RecoveryPolicy recovery;
  int infra_retries = 1;
  int timeout_ms = 0;
  // Runs in worker processes (Isolation::process): its Calls get only faults that are pure
  // functions of the Grain (record, group, poison), since a child process's copy of the
  // shared Runtime cannot remember which first-attempt faults already fired.
  bool isolated = false;
  // Schedule options (not part of the structure).
  int replicas = 1;
  int batch_size = 1;
  ro::Reservation reservation = ro::Reservation::elastic;
};

struct IrOp {
  OpKind kind = OpKind::call;
  int module = -1;  // calls
  CallSpec spec;    // calls
  std::vector<int> in;
  std::vector<int> out;
  int members = -1;  // reduce: explicit membership Port
  int domain = -1;   // expand: the child Domain it creates
};

struct IrDomain {
  int parent = -1;
  int depth = 0;
};

struct Ir {
  int sources = 1;
  std::vector<IrPort> ports;
  std::vector<IrOp> ops;
  std::vector<IrDomain> domains{IrDomain{}};
  std::vector<IrModule> modules;
  std::vector<int> outputs;

  // The structure only (no schedule options): equal for every compile of one case.
  std::string fingerprint() const {
    std::string s = fmt::format("sources {} outputs", sources);
    for (int o : outputs) s += fmt::format(" {}", o);
    for (const IrOp& op : ops) {
      s += fmt::format(";k{} m{} d{} mem{} in", static_cast<int>(op.kind), op.module, op.domain,
                       op.members);
      for (int i : op.in) s += fmt::format(" {}", i);
      s += " out";
      for (int o : op.out) s += fmt::format(" {}", o);
      if (op.kind == OpKind::call) {
        s += fmt::format(" seed {:x} f{},{},{},{},{},{} len{} mask{} excl {:x}:{}", op.spec.seed,
                         op.spec.faults.record, op.spec.faults.group, op.spec.faults.flaky,
                         op.spec.faults.poison, op.spec.faults.lost, op.spec.faults.hang,
                         op.spec.max_len, op.spec.true_permille, op.spec.exclude_seed,
                         op.spec.exclude_faults.group);
      }
    }
    for (const IrModule& m : modules) {
      s += fmt::format(";{} r{}:{} i{} t{}", udf_name(m.udf), static_cast<int>(m.recovery.kind()),
                       m.recovery.retries(), m.infra_retries, m.timeout_ms);
    }
    return s;
  }

  // A readable listing for failure reports.
  std::string describe() const {
    auto policy = [](const ro::RecoveryPolicy& p) -> std::string {
      switch (p.kind()) {
        case ro::RecoveryPolicy::Kind::abort:
          return "abort";
        case ro::RecoveryPolicy::Kind::retry_batch:
          return fmt::format("retry_batch({})", p.retries());
        case ro::RecoveryPolicy::Kind::retry_tail:
          return fmt::format("retry_tail({})", p.retries());
        case ro::RecoveryPolicy::Kind::isolate_tail:
          return "isolate_tail";
      }
      return "?";
    };
    std::string s;
    for (std::size_t m = 0; m < modules.size(); ++m) {
      const IrModule& mm = modules[m];
      s += fmt::format(
          "  module {} {}: replicas {} batch {} {} recovery {} infra {} timeout {}{}\n", m,
          udf_name(mm.udf), mm.replicas, mm.batch_size,
          mm.reservation == ro::Reservation::elastic ? "elastic" : "parent_bound",
          policy(mm.recovery), mm.infra_retries, mm.timeout_ms, mm.isolated ? " isolated" : "");
    }
    auto names = [&](const std::vector<int>& v) {
      std::string t;
      for (int p : v) t += fmt::format("{}x{}@d{}", t.empty() ? "" : " ", p, ports[p].domain);
      return t;
    };
    const char* kinds[] = {"call", "expand", "reduce", "filter", "broadcast"};
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const IrOp& op = ops[i];
      s += fmt::format("  op {} {}", i, kinds[static_cast<int>(op.kind)]);
      if (op.kind == OpKind::call) {
        s += fmt::format(" {} module {} c{} faults(rf {} gf {} flaky {} poison {} lost {} hang {})",
                         udf_name(modules[op.module].udf), op.module, op.spec.call,
                         op.spec.faults.record, op.spec.faults.group, op.spec.faults.flaky,
                         op.spec.faults.poison, op.spec.faults.lost, op.spec.faults.hang);
      }
      if (op.kind == OpKind::expand) s += fmt::format(" -> d{}", op.domain);
      if (op.members >= 0) s += fmt::format(" members x{}", op.members);
      s += fmt::format(" [{}] -> [{}]\n", names(op.in), names(op.out));
    }
    s += fmt::format("  outputs [{}]\n", names(outputs));
    return s;
  }
};

}  // namespace random_pipeline
