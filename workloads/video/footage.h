// A corpus of videos made from real material with known cuts: document pages (PDF manuals
// shipped by Debian packages, rendered with poppler) and pictures (PNG files shipped by
// Debian packages), shown as slideshows with hard cuts, dissolves and fades through black,
// with camera-like noise, panned and zoomed, and scrolled like a screen recording.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace video {

/// PDF manuals and PNG pictures the corpus uses unless told otherwise (scripts/install-deps.sh
/// installs their packages: libtasn1-doc, shared-mime-info, desktop-base, libleptonica-dev).
const std::vector<std::string>& default_footage_documents();
const std::vector<std::string>& default_footage_pictures();

/// What `make_footage` writes.
struct FootageOptions {
  int width = 960;  ///< even; document pages are rendered at 2 pixels per point
  int height = 540;
  int fps = 10;
  int slides = 4;             ///< slides per slideshow
  int slide_frames = 12;      ///< frames a slide stays still
  int transition_frames = 8;  ///< frames of a dissolve, or of each half of a fade
  int motion_frames = 30;     ///< frames of a pan, a zoom or a scroll
  std::uint64_t seed = 1;
  std::vector<std::string> documents = default_footage_documents();
  std::vector<std::string> pictures = default_footage_pictures();
};

/// A change from one scene to the next: frames `first`..`last` (inclusive) are the
/// transition; a hard cut has first == last == the first frame of the new scene, a dissolve
/// or fade spans from its first blended frame to the first frame of the new picture. A
/// detected cut anywhere in it, give or take one frame, finds it; a second one is an error.
struct FootageCut {
  std::uint64_t first = 0;
  std::uint64_t last = 0;
  std::string kind;  ///< "cut", "dissolve", "fade"
};

/// Frames that show one still document region, and the text poppler reads in that region.
struct FootageSlide {
  std::uint64_t first_frame = 0;
  std::uint64_t last_frame = 0;
  std::string text;
};

/// Frames of continuous motion (a pan, a zoom, a scroll): no cut belongs inside.
struct FootageMotion {
  std::uint64_t first_frame = 0;
  std::uint64_t last_frame = 0;
  std::string kind;  ///< "pan", "zoom", "scroll"
};

struct FootageVideo {
  std::string video;  ///< stem
  std::string file;   ///< file name inside the corpus directory
  int fps = 0;
  std::uint64_t frames = 0;
  std::vector<FootageCut> cuts;
  std::vector<FootageSlide> slides;
  std::vector<FootageMotion> motion;
};

/// A corpus as described by DIR/footage.jsonl.
struct FootageCorpus {
  std::string dir;
  std::vector<FootageVideo> videos;
};

/// Writes the videos (MPEG-4 part 2 in .mp4) and DIR/footage.jsonl. Throws
/// std::invalid_argument for bad options and std::runtime_error when a document or picture
/// cannot be read, or on drawing, encoding and I/O failures.
FootageCorpus make_footage(const std::string& dir, const FootageOptions& options);

/// Reads DIR/footage.jsonl. Throws std::runtime_error when it is missing or malformed.
FootageCorpus load_footage(const std::string& dir);

}  // namespace video
