// Resuming a conversion from its run journal (workloads/pdf2md/convert.cc): journaled
// documents restored and the rest converted, no journal kept without one, and a run killed
// with SIGKILL resumed to the outputs of an uninterrupted run.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "pdf2md/convert.h"
#include "pdf2md/pdf2md.h"
#include "pdf2md/samples.h"
#include "support/workload_testing.h"
#include "workloads/pdf2md/pdf2md_testing.h"
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <rayorch/codec.h>
#include <rayorch/detail/journal.h>
#include <rayorch/rayorch.h>

namespace fs = std::filesystem;
namespace ro = rayorch;

namespace {

using pdf2md_testing::kDpi;
using pdf2md_testing::options_for;
using pdf2md_testing::TempDir;
using workload_testing::read_file;
using workload_testing::read_jsonl;
using workload_testing::sorted;
using workload_testing::temporaries_in;

}  // namespace

TEST(Pdf2mdConvert, ResumeRestoresJournaledDocumentsAndConvertsTheRest) {
  TempDir tmp;
  const fs::path in = tmp.path() / "in";
  const fs::path out = tmp.path() / "out";
  const pdf2md::SampleCorpus corpus =
      pdf2md::make_samples(in.string(), {.docs = 4, .seed = 1, .max_pages = 2, .corrupt = 1});

  // A first run that only got through two documents.
  pdf2md::ConvertSummary first = pdf2md::convert(
      options_for({(in / "doc-000.pdf").string(), (in / "doc-001.pdf").string()}, out));
  ASSERT_EQ(sorted(first.converted), (std::vector<std::string>{"doc-000", "doc-001"}));
  EXPECT_TRUE(fs::exists(out / ".pdf2md-journal"));
  const std::string kept = read_file(out / "doc-000.md");
  const std::string lost = read_file(out / "doc-001.md");
  const auto kept_time = fs::last_write_time(out / "doc-000.md");

  // What an interruption (or a user) can leave behind: a lost output, a partial file of a
  // document the journal does not know, and the temporary file of a write that never
  // reached its rename.
  fs::remove(out / "doc-001.md");
  std::ofstream(out / "doc-002.md") << "# doc-002\n\n## Page 1\n\nDocument 2 pa";
  std::ofstream(out / ".doc-003.md.pdf2md-tmp-999") << "# doc-003\n";

  // The directory has more documents now: the journal's records still count.
  pdf2md::ConvertOptions again = options_for({in.string()}, out);
  again.resume = true;
  again.report_path = (tmp.path() / "report.json").string();
  const pdf2md::ConvertSummary second = pdf2md::convert(again);
  EXPECT_EQ(second.documents, 5u);
  EXPECT_EQ(second.skipped, (std::vector<std::string>{"doc-000", "doc-001"}));
  EXPECT_EQ(sorted(second.converted), (std::vector<std::string>{"doc-002", "doc-003"}));
  ASSERT_EQ(second.failures.size(), 1u);
  EXPECT_EQ(second.failures[0].stem, "corrupt");
  const auto report = nlohmann::json::parse(read_file(again.report_path));
  EXPECT_EQ(sorted(report.at("pdf2md").at("converted").get<std::vector<std::string>>()),
            (std::vector<std::string>{"doc-002", "doc-003"}));
  EXPECT_EQ(report.at("pdf2md").at("skipped").get<std::vector<std::string>>(),
            (std::vector<std::string>{"doc-000", "doc-001"}));
  EXPECT_EQ(report.at("roots_restored"), 2);

  // A complete output stays untouched; a lost one comes back from the journal, unconverted.
  EXPECT_EQ(read_file(out / "doc-000.md"), kept);
  EXPECT_EQ(fs::last_write_time(out / "doc-000.md"), kept_time);
  EXPECT_EQ(read_file(out / "doc-001.md"), lost);
  EXPECT_TRUE(temporaries_in(out).empty());
  const pdf2md::CorpusCheck check = pdf2md::check_outputs(corpus, out.string());
  for (const pdf2md::DocumentCheck& d : check.documents) {
    EXPECT_TRUE(d.present && d.pages_in_order) << d.stem;
    EXPECT_GE(d.accuracy, 0.95) << d.stem;
  }
  EXPECT_EQ(check.failed_listed, (std::vector<std::string>{"corrupt"}));

  // Nothing left to do but the document that can never succeed: it is tried again.
  const pdf2md::ConvertSummary third = pdf2md::convert(again);
  EXPECT_TRUE(third.converted.empty());
  EXPECT_EQ(third.skipped.size(), 4u);
  ASSERT_EQ(third.failures.size(), 1u);
  EXPECT_EQ(third.failures[0].stem, "corrupt");
  const auto failures = read_jsonl(out / "failures.jsonl");
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].at("stem"), "corrupt");
  EXPECT_EQ(failures[0].at("key").get<std::string>().rfind("corrupt|dpi=", 0), 0u);
  EXPECT_EQ(failures[0].at("outcome"), "suppressed");  // its document could not be opened
  EXPECT_EQ(failures[0].at("call").get<std::string>().rfind("OpenPdf", 0), 0u);
  EXPECT_EQ(failures[0].at("restored"), false);

  // Other pipeline options: the journal's documents do not match them, so nothing restores.
  pdf2md::ConvertOptions other = again;
  other.pipeline.dpi = kDpi + 20;
  const pdf2md::ConvertSummary redone = pdf2md::convert(other);
  EXPECT_TRUE(redone.skipped.empty());
  EXPECT_EQ(redone.converted.size(), 4u);

  // Without --resume the journal starts over: everything is converted again.
  const pdf2md::ConvertSummary fresh = pdf2md::convert(options_for({in.string()}, out));
  EXPECT_TRUE(fresh.skipped.empty());
  EXPECT_EQ(fresh.converted.size(), 4u);
}

