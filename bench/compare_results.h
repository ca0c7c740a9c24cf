// What `bench compare` reads from each system's result file (bench/peers/common.py
// write_result) and the medians over a system's runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actor_timeline.h"
#include <nlohmann/json.hpp>

namespace rayorch::bench {

/// What one run of one system measured.
struct Measured {
  bool ran = false;
  std::string error;
  double e2e = 0, first = 0, init = 0, ramp = 0, steady = 0, tail = 0;
  double done_mean = 0, done_p50 = 0, done_p95 = 0;
  double ocr_batches = 0, ocr_fill = 0, busy_share = 0;
  double cpu = 0, driver_cpu = 0, run_driver_cpu = 0, rss_mib = 0, load = 0;
  std::size_t mismatches = 0;
  std::string version;
  std::string exit_note;
  std::optional<ActorTimeline> actors;  // when the system wrote its OCR actors one by one
  OwnBusy own;
  nlohmann::json calls;  // per Call: busy time and actors held (bench compare-system only)
};

/// Reads a system's result file and derives the metrics; counts the documents whose values
/// differ from the expected ones in `m.mismatches`.
void read_result(const nlohmann::json& j, const std::vector<std::uint32_t>& pages, int ocr_actors,
                 int ocr_batch, Measured& m);

/// "median [min-max]" of a sample ("-" when empty).
std::string spread(const std::vector<double>& v, const char* f = "{:.3f}");

/// The medians over one system's runs (those that ran).
struct Summary {
  bool ran = false;
  std::string error, version;
  std::vector<double> e2e;
  double first = 0, init = 0, ramp = 0, steady = 0, tail = 0, done_mean = 0, done_p50 = 0,
         done_p95 = 0, ocr_batches = 0, ocr_fill = 0, busy = 0, cpu = 0, driver_cpu = 0,
         run_driver_cpu = 0, rss = 0, own_least = 0, own_median = 0;
  std::size_t mismatches = 0;
  bool exit_failed = false;
  std::optional<ActorTimeline> actors;  // of the first run that has them
  double actors_e2e = 0;
  nlohmann::json calls;  // of the first run that has them
};
Summary summarize(const std::vector<Measured>& runs);

}  // namespace rayorch::bench
