// Scoring a video2jsonl output against a footage corpus: cut precision and recall (a gradual
// transition counts once), cuts inside motion, and recall of the documents' words in the
// text read from slide frames.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "video/footage.h"

namespace video {

/// How one video's record compares with its known structure.
struct FootageVideoCheck {
  std::string video;
  bool present = false;
  std::size_t expected_cuts = 0;
  std::size_t detected_cuts = 0;
  std::size_t matched_cuts = 0;    ///< transitions found (each at most once)
  std::size_t cuts_in_motion = 0;  ///< unmatched cuts inside a pan, zoom or scroll
  std::size_t slide_words = 0;     ///< distinct document words over the scored frames
  std::size_t words_found = 0;     ///< of those, read by OCR on the same frame
  std::size_t scored_frames = 0;   ///< sampled frames inside a slide
};

struct FootageCheck {
  std::vector<FootageVideoCheck> videos;  ///< in corpus order
  double precision = 0.0;                 ///< matched cuts / detected cuts (1 when none detected)
  double recall = 0.0;                    ///< matched cuts / expected cuts (1 when none expected)
  std::size_t cuts_in_motion = 0;
  double text_recall = 0.0;  ///< words found / slide words (1 when none scored)
};

/// Reads the committed parts of OUT_DIR (its _manifest.json) and scores them. A detected cut
/// matches a transition when it lies within it or one frame outside; a transition matched twice
/// counts the second as a false cut. Document words are the words of three or more letters; a word
/// is found when the frame's OCR text contains it (case and punctuation ignored). Throws
/// std::runtime_error when the output cannot be read.
FootageCheck check_footage(const FootageCorpus& corpus, const std::string& out_dir);

}  // namespace video
