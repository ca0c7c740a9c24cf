// Input discovery and output-location checks of the workload commands. See files.h.
#include "common/files.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

namespace workloads {
namespace fs = std::filesystem;

bool has_extension(const fs::path& p, const std::vector<std::string>& extensions) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
}

void require_readable(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    throw InputError(fmt::format("cannot read input {}: {}", p.string(), std::strerror(errno)));
  }
}

void require_writable_dir(const fs::path& dir, const std::string& what,
                          std::string_view probe_prefix) {
  std::string probe = (dir / fmt::format("{}XXXXXX", probe_prefix)).string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    throw InputError(fmt::format("{} {} is not writable: {}", what,
                                 dir.empty() ? "." : dir.string(), std::strerror(errno)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

void require_output_file_location(const std::string& path, const std::string& what,
                                  std::string_view probe_prefix) {
  if (path.empty()) return;
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) {
    throw InputError(
        fmt::format("{} {}: directory {} does not exist", what, path, parent.string()));
  }
  require_writable_dir(parent, what + " directory", probe_prefix);
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::vector<std::string> resolve_inputs(const std::vector<std::string>& inputs,
                                        const InputRules& rules) {
  if (inputs.empty()) throw InputError(rules.none_given);
  std::map<std::string, std::string> by_identity;  // canonical path -> path as found
  for (const std::string& input : inputs) {
    const fs::path p(input);
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    if (ec || !fs::exists(st)) throw InputError(fmt::format("input not found: {}", input));
    std::vector<fs::path> found;
    if (fs::is_directory(st)) {
      fs::recursive_directory_iterator it(p, fs::directory_options::follow_directory_symlink, ec);
      for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        std::error_code fec;
        if (it->is_regular_file(fec) && has_extension(it->path(), rules.extensions))
          found.push_back(it->path());
      }
      if (ec) {
        throw InputError(fmt::format("cannot read input directory {}: {}", input, ec.message()));
      }
    } else if (fs::is_regular_file(st)) {
      found.push_back(p);
    } else {
      throw InputError(fmt::format("input {} is neither a file nor a directory", input));
    }
    for (const fs::path& f : found) {
      require_readable(f);
      std::error_code cec;
      fs::path id = fs::weakly_canonical(f, cec);
      if (cec) id = fs::absolute(f);
      by_identity.emplace(id.string(), f.lexically_normal().string());
    }
  }
  std::vector<std::string> files;
  for (auto& [id, path] : by_identity) files.push_back(path);
  std::sort(files.begin(), files.end());
  std::map<std::string, std::string> by_stem;
  for (const std::string& f : files) {
    const std::string stem = fs::path(f).stem().string();
    auto [it, inserted] = by_stem.emplace(stem, f);
    if (!inserted) throw InputError(rules.duplicate_stem(stem, it->second, f));
  }
  if (files.empty()) throw InputError(rules.none_found);
  return files;
}

}  // namespace workloads
