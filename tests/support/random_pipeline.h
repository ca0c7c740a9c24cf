// A generator of random, well-formed RayOrch programs plus a reference interpreter for them.
// The parts, each in support/random_pipeline/: random.h (hashing, the seeded generator),
// faults.h and values.h (what each Grain does and produces), udfs.h (the UDFs), ir.h (the
// program as recorded), generator.h, generator_domains.h and generator_shapes.h (the
// Builder), model.h, model_calls.h and model_gathers.h (the reference interpreter), census.h
// (what programs hold of the shapes drawn apart, as the interpreter sees them); case.h,
// case_checks.h, case_runs.h and observed.h (one case run on every executor and checked,
// for tests/execution/randomized_test.cc).
//
// A case is built from one 64-bit seed. The structure of the program (which operators, which
// Domains, which faults) comes from one stream of that seed; the schedule (replicas, batch
// sizes, reservation, input batching, delays) from others, so the same program can be
// compiled and run under many schedules. Every run is checked against the reference
// interpreter (`Model`), and every local run against the SyncExecutor run of the same case.
// Two shapes come from a stream of their own (generator_shapes.h), so that drawing them
// leaves every other seed's program as it was: programs without any Call (their outputs are
// source Ports), and gathers of gathers (F::reduce of an inner reduce's groups, two expand
// levels up, folded by FoldNested). The interpreter applies the same reduce rules (DESIGN
// 5.4) to the inner groups as members: a DROPPED one (its expansion DROPPED, or filtered out)
// is left out, a SUPPRESSED one suppresses the outer group with its cause, an empty one is
// kept; the outer reduce's guards are the Calls of its membership or mask only, since the
// guard walk stops at the inner reduce.
//
// Values are int64 hashes of their lineage: a Call output is a hash of the Call's seed and
// its input values, a list element a hash of its producer row and its index, a fold a hash
// of the ordered group (of groups, each with its size, for FoldNested). So a value identifies the
// Grain that made it, and every UDF decision (list length, mask, RecordFailure, GroupFailure,
// exception, lost actor) is a deterministic function of the Grain's key and the seed.
//
// Which outcomes are schedule-independent (and therefore compared exactly):
// - Physical failures are arranged so that their final effect is fixed: `flaky` Grains throw
//   only on their first attempt and `lost` Grains lose their actor only once (every trigger
//   in the RPC is consumed when it fires, so no Grain sees two), under budgets that absorb
//   them; `poison` Grains always throw, which isolate_tail turns into a FAILED Grain and
//   every other policy into an aborted run (only in cases that allow aborts).
// - A GroupFailure makes the outcome of the READY siblings of the same Call under the same
//   parent depend on the schedule (committed siblings stay PRESENT, the others are
//   SUPPRESSED). The interpreter marks those Items `tainted` and propagates the taint through
//   everything that depends on them; tainted root outputs are not compared. A lone
//   GroupFailure Grain itself stays deterministic (FAILED with its own message), and so does
//   everything decided by an untainted failure (a reduce with a FAILED member is SUPPRESSED
//   whatever its tainted siblings do). Root-Domain Calls key their barrier by their own
//   Entity, so a GroupFailure there taints nothing.
// - A GroupFailure decides its parent's gathers (DESIGN 5): a reduce over that parent of a
//   Port downstream of the failing Call (a guard Call, as the compiler finds them) is
//   SUPPRESSED whatever its membership, so it is compared exactly even though its members
//   are tainted. The generator makes memberships that leave the failing child out (a
//   MaskExclude that is false exactly where a Call raises its GroupFailure), where the group
//   would otherwise be PRESENT; its cause is the GroupFailure's unless the member scan meets
//   a certain failure first. Only a barrier that may or may not be installed (its Grain is
//   tainted) leaves such a group tainted.
// - Causes are compared exactly: the lowest-index failing input decides a Call's SUPPRESSED
//   cause and the lowest failing ordinal a reduce's (DESIGN 5), whatever the arrival
//   order. Only a tainted Item that could fail first leaves the cause open (`any_cause`).
#pragma once

#include "support/random_pipeline/census.h"
#include "support/random_pipeline/faults.h"
#include "support/random_pipeline/generator.h"
#include "support/random_pipeline/generator_domains.h"
#include "support/random_pipeline/generator_shapes.h"
#include "support/random_pipeline/ir.h"
#include "support/random_pipeline/model.h"
#include "support/random_pipeline/model_calls.h"
#include "support/random_pipeline/model_gathers.h"
#include "support/random_pipeline/random.h"
#include "support/random_pipeline/udfs.h"
#include "support/random_pipeline/values.h"
