// Shared by the compiler tests (tests/program/): the message of a CompileError, and the
// Render -> expand -> Ocr -> reduce -> Assemble pipeline whose compiled topology the explain()
// tests print and whose compiled program the snapshot tests keep.
#pragma once

#include <cctype>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace compiler_testing {

namespace ro = rayorch;

// The message of the CompileError `f` throws; a test failure when it throws nothing.
template <class F>
std::string compile_error(F&& f) {
  try {
    f();
  } catch (const ro::CompileError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected ro::CompileError";
  return {};
}

struct Render {
  // "a;b;c" -> pages ["a", "b", "c"]; "" -> no page.
  std::vector<std::vector<std::string>> run(ro::Column<std::string> pdfs) {
    std::vector<std::vector<std::string>> out;
    for (const std::string& pdf : pdfs) {
      std::vector<std::string> pages;
      std::string page;
      std::istringstream in(pdf);
      while (std::getline(in, page, ';')) pages.push_back(page);
      out.push_back(std::move(pages));
    }
    return out;
  }
};

struct Ocr {
  std::vector<std::string> run(ro::Column<std::string> pages) {
    std::vector<std::string> out;
    for (std::string page : pages) {
      for (char& ch : page) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      out.push_back(page);
    }
    return out;
  }
};

struct Assemble {
  std::vector<std::string> run(ro::Column<ro::Group<std::string>> texts,
                               ro::Column<std::string> pdfs) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < texts.size(); ++i) {
      std::string doc = pdfs[i] + " =>";
      for (const std::string& t : texts[i]) doc += " " + t;
      out.push_back(doc);
    }
    return out;
  }
};

struct PdfToMarkdown : ro::Pipeline {
  ro::Module<Render> render = ro::Module<Render>().replicas(2);
  ro::Module<Ocr> ocr = ro::Module<Ocr>().replicas(4).batch_size(32);
  ro::Module<Assemble> assemble;
  ro::Port<std::string> forward(ro::Port<std::string> pdf) {
    auto pages = ro::F::expand(render(pdf));
    return assemble(ro::F::reduce(ocr(pages)), pdf);
  }
};

}  // namespace compiler_testing
