// A sink's committed output, read back. See rayorch/sink_reader.h.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "rayorch/sink_reader.h"

#include "execution/sink/manifest.h"

namespace rayorch {

namespace fs = std::filesystem;

CommittedOutput read_committed_output(const std::string& directory) {
  const fs::path path = fs::path(directory) / detail::kManifestName;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::invalid_argument(
        fmt::format("'{}' has no {}: no sink wrote there, or its first run has not ended",
                    directory, detail::kManifestName));
  }
  std::stringstream bytes;
  bytes << in.rdbuf();
  CommittedOutput out;
  try {
    const nlohmann::json j = nlohmann::json::parse(bytes.str());
    if (!j.is_object() || j.value("format", "") != "rayorch-sink") {
      throw std::invalid_argument("its format is not 'rayorch-sink'");
    }
    out.complete = j.at("complete").get<bool>();
    for (const nlohmann::json& p : j.at("parts")) {
      out.parts.push_back((fs::path(directory) / p.at("name").get<std::string>()).string());
      out.rows += p.at("rows").get<std::uint64_t>();
    }
  } catch (const std::exception& e) {
    throw std::invalid_argument(
        fmt::format("{} is not a sink's manifest ({})", path.string(), e.what()));
  }
  return out;
}

std::vector<std::string> read_committed_lines(const std::string& directory) {
  std::vector<std::string> lines;
  for (const std::string& part : read_committed_output(directory).parts) {
    std::ifstream in(part, std::ios::binary);
    if (!in) {
      throw std::invalid_argument(
          fmt::format("{} is listed in its directory's manifest but cannot be read", part));
    }
    for (std::string line; std::getline(in, line);) lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace rayorch
