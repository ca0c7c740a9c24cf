// Expanding the commands' glob patterns. See input_glob.h.
#include "common/input_glob.h"

#include <fnmatch.h>

#include <filesystem>
#include <set>
#include <span>

#include "common/files.h"
#include <fmt/format.h>

namespace workloads {
namespace fs = std::filesystem;

bool is_glob_pattern(std::string_view input) {
  return input.find_first_of("*?[") != std::string_view::npos;
}

namespace {

// The entries of `dir`, or InputError naming it when it cannot be listed.
std::vector<fs::directory_entry> entries_of(const fs::path& dir) {
  std::vector<fs::directory_entry> entries;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) entries.push_back(*it);
  if (ec) throw InputError(fmt::format("cannot read folder {}: {}", dir.string(), ec.message()));
  return entries;
}

bool is_folder(const fs::directory_entry& e) {
  std::error_code ec;
  return e.is_directory(ec);
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// Adds to `found` the files under `dir` matching `segments` (the pattern's components after
// `dir`). Invariant: `dir` exists and is a folder.
void match(const fs::path& dir, std::span<const std::string> segments,
           std::set<std::string>& found) {
  const std::string& segment = segments.front();
  const std::span<const std::string> rest = segments.subspan(1);
  const bool last = rest.empty();
  if (segment == "**") {
    if (last) {
      // A trailing `**` matches every file below, as `**/*` does.
      static const std::string any = "*";
      match(dir, std::span<const std::string>(&any, 1), found);
    } else {
      match(dir, rest, found);
    }
    for (const fs::directory_entry& e : entries_of(dir)) {
      const std::string name = e.path().filename().string();
      std::error_code ec;
      if (name.starts_with('.') || e.is_symlink(ec) || !is_folder(e)) continue;
      match(e.path(), segments, found);
    }
    return;
  }
  if (!is_glob_pattern(segment)) {
    const fs::path next = dir / segment;
    if (last) {
      if (is_file(next)) found.insert(next.lexically_normal().string());
    } else if (std::error_code ec; fs::is_directory(next, ec)) {
      match(next, rest, found);
    }
    return;
  }
  for (const fs::directory_entry& e : entries_of(dir)) {
    const std::string name = e.path().filename().string();
    if (::fnmatch(segment.c_str(), name.c_str(), FNM_PERIOD) != 0) continue;
    if (last) {
      if (is_file(e.path())) found.insert(e.path().lexically_normal().string());
    } else if (is_folder(e)) {
      match(e.path(), rest, found);
    }
  }
}

}  // namespace

std::vector<std::string> glob_files(const std::string& pattern) {
  const fs::path p(pattern);
  // The folder to start from: the components before the first one with a metacharacter.
  fs::path base = p.root_path();
  std::vector<std::string> segments;
  for (const fs::path& component : p.relative_path()) {
    const std::string c = component.string();
    if (c.empty()) continue;  // a trailing slash
    if (segments.empty() && !is_glob_pattern(c) && c != "**") {
      base /= c;
    } else {
      segments.push_back(c);
    }
  }
  std::set<std::string> found;
  if (segments.empty()) {
    if (is_file(base)) found.insert(base.lexically_normal().string());
  } else {
    const fs::path start = base.empty() ? fs::path(".") : base;
    if (std::error_code ec; fs::is_directory(start, ec)) {
      match(start, segments, found);
    }
  }
  // lexically_normal() drops the "./" a relative pattern's walk started from.
  return std::vector<std::string>(found.begin(), found.end());
}

}  // namespace workloads
