// Reading JSON-lines manifests of input files. See input_manifest.h.
#include "common/input_manifest.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "common/files.h"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <rayorch/sink_reader.h>

namespace workloads {
namespace fs = std::filesystem;

namespace {

// The field names of `row`, for an error that says what the row has instead.
std::string field_names(const nlohmann::json& row) {
  std::string names;
  for (auto it = row.begin(); it != row.end(); ++it) {
    names += fmt::format("{}'{}'", names.empty() ? "" : ", ", it.key());
  }
  return names.empty() ? "none" : names;
}

// Appends the rows of one JSON-lines file.
void read_lines(const fs::path& file, const std::string& path_field,
                std::vector<ManifestEntry>& entries) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw InputError(
        fmt::format("cannot read manifest {}: {}", file.string(), std::strerror(errno)));
  }
  const fs::path folder = file.parent_path();
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("{}, line {}", file.string(), number);
    nlohmann::json row;
    try {
      row = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      throw InputError(fmt::format("{}: not valid JSON ({})", where, e.what()));
    }
    if (!row.is_object()) {
      throw InputError(fmt::format("{}: a manifest row must be a JSON object with a '{}' field",
                                   where, path_field));
    }
    const auto field = row.find(path_field);
    if (field == row.end()) {
      throw InputError(
          fmt::format("{}: no '{}' field (the row has {}); name the field holding the path with "
                      "--path-field",
                      where, path_field, field_names(row)));
    }
    if (!field->is_string() || field->get_ref<const std::string&>().empty()) {
      throw InputError(fmt::format("{}: '{}' must be a non-empty string, not {}", where, path_field,
                                   field->dump()));
    }
    const fs::path named(field->get_ref<const std::string&>());
    const fs::path resolved = named.is_absolute() ? named : folder / named;
    entries.push_back({resolved.lexically_normal().string(), file.string(), number});
  }
  if (in.bad()) {
    throw InputError(
        fmt::format("cannot read manifest {}: {}", file.string(), std::strerror(errno)));
  }
}

}  // namespace

std::vector<ManifestEntry> read_path_manifest(const std::string& manifest,
                                              const std::string& path_field) {
  std::error_code ec;
  const fs::file_status st = fs::status(manifest, ec);
  if (ec || !fs::exists(st)) throw InputError(fmt::format("manifest not found: {}", manifest));
  std::vector<ManifestEntry> entries;
  if (fs::is_directory(st)) {
    // A sink's output folder: only its committed parts are rows.
    rayorch::CommittedOutput committed;
    try {
      committed = rayorch::read_committed_output(manifest);
    } catch (const std::invalid_argument& e) {
      throw InputError(fmt::format(
          "manifest {} is a folder but not a sink's output ({}); name a JSON-lines file", manifest,
          e.what()));
    }
    // A listing still being written, or cut short, would silently leave inputs out.
    if (!committed.complete) {
      throw InputError(fmt::format(
          "manifest {} is a sink's output whose run has not accounted for every row (its "
          "_manifest.json is not complete): finish that run first (rerun it with --resume)",
          manifest));
    }
    for (const std::string& part : committed.parts) read_lines(part, path_field, entries);
  } else {
    read_lines(manifest, path_field, entries);
  }
  if (entries.empty()) {
    throw InputError(fmt::format("manifest {} has no rows: it names no input", manifest));
  }
  return entries;
}

}  // namespace workloads