TEST(Pdf2mdConvert, NoJournalKeepsNoneAndCannotResume) {
  TempDir tmp;
  const fs::path in = tmp.path() / "in";
  const fs::path out = tmp.path() / "out";
  pdf2md::make_samples(in.string(), {.docs = 2, .seed = 2, .max_pages = 1});
  ASSERT_EQ(pdf2md::convert(options_for({in.string()}, out)).converted.size(), 2u);
  ASSERT_TRUE(fs::exists(out / ".pdf2md-journal"));

  // A run without a journal converts everything and leaves no journal behind, not even the
  // old one, which would describe the earlier outputs.
  pdf2md::ConvertOptions plain = options_for({in.string()}, out);
  plain.journal = false;
  const pdf2md::ConvertSummary s = pdf2md::convert(plain);
  EXPECT_EQ(s.converted.size(), 2u);
  EXPECT_TRUE(s.skipped.empty());
  EXPECT_FALSE(fs::exists(out / ".pdf2md-journal"));

  plain.resume = true;
  try {
    pdf2md::convert(plain);
    ADD_FAILURE() << "resume without a journal was accepted";
  } catch (const pdf2md::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--no-journal"), std::string::npos) << e.what();
  }
}

#ifdef RAYORCH_CLI_PATH
// The stems of the documents recorded finished (present) in a pdf2md run journal, read by
// the journal's own rules: records up to the first whose length or checksum does not hold,
// and a document's Markdown file (a part of the sink, docs/IO.md) counts only once its part
// record and the root record after it are both there.
std::set<std::string> journaled_documents(const fs::path& journal) {
  const std::string bytes = read_file(journal);
  std::set<std::string> present;
  std::string_view rest = bytes;
  std::uint64_t group = 0;           // root records still to come of the last part record
  std::vector<std::string> pending;  // the keys of its root records read so far
  while (rest.size() >= 8) {
    std::string_view f = rest;
    const auto len = ro::detail::get_le<std::uint32_t>(f, "length");
    const auto sum = ro::detail::get_le<std::uint32_t>(f, "checksum");
    if (len == 0 || f.size() < len || ro::detail::crc32(f.substr(0, len)) != sum) break;
    std::string_view in = f.substr(0, len);
    if (in[0] == 'P') {
      in.remove_prefix(1);
      (void)ro::Codec<std::string>::decode(in);      // the part's name
      (void)ro::Codec<std::uint64_t>::decode(in);    // its sequence number
      group = ro::Codec<std::uint64_t>::decode(in);  // its roots
    } else if (in[0] == 'R') {
      in.remove_prefix(1);
      const std::string key = ro::Codec<std::string>::decode(in);
      (void)ro::Codec<std::uint32_t>::decode(in);  // outputs
      const bool ok = ro::Codec<std::uint8_t>::decode(in) == 0;
      if (group > 0) {
        pending.push_back(key);  // a part's roots count once the whole group is read
        if (--group == 0) present.insert(pending.begin(), pending.end());
        if (group == 0) pending.clear();
      } else if (ok) {
        present.insert(key);
      } else {
        present.erase(key);  // a later record replaces an earlier one
      }
    } else if (group > 0) {
      break;  // another record inside a part's group: the group is torn, the file ends here
    }
    rest.remove_prefix(8 + len);
  }
  return present;
}

