// Scoring a video2jsonl output against the known structure of a generated corpus.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "video/samples.h"

namespace video {

/// Word accuracy of `actual` against `expected`: 1 - (word edit distance / expected words),
/// at least 0. Words compare case-insensitively, ignoring punctuation.
double word_accuracy(std::string_view expected, std::string_view actual);

/// How one video's record compares with what was drawn.
struct VideoCheck {
  std::string video;
  bool present = false;         ///< a record exists in the committed parts
  bool scene_count_ok = false;  ///< exactly the expected number of scenes
  bool ranges_ok = false;       ///< every scene has exactly the expected frame range, in order
  std::size_t expected_scenes = 0;
  std::size_t actual_scenes = 0;
  std::size_t words = 0;        ///< expected caption words
  std::size_t word_errors = 0;  ///< word edits, capped per scene at its word count
  double accuracy = 0.0;
};

/// The comparison of an output directory with a corpus.
struct CorpusCheck {
  std::vector<VideoCheck> videos;  ///< in corpus order
  double scene_count_match_rate = 0.0;
  double range_match_rate = 0.0;
  double accuracy = 0.0;                   ///< over every expected caption word
  std::vector<std::string> failed_listed;  ///< videos in OUT_DIR/failures.jsonl, sorted
  std::vector<std::string> unexpected;     ///< records of videos not in the corpus
  std::size_t torn_lines = 0;              ///< committed lines that are not records
};

/// Reads the committed parts of OUT_DIR (its _manifest.json) and OUT_DIR/failures.jsonl and
/// scores them. Scene texts are
/// compared scene by scene when the counts match, else as the whole video's text. Throws
/// std::runtime_error when the output files cannot be read.
CorpusCheck check_outputs(const VideoCorpus& corpus, const std::string& out_dir);

}  // namespace video
