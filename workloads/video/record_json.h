// The JSON Lines form of a video record: what `video2jsonl` writes and `check-videos` reads.
#pragma once

#include <string>
#include <string_view>

#include "video/video.h"

namespace video {

/// One record as a single JSON line (no trailing newline). Signatures are "0x" + 16 hex
/// digits, times are seconds.
std::string to_json_line(const VideoRecord& record);

/// Parses a line written by to_json_line. Throws std::runtime_error naming what is missing.
VideoRecord parse_json_line(std::string_view line);

}  // namespace video
