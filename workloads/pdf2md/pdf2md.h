// The document workload (DESIGN 3.3): a PDF becomes an ordered list of page images, pages
// of many documents are OCR'd together, and each document's page texts are gathered back in
// page order and assembled into Markdown.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
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

/// The first line of the marker every complete Markdown output ends with; `--resume` only
/// trusts outputs that carry it.
inline constexpr const char* kCompleteMarker = "<!-- pdf2md: complete";

/// Renders every page of a PDF at a fixed resolution. An unreadable, corrupt or encrypted PDF
/// is a RecordFailure of that document, never an exception.
class RenderPdf {
 public:
  explicit RenderPdf(int dpi);
  std::vector<ro::Row<std::vector<PageImage>>> run(ro::Column<std::string> paths);

 private:
  int dpi_;
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

/// Document name and page count, read without rendering.
class DocumentMeta {
 public:
  std::vector<ro::Row<DocumentInfo>> run(ro::Column<std::string> paths);
};

/// Builds one Markdown document (a heading per page) from its page texts in page order.
class Assemble {
 public:
  std::vector<ro::Row<Markdown>> run(ro::Column<ro::Group<std::string>> pages,
                                     ro::Column<DocumentInfo> info);
};

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
  StageConfig render{1, 1};
  // Two single-threaded OCR engines saturate two cores; larger RPCs gain nothing for a
  // CPU engine and would only delay the first finished document.
  StageConfig ocr{2, 1};
  StageConfig meta{1, 8};
  StageConfig assemble{1, 8};
};

/// PDF path -> Markdown: expand into pages, OCR across documents, reduce per document.
struct PdfToMarkdown : ro::Pipeline {
  explicit PdfToMarkdown(const PipelineConfig& config = {});

  ro::Module<RenderPdf> render;
  ro::Module<OcrPage> ocr;
  ro::Module<DocumentMeta> meta;
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
