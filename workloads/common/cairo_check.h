// cairo status checks for the sample generators (header-only: the generators link cairo).
#pragma once

#include <stdexcept>
#include <string>

#include <cairo/cairo.h>
#include <fmt/format.h>

namespace workloads {

/// Throws std::runtime_error "`what`: <cairo's message>" unless `status` is success.
inline void check_cairo(cairo_status_t status, const std::string& what) {
  if (status != CAIRO_STATUS_SUCCESS) {
    throw std::runtime_error(fmt::format("{}: {}", what, cairo_status_to_string(status)));
  }
}

}  // namespace workloads
