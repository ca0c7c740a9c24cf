// Word lists and their edit distance. See text.h.
#include "common/text.h"

#include <algorithm>
#include <cctype>

namespace workloads {

std::vector<std::string> words_of(std::string_view text) {
  std::vector<std::string> words;
  std::string w;
  auto flush = [&] {
    if (!w.empty()) words.push_back(std::move(w));
    w.clear();
  };
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isspace(u) != 0) {
      flush();
    } else if (std::isalnum(u) != 0) {
      w.push_back(static_cast<char>(std::tolower(u)));
    }
  }
  flush();
  return words;
}

std::size_t word_distance(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      cur[j] =
          std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace workloads
