// The README's pipeline-struct example: Modules as members, forward() on Ports, a one-line
// mask as a plain function, compiled from a temporary.
#include <iostream>
#include <string>
#include <vector>

#include <rayorch/rayorch.h>

namespace ro = rayorch;

struct Pages {  // one document -> its ordered pages (the text of each)
  std::vector<std::vector<std::string>> run(ro::Column<std::string> docs) {
    std::vector<std::vector<std::string>> out;
    for (const std::string& doc : docs) {
      out.emplace_back();
      std::string::size_type start = 0, end;
      while ((end = doc.find('|', start)) != std::string::npos)
        out.back().push_back(doc.substr(start, end - start)), start = end + 1;
      out.back().push_back(doc.substr(start));
    }
    return out;
  }
};
struct Ocr {  // batched across documents
  std::vector<std::string> run(ro::Column<std::string> pages) {
    std::vector<std::string> out;
    for (std::string page : pages) {
      for (char& ch : page) ch = static_cast<char>(ch >= 'a' && ch <= 'z' ? ch - 32 : ch);
      out.push_back(page);
    }
    return out;
  }
};
struct Join {  // the kept pages of one document, in page order, after its title
  std::vector<std::string> run(ro::Column<ro::Group<std::string>> pages,
                               ro::Column<std::string> titles, std::string separator) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < pages.size(); ++i) {
      std::string doc = titles[i] + ":";
      for (const std::string& page : pages[i]) doc += separator + page;
      out.push_back(doc);
    }
    return out;
  }
};

struct Documents : ro::Pipeline {
  ro::Module<Pages> pages;
  ro::Module<Ocr> ocr = ro::Module<Ocr>().replicas(2).batch_size(8);
  ro::Module<Join> join;
  ro::Function<bool(const std::string&)> not_blank{[](const std::string& p) { return !p.empty(); }};

  ro::Port<std::string> forward(ro::Port<std::string> doc, ro::Port<std::string> title) {
    auto page = ro::F::expand(pages(doc));
    auto text = ocr(ro::F::filter(page, not_blank(page)));  // blank pages never reach OCR
    return join(ro::F::reduce(text), title, std::string(" "));
  }
};

int main() {
  ro::Compiled<Documents> program = ro::compile(Documents{});
  ro::Executor ex(program);
  auto result = ex.run(std::vector<std::string>{"a|b||c", "", "only"},
                       std::vector<std::string>{"first", "empty", "third"}, {.progress = false});
  for (const auto& doc : result.outputs) std::cout << (doc.ok() ? doc.value() : "failed") << "\n";
}
