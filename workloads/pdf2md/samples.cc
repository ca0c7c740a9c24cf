// Sample corpus generation (cairo) and output checking. See samples.h.
#include "pdf2md/samples.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "common/cairo_check.h"
#include "common/sampling.h"
#include "common/text.h"
#include "pdf2md/pdf2md.h"
#include <cairo/cairo-pdf.h>
#include <cairo/cairo.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace pdf2md {
namespace fs = std::filesystem;

namespace {

// Common dictionary words: Tesseract's language model knows them, so the measured accuracy
// reflects recognition, not vocabulary.
constexpr const char* kWords[] = {
    "about",   "above",    "across",    "after",   "again",    "against", "along",   "always",
    "another", "answer",   "around",    "because", "before",   "began",   "behind",  "below",
    "between", "black",    "bring",     "build",   "carry",    "change",  "city",    "close",
    "color",   "country",  "course",    "cover",   "cross",    "during",  "early",   "earth",
    "enough",  "every",    "example",   "family",  "father",   "field",   "figure",  "follow",
    "forest",  "found",    "garden",    "great",   "green",    "ground",  "group",   "happen",
    "heavy",   "house",    "important", "island",  "large",    "later",   "learn",   "letter",
    "light",   "little",   "market",    "measure", "money",    "morning", "mother",  "mountain",
    "music",   "nation",   "never",     "night",   "north",    "number",  "object",  "ocean",
    "often",   "order",    "other",     "paper",   "people",   "picture", "place",   "plant",
    "point",   "power",    "problem",   "produce", "question", "quickly", "rain",    "record",
    "region",  "remember", "river",     "road",    "school",   "science", "second",  "section",
    "several", "simple",   "small",     "sound",   "south",    "special", "square",  "station",
    "still",   "stone",    "story",     "street",  "strong",   "study",   "summer",  "system",
    "table",   "teacher",  "together",  "toward",  "travel",   "under",   "until",   "usually",
    "valley",  "village",  "water",     "weather", "window",   "winter",  "without", "wonder",
    "world",   "write",    "young",     "animal",  "engine",   "machine", "library", "document",
    "careful", "bridge",   "harbor",    "kitchen",
};
constexpr std::size_t kWordCount = sizeof(kWords) / sizeof(kWords[0]);

using Rng = workloads::SampleRng;

// Page geometry (points): US Letter, one-inch margins, a large sans font.
constexpr double kPageWidth = 612.0;
constexpr double kPageHeight = 792.0;
constexpr double kMargin = 72.0;
constexpr double kTitleSize = 20.0;
constexpr double kBodySize = 16.0;
constexpr double kLineHeight = 26.0;
constexpr int kWordsPerPage = 80;

std::string sentence(Rng& rng) {
  const std::size_t n = 6 + rng.below(6);
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    std::string w = kWords[rng.below(kWordCount)];
    if (i == 0) w[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(w[0])));
    if (!s.empty()) s += ' ';
    s += w;
  }
  return s + '.';
}

