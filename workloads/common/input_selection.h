// Which inputs a workload command reads: paths, folders, glob patterns and JSON-lines
// manifests, and which share of them this job takes (`--shard i/n`, `--row-range a:b`), so a
// corpus can be split over jobs that each read the same list and take their own rows.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace workloads {

/// Rows index, index + count, index + 2 count, ... of the input list (0 <= index < count):
/// `count` jobs with index 0..count-1 read every input once. The Python readers' `shard`.
struct Shard {
  std::size_t index = 0;
  std::size_t count = 1;
};

/// Input list rows [start, stop): `stop` absent reads to the end. The Python readers'
/// `row_range`.
struct RowRange {
  std::size_t start = 0;
  std::optional<std::size_t> stop;
};

/// What a command was asked to read.
struct InputSelection {
  std::vector<std::string> paths;      ///< files, folders (searched recursively), glob patterns
  std::vector<std::string> manifests;  ///< JSON-lines files or JSON-lines sink folders
  std::string path_field = "path";     ///< the manifest field holding a row's path
  std::optional<Shard> shard;
  std::optional<RowRange> row_range;
};

/// How one workload finds its inputs and words its errors.
struct InputRules {
  std::vector<std::string> extensions;  ///< searched for in folders: lower case, with the dot
  std::string none_given;               ///< the error when no input is named
  std::string none_found;               ///< the error when the inputs hold no matching file
  /// The error for two files with the same stem: (stem, first path, second path).
  std::function<std::string(const std::string&, const std::string&, const std::string&)>
      duplicate_stem;
};

/// "i/n" as a Shard. Throws InputError saying what is expected.
Shard parse_shard(std::string_view text);

/// "start:stop" (stop may be empty: to the end) as a RowRange. Throws InputError.
RowRange parse_row_range(std::string_view text);

/// The input list, then this job's share of it. The list: the files named by `paths`
/// (files as given, folders searched recursively for `rules.extensions` in any case, glob
/// patterns expanded as glob_files() does: every matching file, whatever its extension),
/// sorted by path, followed by the rows of each manifest in its order; the same file once, at
/// its first place. Then the row range and the shard are applied to that list, so every job
/// given the same inputs agrees on it; a share may be empty. Throws InputError, before
/// anything runs, for nothing named, a missing or unreadable input, a pattern matching
/// nothing, a bad manifest (input_manifest.h), no files at all, or two files with the same
/// stem anywhere in the list (each job of a split would otherwise see only its half of it).
std::vector<std::string> select_inputs(const InputSelection& selection, const InputRules& rules);

}  // namespace workloads
