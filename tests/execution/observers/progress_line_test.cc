// The progress line (src/execution/observers/progress_line.cc): done/total, and done/? while
// a lazy source has not ended and the total is not known.
#include <unistd.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "execution/observers/observers.h"

namespace {

namespace ro = rayorch;

// What the progress line writes to stderr for `e`.
std::string shown(const ro::ProgressEvent& e) {
  std::FILE* file = std::tmpfile();
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  ::dup2(::fileno(file), STDERR_FILENO);
  rayorch::detail::make_progress_line()->on_progress(e);
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  std::rewind(file);
  std::string text;
  for (int c = std::fgetc(file); c != EOF; c = std::fgetc(file)) text += static_cast<char>(c);
  std::fclose(file);
  return text;
}

TEST(ProgressLine, ShowsTheTotalOnceItIsKnown) {
  EXPECT_NE(shown({.roots_done = 5, .roots_total = 8}).find("roots 5/8"), std::string::npos);
}

TEST(ProgressLine, ShowsAQuestionMarkWhileALazySourceHasNotEnded) {
  const std::string text = shown({.roots_done = 5, .roots_total = 8, .total_known = false});
  EXPECT_NE(text.find("roots 5/?"), std::string::npos) << text;
  EXPECT_EQ(text.find("5/8"), std::string::npos) << text;
}

}  // namespace