// `rayorch pdf2md` in a child process is killed with SIGKILL once it has written a number of
// documents the seed picks (from its output, not a delay), then resumed with --resume: every
// document is complete with the Markdown of an uninterrupted run, no partial or temporary
// file is left, and the documents the journal held at the kill are restored, not converted
// again. RAYORCH_TEST_SEED=<seed> replays a run.
TEST(Pdf2mdConvert, ResumesAfterSigkillWithEveryDocumentCompleteAndNoneRedone) {
  const char* given = std::getenv("RAYORCH_TEST_SEED");
  const unsigned seed = given != nullptr && *given != '\0'
                            ? static_cast<unsigned>(std::stoul(given))
                            : std::random_device{}();
  std::printf("ResumesAfterSigkill seed %u (replay: RAYORCH_TEST_SEED=%u)\n", seed, seed);
  std::fflush(stdout);
  std::mt19937 rng(seed);
  TempDir tmp;
  const fs::path in = tmp.path() / "in";
  const pdf2md::SampleCorpus corpus =
      pdf2md::make_samples(in.string(), {.docs = 8, .seed = 3, .max_pages = 3, .corrupt = 1});
  const fs::path reference = tmp.path() / "reference";
  const pdf2md::ConvertSummary uninterrupted =
      pdf2md::convert(options_for({in.string()}, reference));
  ASSERT_EQ(uninterrupted.converted.size(), 8u);

  int killed = 0;
  for (int point = 0; point < 2; ++point) {
    const std::size_t kill_after = 1 + rng() % 5;  // documents written before the kill
    SCOPED_TRACE(
        fmt::format("point {}: kill after {} documents, seed {}", point, kill_after, seed));
    const fs::path out = tmp.path() / fmt::format("out-{}", point);
    const std::string dpi = std::to_string(kDpi);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::execl(RAYORCH_CLI_PATH, RAYORCH_CLI_PATH, "pdf2md", in.c_str(), "-o", out.c_str(), "--dpi",
              dpi.c_str(), "--no-progress", "--quiet", "--ocr-replicas", "1", "--render-replicas",
              "1", "--input-batch-size", "2", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Watch the output directory; kill as soon as enough documents are there.
    int status = 0;
    bool exited = false;
    while (true) {
      std::size_t written = 0;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(out, ec)) {
        const std::string name = e.path().filename().string();
        if (name.ends_with(".md") && !name.starts_with(".")) ++written;
      }
      if (written >= kill_after) break;
      if (::waitpid(child, &status, WNOHANG) == child) {
        exited = true;
        break;
      }
      ::usleep(1000);
    }
    if (!exited) {
      ::kill(child, SIGKILL);
      ASSERT_EQ(::waitpid(child, &status, 0), child);
    }
    ASSERT_FALSE(exited && !(WIFEXITED(status) && WEXITSTATUS(status) <= 1))
        << "pdf2md failed on its own, status " << status;
    if (WIFSIGNALED(status)) ++killed;
    std::set<std::string> recorded;  // stems
    for (const std::string& key : journaled_documents(out / ".pdf2md-journal")) {
      recorded.insert(key.substr(0, key.find('|')));
    }

    pdf2md::ConvertOptions resume = options_for({in.string()}, out);
    resume.resume = true;
    const pdf2md::ConvertSummary s = pdf2md::convert(resume);
    // The journal's documents were restored, the others converted, each once.
    EXPECT_EQ(std::set<std::string>(s.skipped.begin(), s.skipped.end()), recorded);
    std::set<std::string> done(s.skipped.begin(), s.skipped.end());
    for (const std::string& stem : s.converted) {
      EXPECT_EQ(recorded.count(stem), 0u) << stem << " was recorded finished but converted again";
      EXPECT_TRUE(done.insert(stem).second) << stem << " converted twice";
    }
    EXPECT_EQ(done.size(), 8u);
    // Every document complete, as an uninterrupted run wrote it; nothing partial or
    // temporary; the corrupt file listed once.
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(out)) names.insert(e.path().filename().string());
    std::set<std::string> expected_names = {"failures.jsonl", ".pdf2md-journal", "_manifest.json",
                                            "_SUCCESS"};
    for (const auto& d : corpus.documents) {
      expected_names.insert(d.stem + ".md");
      EXPECT_EQ(read_file(out / (d.stem + ".md")), read_file(reference / (d.stem + ".md")))
          << d.stem;
    }
    EXPECT_EQ(names, expected_names);
    EXPECT_TRUE(temporaries_in(out).empty());
    const auto failures = read_jsonl(out / "failures.jsonl");
    ASSERT_EQ(failures.size(), 1u);
    EXPECT_EQ(failures[0].at("stem"), "corrupt");
  }
  std::printf("ResumesAfterSigkill: %d of 2 runs killed\n", killed);
}
#endif
