// Framing and descriptor passing. See process_wire.h.
#include "execution/backends/process_wire.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "rayorch/detail/byte_order.h"

namespace rayorch::detail {
namespace {

constexpr std::uint32_t kMagic = 0x524f5750;     // "ROWP"
constexpr std::uint32_t kInArena = 0x80000000u;  // type flag: the payload is in the arena
// A frame larger than this is a corrupt header, not a payload.
constexpr std::uint64_t kMaxFrame = std::uint64_t{1} << 40;

bool send_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t k = ::send(fd, data, n, MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

bool recv_all(int fd, char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t k = ::recv(fd, data, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    data += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

}  // namespace

FrameWriter::FrameWriter(std::string& buf, SharedArena* arena, std::string* scratch)
    : buf_(buf), arena_(arena != nullptr && *arena ? arena : nullptr), scratch_(scratch) {
  restart();
}

void FrameWriter::restart(std::size_t at) {
  if (buf_.size() < kFrameHeader) buf_.resize(kFrameHeader);  // send() writes the header there
  use_arena_ = arena_ != nullptr;
  at_ = use_arena_ ? at : 0;
  in_arena_ = use_arena_ && arena_->mapped() > at_;
  if (in_arena_) {
    writer_.emplace(ByteWriter::Buffer{arena_->room(0) + at_, arena_->mapped() - at_},
                    &FrameWriter::grow, this, scratch_);
    return;
  }
  if (buf_.size() < kFrameHeader + 4096) buf_.resize(kFrameHeader + 4096);
  // An arena not mapped yet is mapped by the first write (grow), not here: a FrameWriter
  // may be made before its side's turn, when only the other side may grow the file.
  writer_.emplace(use_arena_ ? ByteWriter::Buffer{buf_.data() + kFrameHeader, 0} : buf_room(0),
                  &FrameWriter::grow, this, scratch_);
}

ByteWriter::Buffer FrameWriter::grow(void* self, std::size_t size, std::size_t need) {
  auto& w = *static_cast<FrameWriter*>(self);
  if (w.use_arena_) {
    // The bytes written so far are at the payload's start in the mapping, or none were
    // written.
    if (char* room = w.arena_->room(w.at_ + need)) {
      w.in_arena_ = true;
      return {room + w.at_, w.arena_->mapped() - w.at_};
    }
    // The arena cannot grow (no memory for the file, or no address space for its mapping;
    // its mapping and bytes are unchanged): the payload moves into `buf` and crosses the
    // socket.
    w.buf_.resize(kFrameHeader + size);
    if (w.in_arena_) {
      std::memcpy(w.buf_.data() + kFrameHeader, w.arena_->bytes(w.at_ + size) + w.at_, size);
    }
    w.in_arena_ = false;
    w.use_arena_ = false;
  }
  return w.buf_room(need);
}

ByteWriter::Buffer FrameWriter::buf_room(std::size_t need) {
  std::size_t capacity = buf_.size() - kFrameHeader;
  if (capacity < need) {
    capacity = std::max(need, 2 * capacity);
    buf_.resize(kFrameHeader + capacity);  // keeps the bytes written
  }
  return {buf_.data() + kFrameHeader, capacity};
}

bool FrameWriter::send(int fd, Frame type) {
  const std::size_t n = writer_->size();
  store_le(buf_.data(), kMagic);
  store_le(buf_.data() + 4, static_cast<std::uint32_t>(type) | (in_arena_ ? kInArena : 0u));
  store_le(buf_.data() + 8, std::uint64_t{n});
  store_le(buf_.data() + 16, std::uint64_t{in_arena_ ? at_ : 0});
  return send_all(fd, buf_.data(), in_arena_ ? kFrameHeader : kFrameHeader + n);
}

SharedArena::SharedArena(SharedArena&& o) noexcept
    : fd_(std::move(o.fd_)),
      base_(std::exchange(o.base_, nullptr)),
      mapped_(std::exchange(o.mapped_, 0)),
      pinned_(std::exchange(o.pinned_, false)),
      left_behind_(std::exchange(o.left_behind_, {})) {}

SharedArena& SharedArena::operator=(SharedArena&& o) noexcept {
  if (this != &o) {
    unmap_all();
    fd_ = std::move(o.fd_);
    base_ = std::exchange(o.base_, nullptr);
    mapped_ = std::exchange(o.mapped_, 0);
    pinned_ = std::exchange(o.pinned_, false);
    left_behind_ = std::exchange(o.left_behind_, {});
  }
  return *this;
}

SharedArena::~SharedArena() {
  unmap_all();
}

void SharedArena::unmap_all() noexcept {
  if (base_ != nullptr) ::munmap(base_, mapped_);
  for (const auto& [old, n] : left_behind_) ::munmap(old, n);
  left_behind_.clear();
}

SharedArena SharedArena::create() {
  return SharedArena(UniqueFd(::memfd_create("rayorch-worker-arena", MFD_CLOEXEC)));
}

bool SharedArena::map(std::size_t n) {
  if (n <= mapped_) return true;
  if (pinned_ && base_ != nullptr) {
    // Values point into the current mapping: it stays, and the file is mapped anew.
    void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
    if (p == MAP_FAILED) return false;
    left_behind_.emplace_back(base_, mapped_);
    base_ = static_cast<char*>(p);
    mapped_ = n;
    return true;
  }
  // mremap keeps the old mapping when it fails, so the bytes written so far stay readable.
  void* p = base_ != nullptr ? ::mremap(base_, mapped_, n, MREMAP_MAYMOVE)
                             : ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
  if (p == MAP_FAILED) return false;
  base_ = static_cast<char*>(p);
  mapped_ = n;
  return true;
}

char* SharedArena::room(std::size_t n) {
  // The file is never smaller than a mapping of it: no system call while the payload fits.
  if (n <= mapped_) return base_;
  struct stat st;
  if (::fstat(fd_.get(), &st) != 0) return nullptr;
  std::size_t size = static_cast<std::size_t>(st.st_size);
  if (size < n) {
    // Grow with headroom, so a slowly growing payload does not remap every time.
    size = std::max(n + n / 2, kArenaMinimum);
    if (::ftruncate(fd_.get(), static_cast<off_t>(size)) != 0) return nullptr;
  }
  if (!map(size)) return nullptr;
  return base_;
}

bool SharedArena::holds(std::string_view bytes) const {
  return base_ != nullptr && bytes.data() >= base_ &&
         bytes.size() <= static_cast<std::size_t>(base_ + mapped_ - bytes.data());
}

std::size_t SharedArena::page_after(std::string_view bytes) const {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const auto end = static_cast<std::size_t>(bytes.data() + bytes.size() - base_);
  return (end + page - 1) / page * page;
}

namespace {

// Unmaps [from, from + n) except the page ranges of `kept` (sorted) inside it.
void unmap_except(char* from, std::size_t n,
                  const std::vector<std::pair<char*, std::size_t>>& kept) {
  char* const end = from + n;
  for (const auto& [start, size] : kept) {
    if (start + size <= from || start >= end) continue;
    if (start > from) ::munmap(from, static_cast<std::size_t>(start - from));
    from = std::max(from, start + size);
  }
  if (from < end) ::munmap(from, static_cast<std::size_t>(end - from));
}

bool holds_any(const char* base, std::size_t n,
               const std::vector<std::pair<char*, std::size_t>>& kept) {
  return std::any_of(kept.begin(), kept.end(),
                     [&](const auto& k) { return k.first >= base && k.first < base + n; });
}

}  // namespace

bool SharedArena::unpin(const std::vector<std::pair<char*, std::size_t>>& kept) {
  pinned_ = false;
  std::vector<std::pair<char*, std::size_t>> sorted = kept;
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [old, n] : left_behind_) unmap_except(old, n, sorted);
  left_behind_.clear();
  if (base_ == nullptr || !holds_any(base_, mapped_, sorted)) return true;
  void* p = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
  if (p == MAP_FAILED) return false;
  unmap_except(base_, mapped_, sorted);
  base_ = static_cast<char*>(p);
  return true;
}

const char* SharedArena::bytes(std::size_t n) {
  if (n > mapped_) {
    struct stat st;
    if (::fstat(fd_.get(), &st) != 0 || static_cast<std::size_t>(st.st_size) < n) return nullptr;
    if (!map(static_cast<std::size_t>(st.st_size))) return nullptr;
  }
  return base_;
}

bool recv_frame(int fd, Frame& type, std::string& buf, std::string_view& payload,
                SharedArena* arena, SpinThenSleep* poller) {
  // One frame is in flight per direction at a time (a request waits for its reply), so one
  // large read can take the header and the payload together without reading past the frame.
  constexpr std::size_t kFirstRead = 64 * 1024;
  if (buf.size() < kFirstRead) buf.resize(kFirstRead);
  std::size_t have = 0;
  if (poller != nullptr) {
    ssize_t k = -1;
    int error = 0;
    const bool polled = poller->poll(SpinThenSleep::Clock::time_point::max(), [&] {
      k = ::recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
      error = errno;
      return k >= 0 || (error != EAGAIN && error != EWOULDBLOCK && error != EINTR);
    });
    if (polled) {
      if (k <= 0) return false;  // the end of the stream, or a broken connection
      have = static_cast<std::size_t>(k);
    }
  }
  while (have < kFrameHeader) {
    const ssize_t k = ::recv(fd, buf.data() + have, buf.size() - have, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    have += static_cast<std::size_t>(k);
  }
  if (poller != nullptr) poller->answered();
  if (load_le<std::uint32_t>(buf.data()) != kMagic) return false;
  const auto n = load_le<std::uint64_t>(buf.data() + 8);
  if (n > kMaxFrame) return false;
  const auto at = load_le<std::uint64_t>(buf.data() + 16);
  const auto raw = load_le<std::uint32_t>(buf.data() + 4);
  type = static_cast<Frame>(raw & ~kInArena);
  if ((raw & kInArena) != 0) {
    if (have != kFrameHeader || arena == nullptr || !*arena || at > kMaxFrame) return false;
    const char* bytes = arena->bytes(static_cast<std::size_t>(at + n));
    if (bytes == nullptr) return false;
    payload = std::string_view(bytes + at, static_cast<std::size_t>(n));
    return true;
  }
  if (at != 0) return false;
  const std::size_t total = kFrameHeader + static_cast<std::size_t>(n);
  if (have > total) return false;  // the peer broke the one-frame-at-a-time rule
  if (buf.size() < total) buf.resize(total);
  if (!recv_all(fd, buf.data() + have, total - have)) return false;
  payload = std::string_view(buf.data() + kFrameHeader, static_cast<std::size_t>(n));
  return true;
}

bool send_packet(int fd, std::string_view bytes, int fd_a, int fd_b, int fd_c) {
  msghdr msg{};
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))];
  int fds[3];
  std::size_t nfds = 0;
  for (int f : {fd_a, fd_b, fd_c}) {
    if (f >= 0) fds[nfds++] = f;
  }
  if (nfds > 0) {
    std::memset(control, 0, sizeof control);
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
  }
  for (;;) {
    const ssize_t k = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (k >= 0) return static_cast<std::size_t>(k) == bytes.size();
    if (errno != EINTR) return false;
  }
}

bool recv_packet(int fd, std::string& bytes, std::size_t max, UniqueFd* fd_a, UniqueFd* fd_b,
                 UniqueFd* fd_c) {
  bytes.resize(max);
  msghdr msg{};
  iovec iov{bytes.data(), bytes.size()};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t k;
  do {
    k = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  } while (k < 0 && errno == EINTR);
  if (k <= 0) return false;
  bytes.resize(static_cast<std::size_t>(k));
  UniqueFd* outs[3] = {fd_a, fd_b, fd_c};
  std::size_t next = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < n; ++i) {
      int received = -1;
      std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      UniqueFd owned(received);  // closed unless the caller asked for it
      if (next < 3 && outs[next] != nullptr) *outs[next] = std::move(owned);
      ++next;
    }
  }
  return true;
}

void close_descriptors_from(int first) noexcept {
  if (::syscall(SYS_close_range, static_cast<unsigned>(first), ~0U, 0U) == 0) return;
  const long max = ::sysconf(_SC_OPEN_MAX);
  for (long fd = first; fd < (max > 0 ? max : 4096); ++fd) ::close(static_cast<int>(fd));
}

}  // namespace rayorch::detail
