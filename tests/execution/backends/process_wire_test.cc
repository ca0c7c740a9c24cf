// The worker protocol's frames (src/execution/backends/process_wire.h): with an arena, a
// payload of any size is written by its encoder straight into the memory shared with the
// other process (no copy of it in between) and read from there; without one, or when the
// arena cannot grow, it crosses the socket; a broken connection or a malformed header is a
// false return, never a crash; a read that polls first takes the same frames as one that
// blocks.
#include "execution/backends/process_wire.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>

#include <gtest/gtest.h>

#include "rayorch/detail/in_place_reads.h"

namespace {

namespace rd = rayorch::detail;

struct SocketPair {
  rd::UniqueFd a, b;
  SocketPair() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0) {
      a = rd::UniqueFd(fds[0]);
      b = rd::UniqueFd(fds[1]);
    }
  }
};

// The receiving side's view of the same memory file (as a worker has: its own descriptor
// and its own mapping).
rd::SharedArena other_side(const rd::SharedArena& arena) {
  return rd::SharedArena(rd::UniqueFd(::fcntl(arena.fd(), F_DUPFD_CLOEXEC, 0)));
}

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 13 + n) % 26);
  return s;
}

// Received on another thread, since a payload through the socket can exceed its buffer.
struct Received {
  bool ok = false;
  rd::Frame type{};
  std::string bytes;
  bool from_arena = false;
};

Received receive(int fd, rd::SharedArena* arena, rd::SpinThenSleep* poller = nullptr) {
  Received r;
  std::string buf;
  std::string_view payload;
  r.ok = rd::recv_frame(fd, r.type, buf, payload, arena, poller);
  if (r.ok) {
    r.bytes = std::string(payload);
    r.from_arena =
        arena != nullptr && payload.size() > 0 && payload.data() == arena->bytes(payload.size());
  }
  return r;
}

Received send_and_receive(rd::FrameWriter& frame, rd::SharedArena* theirs, SocketPair& s) {
  Received r;
  std::thread t([&] { r = receive(s.b.get(), theirs); });
  const bool sent = frame.send(s.a.get(), rd::Frame::task);
  t.join();
  EXPECT_TRUE(sent);
  return r;
}

TEST(ProcessWire, WithoutAnArenaThePayloadCrossesTheSocket) {
  SocketPair s;
  std::string buf;
  rd::FrameWriter frame(buf);
  for (std::size_t size : {std::size_t{0}, std::size_t{10}, std::size_t{3} << 20}) {
    frame.restart();
    const std::string payload = pattern(size);
    frame.payload().append(payload);
    EXPECT_FALSE(frame.in_arena());
    const Received r = send_and_receive(frame, nullptr, s);
    ASSERT_TRUE(r.ok) << size;
    EXPECT_EQ(r.type, rd::Frame::task);
    EXPECT_EQ(r.bytes, payload) << size;
  }
}

TEST(ProcessWire, EveryPayloadIsWrittenStraightIntoTheSharedMemory) {
  SocketPair s;
  rd::SharedArena arena = rd::SharedArena::create();
  ASSERT_TRUE(arena);
  rd::SharedArena theirs = other_side(arena);
  std::string buf;
  // Made before anything is mapped, as a worker's is: the first write maps the arena.
  rd::FrameWriter frame(buf, &arena);
  EXPECT_EQ(arena.mapped(), 0u);
  for (std::size_t size : {std::size_t{1} << 20, std::size_t{200}, std::size_t{5} << 20,
                           std::size_t{64} << 10, std::size_t{7} << 20}) {
    frame.restart();
    const std::string head = pattern(100);
    const std::string body = pattern(size - head.size());
    frame.payload().append(head);
    EXPECT_TRUE(frame.in_arena()) << size;
    frame.payload().append(body);
    ASSERT_TRUE(frame.in_arena()) << size;
    // The writer's bytes are the arena's mapping itself: the body was copied once, by the
    // append, into the memory the other process reads.
    EXPECT_EQ(frame.payload().data(), arena.bytes(size)) << size;
    EXPECT_GE(arena.mapped(), size);
    const Received r = send_and_receive(frame, &theirs, s);
    ASSERT_TRUE(r.ok) << size;
    EXPECT_TRUE(r.from_arena) << size;
    EXPECT_EQ(r.bytes.size(), size);
    EXPECT_EQ(r.bytes, head + body) << size;
  }
  // An empty payload crosses too.
  frame.restart();
  const Received r = send_and_receive(frame, &theirs, s);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.bytes, "");
}

