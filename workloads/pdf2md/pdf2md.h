// The document workload (DESIGN 3.3): a PDF is opened (not rendered) to list its pages, each
// page is rendered and OCR'd as its own Grain, batched with pages of other documents, and each
// document's page texts are gathered back in page order and assembled into Markdown.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <rayorch/rayorch.h>

namespace pdf2md {

namespace ro = rayorch;

/// One rendered page: 8-bit grayscale, rows packed without padding.
struct PageImage {
  std::uint32_t number = 0;  ///< 1-based page number inside its document
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::uint32_t dpi = 0;
  std::vector<std::uint8_t> pixels;  ///< width * height bytes
};

/// What a document is, independent of its pages.
struct DocumentInfo {
  std::string stem;         ///< file name without extension: the output's name
  std::uint32_t pages = 0;  ///< page count reported by the PDF
};

/// One finished document.
struct Markdown {
  std::string stem;
  std::uint32_t pages = 0;
  std::string text;
};

/// The first line of the marker every complete Markdown output ends with.
inline constexpr const char* kCompleteMarker = "<!-- pdf2md: complete";

}  // namespace pdf2md

/// The run journal records finished documents (convert.h: --resume).
template <>
struct rayorch::Codec<pdf2md::Markdown> {
  template <ByteSink S>
  static void encode(const pdf2md::Markdown& m, S& out) {
    Codec<std::string>::encode(m.stem, out);
    Codec<std::uint32_t>::encode(m.pages, out);
    Codec<std::string>::encode(m.text, out);
  }
  static pdf2md::Markdown decode(std::string_view& in) {
    pdf2md::Markdown m;
    m.stem = Codec<std::string>::decode(in);
    m.pages = Codec<std::uint32_t>::decode(in);
    m.text = Codec<std::string>::decode(in);
    return m;
  }
};

namespace pdf2md {

/// One page of a document as listed by OpenPdf: all RenderPage needs besides the path.
struct PageRef {
  std::uint32_t number = 0;  ///< 1-based page number inside its document
};

/// Opens a PDF without rendering anything and lists its pages (one PageRef each, in page
/// order) with its DocumentInfo. An unreadable, corrupt or encrypted PDF is a RecordFailure
/// of that document, never an exception.
class OpenPdf {
 public:
  std::tuple<std::vector<ro::Row<std::vector<PageRef>>>, std::vector<ro::Row<DocumentInfo>>> run(
      ro::Column<std::string> paths);
};

/// Renders single pages, batched across documents, at a fixed resolution. Each distinct
/// document of an RPC is opened once, and an actor keeps the few documents it used last open
/// (bounded), because the pages of a long document arrive over many RPCs. A page (or its
/// document) that cannot be rendered is a GroupFailure of its document, so the document's
/// pages that were not dispatched yet are skipped.
class RenderPage {
 public:
  explicit RenderPage(int dpi);
  ~RenderPage();
  RenderPage(const RenderPage&) = delete;
  RenderPage& operator=(const RenderPage&) = delete;

  std::vector<ro::Row<PageImage>> run(ro::Column<std::string> paths, ro::Column<PageRef> pages);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// Recognises the text of page images. Each actor owns one Tesseract engine, loaded once in
/// the constructor and restricted to one thread, because the pool's replicas are the
/// parallelism.
class OcrPage {
 public:
  /// `tessdata` empty means Tesseract's built-in data directory.
  OcrPage(std::string lang, std::string tessdata);
  ~OcrPage();
  OcrPage(const OcrPage&) = delete;
  OcrPage& operator=(const OcrPage&) = delete;

  std::vector<ro::Row<std::string>> run(ro::Column<PageImage> pages);

