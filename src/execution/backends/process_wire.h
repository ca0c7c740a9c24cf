// Bytes between the executor and its worker processes: owned file descriptors, length-framed
// messages on a stream socket (one send per message, buffers reused by the caller), payloads
// written straight into memory shared by both processes, and descriptor passing on the fork
// server's packet socket.
//
// Threading: every function works on the descriptors it is given and shares nothing; one
// descriptor is written by one thread at a time (the caller's rule).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rayorch/codec.h"

#include "execution/backends/spin_then_sleep.h"
#include "execution/unique_fd.h"

namespace rayorch::detail {

/// Frame types on a worker's socket.
enum class Frame : std::uint32_t {
  ready = 1,        ///< worker -> executor: the UDF instance is built
  ctor_failed = 2,  ///< worker -> executor: its constructor threw (payload: the message)
  task = 3,         ///< executor -> worker: an invocation and its input rows
  ok = 4,           ///< worker -> executor: the report and the output rows
  failed = 5,       ///< worker -> executor: the UDF threw (payload: "Type: message")
  lost = 6,         ///< worker -> executor: the UDF raised ActorLost (payload: the message)
};

/// Bytes a frame's header takes at the front of its buffer: magic, type, payload length, and
/// where in the arena the payload starts.
inline constexpr std::size_t kFrameHeader = 24;

/// A memory file mapped by both the executor and one worker, through which frame payloads
/// cross (page images, frames, and small rows alike): the sender's encoders write the
/// payload straight into it and only the header crosses the socket, the receiver decodes
/// straight from the mapping. So a value is copied once by its encoder and once by its
/// decoder, and a large one is not pushed through the socket buffer in many small steps,
/// each of which waits for the other process to be scheduled. Request and answer
/// alternate, so one side at a time writes it, and only that side may grow it. It grows to
/// the largest payload and keeps that size (the file never shrinks, so a mapping of either
/// side never outgrows it).
class SharedArena {
 public:
  SharedArena() = default;
  explicit SharedArena(UniqueFd fd) : fd_(std::move(fd)) {}
  SharedArena(SharedArena&& o) noexcept;
  SharedArena& operator=(SharedArena&& o) noexcept;
  SharedArena(const SharedArena&) = delete;
  SharedArena& operator=(const SharedArena&) = delete;
  ~SharedArena();
  /// A new arena (memfd_create); invalid when it cannot be made.
  static SharedArena create();
  int fd() const { return fd_.get(); }
  explicit operator bool() const { return static_cast<bool>(fd_); }
  /// Writable room for at least `n` bytes at the front of the mapping, growing the file
  /// (sender, in its turn); null when it cannot grow, and then the mapping and its bytes
  /// are as before. No system call when `n` fits the mapping.
  char* room(std::size_t n);
  /// Bytes mapped now (room() and bytes() may map more).
  std::size_t mapped() const { return mapped_; }
  /// The first `n` bytes as the other side wrote them (receiver); null on failure.
  const char* bytes(std::size_t n);
  /// True when `bytes` lie in the mapping.
  bool holds(std::string_view bytes) const;
  /// The offset of the first page after `bytes` (which the mapping holds): where an answer
  /// goes that must not overwrite them.
  std::size_t page_after(std::string_view bytes) const;
  /// From now until unpin(), the mapped pages stay at their addresses (values read in place
  /// point into them): growing maps the file anew at another address and keeps the old
  /// mapping too.
  void pin() { pinned_ = true; }
  /// Ends pin(): unmaps the mappings that growing left behind, except `kept` (page ranges that
  /// values took over, InPlaceReads::keep, and unmap themselves); if the current mapping holds
  /// kept pages, maps the file anew at another address and unmaps the current one the same
  /// way. False when there is no address space for that (the arena must not be used again).
  bool unpin(const std::vector<std::pair<char*, std::size_t>>& kept);

