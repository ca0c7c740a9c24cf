// JSON-lines manifests of input files, as data-preparation jobs list their corpora: one JSON
// object per line, its path in a named field (`{"path": "scans/a.pdf", "lang": "deu"}`).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace workloads {

/// One manifest row: the file it names and where it was named (for errors).
struct ManifestEntry {
  std::string path;      ///< resolved: a relative path is taken from the manifest's folder
  std::string manifest;  ///< the file the row is in
  std::size_t line = 0;  ///< 1-based
};

/// The files a manifest names, in its order. `manifest` is a JSON-lines file (blank lines
/// skipped) or the output folder of a JSON-lines sink whose run completed (its committed
/// parts, in order, as its `_manifest.json` lists them). Each row must be an object whose
/// `path_field` is a string; a relative path is taken from the folder the manifest (or part) is in,
/// so a manifest and the files it lists move together. Read line by line: the rows are not held,
/// only the paths. Throws InputError naming the file (and line) for a missing or unreadable
/// manifest, one with no rows, a sink's folder whose run did not complete, a line that is not JSON,
/// not an object, or lacks the field.
std::vector<ManifestEntry> read_path_manifest(const std::string& manifest,
                                              const std::string& path_field);

}  // namespace workloads
