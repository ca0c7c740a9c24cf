// Input and output-location checks of the workload commands. See files.h.
#include "common/files.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
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

}  // namespace workloads
