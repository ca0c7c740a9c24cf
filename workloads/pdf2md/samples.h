// A generated corpus with known text, so anyone can check a conversion's correctness.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pdf2md {

/// What `make_samples` generates.
struct SampleOptions {
  int docs = 24;           ///< readable documents (doc-000 ...)
  std::uint64_t seed = 1;  ///< same seed, same corpus
  int max_pages = 40;      ///< cap of the long-tailed page-count distribution
  int corrupt = 1;         ///< corrupt files added next to the documents
};

/// One generated document and the text drawn on each of its pages.
struct SampleDocument {
  std::string stem;
  std::string pdf;                 ///< path of the PDF
  std::vector<std::string> pages;  ///< expected text, one entry per page
};

/// A generated corpus as described by its manifest.
struct SampleCorpus {
  std::string dir;
  std::uint64_t seed = 0;
  std::vector<SampleDocument> documents;
  std::vector<std::string> corrupt;  ///< stems of the corrupt files
  std::size_t total_pages() const;
};

/// Page counts of the documents for these options: most documents are short, a few are long
/// (P(pages >= k) ~ k^-1.1, capped at max_pages). Deterministic across platforms.
std::vector<int> sample_page_counts(const SampleOptions& options);

/// Writes DIR/<stem>.pdf for every document, the corrupt files, DIR/expected/<stem>.txt
/// (pages separated by form feeds) and DIR/manifest.json. Throws std::runtime_error on I/O
/// or drawing failures.
SampleCorpus make_samples(const std::string& dir, const SampleOptions& options);

/// Reads DIR/manifest.json and the expected texts back.
SampleCorpus load_samples(const std::string& dir);

/// Word accuracy of `actual` against `expected`: 1 - (word edit distance / expected words),
/// at least 0. Words compare case-insensitively, ignoring punctuation.
double word_accuracy(std::string_view expected, std::string_view actual);

/// How one converted document compares with its known text.
struct DocumentCheck {
  std::string stem;
  bool present = false;         ///< DIR/<stem>.md exists
  bool pages_in_order = false;  ///< page headings are exactly 1..n for the n expected pages
  double accuracy = 0.0;        ///< words weighted over the whole document
  double worst_page_accuracy = 0.0;
  std::size_t words = 0;
  std::size_t word_errors = 0;
};

/// The comparison of a Markdown output directory with a corpus.
struct CorpusCheck {
  std::vector<DocumentCheck> documents;
  double accuracy = 0.0;                   ///< over every expected word of every document
  std::vector<std::string> failed_listed;  ///< stems listed in OUTDIR/failures.jsonl
};

/// Compares OUTDIR/<stem>.md with the expected text of every document in `corpus`.
CorpusCheck check_outputs(const SampleCorpus& corpus, const std::string& out_dir);

}  // namespace pdf2md
