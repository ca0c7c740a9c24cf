// Glob patterns as the workload commands take them: `corpus/**/*.pdf`, `scans/2024-0?/*.pdf`.
// The shell expands unquoted patterns itself; a quoted one reaches the command, which expands
// it here the same way on every shell and for any number of matches (no argument-list limit).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace workloads {

/// Whether `input` has a glob metacharacter (`*`, `?`, `[`).
bool is_glob_pattern(std::string_view input);

/// The regular files matching `pattern`, sorted, each once. A segment matches one path
/// component as fnmatch(3) does, with a leading dot matched only by a dot (hidden files and
/// folders are left out unless the pattern names the dot); `**` as a whole segment matches
/// any number of folders, zero included, without following symbolic links to folders (so a
/// link cannot make it loop). Matched paths keep the pattern's prefix: a relative pattern
/// gives relative paths. An unreadable folder on the way is InputError naming it.
std::vector<std::string> glob_files(const std::string& pattern);

}  // namespace workloads
