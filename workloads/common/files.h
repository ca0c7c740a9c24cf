// What the workload commands share about their files: finding the inputs named on the command
// line, checking output locations before anything runs, and small file helpers.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace workloads {

/// A problem with a command's inputs, output locations, options or engines, found before
/// anything is processed (exit code 2 on the command line).
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// How one workload finds its inputs and words its errors.
struct InputRules {
  std::vector<std::string> extensions;  ///< searched for in directories: lower case, with the dot
  std::string none_given;               ///< the error when no input is named
  std::string none_found;               ///< the error when the inputs hold no matching file
  /// The error for two files with the same stem: (stem, first path, second path).
  std::function<std::string(const std::string&, const std::string&, const std::string&)>
      duplicate_stem;
};

/// The files named by `inputs`: files as given, directories searched recursively for
/// `rules.extensions` (any case), sorted by path, the same file once. Throws InputError for a
/// missing or unreadable input, no files at all, or two files with the same stem.
std::vector<std::string> resolve_inputs(const std::vector<std::string>& inputs,
                                        const InputRules& rules);

/// Whether `p` ends in one of `extensions` (lower case, with the dot), in any case.
bool has_extension(const std::filesystem::path& p, const std::vector<std::string>& extensions);

/// Throws InputError when `p` cannot be opened for reading.
void require_readable(const std::filesystem::path& p);

/// Creates a file named `probe_prefix`XXXXXX in `dir` and removes it: the only reliable
/// writability test (permissions, read-only mounts, full quotas and ACLs all show up here).
/// Throws InputError naming `what`.
void require_writable_dir(const std::filesystem::path& dir, const std::string& what,
                          std::string_view probe_prefix);

/// For a non-empty `path`: its directory must exist and be writable (InputError otherwise).
void require_output_file_location(const std::string& path, const std::string& what,
                                  std::string_view probe_prefix);

/// The whole content of a file ("" when it cannot be read).
std::string read_file(const std::filesystem::path& p);

/// Seconds elapsed since `t`.
double seconds_since(std::chrono::steady_clock::time_point t);

}  // namespace workloads
