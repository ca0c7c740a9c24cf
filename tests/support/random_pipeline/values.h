// Randomized differential testing: the pure value functions shared by the UDFs and the
// reference interpreter, and the physical side of one RPC (delays, lost actors, exceptions).
#pragma once

#include <chrono>
#include <cstddef>
#include <initializer_list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/random_pipeline/faults.h"
#include <fmt/format.h>

namespace random_pipeline {

inline u64 hash_values(u64 seed, std::initializer_list<i64> values) {
  u64 h = seed;
  for (i64 v : values) h = combine(h, static_cast<u64>(v));
  return h;
}
template <class G>
u64 hash_group(u64 h, const G& group) {
  h = combine(h, 0x6a09e667f3bcc909ull + group.size());
  for (i64 v : group) h = combine(h, static_cast<u64>(v));
  return h;
}
// A group of groups (a reduce of a reduce): each inner group hashed in order, with its size,
// so an empty inner group and a missing one give different values.
template <class G>
u64 hash_nested(u64 h, const G& groups) {
  h = combine(h, 0xbb67ae8584caa73bull + groups.size());
  for (const auto& group : groups) h = hash_group(h, group);
  return h;
}
inline i64 out_value(u64 h, int output) {
  return static_cast<i64>(mix(h ^ (0x100u + static_cast<u64>(output))));
}
inline std::size_t list_length(const CallSpec& s, u64 h) {
  return static_cast<std::size_t>(mix(h ^ 0x60) % static_cast<u64>(s.max_len + 1));
}
inline i64 list_element(u64 h, int list, std::size_t k) {
  return static_cast<i64>(mix(h ^ ((0x1000u + 0x1000u * static_cast<u64>(list)) + k)));
}
inline bool mask_value(const CallSpec& s, u64 h) {
  return static_cast<int>(mix(h ^ 0x70) % 1000) < s.true_permille;
}

// Runs the physical side of one RPC: delay, lost actor, exceptions. Returns normally when the
// RPC is to produce rows.
inline void rpc_prologue(const CallSpec& s, const std::vector<u64>& hs) {
  Runtime& rt = *s.rt;
  rt.rpcs.fetch_add(1);
  rt.rows.fetch_add(hs.size());
  if (const int d = rt.delay_us.load(); d > 0 && !hs.empty()) {
    const u64 us = mix(hs[0] ^ rt.salt.load()) % static_cast<u64>(d);
    if (us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
  }
  std::vector<Behavior> b;
  b.reserve(hs.size());
  for (u64 h : hs) b.push_back(classify(s.faults, h));
  bool hang = false;
  {
    std::lock_guard<std::mutex> lock(rt.mutex);
    // Every lost trigger in the RPC fires together, so a Grain loses its actor at most once.
    bool lose = false;
    for (std::size_t i = 0; i < hs.size(); ++i)
      lose = lose || (b[i].lost && !rt.fired.count(hs[i] ^ 0x10));
    if (lose) {
      for (std::size_t i = 0; i < hs.size(); ++i) {
        if (b[i].lost) rt.fired.insert(hs[i] ^ 0x10);
      }
      rt.losses.fetch_add(1);
      throw ro::ActorLost(fmt::format("lost c{}", s.call));
    }
    std::string error;
    for (std::size_t i = 0; i < hs.size() && error.empty(); ++i) {
      if (b[i].poison) error = poison_message(s.call, hs[i]);
    }
    for (std::size_t i = 0; i < hs.size() && error.empty(); ++i) {
      if (b[i].flaky && !rt.fired.count(hs[i] ^ 0x30)) error = flaky_message(s.call, hs[i]);
    }
    if (!error.empty()) {
      // Any throw consumes every flaky trigger of the RPC: a flaky Grain never fails again,
      // even when isolate_tail later splits it into a batch of its own.
      for (std::size_t i = 0; i < hs.size(); ++i) {
        if (b[i].flaky) rt.fired.insert(hs[i] ^ 0x30);
      }
      rt.throws.fetch_add(1);
      throw std::runtime_error(error);
    }
    if (rt.hang_ms.load() > 0) {
      for (std::size_t i = 0; i < hs.size(); ++i)
        hang = hang || (b[i].hang && !rt.fired.count(hs[i] ^ 0x90));
      for (std::size_t i = 0; i < hs.size() && hang; ++i) {
        if (b[i].hang) rt.fired.insert(hs[i] ^ 0x90);
      }
    }
  }
  // The Module's timeout abandons this attempt; its late rows must be rejected.
  if (hang) std::this_thread::sleep_for(std::chrono::milliseconds(rt.hang_ms.load()));
}

// The data side of one row: a typed failure or the value.
template <class R, class Make>
ro::Row<R> make_row(const CallSpec& s, u64 h, Make&& make) {
  const Behavior b = classify(s.faults, h);
  if (b.group) return ro::GroupFailure{group_message(s.call, h)};
  if (b.record) return ro::RecordFailure{record_message(s.call, h)};
  return make();
}

// In multi-output results, a row fails when any output holds a failure; put it in one or all
// outputs so both paths of the result conversion are exercised.
inline bool failure_in_output(u64 h, int output, int outputs) {
  const u64 r = mix(h ^ 0x80);
  if (r % 2 == 0) return true;
  return static_cast<int>((r >> 8) % static_cast<u64>(outputs)) == output;
}
template <class R>
ro::Row<R> make_multi_row(const CallSpec& s, u64 h, int output, int outputs, R value) {
  const Behavior b = classify(s.faults, h);
  if ((b.group || b.record) && failure_in_output(h, output, outputs)) {
    if (b.group) return ro::GroupFailure{group_message(s.call, h)};
    return ro::RecordFailure{record_message(s.call, h)};
  }
  return value;
}

}  // namespace random_pipeline
