// Values read in place from a frame. See rayorch/detail/in_place_reads.h.
#include "rayorch/detail/in_place_reads.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace rayorch::detail {
namespace {

std::size_t page_span(std::string_view bytes) {
  const std::size_t page = InPlaceReads::page_size();
  return (bytes.size() + page - 1) / page * page;
}

}  // namespace

std::size_t InPlaceReads::page_size() noexcept {
  return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

bool InPlaceReads::can_read_in_place(std::string_view bytes) const noexcept {
  if (!enabled_ || bytes.empty()) return false;
  const auto start = reinterpret_cast<std::uintptr_t>(bytes.data());
  return start % page_size() == 0 && bytes.data() >= frame_.data() &&
         bytes.size() <= static_cast<std::size_t>(frame_.data() + frame_.size() - bytes.data());
}

bool InPlaceReads::keep(std::string_view bytes) {
  const std::size_t span = page_span(bytes);
  void* fresh = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (fresh == MAP_FAILED) {
    failed_ = true;
    return false;
  }
  // The whole last page: its bytes past the value are the frame's, read by no one now.
  std::memcpy(fresh, bytes.data(), span);
  ::mprotect(fresh, span, PROT_READ);
  // One step for every reader: the address maps the copy from here on (the shared page is
  // unmapped by the same call), so a thread reading the value meanwhile reads the same bytes.
  char* at = const_cast<char*>(bytes.data());
  if (::mremap(fresh, span, span, MREMAP_MAYMOVE | MREMAP_FIXED, at) == MAP_FAILED) {
    ::munmap(fresh, span);
    failed_ = true;
    return false;
  }
  kept_.emplace_back(at, span);
  return true;
}

void InPlaceReads::release_kept(std::string_view bytes) noexcept {
  ::munmap(const_cast<char*>(bytes.data()), page_span(bytes));
}

bool InPlaceReads::settle() {
  for (auto& step : steps_) step(*this);
  steps_.clear();
  return !failed_;
}

}  // namespace rayorch::detail
