// The README's example: documents -> pages -> batched "OCR" -> per-document text.
#include <iostream>
#include <numeric>

#include <rayorch/rayorch.h>

namespace ro = rayorch;

struct Pages {  // one document -> its ordered pages
  std::vector<std::vector<int>> run(ro::Column<int> page_counts) {
    std::vector<std::vector<int>> out;
    for (int n : page_counts)
      out.emplace_back(n), std::iota(out.back().begin(), out.back().end(), 0);
    return out;
  }
};
struct Ocr {  // batched across documents; one instance per actor
  std::vector<std::string> run(ro::Column<int> pages) {
    std::vector<std::string> out;
    for (int p : pages) out.push_back("page " + std::to_string(p));
    return out;
  }
};
struct Join {  // the pages of one document, in page order
  std::vector<std::string> run(ro::Column<ro::Group<std::string>> docs) {
    std::vector<std::string> out;
    for (const auto& pages : docs)
      out.push_back(std::accumulate(pages.begin(), pages.end(), std::string()));
    return out;
  }
};

int main() {
  ro::Module<Pages> pages;
  ro::Module<Ocr> ocr = ro::Module<Ocr>().replicas(4).batch_size(32);
  ro::Module<Join> join;
  auto program = ro::compile(
      [&](ro::Port<int> n) { return join(ro::F::reduce(ocr(ro::F::expand(pages(n))))); });
  std::cout << program.explain();
  ro::Executor ex(program);  // the embedded local backend
  auto result = ex.run(std::vector<int>{3, 1, 0}, {.input_batch_size = 2, .progress = false});
  for (const auto& doc : result.outputs) std::cout << (doc.ok() ? doc.value() : "failed") << "\n";
}
