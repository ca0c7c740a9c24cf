// Values read in place from a frame (include/rayorch/detail/in_place_reads.h): only bytes of
// the frame that start on a page may be read in place; keep() moves a value's pages out of the
// shared memory to private memory at the same address, so the value keeps its bytes when the
// other process writes the memory again; settle() runs each step once.
#include "rayorch/detail/in_place_reads.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace {

namespace rd = rayorch::detail;

// A memory file mapped twice, as the executor and a worker map their arena.
struct SharedPages {
  explicit SharedPages(std::size_t n) : size(n) {
    fd = ::memfd_create("in-place-reads-test", MFD_CLOEXEC);
    EXPECT_EQ(::ftruncate(fd, static_cast<off_t>(n)), 0);
    mine = static_cast<char*>(::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    theirs = static_cast<char*>(::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  }
  ~SharedPages() {
    ::munmap(mine, size);
    ::munmap(theirs, size);
    ::close(fd);
  }
  SharedPages(const SharedPages&) = delete;
  SharedPages& operator=(const SharedPages&) = delete;
  std::size_t size;
  int fd = -1;
  char* mine = nullptr;
  char* theirs = nullptr;
};

TEST(InPlaceReads, OnlyBytesOfTheFrameThatStartOnAPageMayBeReadInPlace) {
  const std::size_t page = rd::InPlaceReads::page_size();
  SharedPages pages(4 * page);
  const std::string_view frame(pages.mine, 3 * page);
  const rd::InPlaceReads reads(frame);
  EXPECT_TRUE(reads.can_read_in_place(frame.substr(page, page)));
  EXPECT_TRUE(reads.can_read_in_place(frame.substr(page)));
  EXPECT_FALSE(reads.can_read_in_place(frame.substr(page + 8, page)));  // not on a page
  EXPECT_FALSE(reads.can_read_in_place(std::string_view(pages.mine + 2 * page, 2 * page)));
  EXPECT_FALSE(reads.can_read_in_place(std::string_view(pages.mine + 3 * page, 10)));
  EXPECT_FALSE(reads.can_read_in_place(frame.substr(page, 0)));
  // A frame that is not in shared memory: nothing is read in place.
  const rd::InPlaceReads none;
  EXPECT_FALSE(none.can_read_in_place(frame.substr(page, page)));
  EXPECT_FALSE(none.used());
}

TEST(InPlaceReads, AKeptValueKeepsItsBytesWhenTheOtherSideWritesThePagesAgain) {
  const std::size_t page = rd::InPlaceReads::page_size();
  SharedPages pages(4 * page);
  std::memset(pages.theirs, 'a', 4 * page);
  rd::InPlaceReads reads(std::string_view(pages.mine, 4 * page));
  // A value of a page and a half, read in place at the second page.
  const std::string_view value(pages.mine + page, page + page / 2);
  ASSERT_TRUE(reads.can_read_in_place(value));
  reads.on_settle([&](rd::InPlaceReads& r) { EXPECT_TRUE(r.keep(value)); });
  EXPECT_TRUE(reads.used());
  ASSERT_TRUE(reads.settle());
  ASSERT_EQ(reads.kept().size(), 1u);
  EXPECT_EQ(reads.kept()[0].first, pages.mine + page);
  EXPECT_EQ(reads.kept()[0].second, 2 * page);  // whole pages
  // The other process writes the memory again: the kept value still reads its bytes, at the
  // same address; the pages around it are still shared.
  std::memset(pages.theirs, 'b', 4 * page);
  EXPECT_EQ(std::string(value), std::string(value.size(), 'a'));
  EXPECT_EQ(pages.mine[0], 'b');
  EXPECT_EQ(pages.mine[3 * page], 'b');
  // Steps run once: a second settle runs none.
  EXPECT_TRUE(reads.settle());
  EXPECT_EQ(reads.kept().size(), 1u);
  // The value's owner gives the pages back; a new shared mapping takes their place here so
  // that the fixture unmaps what it mapped.
  rd::InPlaceReads::release_kept(value);
  void* back = ::mmap(pages.mine + page, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                      pages.fd, static_cast<off_t>(page));
  EXPECT_EQ(back, static_cast<void*>(pages.mine + page));
  EXPECT_EQ(pages.mine[page], 'b');
}

}  // namespace