 private:
  struct Engine;
  std::unique_ptr<Engine> engine_;
};

/// Builds one Markdown document (a heading per page) from its page texts in page order.
class Assemble {
 public:
  std::vector<ro::Row<Markdown>> run(ro::Column<ro::Group<std::string>> pages,
                                     ro::Column<DocumentInfo> info);
};

}  // namespace pdf2md

// Codecs of the values that cross into and out of the renderer's worker processes
// (rayorch/codec.h). A page's pixels cross as one block of bytes; the encoders are templates
// over the sink, so an isolated renderer writes them straight into the memory it shares with
// the executor.
template <>
struct rayorch::Codec<pdf2md::PageRef> {
  template <ByteSink S>
  static void encode(const pdf2md::PageRef& p, S& out) {
    Codec<std::uint32_t>::encode(p.number, out);
  }
  static pdf2md::PageRef decode(std::string_view& in) {
    return pdf2md::PageRef{Codec<std::uint32_t>::decode(in)};
  }
};

template <>
struct rayorch::Codec<pdf2md::PageImage> {
  template <ByteSink S>
  static void encode(const pdf2md::PageImage& p, S& out) {
    Codec<std::uint32_t>::encode(p.number, out);
    Codec<std::uint32_t>::encode(p.width, out);
    Codec<std::uint32_t>::encode(p.height, out);
    Codec<std::uint32_t>::encode(p.dpi, out);
    Codec<std::uint64_t>::encode(p.pixels.size(), out);
    out.append(reinterpret_cast<const char*>(p.pixels.data()), p.pixels.size());
  }
  static pdf2md::PageImage decode(std::string_view& in) {
    pdf2md::PageImage p;
    p.number = Codec<std::uint32_t>::decode(in);
    p.width = Codec<std::uint32_t>::decode(in);
    p.height = Codec<std::uint32_t>::decode(in);
    p.dpi = Codec<std::uint32_t>::decode(in);
    const std::uint64_t n = Codec<std::uint64_t>::decode(in);
    if (n > in.size()) throw DecodeError("pdf2md::PageImage: truncated pixels");
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(in.data());
    p.pixels.assign(bytes, bytes + n);
    in.remove_prefix(static_cast<std::size_t>(n));
    return p;
  }
};

namespace pdf2md {

/// Pool size and RPC size of one stage.
struct StageConfig {
  int replicas = 1;
  int batch_size = 1;
};

/// Everything that shapes the compiled pipeline.
struct PipelineConfig {
  int dpi = 150;
  std::string lang = "eng";
  std::string tessdata;  ///< empty: Tesseract's default data directory
  // Opening a PDF only parses its cross-reference table: cheap, so several per RPC.
  StageConfig open{1, 8};
  // Rendering a page costs a tenth of its OCR or less (1/11 on the samples, 1/38 on a
  // text-dense manual), so one renderer keeps two OCR engines fed and a second would only
  // take CPU from them. A page reaches OCR only when its whole render RPC has finished, so
  // RPCs stay small: four pages mix short documents and amortise the dispatch and the
  // document lookup, and the first pages still reach OCR after four renders (about 0.1 s at
  // 150 dpi).
  StageConfig render{1, 4};
  // Real-world PDFs crash PDF libraries: rendering runs in worker processes, so a document
  // that crashes the renderer fails alone (failures.jsonl) and the rest are converted.
  ro::Isolation render_isolation = ro::Isolation::process;
  // Two single-threaded OCR engines saturate two cores; larger RPCs gain nothing for a
  // CPU engine and would only delay the first finished document.
  StageConfig ocr{2, 1};
  StageConfig assemble{1, 8};
};

/// PDF path -> Markdown: open and expand into pages, render and OCR each page across
/// documents, reduce per document.
struct PdfToMarkdown : ro::Pipeline {
  explicit PdfToMarkdown(const PipelineConfig& config = {});

  ro::Module<OpenPdf> open;
  ro::Module<RenderPage> render;
  ro::Module<OcrPage> ocr;
  ro::Module<Assemble> assemble;

  ro::Port<Markdown> forward(ro::Port<std::string> pdf);
};

/// Compiles the pipeline; cheap, because engines load only in actor constructors.
ro::Compiled<PdfToMarkdown> compile_pipeline(const PipelineConfig& config = {},
                                             bool optimize = true);

/// The 1-based page sections of a Markdown output, in file order; used to check outputs.
struct MarkdownPage {
  std::uint32_t number = 0;
  std::string text;
};
std::vector<MarkdownPage> split_pages(const std::string& markdown);

}  // namespace pdf2md
