// Dead letters. See dead_letters.h.
#include "execution/journal/dead_letters.h"

#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "rayorch/errors.h"

#include "execution/journal/format.h"

namespace rayorch::detail {

DeadLetterFile::DeadLetterFile(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) {
    throw std::invalid_argument(fmt::format(
        "RunOptions.dead_letters '{}' cannot be opened for writing: {}; choose a file in a "
        "writable directory (checked before any input is admitted)",
        path, journal_format::errno_text()));
  }
}

DeadLetterFile::~DeadLetterFile() {
  if (file_ != nullptr) std::fclose(file_);
}

void DeadLetterFile::write(const DeadLetter& d) {
  nlohmann::json j;
  for (const auto& [name, value] : d.fields) j[name] = value;
  j["key"] = d.key;
  j["row"] = d.row;
  j["outcome"] = std::string(to_string(d.outcome));
  // The row's verdict, which exit codes and failure counts follow: a root that is not present
  // failed (its producer failed, or a failure suppressed it) unless it was dropped on purpose.
  j["failed"] = d.outcome != Outcome::dropped;
  j["output"] = d.output;
  j["cause"] = d.cause;
  j["call"] = d.origin ? nlohmann::json(d.origin->call) : nlohmann::json(nullptr);
  j["entity"] = d.origin ? nlohmann::json(d.origin->entity) : nlohmann::json(nullptr);
  j["attempts"] = d.origin ? d.origin->attempts : 0U;
  j["restored"] = d.restored;
  const std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    throw ExecutionError(fmt::format("dead letters '{}': a line could not be written: {}", path_,
                                     journal_format::errno_text()));
  }
}

}  // namespace rayorch::detail