// Breaks `text` into lines that fit `width` at the current font.
std::vector<std::string> wrap(cairo_t* cr, const std::string& text, double width) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string word, line;
  while (in >> word) {
    const std::string candidate = line.empty() ? word : line + " " + word;
    cairo_text_extents_t ext;
    cairo_text_extents(cr, candidate.c_str(), &ext);
    if (!line.empty() && ext.x_advance > width) {
      lines.push_back(line);
      line = word;
    } else {
      line = candidate;
    }
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

using workloads::check_cairo;

// Draws one document; returns the text of each page exactly as drawn (one line per line).
std::vector<std::string> draw_document(const std::string& path, int doc_index, int pages,
                                       Rng& rng) {
  std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)> surface(
      cairo_pdf_surface_create(path.c_str(), kPageWidth, kPageHeight), cairo_surface_destroy);
  check_cairo(cairo_surface_status(surface.get()), "cannot create " + path);
  std::unique_ptr<cairo_t, decltype(&cairo_destroy)> cr(cairo_create(surface.get()), cairo_destroy);
  std::vector<std::string> texts;
  for (int p = 1; p <= pages; ++p) {
    std::string body;
    int words = 0;
    while (words < kWordsPerPage) {
      const std::string s = sentence(rng);
      words += static_cast<int>(std::count(s.begin(), s.end(), ' ')) + 1;
      body += (body.empty() ? "" : " ") + s;
    }
    const std::string title = fmt::format("Document {} page {} of {}", doc_index, p, pages);

    cairo_set_source_rgb(cr.get(), 1, 1, 1);
    cairo_paint(cr.get());
    cairo_set_source_rgb(cr.get(), 0, 0, 0);
    double y = kMargin + kTitleSize;
    cairo_select_font_face(cr.get(), "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                           CAIRO_FONT_WEIGHT_BOLD);
    cairo_set_font_size(cr.get(), kTitleSize);
    cairo_move_to(cr.get(), kMargin, y);
    cairo_show_text(cr.get(), title.c_str());
    y += kLineHeight * 1.5;
    cairo_select_font_face(cr.get(), "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                           CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr.get(), kBodySize);
    std::string page_text = title + "\n";
    for (const std::string& line : wrap(cr.get(), body, kPageWidth - 2 * kMargin)) {
      cairo_move_to(cr.get(), kMargin, y);
      cairo_show_text(cr.get(), line.c_str());
      page_text += line + "\n";
      y += kLineHeight;
    }
    cairo_show_page(cr.get());
    texts.push_back(std::move(page_text));
  }
  check_cairo(cairo_status(cr.get()), "cannot draw " + path);
  cr.reset();
  cairo_surface_finish(surface.get());
  check_cairo(cairo_surface_status(surface.get()), "cannot write " + path);
  return texts;
}

void write_text(const fs::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path.string()));
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot read {}", path.string()));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

using workloads::word_distance;
using workloads::words_of;

}  // namespace

std::size_t SampleCorpus::total_pages() const {
  std::size_t n = 0;
  for (const auto& d : documents) n += d.pages.size();
  return n;
}

std::vector<int> sample_page_counts(const SampleOptions& options) {
  // P(pages >= k) = k^-1.1.
  return workloads::pareto_counts(options.seed ^ 0x70616765ULL, options.docs, 1.1,
                                  options.max_pages);
}

SampleCorpus make_samples(const std::string& dir, const SampleOptions& options) {
  if (options.docs < 0 || options.max_pages < 1 || options.corrupt < 0) {
    throw std::invalid_argument("make_samples: docs and corrupt must be >= 0, max_pages >= 1");
  }
  const fs::path root(dir);
  fs::create_directories(root / "expected");
  SampleCorpus corpus;
  corpus.dir = dir;
  corpus.seed = options.seed;
  const std::vector<int> counts = sample_page_counts(options);
  Rng rng(options.seed);
  nlohmann::json docs = nlohmann::json::array();
  for (int i = 0; i < options.docs; ++i) {
    SampleDocument d;
    d.stem = fmt::format("doc-{:03}", i);
    d.pdf = (root / (d.stem + ".pdf")).string();
    d.pages = draw_document(d.pdf, i, counts[i], rng);
    std::string expected;
    for (std::size_t p = 0; p < d.pages.size(); ++p) {
      if (p > 0) expected += '\f';
      expected += d.pages[p];
    }
    write_text(root / "expected" / (d.stem + ".txt"), expected);
    docs.push_back({{"stem", d.stem},
                    {"pdf", d.stem + ".pdf"},
                    {"pages", d.pages.size()},
                    {"expected", "expected/" + d.stem + ".txt"}});
    corpus.documents.push_back(std::move(d));
  }
  nlohmann::json corrupt = nlohmann::json::array();
  for (int i = 0; i < options.corrupt; ++i) {
    // A PDF header followed by noise: looks like a PDF by name and magic, parses as nothing.
    std::string bytes = "%PDF-1.7\n";
    for (int k = 0; k < 2048; ++k) bytes.push_back(static_cast<char>(rng.next() & 0xff));
    const std::string stem = options.corrupt == 1 ? "corrupt" : fmt::format("corrupt-{:02}", i);
    write_text(root / (stem + ".pdf"), bytes);
    corrupt.push_back({{"stem", stem}, {"pdf", stem + ".pdf"}});
    corpus.corrupt.push_back(stem);
  }
  nlohmann::json manifest = {{"seed", options.seed},
                             {"max_pages", options.max_pages},
                             {"total_pages", corpus.total_pages()},
                             {"documents", docs},
                             {"corrupt", corrupt}};
  write_text(root / "manifest.json", manifest.dump(2) + "\n");
  return corpus;
}

