// The driver's polling before it sleeps (execution/backends/spin_then_sleep.h): it polls only
// after a wait that was answered within the poll's time.
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
