// The pdf2md UDFs and pipeline. See pdf2md.h.
#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "common/tesseract.h"
#include "pdf2md/pdf2md.h"
#include <fmt/format.h>
#include <poppler/cpp/poppler-document.h>
#include <poppler/cpp/poppler-global.h>
#include <poppler/cpp/poppler-image.h>
#include <poppler/cpp/poppler-page-renderer.h>
#include <poppler/cpp/poppler-page.h>

namespace pdf2md {
namespace {

// Poppler reports parse errors through one process-wide hook, on the thread that parses.
// Keeping the first message per thread turns "load failed" into a useful cause and keeps
// poppler's chatter off the terminal.
thread_local std::string poppler_first_error;

void capture_poppler_error(const std::string& message, void*) {
  if (poppler_first_error.empty()) poppler_first_error = message;
}

void install_poppler_hook() {
  static std::once_flag once;
  std::call_once(once, [] { poppler::set_debug_error_function(capture_poppler_error, nullptr); });
}

struct LoadedDocument {
  std::unique_ptr<poppler::document> doc;
  std::string error;  // non-empty when doc is unusable
};

LoadedDocument load_document(const std::string& path) {
  install_poppler_hook();
  poppler_first_error.clear();
  LoadedDocument out;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    out.error = fmt::format("cannot open PDF {}: not a readable file", path);
    return out;
  }
  out.doc.reset(poppler::document::load_from_file(path));
  if (!out.doc) {
    out.error = fmt::format("cannot open PDF {}: corrupt or not a PDF", path);
    if (!poppler_first_error.empty()) out.error += " (" + poppler_first_error + ")";
  } else if (out.doc->is_locked()) {
    out.error = fmt::format("cannot open PDF {}: encrypted (a password is required)", path);
    out.doc.reset();
  }
  return out;
}

std::string stem_of(const std::string& path) {
  return std::filesystem::path(path).stem().string();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// OpenPdf

std::tuple<std::vector<ro::Row<std::vector<PageRef>>>, std::vector<ro::Row<DocumentInfo>>>
OpenPdf::run(ro::Column<std::string> paths) {
  std::vector<ro::Row<std::vector<PageRef>>> pages;
  std::vector<ro::Row<DocumentInfo>> info;
  pages.reserve(paths.size());
  info.reserve(paths.size());
  for (const std::string& path : paths) {
    LoadedDocument loaded = load_document(path);
    if (!loaded.doc) {
      pages.emplace_back(ro::RecordFailure{loaded.error});
      info.emplace_back(ro::RecordFailure{loaded.error});
      continue;
    }
    const auto count = static_cast<std::uint32_t>(std::max(loaded.doc->pages(), 0));
    std::vector<PageRef> refs(count);
    for (std::uint32_t i = 0; i < count; ++i) refs[i].number = i + 1;
    pages.emplace_back(std::move(refs));
    info.emplace_back(DocumentInfo{stem_of(path), count});
  }
  return {std::move(pages), std::move(info)};
}

// ---------------------------------------------------------------------------------------------
// RenderPage

namespace {

// Identifies the file behind a path, so a document kept open is never used after the file
// was replaced (an executor outlives its runs).
struct FileStamp {
  std::uintmax_t size = 0;
  std::filesystem::file_time_type modified{};
  bool operator==(const FileStamp&) const = default;
};

std::optional<FileStamp> stamp_of(const std::string& path) {
  std::error_code ec;
  FileStamp s;
  s.size = std::filesystem::file_size(path, ec);
  if (ec) return std::nullopt;
  s.modified = std::filesystem::last_write_time(path, ec);
  if (ec) return std::nullopt;
  return s;
}

}  // namespace

struct RenderPage::State {
  struct OpenDocument {
    std::string path;
    FileStamp stamp;
    std::unique_ptr<poppler::document> doc;
  };
  // Pages of one document arrive over many RPCs, mostly back to back; a handful of open
  // documents covers that while bounding what an actor holds (parsed objects and fonts,
  // never pixels).
  static constexpr std::size_t kKeepOpen = 4;

  int dpi = 0;
  // Test only: the file name (no directory) of a PDF whose rendering raises SIGSEGV, read
  // from RAYORCH_PDF2MD_TEST_CRASH_ON, to stand in for a PDF that crashes poppler.
  std::string crash_on;
  poppler::page_renderer renderer;
  std::vector<OpenDocument> recent;  // most recently used first

  // The open document for `path`, or nullptr with `error` set.
  poppler::document* acquire(const std::string& path, std::string& error) {
    const std::optional<FileStamp> stamp = stamp_of(path);
    if (!stamp) {
      error = fmt::format("cannot open PDF {}: not a readable file", path);
      return nullptr;
    }
    auto hit = std::find_if(recent.begin(), recent.end(),
                            [&](const OpenDocument& d) { return d.path == path; });
    if (hit != recent.end() && hit->stamp == *stamp) {
      std::rotate(recent.begin(), hit, hit + 1);
      return recent.front().doc.get();
    }
    if (hit != recent.end()) recent.erase(hit);
    LoadedDocument loaded = load_document(path);
    if (!loaded.doc) {
      error = loaded.error;
      return nullptr;
    }
    if (recent.size() == kKeepOpen) recent.pop_back();
    recent.insert(recent.begin(), OpenDocument{path, *stamp, std::move(loaded.doc)});
    return recent.front().doc.get();
  }
};

RenderPage::RenderPage(int dpi) : state_(std::make_unique<State>()) {
  if (dpi < 30 || dpi > 1200) {
    throw std::invalid_argument(fmt::format("RenderPage: dpi must be in [30, 1200], got {}", dpi));
  }
  install_poppler_hook();
  if (!poppler::page_renderer::can_render()) {
    throw std::runtime_error("RenderPage: this poppler build cannot render pages");
  }
  state_->dpi = dpi;
  if (const char* crash = std::getenv("RAYORCH_PDF2MD_TEST_CRASH_ON")) state_->crash_on = crash;
  state_->renderer.set_image_format(poppler::image::format_gray8);
  state_->renderer.set_render_hint(poppler::page_renderer::antialiasing, true);
  state_->renderer.set_render_hint(poppler::page_renderer::text_antialiasing, true);
}

RenderPage::~RenderPage() = default;

std::vector<ro::Row<PageImage>> RenderPage::run(ro::Column<std::string> paths,
                                                ro::Column<PageRef> pages) {
  const std::size_t n = paths.size();
  std::vector<ro::Row<PageImage>> out(n, ro::Row<PageImage>(ro::RecordFailure{}));
  // Rows grouped by document, in order of first appearance, so each distinct document of
  // the RPC is looked up (and at worst opened) once.
  std::vector<bool> done(n, false);
  for (std::size_t first = 0; first < n; ++first) {
    if (done[first]) continue;
    const std::string& path = paths[first];
    if (!state_->crash_on.empty() &&
        std::filesystem::path(path).filename().string() == state_->crash_on) {
      std::fprintf(stderr, "pdf2md: crashing the renderer on %s as asked (test trigger)\n",
                   path.c_str());
      std::fflush(stderr);
      std::raise(SIGSEGV);
    }
    std::string open_error;
    poppler::document* doc = state_->acquire(path, open_error);
    for (std::size_t i = first; i < n; ++i) {
      if (done[i] || paths[i] != path) continue;
      done[i] = true;
      const std::uint32_t number = pages[i].number;
      if (doc == nullptr) {
        out[i] = ro::GroupFailure{open_error};
        continue;
      }
      std::unique_ptr<poppler::page> page;
      if (number >= 1 && number <= static_cast<std::uint32_t>(doc->pages())) {
        page.reset(doc->create_page(static_cast<int>(number - 1)));
      }
      poppler::image img;
      if (page) img = state_->renderer.render_page(page.get(), state_->dpi, state_->dpi);
      if (!page || !img.is_valid() || img.format() != poppler::image::format_gray8) {
        out[i] = ro::GroupFailure{fmt::format("cannot render page {} of {}", number, path)};
        continue;
      }
      PageImage p;
      p.number = number;
      p.width = static_cast<std::uint32_t>(img.width());
      p.height = static_cast<std::uint32_t>(img.height());
      p.dpi = static_cast<std::uint32_t>(state_->dpi);
      p.pixels.resize(static_cast<std::size_t>(p.width) * p.height);
      const char* src = img.const_data();
      const std::size_t stride = static_cast<std::size_t>(img.bytes_per_row());
      for (std::uint32_t y = 0; y < p.height; ++y) {
        std::memcpy(p.pixels.data() + static_cast<std::size_t>(y) * p.width, src + y * stride,
                    p.width);
      }
      out[i] = std::move(p);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// OcrPage

struct OcrPage::Engine {
  Engine(const std::string& lang, const std::string& tessdata)
      : tesseract("OcrPage", lang, tessdata) {}
  workloads::TesseractEngine tesseract;
};

OcrPage::OcrPage(std::string lang, std::string tessdata)
    : engine_(std::make_unique<Engine>(lang, tessdata)) {}

OcrPage::~OcrPage() = default;

std::vector<ro::Row<std::string>> OcrPage::run(ro::Column<PageImage> pages) {
  workloads::serialise_openmp_on_this_thread();
  std::vector<ro::Row<std::string>> out;
  out.reserve(pages.size());
  for (const PageImage& page : pages) {
    if (page.width == 0 || page.height == 0 ||
        page.pixels.size() != static_cast<std::size_t>(page.width) * page.height) {
      out.emplace_back(ro::RecordFailure{fmt::format("page {} has no image", page.number)});
      continue;
    }
    std::optional<std::string> text =
        engine_->tesseract.recognise(page.pixels.data(), page.width, page.height,
                                     static_cast<int>(page.dpi), workloads::PageLayout::automatic);
    if (!text) {
      out.emplace_back(ro::RecordFailure{fmt::format("OCR failed on page {}", page.number)});
    } else {
      out.emplace_back(std::move(*text));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Assemble

namespace {

// Tesseract ends paragraphs with blank lines and pages with a form feed; Markdown wants
// neither trailing whitespace nor control characters.
std::string clean_page_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\f') continue;
    out.push_back(c);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

std::vector<ro::Row<Markdown>> Assemble::run(ro::Column<ro::Group<std::string>> pages,
                                             ro::Column<DocumentInfo> info) {
  std::vector<ro::Row<Markdown>> out;
  out.reserve(pages.size());
  for (std::size_t i = 0; i < pages.size(); ++i) {
    const ro::Group<std::string>& texts = pages[i];
    const DocumentInfo& doc = info[i];
    // The gather is declared, not inferred: a mismatch would be an engine bug, and a
    // document with a missing page must never be written as complete.
    if (texts.size() != doc.pages) {
      out.emplace_back(
          ro::RecordFailure{fmt::format("document {} has {} pages but {} page texts were gathered",
                                        doc.stem, doc.pages, texts.size())});
      continue;
    }
    Markdown md;
    md.stem = doc.stem;
    md.pages = doc.pages;
    md.text = fmt::format("# {}\n", doc.stem);
    for (std::size_t p = 0; p < texts.size(); ++p) {
      md.text += fmt::format("\n## Page {}\n\n", p + 1);
      const std::string body = clean_page_text(texts[p]);
      md.text += body;
      if (!body.empty()) md.text += '\n';
    }
    md.text += fmt::format("\n{}, {} pages -->\n", kCompleteMarker, doc.pages);
    out.emplace_back(std::move(md));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Pipeline

PdfToMarkdown::PdfToMarkdown(const PipelineConfig& c)
    : open(ro::Module<OpenPdf>()
               .replicas(c.open.replicas)
               .batch_size(c.open.batch_size)
               .recovery(ro::RecoveryPolicy::isolate_tail())),
      render(ro::Module<RenderPage>(c.dpi)
                 .replicas(c.render.replicas)
                 .batch_size(c.render.batch_size)
                 .recovery(ro::RecoveryPolicy::isolate_tail())
                 .isolation(c.render_isolation)),
      ocr(ro::Module<OcrPage>(c.lang, c.tessdata)
              .replicas(c.ocr.replicas)
              .batch_size(c.ocr.batch_size)
              .recovery(ro::RecoveryPolicy::isolate_tail())),
      assemble(ro::Module<Assemble>()
                   .replicas(c.assemble.replicas)
                   .batch_size(c.assemble.batch_size)
                   .recovery(ro::RecoveryPolicy::isolate_tail())) {}

ro::Port<Markdown> PdfToMarkdown::forward(ro::Port<std::string> pdf) {
  auto [page_list, info] = open(pdf);
  ro::Port<PageRef> pages = ro::F::expand(page_list);
  ro::Port<PageImage> images = render(ro::F::broadcast(pdf, pages), pages);
  ro::Port<ro::Group<std::string>> texts = ro::F::reduce(ocr(images));
  return assemble(texts, info);
}

ro::Compiled<PdfToMarkdown> compile_pipeline(const PipelineConfig& config, bool optimize) {
  PdfToMarkdown pipeline(config);
  return ro::compile(pipeline, {.optimize = optimize});
}

// ---------------------------------------------------------------------------------------------
// Reading outputs back

std::vector<MarkdownPage> split_pages(const std::string& markdown) {
  std::vector<MarkdownPage> pages;
  std::size_t pos = 0;
  while (pos < markdown.size()) {
    std::size_t end = markdown.find('\n', pos);
    if (end == std::string::npos) end = markdown.size();
    const std::string_view line(markdown.data() + pos, end - pos);
    constexpr std::string_view heading = "## Page ";
    std::uint32_t number = 0;
    const std::string_view digits = line.substr(std::min(line.size(), heading.size()));
    const auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), number);
    if (line.starts_with(heading) && parsed.ec == std::errc() &&
        parsed.ptr == digits.data() + digits.size()) {
      pages.push_back(MarkdownPage{number, {}});
    } else if (!pages.empty() && !line.starts_with(kCompleteMarker)) {
      pages.back().text.append(line);
      pages.back().text.push_back('\n');
    }
    pos = end + 1;
  }
  return pages;
}

}  // namespace pdf2md
