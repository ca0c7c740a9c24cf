// The progress display (src/execution/observers/progress_line.cc): on a terminal a line
// redrawn in place (done/total, and done/? while a lazy source has not ended); in a log a
// plain line per interval of run time.
#include <unistd.h>

#include <cstdio>
#include <initializer_list>
#include <string>

#include <gtest/gtest.h>

#include "execution/observers/observers.h"

namespace {

namespace ro = rayorch;

// What `observer` writes to stderr for `events`.
std::string shown(ro::RunObserver& observer, std::initializer_list<ro::ProgressEvent> events) {
  std::FILE* file = std::tmpfile();
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  ::dup2(::fileno(file), STDERR_FILENO);
  for (const ro::ProgressEvent& e : events) observer.on_progress(e);
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  std::rewind(file);
  std::string text;
  for (int c = std::fgetc(file); c != EOF; c = std::fgetc(file)) text += static_cast<char>(c);
  std::fclose(file);
  return text;
}

std::string shown(const ro::ProgressEvent& e) {
  return shown(*rayorch::detail::make_progress_line(), {e});
}

TEST(ProgressLine, ShowsTheTotalOnceItIsKnown) {
  EXPECT_NE(shown({.roots_done = 5, .roots_total = 8}).find("roots 5/8"), std::string::npos);
}

TEST(ProgressLine, ShowsAQuestionMarkWhileALazySourceHasNotEnded) {
  const std::string text = shown({.roots_done = 5, .roots_total = 8, .total_known = false});
  EXPECT_NE(text.find("roots 5/?"), std::string::npos) << text;
  EXPECT_EQ(text.find("5/8"), std::string::npos) << text;
}

TEST(ProgressLine, RedrawsInPlaceAndEndsWithANewline) {
  const std::string text = shown({.roots_done = 8, .roots_total = 8, .final = true});
  EXPECT_EQ(text.rfind("\r\033[K[rayorch] roots 8/8", 0), 0u) << text;
  EXPECT_EQ(text.back(), '\n');
}

TEST(ProgressLog, WritesALinePerIntervalOfRunTimeAndALastOne) {
  const auto log = rayorch::detail::make_progress_log(std::chrono::seconds(30));
  const std::string text =
      shown(*log, {{.roots_done = 1, .roots_total = 9, .elapsed_seconds = 10},
                   {.roots_done = 3, .roots_total = 9, .elapsed_seconds = 31},
                   {.roots_done = 4, .roots_total = 9, .elapsed_seconds = 45},
                   {.roots_done = 8, .roots_total = 9, .elapsed_seconds = 95},
                   {.roots_done = 9, .roots_total = 9, .elapsed_seconds = 96},
                   {.roots_done = 9, .roots_total = 9, .elapsed_seconds = 97, .final = true}});
  EXPECT_EQ(text,
            "[rayorch] 0:31 roots 3/9 (33%) 0.0968 roots/s ETA 1:02\n"
            "[rayorch] 1:35 roots 8/9 (89%) 0.0842 roots/s ETA 0:12\n"
            "[rayorch] 1:37 roots 9/9 (100%) 0.0928 roots/s (done)\n");
}

TEST(ProgressLog, ARunShorterThanTheIntervalLogsNothing) {
  const auto log = rayorch::detail::make_progress_log(std::chrono::seconds(30));
  EXPECT_EQ(
      shown(*log, {{.roots_done = 1, .roots_total = 2, .elapsed_seconds = 10},
                   {.roots_done = 2, .roots_total = 2, .elapsed_seconds = 12, .final = true}}),
      "");
}

}  // namespace
