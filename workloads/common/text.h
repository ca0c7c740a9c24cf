// Scoring recognised text against the text a sample was drawn with.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace workloads {

/// The words of `text`: runs of letters and digits split at white space, lower-cased;
/// punctuation is dropped.
std::vector<std::string> words_of(std::string_view text);

/// Word-level edit distance (insertions, deletions, substitutions) between two word lists.
std::size_t word_distance(const std::vector<std::string>& a, const std::vector<std::string>& b);

}  // namespace workloads
