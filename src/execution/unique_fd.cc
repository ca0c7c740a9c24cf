// See unique_fd.h.
#include "execution/unique_fd.h"

#include <unistd.h>

namespace rayorch::detail {

void UniqueFd::reset() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace rayorch::detail
