// What the workload commands share about their files: checking inputs and output locations
// before anything runs, and small file helpers (the input list itself: input_selection.h).
#pragma once

#include <chrono>
#include <filesystem>
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
