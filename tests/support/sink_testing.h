// Helpers shared by the sink tests (tests/execution/sink/, tests/api/sink_formats_test.cc): a
// three-level pipeline (documents expand to pages, pages to lines, a filter keeps some lines,
// two reduces gather them back) whose UDF counts its calls per root in memory shared with
// forked children (journal_testing.h), its JSON-lines sink, and a reader of what a sink's
// directory holds as a reader of its manifest sees it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "support/journal_testing.h"
#include <nlohmann/json.hpp>

#include <rayorch/codec.h>
#include <rayorch/detail/journal.h>
#include <rayorch/rayorch.h>
#include <rayorch/testing.h>

namespace sink_testing {

namespace ro = rayorch;
namespace F = rayorch::F;
namespace fs = std::filesystem;

struct Pages {  // document n -> pages n*10 + k, k < n % 3 + 1
  std::vector<ro::Row<std::vector<int>>> run(ro::Column<int> ns) {
    std::vector<ro::Row<std::vector<int>>> out;
    for (int n : ns) {
      std::vector<int> v;
      for (int k = 0; k <= n % 3; ++k) v.push_back(n * 10 + k);
      out.push_back(std::move(v));
    }
    return out;
  }
};

struct Lines {  // page p -> lines p*10 + j, j < p % 2 + 2; root = line / 100
  std::vector<ro::Row<std::vector<int>>> run(ro::Column<int> ps) {
    std::vector<ro::Row<std::vector<int>>> out;
    for (int p : ps) {
      std::vector<int> v;
      for (int j = 0; j < p % 2 + 2; ++j) v.push_back(p * 10 + j);
      out.push_back(std::move(v));
    }
    return out;
  }
};

struct Recognise {  // line x -> "x^2", counting calls per root; fails roots as journal_testing
  std::vector<ro::Row<std::string>> run(ro::Column<int> xs) {
    namespace jt = journal_testing;
    std::vector<ro::Row<std::string>> out;
    for (int x : xs) {
      const int root = x / 100;
      if (jt::shared()->recorded[root].load() != 0) ++jt::shared()->violations;
      ++jt::shared()->calls[root];
      if (const int us = jt::shared()->sleep_us.load(); us > 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(us));
      }
      if (root % 10 < jt::shared()->fail_mod.load()) {
        out.push_back(ro::RecordFailure{"bad root " + std::to_string(root)});
      } else {
        out.push_back(std::to_string(x * x));
      }
    }
    return out;
  }
};

struct Keep {  // keeps lines whose number is not a multiple of 3
  std::vector<ro::Row<bool>> run(ro::Column<int> xs) {
    std::vector<ro::Row<bool>> out;
    for (int x : xs) out.push_back(x % 3 != 0);
    return out;
  }
};

// With `process`, Recognise runs in worker processes (Isolation::process).
inline auto make_program(bool process = false) {
  return ro::compile([process](ro::Port<int> n) {
    ro::Module<Pages> pages;
    ro::Module<Lines> lines;
    ro::Module<Recognise> recognise = ro::Module<Recognise>().replicas(2).batch_size(3).isolation(
        process ? ro::Isolation::process : ro::Isolation::threads);
    ro::Module<Keep> keep = ro::Module<Keep>().batch_size(4);
    auto page = F::expand(pages(n));
    auto line = F::expand(lines(page));
    return F::reduce(F::reduce(F::filter(recognise(line), keep(line))));
  });
}
using Program = decltype(make_program());
using Out = typename Program::output;

// A root's JSON line: {"key", "row", "pages": [[line text, ...], ...]}.
inline void json_line(const ro::SinkRoot& root, std::string& out) {
  const auto output = root.as<Out>();
  nlohmann::json pages = nlohmann::json::array();
  for (const auto& page : output.value()) {
    nlohmann::json lines = nlohmann::json::array();
    for (const std::string& line : page) lines.push_back(line);
    pages.push_back(std::move(lines));
  }
  out += nlohmann::json{{"key", root.key}, {"row", root.row}, {"pages", std::move(pages)}}.dump();
}

// The same text for an output delivered to the caller (or "<outcome>" when not present).
template <class Output>
std::string rendered(const Output& o) {
  if (!o.ok()) return std::string(ro::to_string(o.issue().outcome));
  nlohmann::json pages = nlohmann::json::array();
  for (const auto& page : o.value()) {
    nlohmann::json lines = nlohmann::json::array();
    for (const std::string& line : page) lines.push_back(line);
    pages.push_back(std::move(lines));
  }
  return pages.dump();
}

