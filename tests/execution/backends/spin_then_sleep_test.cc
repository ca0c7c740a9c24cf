// The driver's polling before it sleeps (execution/backends/spin_then_sleep.h): it polls only
// after a wait whose answer was posted within the poll's time.
#include "execution/backends/spin_then_sleep.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace rayorch::detail {
namespace {

using namespace std::chrono_literals;

TEST(SpinThenSleep, PollsUntilReadyWhileAnswersComeFast) {
  // A poll time no scheduler delay reaches: only `ready` ends the poll.
  SpinThenSleep poller(std::chrono::hours(1));
  int calls = 0;
  EXPECT_TRUE(poller.poll(SpinThenSleep::Clock::time_point::max(), [&] { return ++calls == 3; }));
  EXPECT_EQ(calls, 3);
  poller.answered();
  calls = 0;
  EXPECT_TRUE(poller.poll(SpinThenSleep::Clock::time_point::max(), [&] { return ++calls == 5; }));
  EXPECT_EQ(calls, 5);
}

TEST(SpinThenSleep, AskingOnceAfterASlowAnswerAndPollingAgainAfterAFastOne) {
  SpinThenSleep poller(1ms);
  int calls = 0;
  poller.poll(SpinThenSleep::Clock::time_point::max(), [&] { return ++calls == 1; });
  std::this_thread::sleep_for(5ms);  // the answer took longer than the poll's time
  poller.answered();
  calls = 0;
  EXPECT_FALSE(poller.poll(SpinThenSleep::Clock::time_point::max(), [&] {
    ++calls;
    return false;
  }));
  EXPECT_EQ(calls, 1);  // asked once, then the caller sleeps
  poller.answered();    // answered at once: results come fast again
  calls = 0;
  EXPECT_TRUE(poller.poll(SpinThenSleep::Clock::time_point::max(), [&] { return ++calls == 2; }));
  EXPECT_EQ(calls, 2);
}

TEST(SpinThenSleep, AnAnswerPostedWithinThePollKeepsPollingThoughTheWaiterWokeLate) {
  SpinThenSleep poller(1ms);
  int calls = 0;
  const auto start = SpinThenSleep::Clock::now();
  EXPECT_FALSE(poller.poll(SpinThenSleep::Clock::time_point::max(), [&] {
    ++calls;
    return false;
  }));
  // The waiter slept, and woke well after its answer was posted within the poll's time: its
  // wake-up is the scheduler's, not the work's, so the next wait polls.
  std::this_thread::sleep_for(5ms);
  poller.answered(start);
  calls = 0;
  EXPECT_TRUE(poller.poll(SpinThenSleep::Clock::time_point::max(), [&] { return ++calls == 3; }));
  EXPECT_EQ(calls, 3);
  // An answer posted after the poll's time turns polling off, however it was seen.
  poller.answered(SpinThenSleep::Clock::now() + 5ms);
  calls = 0;
  EXPECT_FALSE(poller.poll(SpinThenSleep::Clock::time_point::max(), [&] {
    ++calls;
    return false;
  }));
  EXPECT_EQ(calls, 1);
}

TEST(SpinThenSleep, APassedDeadlineEndsThePoll) {
  SpinThenSleep poller(std::chrono::hours(1));
  int calls = 0;
  EXPECT_FALSE(poller.poll(SpinThenSleep::Clock::now() - 1s, [&] {
    ++calls;
    return false;
  }));
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace rayorch::detail
