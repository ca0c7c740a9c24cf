// The pdf2md values as opaque C++ objects in Python (a page image stays one C++ buffer), and
// the sample corpus and scoring helpers of the pdf2md tests.
#if RAYORCH_PYTHON_PDF2MD

#include <cstdint>
#include <string>

#include "pdf2md/codec.h"
#include "pdf2md/pdf2md.h"
#include "pdf2md/samples.h"
#include "pickle_by_codec.h"
#include "workload_bindings.h"
#include <fmt/format.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

namespace rayorch::python {

namespace nb = nanobind;

void bind_pdf2md(nb::module_& m) {
  // The pdf2md values, as opaque C++ objects in Python (a page image stays one C++ buffer).
  auto page_ref =
      nb::class_<pdf2md::PageRef>(m, "PageRef", "One page of a PDF as listed by Pdf2mdOpen.");
  pickle_by_codec<pdf2md::PageRef>(page_ref);
  page_ref.def(nb::init<>())
      .def_rw("number", &pdf2md::PageRef::number, "1-based page number")
      .def("__repr__",
           [](const pdf2md::PageRef& r) { return fmt::format("PageRef(number={})", r.number); });
  auto page_image =
      nb::class_<pdf2md::PageImage>(m, "PageImage", "A rendered page: 8-bit grayscale pixels.");
  pickle_by_codec<pdf2md::PageImage>(page_image);
  page_image.def_ro("number", &pdf2md::PageImage::number, "1-based page number")
      .def_ro("width", &pdf2md::PageImage::width, "width in pixels")
      .def_ro("height", &pdf2md::PageImage::height, "height in pixels")
      .def_ro("dpi", &pdf2md::PageImage::dpi, "resolution")
      .def_prop_ro("pixels", &pixels_of<pdf2md::PageImage>, kPixelsDoc);
  auto document_info =
      nb::class_<pdf2md::DocumentInfo>(m, "DocumentInfo", "A document's name and page count.");
  pickle_by_codec<pdf2md::DocumentInfo>(document_info);
  document_info.def_ro("stem", &pdf2md::DocumentInfo::stem, "file name without extension")
      .def_ro("pages", &pdf2md::DocumentInfo::pages, "page count");
  auto markdown = nb::class_<pdf2md::Markdown>(m, "Markdown", "One finished document.");
  pickle_by_codec<pdf2md::Markdown>(markdown);
  markdown.def_ro("stem", &pdf2md::Markdown::stem, "file name without extension")
      .def_ro("pages", &pdf2md::Markdown::pages, "page count")
      .def_ro("text", &pdf2md::Markdown::text, "the Markdown text");
  m.def(
      "pdf2md_make_samples",
      [](const std::string& dir, int docs, std::uint64_t seed, int max_pages, int corrupt) {
        pdf2md::SampleOptions o;
        o.docs = docs;
        o.seed = seed;
        o.max_pages = max_pages;
        o.corrupt = corrupt;
        nb::list out;
        pdf2md::SampleCorpus corpus;
        {
          nb::gil_scoped_release release;
          corpus = pdf2md::make_samples(dir, o);
        }
        for (const auto& d : corpus.documents) out.append(nb::make_tuple(d.pdf, d.pages));
        return out;
      },
      nb::arg("dir"), nb::arg("docs") = 4, nb::arg("seed") = 1, nb::arg("max_pages") = 6,
      nb::arg("corrupt") = 1,
      "Writes sample PDFs with known text into `dir`; returns (pdf path, page texts) per "
      "readable document.");
  m.def("pdf2md_word_accuracy", &pdf2md::word_accuracy, nb::arg("expected"), nb::arg("actual"),
        "Word accuracy of `actual` against `expected` (1.0: every word right).");
}

}  // namespace rayorch::python

#endif  // RAYORCH_PYTHON_PDF2MD