// What a reader of the manifest sees.
struct Contents {
  bool have_manifest = false;
  bool complete = false;
  bool success_marker = false;
  std::map<std::size_t, std::vector<std::string>> rows;  // row -> its pages, once per line read
  std::vector<std::string> parts;                        // listed, in order
  std::set<std::string> files;                           // every file in the directory
  std::size_t listed_rows = 0;                           // the manifest's own count
};

inline Contents read_sink(const std::string& dir) {
  Contents c;
  for (const auto& e : fs::directory_iterator(dir)) c.files.insert(e.path().filename().string());
  std::ifstream m(fs::path(dir) / "_manifest.json");
  if (!m) return c;
  const nlohmann::json manifest = nlohmann::json::parse(m);
  c.have_manifest = true;
  c.complete = manifest.at("complete").get<bool>();
  c.listed_rows = manifest.at("rows").get<std::size_t>();
  c.success_marker = fs::exists(fs::path(dir) / "_SUCCESS");
  for (const auto& p : manifest.at("parts")) {
    const std::string name = p.at("name").get<std::string>();
    c.parts.push_back(name);
    std::ifstream in(fs::path(dir) / name);
    std::string line;
    std::size_t lines = 0;
    while (std::getline(in, line)) {
      const nlohmann::json j = nlohmann::json::parse(line);
      c.rows[j.at("row").get<std::size_t>()].push_back(j.at("pages").dump());
      ++lines;
    }
    if (lines != p.at("rows").get<std::size_t>()) c.rows[~std::size_t{0}].push_back(name);
  }
  return c;
}

// The journal's records as the reader counts them: the keys of root records outside a part
// group and of the part groups read whole, and each record's type and end offset.
struct Records {
  std::set<std::string> finished;                     // keys of counted root records
  std::vector<std::pair<char, std::size_t>> records;  // type, end offset
  std::set<std::string> uncommitted;                  // parts with an intent, not committed
};
inline Records read_records(const std::string& bytes) {
  Records r;
  std::string_view rest = bytes;
  std::size_t offset = 0;
  std::vector<std::string> group;
  std::uint64_t group_size = 0;
  std::string group_part;
  while (rest.size() >= 8) {
    std::string_view f = rest;
    const auto len = ro::detail::get_le<std::uint32_t>(f, "len");
    const auto sum = ro::detail::get_le<std::uint32_t>(f, "sum");
    if (f.size() < len || len == 0 || ro::detail::crc32(f.substr(0, len)) != sum) break;
    std::string_view in = f.substr(1, len - 1);
    const char type = f[0];
    if (type == 'R') {
      std::string key = ro::Codec<std::string>::decode(in);
      if (group_size > 0) {
        group.push_back(std::move(key));
        if (group.size() == group_size) {
          r.finished.insert(group.begin(), group.end());
          r.uncommitted.erase(group_part);
          group.clear();
          group_size = 0;
        }
      } else {
        r.finished.insert(std::move(key));
      }
    } else if (type == 'I') {
      r.uncommitted.insert(ro::Codec<std::string>::decode(in));
    } else if (type == 'P') {
      group_part = ro::Codec<std::string>::decode(in);
      (void)ro::Codec<std::uint64_t>::decode(in);
      group_size = ro::Codec<std::uint64_t>::decode(in);
    }
    offset += 8 + len;
    r.records.emplace_back(type, offset);
    rest = std::string_view(bytes).substr(offset);
  }
  return r;
}

inline ro::RunOptions sink_options(const std::string& journal, const std::string& dir,
                                   std::size_t rows_per_part = 5) {
  ro::RunOptions o = journal_testing::journal_options(journal);
  o.journal.key = journal_testing::row_key;
  o.sink.directory = dir;
  o.sink.format = ro::jsonl_parts(json_line);
  o.sink.rows_per_part = rows_per_part;
  return o;
}

// The uninterrupted outputs as text, by row.
inline std::vector<std::string> uninterrupted(int rows, int fail_mod = 0) {
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  journal_testing::shared()->fail_mod = fail_mod;
  auto r = ex.run(journal_testing::inputs(rows), {.progress = false});
  std::vector<std::string> out;
  for (const auto& o : r.outputs) out.push_back(rendered(o));
  return out;
}

}  // namespace sink_testing
