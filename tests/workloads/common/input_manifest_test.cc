// workloads/common/input_manifest: JSON-lines manifests of input files, and their errors.
#include "common/input_manifest.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/files.h"
#include "support/workload_testing.h"
#include <gtest/gtest.h>

namespace {
namespace fs = std::filesystem;
using workload_testing::TempDir;
using workloads::InputError;
using workloads::read_path_manifest;

class InputManifest : public ::testing::Test {
 protected:
  fs::path write(const std::string& name, const std::string& text) {
    const fs::path p = tmp_.path() / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p;
  }
  // The InputError message of reading `manifest`; fails the test when it reads.
  std::string error_of(const fs::path& manifest, const std::string& field = "path") {
    try {
      read_path_manifest(manifest.string(), field);
    } catch (const InputError& e) {
      return e.what();
    }
    ADD_FAILURE() << manifest << " read without an error";
    return "";
  }
  const fs::path& dir() const { return tmp_.path(); }

 private:
  TempDir tmp_{"rayorch-manifest"};
};

TEST_F(InputManifest, RowsInOrderRelativePathsFromTheManifestsFolder) {
  const fs::path m = write("lists/docs.jsonl",
                           "{\"path\": \"b.pdf\", \"lang\": \"deu\"}\n"
                           "\n"
                           "{\"path\": \"/abs/a.pdf\"}\n"
                           "{\"path\": \"../x/./c.pdf\"}\n");
  const auto rows = read_path_manifest(m.string(), "path");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].path, (dir() / "lists" / "b.pdf").string());
  EXPECT_EQ(rows[0].line, 1u);
  EXPECT_EQ(rows[1].path, "/abs/a.pdf");
  EXPECT_EQ(rows[1].line, 3u);  // the blank line is skipped but counted
  EXPECT_EQ(rows[2].path, (dir() / "x" / "c.pdf").string());
  EXPECT_EQ(rows[2].manifest, m.string());
}

TEST_F(InputManifest, TheFieldCanBeNamed) {
  const fs::path m = write("docs.jsonl", "{\"file\": \"a.pdf\"}\n");
  EXPECT_EQ(read_path_manifest(m.string(), "file").at(0).path, (dir() / "a.pdf").string());
  const std::string msg = error_of(m);
  EXPECT_NE(msg.find("docs.jsonl, line 1: no 'path' field (the row has 'file')"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("--path-field"), std::string::npos) << msg;
}

TEST_F(InputManifest, AMalformedLineIsNamedWithItsFileAndLine) {
  const fs::path m = write("docs.jsonl", "{\"path\": \"a.pdf\"}\n{\"path\": \"b.pdf\"\n");
  const std::string msg = error_of(m);
  EXPECT_NE(msg.find("docs.jsonl, line 2: not valid JSON"), std::string::npos) << msg;
}

TEST_F(InputManifest, ARowThatIsNotAnObjectOrHasNoStringPathIsNamed) {
  EXPECT_NE(error_of(write("a.jsonl", "\"a.pdf\"\n"))
                .find("a.jsonl, line 1: a manifest row must be a JSON object"),
            std::string::npos);
  EXPECT_NE(error_of(write("b.jsonl", "{\"path\": 7}\n"))
                .find("b.jsonl, line 1: 'path' must be a non-empty string, not 7"),
            std::string::npos);
  EXPECT_NE(error_of(write("c.jsonl", "{\"path\": \"\"}\n")).find("c.jsonl, line 1:"),
            std::string::npos);
}

TEST_F(InputManifest, AnEmptyOrMissingManifestIsAnError) {
  EXPECT_NE(error_of(write("empty.jsonl", "\n  \n"))
                .find("manifest " + (dir() / "empty.jsonl").string() + " has no rows"),
            std::string::npos);
  EXPECT_NE(error_of(dir() / "nope.jsonl").find("manifest not found"), std::string::npos);
  fs::create_directories(dir() / "plain");
  EXPECT_NE(error_of(dir() / "plain").find("is a folder but not a sink's output"),
            std::string::npos);
}

TEST_F(InputManifest, ASinksFolderIsReadThroughItsCommittedParts) {
  // A JSON-lines sink's output: two committed parts listed in _manifest.json, and a stray
  // file that is not one of them.
  const fs::path out = dir() / "listing";
  fs::create_directories(out);
  std::ofstream(out / "rows-00000.jsonl") << "{\"path\": \"a.pdf\"}\n{\"path\": \"b.pdf\"}\n";
  std::ofstream(out / "rows-00001.jsonl") << "{\"path\": \"c.pdf\"}\n";
  std::ofstream(out / "rows-00002.jsonl.tmp") << "{\"path\": \"stray.pdf\"}\n";
  std::ofstream(out / "_manifest.json")
      << R"({"format": "rayorch-sink", "version": 1, "complete": true, "rows": 3,
             "parts": [{"name": "rows-00000.jsonl", "rows": 2},
                       {"name": "rows-00001.jsonl", "rows": 1}]})";
  std::vector<std::string> paths;
  for (const auto& e : read_path_manifest(out.string(), "path")) paths.push_back(e.path);
  EXPECT_EQ(paths, (std::vector<std::string>{(out / "a.pdf").string(), (out / "b.pdf").string(),
                                             (out / "c.pdf").string()}));

  // Until its run has accounted for every row, the listing is refused, not read in part.
  std::ofstream(out / "_manifest.json")
      << R"({"format": "rayorch-sink", "version": 1, "complete": false, "rows": 2,
             "parts": [{"name": "rows-00000.jsonl", "rows": 2}]})";
  EXPECT_NE(error_of(out).find("has not accounted for every row"), std::string::npos);
}

}  // namespace
