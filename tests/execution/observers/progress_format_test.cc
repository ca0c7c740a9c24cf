// The progress display's text (src/execution/observers/progress_format.cc): what it says, the
// bottleneck it marks, and how it is abbreviated to a width.
#include "execution/observers/progress_format.h"

#include <array>
#include <string>

#include <gtest/gtest.h>

namespace {

namespace ro = rayorch;
using rayorch::detail::bottleneck_call;
using rayorch::detail::format_duration;
using rayorch::detail::format_progress;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A run of five Calls, 40 s in (an event points into it: keep it alive while the event is read):
// 400 of 1000 roots done, 100 of them restored from a journal, so this run computed 300 roots
// at 7.5 roots/s and 600 are left: 80 s.
struct FiveCalls {
  std::array<ro::CallProgress, 5> calls{{
      {.call = "ReadManifest#0", .done = 400, .ready = 0, .in_flight = 0, .busy_share = 0.02},
      {.call = "SplitPages#1", .done = 380, .ready = 900, .in_flight = 4, .busy_share = 0.30},
      {.call = "RecognizeText#2", .done = 3000, .ready = 120, .in_flight = 16, .busy_share = 0.97},
      {.call = "MergePages#3", .done = 390, .ready = 0, .in_flight = 0, .busy_share = 0.01},
      {.call = "WriteMarkdown#4", .done = 300, .ready = 0, .in_flight = 0, .busy_share = 0.0},
  }};
  std::array<ro::PoolProgress, 1> pools{{{.pool = "RecognizeText", .actors = 4, .ready = 3}}};
  ro::ProgressEvent event() const {
    return {.roots_done = 400,
            .roots_total = 1000,
            .roots_restored = 100,
            .elapsed_seconds = 40,
            .calls = calls,
            .pools = pools};
  }
};

TEST(ProgressFormat, SaysRootsRateTimeLeftAndEachCall) {
  const FiveCalls five;  // holds what the event's spans point at
  const std::string text = format_progress(five.event(), 0);
  EXPECT_TRUE(has(text, "roots 400/1000 (40%) (100 restored) 7.5 roots/s ETA 1:20")) << text;
  EXPECT_TRUE(has(text, "RecognizeText actors 3/4 ready")) << text;
  EXPECT_TRUE(has(text, "| SplitPages#1 done 380 queued 900 in-flight 4 busy 30%")) << text;
  // The busiest Call is the bottleneck, not the one with the most Grains waiting.
  EXPECT_TRUE(has(text, "| *RecognizeText#2 done 3000 queued 120 in-flight 16 busy 97%")) << text;
  EXPECT_FALSE(has(text, "*SplitPages")) << text;
}

TEST(ProgressFormat, IsAbbreviatedToFitAndKeepsTheBottleneck) {
  const FiveCalls five;
  const ro::ProgressEvent e = five.event();
  const std::string full = format_progress(e, 0);
  ASSERT_GT(full.size(), 120u);
  for (std::size_t width : {210u, 180u, 120u, 80u, 64u}) {
    const std::string text = format_progress(e, width);
    EXPECT_LE(text.size(), width) << text;
    EXPECT_TRUE(has(text, "roots 400/1000")) << width << ": " << text;
    EXPECT_TRUE(has(text, "ETA 1:20")) << width << ": " << text;
    EXPECT_TRUE(has(text, "*Recogni")) << width << ": " << text;  // cut, never dropped
    EXPECT_FALSE(has(text, "...")) << width << ": " << text;      // abbreviated, not cut
  }
  // Short labels first, then names cut, then the idle Calls folded into a count...
  EXPECT_TRUE(has(format_progress(e, 210), "| *RecognizeText#2 3000 q120 f16 97% |"));
  EXPECT_TRUE(has(format_progress(e, 180), "| SplitPa~ 380 q900 f4 30% |"));
  EXPECT_TRUE(has(format_progress(e, 120), "| *Recogni~ 3000 q120 f16 97% | +3"));
  // ...and last everything but the bottleneck (the starting pool too).
  EXPECT_EQ(format_progress(e, 80),
            "roots 400/1000 7.5/s ETA 1:20 | *Recogni~ 3000 q120 f16 97% | +5");
  // Below what the roots and the bottleneck need, the text is cut.
  const std::string cut = format_progress(e, 40);
  EXPECT_EQ(cut, "roots 400/1000 7.5/s ETA 1:20 | *Reco...");
}

TEST(ProgressFormat, ALazySourceHasNoTotalAndNoTimeLeft) {
  const FiveCalls five;
  ro::ProgressEvent e = five.event();
  e.total_known = false;
  const std::string text = format_progress(e, 0);
  EXPECT_TRUE(has(text, "roots 400/? (100 restored) 7.5 roots/s |")) << text;
  EXPECT_FALSE(has(text, "ETA")) << text;
}

TEST(ProgressFormat, TheLastLineHasNoTimeLeft) {
  const FiveCalls five;
  ro::ProgressEvent e = five.event();
  e.roots_done = e.roots_total;
  e.final = true;
  EXPECT_FALSE(has(format_progress(e, 0), "ETA"));
}

TEST(ProgressFormat, NoCallIsTheBottleneckBeforeAnRpcEnded) {
  std::array<ro::CallProgress, 2> calls{{{.call = "A#0", .ready = 9}, {.call = "B#1"}}};
  EXPECT_FALSE(bottleneck_call(calls).has_value());
  const std::string text = format_progress({.roots_total = 9, .calls = calls}, 0);
  EXPECT_FALSE(has(text, "*")) << text;
  EXPECT_TRUE(has(text, "roots 0/9 (0%) 0 roots/s | A#0 done 0 queued 9")) << text;
  calls[0].busy_share = calls[1].busy_share = 0.5;  // a tie goes to the later Call
  EXPECT_EQ(bottleneck_call(calls), 1u);
}

TEST(ProgressFormat, DurationsReadAsAClock) {
  EXPECT_EQ(format_duration(0), "0:00");
  EXPECT_EQ(format_duration(80.4), "1:20");
  EXPECT_EQ(format_duration(3 * 3600 + 5 * 60 + 9), "3:05:09");
  EXPECT_EQ(format_duration(-1), "?");
}

}  // namespace