 private:
  bool map(std::size_t n);
  void unmap_all() noexcept;
  UniqueFd fd_;
  char* base_ = nullptr;
  std::size_t mapped_ = 0;
  bool pinned_ = false;
  std::vector<std::pair<char*, std::size_t>> left_behind_;  // old mappings, while pinned
};

/// The smallest size an arena grows to.
inline constexpr std::size_t kArenaMinimum = 64 * 1024;

/// Builds and sends one frame. With an arena, the payload is written straight into the
/// arena's mapping (measured no slower than the socket for small frames: BENCHMARKS.md,
/// isolation), so a value is copied only by its encoder; when the arena cannot grow, what
/// was written moves into `buf` and the frame crosses the socket instead. Without an arena
/// (the worker's first frame) the payload is written into `buf` after room for the header.
/// `buf` is reused from frame to frame (it only grows). One thread drives a FrameWriter,
/// and only in its side's turn (the other side is waiting for this frame).
class FrameWriter {
 public:
  /// `scratch` (optional) is lent to codecs that only write to a std::string; like `buf`, it
  /// is reused from frame to frame.
  explicit FrameWriter(std::string& buf, SharedArena* arena = nullptr,
                       std::string* scratch = nullptr);
  FrameWriter(const FrameWriter&) = delete;
  FrameWriter& operator=(const FrameWriter&) = delete;
  /// Where encoders append the payload.
  ByteWriter& payload() { return *writer_; }
  /// Drops what was written: the payload starts again, empty (e.g. a failure message
  /// replaces rows whose encoding threw), `at` bytes into the arena (page-aligned; a worker's
  /// answer goes after a request whose values it read in place).
  void restart(std::size_t at = 0);
  /// True while the payload is in the arena's mapping.
  bool in_arena() const { return in_arena_; }
  /// Sends the frame (its payload through the arena when it is there). False when the
  /// connection is broken.
  bool send(int fd, Frame type);

 private:
  static ByteWriter::Buffer grow(void* self, std::size_t size, std::size_t need);
  // `buf` after the header, with room for `need` bytes.
  ByteWriter::Buffer buf_room(std::size_t need);
  std::string& buf_;
  SharedArena* const arena_;  // null: none
  std::string* const scratch_;
  bool use_arena_ = false;  // this frame goes into the arena (it has not failed to grow)
  bool in_arena_ = false;
  std::size_t at_ = 0;  // where in the arena the payload starts
  std::optional<ByteWriter> writer_;
};

/// How long a worker polls for its next task and the executor for a task's answer before
/// blocking (recv_frame's `poller`). Longer than the local threads' poll (spin_then_sleep.h):
/// a task's round trip to another process takes tens of microseconds before its UDF runs,
/// and waking a process that slept on the socket costs, on a virtual machine, about as much
/// again on each side. The poll stays adaptive: behind a UDF slower than this, neither side
/// polls.
inline constexpr std::chrono::microseconds kWirePoll{400};

/// Receives one frame into `buf` (reused; it only grows) and points `payload` at its
/// payload inside it. The peer sends one frame and then waits for the answer, so the frame
/// is read with as few reads as it takes. False at the end of the stream, on a broken
/// connection or on a malformed header.
/// A payload sent through the arena is read from `arena`'s mapping, where the header says it
/// starts (valid until the next frame is written either way).
/// With `poller`, the first read polls the socket (spin_then_sleep.h) before it blocks: a
/// frame that comes within the poll's time is taken awake, without the two context switches
/// and the scheduler's latency of a blocking read's wake-up on both sides of the socket.
bool recv_frame(int fd, Frame& type, std::string& buf, std::string_view& payload,
                SharedArena* arena = nullptr, SpinThenSleep* poller = nullptr);

/// Sends one packet with up to three descriptors attached (-1: none). False on failure.
bool send_packet(int fd, std::string_view bytes, int fd_a = -1, int fd_b = -1, int fd_c = -1);
/// Receives one packet (at most `max` bytes) and the descriptors attached to it. False at
/// the end of the stream or on failure.
bool recv_packet(int fd, std::string& bytes, std::size_t max, UniqueFd* fd_a = nullptr,
                 UniqueFd* fd_b = nullptr, UniqueFd* fd_c = nullptr);

/// Closes every descriptor from `first` upwards (a child of fork keeps only what it needs).
void close_descriptors_from(int first) noexcept;

}  // namespace rayorch::detail
