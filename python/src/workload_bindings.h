// The workloads' values and helpers in Python, present when the extension is built with the
// workload's stages (python/CMakeLists.txt defines RAYORCH_PYTHON_PDF2MD / _VIDEO).
#pragma once

#include <nanobind/nanobind.h>

namespace rayorch::python {

/// The getter of an image's `pixels` property (pdf2md::PageImage, video::FrameImage), with
/// kPixelsDoc: its 8-bit gray pixels as one bytes object.
template <class Image>
nanobind::bytes pixels_of(const Image& image) {
  return nanobind::bytes(reinterpret_cast<const char*>(image.pixels.data()), image.pixels.size());
}
inline constexpr const char* kPixelsDoc = "width * height bytes, rows without padding (a copy)";

#if RAYORCH_PYTHON_PDF2MD
/// PageRef, PageImage, DocumentInfo, Markdown and the sample helpers (pdf2md_bindings.cc).
void bind_pdf2md(nanobind::module_& m);
#endif

#if RAYORCH_PYTHON_VIDEO
/// VideoInfo, Scene, FrameRef, FrameImage, SceneRecord, VideoRecord, the sample helper and
/// the C++ pipeline (video_bindings.cc).
void bind_video(nanobind::module_& m);
#endif

}  // namespace rayorch::python
