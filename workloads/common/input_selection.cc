// Building a command's input list and this job's share of it. See input_selection.h.
#include "common/input_selection.h"

#include <charconv>
#include <filesystem>
#include <map>
#include <set>

#include "common/files.h"
#include "common/input_glob.h"
#include "common/input_manifest.h"
#include <fmt/format.h>

namespace workloads {
namespace fs = std::filesystem;

namespace {

std::optional<std::size_t> parse_count(std::string_view text) {
  std::size_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// One listed file and where it was named: "" for the command line, "FILE, line N" for a
// manifest row.
struct Listed {
  std::string path;
  std::string named_at;
};

// The files `input` names on the command line, unsorted.
std::vector<std::string> files_of_path(const std::string& input, const InputRules& rules) {
  const fs::path p(input);
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  if (ec || !fs::exists(st)) {
    if (!is_glob_pattern(input)) throw InputError(fmt::format("input not found: {}", input));
    std::vector<std::string> matches = glob_files(input);
    if (matches.empty()) throw InputError(fmt::format("no file matches the pattern {}", input));
    return matches;
  }
  std::vector<std::string> found;
  if (fs::is_directory(st)) {
    fs::recursive_directory_iterator it(p, fs::directory_options::follow_directory_symlink, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      std::error_code fec;
      if (it->is_regular_file(fec) && has_extension(it->path(), rules.extensions))
        found.push_back(it->path().string());
    }
    if (ec) {
      throw InputError(fmt::format("cannot read input directory {}: {}", input, ec.message()));
    }
  } else if (fs::is_regular_file(st)) {
    found.push_back(input);
  } else {
    throw InputError(fmt::format("input {} is neither a file nor a directory", input));
  }
  return found;
}

// The whole input list, each file once (at its first place) and readable.
std::vector<Listed> list_inputs(const InputSelection& selection, const InputRules& rules) {
  std::vector<Listed> listed;
  {
    std::vector<std::string> named;
    for (const std::string& input : selection.paths) {
      for (std::string& f : files_of_path(input, rules)) named.push_back(std::move(f));
    }
    std::sort(named.begin(), named.end());
    for (std::string& f : named) listed.push_back({fs::path(f).lexically_normal().string(), ""});
  }
  for (const std::string& manifest : selection.manifests) {
    for (ManifestEntry& e : read_path_manifest(manifest, selection.path_field)) {
      listed.push_back({std::move(e.path), fmt::format("{}, line {}", e.manifest, e.line)});
    }
  }
  std::set<std::string> seen;  // canonical paths
  std::vector<Listed> unique;
  for (Listed& l : listed) {
    const std::string prefix = l.named_at.empty() ? "" : l.named_at + ": ";
    std::error_code ec;
    const fs::file_status st = fs::status(l.path, ec);
    if (ec || !fs::exists(st))
      throw InputError(fmt::format("{}input not found: {}", prefix, l.path));
    if (!fs::is_regular_file(st)) {
      throw InputError(fmt::format("{}input {} is not a file", prefix, l.path));
    }
    try {
      require_readable(l.path);
    } catch (const InputError& e) {
      throw InputError(prefix + e.what());
    }
    fs::path id = fs::weakly_canonical(l.path, ec);
    if (ec) id = fs::absolute(l.path);
    if (seen.insert(id.string()).second) unique.push_back(std::move(l));
  }
  return unique;
}

}  // namespace

Shard parse_shard(std::string_view text) {
  const std::size_t slash = text.find('/');
  const auto index = parse_count(text.substr(0, slash));
  const auto count =
      slash == std::string_view::npos ? std::nullopt : parse_count(text.substr(slash + 1));
  if (!index || !count || *count == 0 || *index >= *count) {
    throw InputError(fmt::format(
        "shard '{}' must be I/N with 0 <= I < N: job I of N reads inputs I, I+N, I+2N, ...", text));
  }
  return {*index, *count};
}

RowRange parse_row_range(std::string_view text) {
  const std::size_t colon = text.find(':');
  const auto start = parse_count(text.substr(0, colon));
  const std::string_view stop_text =
      colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  const auto stop = stop_text.empty() ? std::nullopt : parse_count(stop_text);
  if (!start || colon == std::string_view::npos ||
      (!stop_text.empty() && (!stop || *stop < *start))) {
    throw InputError(fmt::format(
        "row range '{}' must be START:STOP with START <= STOP (STOP empty: to the end), "
        "counting inputs from 0",
        text));
  }
  return {*start, stop};
}

std::vector<std::string> select_inputs(const InputSelection& selection, const InputRules& rules) {
  if (selection.paths.empty() && selection.manifests.empty()) throw InputError(rules.none_given);
  const std::vector<Listed> listed = list_inputs(selection, rules);
  if (listed.empty()) throw InputError(rules.none_found);
  std::map<std::string, const Listed*> by_stem;
  for (const Listed& l : listed) {
    auto [it, inserted] = by_stem.emplace(fs::path(l.path).stem().string(), &l);
    if (!inserted) {
      const auto shown = [](const Listed& x) {
        return x.named_at.empty() ? x.path : fmt::format("{} ({})", x.path, x.named_at);
      };
      throw InputError(rules.duplicate_stem(it->first, shown(*it->second), shown(l)));
    }
  }
  const RowRange range = selection.row_range.value_or(RowRange{});
  const Shard shard = selection.shard.value_or(Shard{});
  std::vector<std::string> files;
  for (std::size_t row = range.start;
       row < std::min(listed.size(), range.stop.value_or(listed.size())); ++row) {
    if (row % shard.count == shard.index) files.push_back(listed[row].path);
  }
  return files;
}

}  // namespace workloads
