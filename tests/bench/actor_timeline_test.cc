#include "actor_timeline.h"

#include <gtest/gtest.h>

namespace rayorch::bench {
namespace {

ActorTimeline two_actors() {
  // Actor 0 ready at 0, busy [0,4] and [5,10]; actor 1 ready at 6, busy [6,8]; OCR ends at 10.
  ActorTimeline t;
  t.actors.push_back({0.0, {{32, 0, 4}, {32, 5, 10}}});
  t.actors.push_back({6.0, {{8, 6, 8}}});
  return t;
}

TEST(OwnBusy, CountsEachActorFromItsOwnReadinessToTheEndOfTheOcrWork) {
  const OwnBusy b = own_busy(two_actors());
  EXPECT_EQ(b.counted, 2);
  EXPECT_EQ(b.ready_after_end, 0);
  EXPECT_DOUBLE_EQ(b.least, 0.5);  // actor 1: 2 s busy of 4 s since ready
  EXPECT_DOUBLE_EQ(b.median, (0.5 + 0.9) / 2);
  // Actor 1 is the least busy: ready at 6, its last batch ended 2 s before the end.
  EXPECT_DOUBLE_EQ(b.least_ready, 6.0);
  EXPECT_DOUBLE_EQ(b.least_idle_at_end, 2.0);
}

TEST(OwnBusy, AnActorReadyAfterTheWorkEndedIsCountedApart) {
  ActorTimeline t = two_actors();
  t.actors.push_back({12.0, {}});
  const OwnBusy b = own_busy(t);
  EXPECT_EQ(b.counted, 2);
  EXPECT_EQ(b.ready_after_end, 1);
  EXPECT_DOUBLE_EQ(b.least, 0.5);
}

TEST(ReadActorTimeline, ReadsTheResultFilesListAndIsEmptyWithoutOne) {
  const auto j = nlohmann::json::parse(
      R"({"ocr_actors": [{"ready": 1.5, "batches": [[3, 2.0, 2.5]]}, {"ready": 4, "batches": []}]})");
  const auto t = read_actor_timeline(j);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->actors.size(), 2u);
  EXPECT_DOUBLE_EQ(t->actors[0].ready, 1.5);
  EXPECT_DOUBLE_EQ(t->actors[0].batches[0][2], 2.5);
  EXPECT_DOUBLE_EQ(t->ocr_end(), 2.5);
  EXPECT_FALSE(read_actor_timeline(nlohmann::json::parse(R"({"ocr_batches": []})")));
}

TEST(ActorsOverTime, ShowsReadyAndAverageBusyActorsPerColumn) {
  const std::string plot = actors_over_time(two_actors(), 10.0, 5);
  // Columns of 2 s; an actor counts as ready in a column when it is ready by the column's end
  // (actor 1 from the column [4,6]); busy: [0,2] 1, [2,4] 1, [4,6] 0.5 (shown as 1), [6,8] 2,
  // [8,10] 1.
  EXPECT_NE(plot.find("ready |11222|"), std::string::npos) << plot;
  EXPECT_NE(plot.find("busy  |11121|"), std::string::npos) << plot;
}

}  // namespace
}  // namespace rayorch::bench
