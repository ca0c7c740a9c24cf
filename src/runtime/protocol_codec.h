// Bytes for the worker protocol (protocol.h): every invocation, report and store command can
// be written to a byte string and read back unchanged, which is what lets a worker live in
// another process or on another machine. Little-endian fixed-width integers; strings and
// vectors are a 32-bit count followed by their elements. Decoding checks every length and
// throws ProtocolError on truncated or trailing bytes.
#pragma once

#include <stdexcept>
#include <string>

#include "runtime/protocol.h"

namespace rayorch::detail {

/// Malformed protocol bytes.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string encode(const Invocation& v);
std::string encode(const Report& v);
std::string encode(const StoreCommand& v);

Invocation decode_invocation(const std::string& bytes);
Report decode_report(const std::string& bytes);
StoreCommand decode_store_command(const std::string& bytes);

}  // namespace rayorch::detail
