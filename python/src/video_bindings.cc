// The video values as C++ objects in Python (a frame image stays one C++ buffer), the sample
// corpus helper and the C++ video pipeline, for the video tests.
#if RAYORCH_PYTHON_VIDEO

#include <cstdint>
#include <string>
#include <vector>

#include "pickle_by_codec.h"
#include "video/codec.h"
#include "video/record_json.h"
#include "video/samples.h"
#include "video/video.h"
#include "workload_bindings.h"
#include <fmt/format.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "rayorch/executor.h"
#include "rayorch/run_options.h"

namespace rayorch::python {

namespace nb = nanobind;

void bind_video(nb::module_& m) {
  // The video values, as C++ objects in Python (a frame image stays one C++ buffer).
  pickle_by_codec<video::VideoInfo>(
      nb::class_<video::VideoInfo>(m, "VideoInfo", "What a video is, read from its container."))
      .def_ro("path", &video::VideoInfo::path, "the file")
      .def_ro("stem", &video::VideoInfo::stem, "file name without extension")
      .def_ro("codec", &video::VideoInfo::codec, "e.g. mpeg4")
      .def_ro("duration_seconds", &video::VideoInfo::duration_seconds, "0 when unknown")
      .def_ro("fps", &video::VideoInfo::fps, "average frame rate, 0 when unknown")
      .def_ro("width", &video::VideoInfo::width, "width in pixels")
      .def_ro("height", &video::VideoInfo::height, "height in pixels");
  pickle_by_codec<video::Scene>(
      nb::class_<video::Scene>(m, "Scene", "One shot between two cuts (frames inclusive)."))
      .def_ro("index", &video::Scene::index, "0-based scene number")
      .def_ro("first_frame", &video::Scene::first_frame, "first frame")
      .def_ro("last_frame", &video::Scene::last_frame, "last frame")
      .def_ro("start_seconds", &video::Scene::start_seconds, "start time")
      .def_ro("end_seconds", &video::Scene::end_seconds, "end time")
      .def("__repr__", [](const video::Scene& s) {
        return fmt::format("Scene(index={}, frames={}..{})", s.index, s.first_frame, s.last_frame);
      });
  pickle_by_codec<video::FrameRef>(
      nb::class_<video::FrameRef>(m, "FrameRef", "A sampled frame of a scene: where to find it."))
      .def_ro("scene", &video::FrameRef::scene, "scene number")
      .def_ro("frame", &video::FrameRef::frame, "frame number in the video")
      .def_ro("seconds", &video::FrameRef::seconds, "presentation time")
      .def("__repr__", [](const video::FrameRef& r) {
        return fmt::format("FrameRef(scene={}, frame={})", r.scene, r.frame);
      });
  pickle_by_codec<video::FrameImage>(
      nb::class_<video::FrameImage>(m, "FrameImage", "A decoded frame: 8-bit gray pixels."))
      .def_ro("frame", &video::FrameImage::frame, "frame number in the video")
      .def_ro("width", &video::FrameImage::width, "width in pixels")
      .def_ro("height", &video::FrameImage::height, "height in pixels")
      .def_prop_ro("pixels", &pixels_of<video::FrameImage>, kPixelsDoc);
  pickle_by_codec<video::SceneRecord>(
      nb::class_<video::SceneRecord>(m, "SceneRecord", "Everything known about one scene."))
      .def_ro("index", &video::SceneRecord::index, "0-based scene number")
      .def_ro("first_frame", &video::SceneRecord::first_frame, "first frame")
      .def_ro("last_frame", &video::SceneRecord::last_frame, "last frame")
      .def_ro("text", &video::SceneRecord::text, "the most frequent frame text");
  pickle_by_codec<video::VideoRecord>(
      nb::class_<video::VideoRecord>(m, "VideoRecord", "One finished video."))
      .def_prop_ro(
          "stem", [](const video::VideoRecord& r) { return r.info.stem; },
          "file name without extension")
      .def_ro("frames", &video::VideoRecord::frames, "frames decoded while finding the scenes")
      .def_ro("scenes", &video::VideoRecord::scenes, "scene records in order")
      .def("to_json", &video::to_json_line, "the record's line in video2jsonl's output");
  m.def(
      "video_make_samples",
      [](const std::string& dir, int videos, std::uint64_t seed, int max_scenes,
         int min_scene_frames, int max_scene_frames, int corrupt) {
        video::CorpusOptions o;
        o.videos = videos;
        o.seed = seed;
        o.max_scenes = max_scenes;
        o.min_scene_frames = min_scene_frames;
        o.max_scene_frames = max_scene_frames;
        o.corrupt = corrupt;
        video::VideoCorpus corpus;
        {
          nb::gil_scoped_release release;
          corpus = video::make_videos(dir, o);
        }
        nb::list out;
        for (const auto& v : corpus.videos) {
          nb::list scenes;
          for (const auto& s : v.scenes)
            scenes.append(nb::make_tuple(s.first_frame, s.last_frame, s.text));
          out.append(nb::make_tuple(corpus.dir + "/" + v.file, scenes));
        }
        return out;
      },
      nb::arg("dir"), nb::arg("videos") = 3, nb::arg("seed") = 1, nb::arg("max_scenes") = 5,
      nb::arg("min_scene_frames") = 3, nb::arg("max_scene_frames") = 7, nb::arg("corrupt") = 1,
      "Writes sample videos with known scenes and captions into `dir` (and `corrupt` corrupt "
      "files: corrupt.mp4 when one); returns (video path, [(first frame, last frame, caption)]) "
      "per readable video.");
  m.def(
      "video_cpp_records",
      [](const std::vector<std::string>& paths, int every, int per_scene) {
        video::PipelineConfig config;
        config.sampling = {.every = every, .per_scene = per_scene};
        std::vector<std::string> lines;
        {
          nb::gil_scoped_release release;
          Executor ex(video::compile_pipeline(config));
          RunOptions options;
          options.progress = false;
          for (const auto& o : ex.run(paths, options).outputs)
            lines.push_back(o.ok() ? video::to_json_line(o.value()) : "failed: " + o.issue().cause);
        }
        return lines;
      },
      nb::arg("paths"), nb::arg("every") = 0, nb::arg("per_scene") = 3,
      "Runs the C++ video pipeline (video::VideoPipeline, default stages) on `paths`: one "
      "video2jsonl line per video, or 'failed: CAUSE'.");
}

}  // namespace rayorch::python

#endif  // RAYORCH_PYTHON_VIDEO
