// How one row of an RPC result failed: plain data shared by the worker boundary (which finds
// the failures in a UDF result) and the worker protocol (which reports them).
#pragma once

#include <cstdint>
#include <string>

namespace rayorch::detail {

/// How a row of a UDF result failed.
enum class RowKind : std::uint8_t { ok, record_failure, group_failure };

/// One failed row of an RPC result.
struct RowFailure {
  std::uint32_t row = 0;
  RowKind kind = RowKind::record_failure;
  std::string message;
  friend bool operator==(const RowFailure&, const RowFailure&) = default;
};

}  // namespace rayorch::detail
