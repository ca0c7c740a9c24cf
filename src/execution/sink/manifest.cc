// A sink's manifest. See manifest.h.
#include "execution/sink/manifest.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "rayorch/atomic_file.h"

namespace rayorch::detail {

namespace fs = std::filesystem;

namespace {
constexpr const char* kFormat = "rayorch-sink";
constexpr int kVersion = 1;
}  // namespace

void write_manifest(const std::string& directory, std::vector<ManifestPart> parts, bool complete) {
  std::sort(parts.begin(), parts.end(),
            [](const ManifestPart& a, const ManifestPart& b) { return a.sequence < b.sequence; });
  nlohmann::json list = nlohmann::json::array();
  std::uint64_t rows = 0;
  for (const ManifestPart& p : parts) {
    list.push_back({{"name", p.name}, {"sequence", p.sequence}, {"rows", p.rows}});
    rows += p.rows;
  }
  const nlohmann::json manifest = {{"format", kFormat},
                                   {"version", kVersion},
                                   {"complete", complete},
                                   {"rows", rows},
                                   {"parts", std::move(list)}};
  write_file_atomically((fs::path(directory) / kManifestName).string(), manifest.dump(1) + "\n");
  if (complete) write_file_atomically((fs::path(directory) / kSuccessName).string(), "");
}

std::vector<ManifestPart> read_manifest(const std::string& directory) {
  const fs::path path = fs::path(directory) / kManifestName;
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream bytes;
  bytes << in.rdbuf();
  std::vector<ManifestPart> parts;
  try {
    const nlohmann::json j = nlohmann::json::parse(bytes.str());
    if (!j.is_object() || j.value("format", "") != kFormat) {
      throw std::invalid_argument("not a sink's manifest");
    }
    for (const nlohmann::json& p : j.at("parts")) {
      parts.push_back({p.at("name").get<std::string>(), p.at("sequence").get<std::uint64_t>(),
                       p.at("rows").get<std::uint64_t>()});
    }
  } catch (const std::exception& e) {
    throw std::invalid_argument(fmt::format(
        "RunOptions.sink.directory: '{}' is not a manifest this sink wrote ({}); choose an "
        "empty directory for the sink, or remove that file",
        path.string(), e.what()));
  }
  return parts;
}

}  // namespace rayorch::detail
