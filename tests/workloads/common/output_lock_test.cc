// workloads/common/output_lock: one run per output directory, released when its holder ends,
// however it ends.
#include "common/output_lock.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "common/files.h"
#include "support/workload_testing.h"
#include <gtest/gtest.h>

namespace {
using workload_testing::TempDir;
using workloads::InputError;
using workloads::OutputLock;

TEST(OutputLock, ASecondHolderIsRefusedUntilTheFirstEnds) {
  TempDir tmp("rayorch-lock");
  {
    const OutputLock first(tmp.path(), "pdf2md");
    EXPECT_TRUE(first.held());
    try {
      OutputLock second(tmp.path(), "pdf2md");
      FAIL() << "a second lock was granted";
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(
          msg.find("output directory " + tmp.path().string() + " is in use by another pdf2md run"),
          std::string::npos)
          << msg;
    }
    OutputLock moved = OutputLock(tmp.path() / "..", "pdf2md");  // another folder: free
    EXPECT_TRUE(moved.held());
  }
  EXPECT_TRUE(OutputLock(tmp.path(), "pdf2md").held());
}

TEST(OutputLock, AHolderKilledWithSigkillReleasesIt) {
  TempDir tmp("rayorch-lock");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const OutputLock held(tmp.path(), "video2jsonl");
    const char byte = 1;
    (void)!::write(ready[1], &byte, 1);
    ::pause();
    ::_exit(0);
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  EXPECT_THROW(OutputLock(tmp.path(), "video2jsonl"), InputError);
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(OutputLock(tmp.path(), "video2jsonl").held());
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST(OutputLock, AMissingDirectoryIsNamed) {
  TempDir tmp("rayorch-lock");
  try {
    OutputLock lock(tmp.path() / "nope", "pdf2md");
    FAIL() << "locked a missing directory";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open output directory"), std::string::npos);
  }
}

}  // namespace