SampleCorpus load_samples(const std::string& dir) {
  const fs::path root(dir);
  const nlohmann::json manifest = nlohmann::json::parse(read_text(root / "manifest.json"));
  SampleCorpus corpus;
  corpus.dir = dir;
  corpus.seed = manifest.value("seed", std::uint64_t{0});
  for (const auto& d : manifest.at("documents")) {
    SampleDocument doc;
    doc.stem = d.at("stem").get<std::string>();
    doc.pdf = (root / d.at("pdf").get<std::string>()).string();
    const std::string expected = read_text(root / d.at("expected").get<std::string>());
    std::size_t start = 0;
    for (;;) {
      const std::size_t ff = expected.find('\f', start);
      doc.pages.push_back(expected.substr(start, ff == std::string::npos ? ff : ff - start));
      if (ff == std::string::npos) break;
      start = ff + 1;
    }
    corpus.documents.push_back(std::move(doc));
  }
  for (const auto& c : manifest.at("corrupt")) corpus.corrupt.push_back(c.at("stem"));
  return corpus;
}

double word_accuracy(std::string_view expected, std::string_view actual) {
  const auto e = words_of(expected);
  if (e.empty()) return words_of(actual).empty() ? 1.0 : 0.0;
  const double d = static_cast<double>(word_distance(e, words_of(actual)));
  return std::max(0.0, 1.0 - d / static_cast<double>(e.size()));
}

CorpusCheck check_outputs(const SampleCorpus& corpus, const std::string& out_dir) {
  CorpusCheck check;
  std::size_t words = 0, errors = 0;
  for (const SampleDocument& doc : corpus.documents) {
    DocumentCheck d;
    d.stem = doc.stem;
    for (const std::string& page : doc.pages) d.words += words_of(page).size();
    d.word_errors = d.words;
    const fs::path md = fs::path(out_dir) / (doc.stem + ".md");
    std::error_code ec;
    if (fs::exists(md, ec)) {
      d.present = true;
      const std::vector<MarkdownPage> pages = split_pages(read_text(md));
      d.pages_in_order = pages.size() == doc.pages.size();
      for (std::size_t i = 0; i < pages.size() && d.pages_in_order; ++i) {
        d.pages_in_order = pages[i].number == i + 1;
      }
      if (d.pages_in_order) {
        d.word_errors = 0;
        d.worst_page_accuracy = 1.0;
        for (std::size_t i = 0; i < pages.size(); ++i) {
          const auto expected = words_of(doc.pages[i]);
          const std::size_t dist = word_distance(expected, words_of(pages[i].text));
          d.word_errors += std::min(dist, expected.size());
          d.worst_page_accuracy =
              std::min(d.worst_page_accuracy, word_accuracy(doc.pages[i], pages[i].text));
        }
      }
    }
    d.accuracy = d.words == 0
                     ? 1.0
                     : 1.0 - static_cast<double>(d.word_errors) / static_cast<double>(d.words);
    words += d.words;
    errors += d.word_errors;
    check.documents.push_back(std::move(d));
  }
  check.accuracy =
      words == 0 ? 1.0 : 1.0 - static_cast<double>(errors) / static_cast<double>(words);
  std::ifstream failures(fs::path(out_dir) / "failures.jsonl");
  std::string line;
  while (std::getline(failures, line)) {
    if (line.empty()) continue;
    check.failed_listed.push_back(nlohmann::json::parse(line).at("stem").get<std::string>());
  }
  return check;
}

}  // namespace pdf2md