TEST(ProcessWire, AnArenaThatCannotGrowSendsThePayloadThroughTheSocket) {
  SocketPair s;
  // A memory file sealed against growth at 256 KiB: the payload starts in it, then cannot
  // grow.
  const int fd = ::memfd_create("rayorch-test-sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(fd, 0);
  rd::SharedArena arena{rd::UniqueFd(fd)};
  ASSERT_EQ(::ftruncate(fd, 256 << 10), 0);
  ASSERT_EQ(::fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK), 0);
  rd::SharedArena theirs = other_side(arena);
  std::string buf;
  rd::FrameWriter frame(buf, &arena);
  const std::string first = pattern(100 << 10);
  frame.payload().append(first);
  EXPECT_TRUE(frame.in_arena());
  const std::string rest = pattern(2 << 20);
  frame.payload().append(rest);
  EXPECT_FALSE(frame.in_arena());
  const Received r = send_and_receive(frame, &theirs, s);
  ASSERT_TRUE(r.ok);
  EXPECT_FALSE(r.from_arena);
  EXPECT_EQ(r.bytes, first + rest);
  // Frames that fit still use it; the failure lasted one frame.
  frame.restart();
  frame.payload().append(first);
  EXPECT_TRUE(frame.in_arena());
  const Received again = send_and_receive(frame, &theirs, s);
  ASSERT_TRUE(again.ok);
  EXPECT_TRUE(again.from_arena);
  EXPECT_EQ(again.bytes, first);
}

TEST(ProcessWire, RestartDropsWhatWasWritten) {
  SocketPair s;
  rd::SharedArena arena = rd::SharedArena::create();
  rd::SharedArena theirs = other_side(arena);
  std::string buf;
  rd::FrameWriter frame(buf, &arena);
  frame.payload().append(pattern(3 << 20));
  ASSERT_TRUE(frame.in_arena());
  frame.restart();  // e.g. an encoder threw; a failure message replaces the rows
  EXPECT_EQ(frame.payload().size(), 0u);
  frame.payload().append(std::string_view("Error: message"));
  const Received r = send_and_receive(frame, &theirs, s);
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(r.from_arena);
  EXPECT_EQ(r.bytes, "Error: message");
}

TEST(ProcessWire, ABrokenConnectionOrAMalformedFrameIsAFalseReturn) {
  {
    SocketPair s;
    s.b.reset();  // the peer is gone: no SIGPIPE, a false return
    std::string buf;
    rd::FrameWriter frame(buf);
    frame.payload().append(std::string_view("x"));
    EXPECT_FALSE(frame.send(s.a.get(), rd::Frame::task));
  }
  {
    // A frame whose payload is in an arena, read by a side that has none.
    SocketPair s;
    rd::SharedArena arena = rd::SharedArena::create();
    std::string buf;
    rd::FrameWriter frame(buf, &arena);
    frame.payload().append(pattern(1 << 20));
    ASSERT_TRUE(frame.in_arena());
    const Received r = send_and_receive(frame, nullptr, s);
    EXPECT_FALSE(r.ok);
  }
  {
    // A header that is not one.
    SocketPair s;
    const std::string junk(rd::kFrameHeader, 'j');
    ASSERT_EQ(::send(s.a.get(), junk.data(), junk.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(rd::kFrameHeader));
    const Received r = receive(s.b.get(), nullptr);
    EXPECT_FALSE(r.ok);
  }
  {
    // A payload on the socket that claims a place in the arena.
    SocketPair s;
    std::string header(rd::kFrameHeader, '\0');
    std::memcpy(header.data(), "PWOR", 4);
    header[4] = static_cast<char>(rd::Frame::task);
    header[16] = 1;
    ASSERT_EQ(::send(s.a.get(), header.data(), header.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(rd::kFrameHeader));
    const Received r = receive(s.b.get(), nullptr);
    EXPECT_FALSE(r.ok);
  }
}

TEST(ProcessWire, AReadThatPollsFirstTakesTheSameFramesAsOneThatBlocks) {
  using namespace std::chrono_literals;
  SocketPair s;
  rd::SharedArena arena = rd::SharedArena::create();
  rd::SharedArena theirs = other_side(arena);
  std::string buf;
  rd::FrameWriter frame(buf, &arena);
  // A poll long enough that these frames are taken by it, whatever the machine's speed.
  rd::SpinThenSleep poller(10s);
  for (std::size_t size : {std::size_t{0}, std::size_t{100}, std::size_t{3} << 20}) {
    frame.restart();
    frame.payload().append(pattern(size));
    ASSERT_TRUE(frame.send(s.a.get(), rd::Frame::ok));  // before the read: the poll finds it
    const Received r = receive(s.b.get(), &theirs, &poller);
    ASSERT_TRUE(r.ok) << size;
    EXPECT_EQ(r.type, rd::Frame::ok);
    EXPECT_EQ(r.bytes, pattern(size)) << size;
  }
  {
    // A header that comes in two pieces: the poll takes the first, the rest is read after it.
    const std::string body = pattern(5000);
    std::string wire(rd::kFrameHeader, '\0');
    std::memcpy(wire.data(), "PWOR", 4);
    wire[4] = static_cast<char>(rd::Frame::task);
    wire[8] = static_cast<char>(body.size() & 0xff);
    wire[9] = static_cast<char>(body.size() >> 8);
    wire += body;
    ASSERT_EQ(::send(s.a.get(), wire.data(), 10, MSG_NOSIGNAL), 10);
    std::thread rest([&] {
      std::this_thread::sleep_for(20ms);
      EXPECT_EQ(::send(s.a.get(), wire.data() + 10, wire.size() - 10, MSG_NOSIGNAL),
                static_cast<ssize_t>(wire.size() - 10));
    });
    const Received r = receive(s.b.get(), nullptr, &poller);
    rest.join();
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.type, rd::Frame::task);
    EXPECT_EQ(r.bytes, body);
  }
  {
    // A frame that comes after the poll's time is read by the blocking read.
    rd::SpinThenSleep brief(0s);
    frame.restart();
    frame.payload().append(pattern(64));
    std::thread late([&] {
      std::this_thread::sleep_for(20ms);
      EXPECT_TRUE(frame.send(s.a.get(), rd::Frame::task));
    });
    const Received r = receive(s.b.get(), &theirs, &brief);
    late.join();
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.bytes, pattern(64));
  }
  // The end of the stream while polling is a false return, as when blocking.
  s.a.reset();
  rd::SpinThenSleep again(10s);
  EXPECT_FALSE(receive(s.b.get(), &theirs, &again).ok);
}

