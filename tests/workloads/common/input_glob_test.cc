// workloads/common/input_glob: what a quoted glob pattern matches.
#include "common/input_glob.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/files.h"
#include "support/workload_testing.h"
#include <gtest/gtest.h>

namespace {
namespace fs = std::filesystem;
using workload_testing::TempDir;
using workloads::glob_files;

void touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "x";
}

// corpus/{a.pdf, b.PDF, notes.txt, .hidden.pdf, 2024/c.pdf, 2024/deep/d.pdf, .cache/e.pdf}
class InputGlob : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* f : {"a.pdf", "b.PDF", "notes.txt", ".hidden.pdf", "2024/c.pdf",
                          "2024/deep/d.pdf", ".cache/e.pdf"}) {
      touch(root() / f);
    }
  }
  fs::path root() const { return tmp_.path() / "corpus"; }
  std::string at(const std::string& rel) const { return (root() / rel).string(); }

 private:
  TempDir tmp_{"rayorch-glob"};
};

TEST(InputGlobPattern, MetacharactersMakeAPattern) {
  EXPECT_TRUE(workloads::is_glob_pattern("a/*.pdf"));
  EXPECT_TRUE(workloads::is_glob_pattern("scan-?.pdf"));
  EXPECT_TRUE(workloads::is_glob_pattern("scan-[0-9].pdf"));
  EXPECT_FALSE(workloads::is_glob_pattern("a/b.pdf"));
}

TEST_F(InputGlob, StarMatchesOneFolderLevelSortedWithoutHiddenFiles) {
  EXPECT_EQ(glob_files(at("*.pdf")), (std::vector<std::string>{at("a.pdf")}));
  EXPECT_EQ(glob_files(at("*")),
            (std::vector<std::string>{at("a.pdf"), at("b.PDF"), at("notes.txt")}));
  EXPECT_EQ(glob_files(at(".*.pdf")), (std::vector<std::string>{at(".hidden.pdf")}));
  EXPECT_EQ(glob_files(at("*/*.pdf")), (std::vector<std::string>{at("2024/c.pdf")}));
}

TEST_F(InputGlob, DoubleStarMatchesAnyNumberOfFoldersButNotHiddenOnes) {
  EXPECT_EQ(glob_files(at("**/*.pdf")),
            (std::vector<std::string>{at("2024/c.pdf"), at("2024/deep/d.pdf"), at("a.pdf")}));
  EXPECT_EQ(glob_files(at("2024/**")),
            (std::vector<std::string>{at("2024/c.pdf"), at("2024/deep/d.pdf")}));
  EXPECT_EQ(glob_files(at("**/deep/*.pdf")), (std::vector<std::string>{at("2024/deep/d.pdf")}));
  // `**` twice finds each file once.
  EXPECT_EQ(glob_files(at("**/**/d.pdf")), (std::vector<std::string>{at("2024/deep/d.pdf")}));
}

TEST_F(InputGlob, DoubleStarDoesNotFollowALinkToAFolder) {
  fs::create_directory_symlink(root(), root() / "2024" / "loop");
  EXPECT_EQ(glob_files(at("**/c.pdf")), (std::vector<std::string>{at("2024/c.pdf")}));
}

TEST_F(InputGlob, BracketsAndQuestionMarksMatchAsFnmatchDoes) {
  EXPECT_EQ(glob_files(at("[ab].*")), (std::vector<std::string>{at("a.pdf"), at("b.PDF")}));
  EXPECT_EQ(glob_files(at("?.pdf")), (std::vector<std::string>{at("a.pdf")}));
}

TEST_F(InputGlob, NothingMatchingIsAnEmptyList) {
  EXPECT_TRUE(glob_files(at("*.mp4")).empty());
  EXPECT_TRUE(glob_files(at("missing/*.pdf")).empty());
  EXPECT_TRUE(glob_files(at("a.pdf/*")).empty());
}

TEST_F(InputGlob, ARelativePatternGivesRelativePaths) {
  const fs::path before = fs::current_path();
  fs::current_path(root());
  const std::vector<std::string> found = glob_files("**/c.pdf");
  const std::vector<std::string> here = glob_files("*.pdf");
  fs::current_path(before);
  EXPECT_EQ(found, (std::vector<std::string>{"2024/c.pdf"}));
  EXPECT_EQ(here, (std::vector<std::string>{"a.pdf"}));
}

TEST_F(InputGlob, AnUnreadableFolderOnTheWayIsNamed) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads every folder";
  fs::permissions(root() / "2024", fs::perms::owner_all, fs::perm_options::remove);
  try {
    glob_files(at("**/*.pdf"));
    FAIL() << "expected InputError";
  } catch (const workloads::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("2024"), std::string::npos) << e.what();
  }
  fs::permissions(root() / "2024", fs::perms::owner_all, fs::perm_options::add);
}

}  // namespace