TEST(ProcessWire, AnAnswerAfterTheRequestLeavesTheRequestWhole) {
  // A worker that read its inputs in place answers after them (restart(page_after)).
  SocketPair s;
  rd::SharedArena arena = rd::SharedArena::create();
  rd::SharedArena theirs = other_side(arena);
  std::string buf, their_buf, in, their_in;
  rd::FrameWriter request(buf, &arena);
  const std::string asked = pattern((300 << 10) + 5);
  request.payload().append(asked);
  ASSERT_TRUE(request.send(s.a.get(), rd::Frame::task));
  rd::Frame type{};
  std::string_view view;
  ASSERT_TRUE(rd::recv_frame(s.b.get(), type, their_in, view, &theirs));
  ASSERT_TRUE(theirs.holds(view));
  const std::size_t at = theirs.page_after(view);
  EXPECT_EQ(at % rd::InPlaceReads::page_size(), 0u);
  EXPECT_GE(at, asked.size());
  // Pinned, as a worker's arena is while values point into it: growing for the answer keeps
  // the request's mapping where it is.
  theirs.pin();
  rd::FrameWriter answer(their_buf, &theirs);
  answer.restart(at);
  const std::string answered = pattern(3 << 20);
  answer.payload().append(answered);
  ASSERT_TRUE(answer.in_arena());
  ASSERT_TRUE(answer.send(s.b.get(), rd::Frame::ok));
  std::string_view got;
  ASSERT_TRUE(rd::recv_frame(s.a.get(), type, in, got, &arena));
  EXPECT_EQ(type, rd::Frame::ok);
  EXPECT_EQ(got, answered);
  EXPECT_EQ(got.data(), arena.bytes(at + got.size()) + at);
  EXPECT_EQ(view, asked);  // the request, as the worker read it, is whole and mapped
  EXPECT_TRUE(theirs.unpin({}));
}

TEST(ProcessWire, KeptPagesKeepTheirBytesWhileTheArenaIsWrittenAgain) {
  SocketPair s;
  rd::SharedArena arena = rd::SharedArena::create();
  rd::SharedArena theirs = other_side(arena);
  const std::size_t page = rd::InPlaceReads::page_size();
  std::string buf, in, their_in;
  rd::FrameWriter request(buf, &arena);
  const std::string first = pattern(8 * page);
  request.payload().append(first);
  ASSERT_TRUE(request.send(s.a.get(), rd::Frame::task));
  rd::Frame type{};
  std::string_view view;
  ASSERT_TRUE(rd::recv_frame(s.b.get(), type, their_in, view, &theirs));
  // The worker's UDF keeps a value of two pages and a bit, read in place.
  rd::InPlaceReads reads(view);
  const std::string_view value = view.substr(2 * page, 2 * page + 100);
  ASSERT_TRUE(reads.can_read_in_place(value));
  reads.on_settle([&](rd::InPlaceReads& r) { ASSERT_TRUE(r.keep(value)); });
  ASSERT_TRUE(reads.settle());
  ASSERT_TRUE(theirs.unpin(reads.kept()));
  // The executor writes the next request over the first: the worker reads the new one from
  // its new mapping, and the kept value still reads the first request's bytes.
  request.restart();
  const std::string second = pattern(8 * page + 1);
  request.payload().append(second);
  ASSERT_TRUE(request.send(s.a.get(), rd::Frame::task));
  std::string_view next;
  ASSERT_TRUE(rd::recv_frame(s.b.get(), type, their_in, next, &theirs));
  EXPECT_EQ(next, second);
  EXPECT_NE(next.data(), view.data());
  EXPECT_EQ(std::string(value), first.substr(2 * page, 2 * page + 100));
  rd::InPlaceReads::release_kept(value);
}

}  // namespace
