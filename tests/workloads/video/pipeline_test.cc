// The video pipeline (workloads/video/pipeline.cc): its plan, options rejected with their
// name, unreadable videos as typed failures that never reach the frame stages, and the same
// records on every schedule.
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "video/record_json.h"
#include "video/samples.h"
#include "video/video.h"
#include "workloads/video/video_testing.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace fs = std::filesystem;
namespace ro = rayorch;

namespace {

using video_testing::small_corpus;
using video_testing::TempDir;

}  // namespace

// ---------------------------------------------------------------------------------------------
// The pipeline

TEST(VideoPipeline, ExplainShowsBothExpansionsTheBroadcastAndBothGathers) {
  const std::string plan = video::compile_pipeline().explain();
  for (const char* what : {"worker-output by OpenVideo", "worker-output by DetectScenes",
                           "worker-output by SampleFrames", "worker-output by DecodeFrame",
                           "worker-output by OcrFrame", "worker-output by FrameSignature",
                           "worker-output by SummarizeScene", "worker-output by AssembleVideo",
                           "expanded-output-layout", "broadcast-effect", "reduce-effect"}) {
    EXPECT_NE(plan.find(what), std::string::npos) << what << "\n" << plan;
  }
  std::size_t expansions = 0;
  for (std::size_t p = plan.find(" expand "); p != std::string::npos;
       p = plan.find(" expand ", p + 1)) {
    ++expansions;
  }
  EXPECT_EQ(expansions, 2u) << plan;
}

TEST(VideoPipeline, InvalidOptionsAreRejectedWithTheirName) {
  video::PipelineConfig c;
  c.detection.threshold = 0;
  EXPECT_THROW(video::compile_pipeline(c), std::invalid_argument);
  c = {};
  c.sampling = {.every = 3, .per_scene = 3};
  try {
    video::compile_pipeline(c);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("every"), std::string::npos) << e.what();
  }
  c = {};
  c.ocr.replicas = 0;
  EXPECT_THROW(video::compile_pipeline(c), ro::CompileError);
}

TEST(VideoPipeline, UnreadableVideosAreTypedFailuresThatNeverReachFrameStages) {
  TempDir tmp;
  const fs::path corrupt = tmp.path() / "corrupt.mp4";
  std::ofstream(corrupt) << std::string(
                                "\x00\x00\x00\x18"
                                "ftypisom",
                                12)
                         << "garbage";
  const fs::path missing = tmp.path() / "missing.mp4";
  video::PipelineConfig config;
  config.ocr.replicas = 1;
  ro::testing::SyncExecutor ex(video::compile_pipeline(config));
  auto r = ex.run({corrupt.string(), missing.string()});
  ASSERT_EQ(r.outputs.size(), 2u);
  ASSERT_FALSE(r.outputs[0].ok());
  EXPECT_NE(r.outputs[0].issue().cause.find("cannot open video " + corrupt.string()),
            std::string::npos)
      << r.outputs[0].issue().cause;
  ASSERT_FALSE(r.outputs[1].ok());
  EXPECT_NE(r.outputs[1].issue().cause.find("not a readable file"), std::string::npos)
      << r.outputs[1].issue().cause;
  for (const ro::RpcRecord& rpc : ex.rpcs()) {
    EXPECT_TRUE(rpc.call.starts_with("OpenVideo")) << rpc.to_string();
  }
}

// Every schedule gives the same records: pool sizes, RPC sizes and input batching change
// which frames of which videos share a call and in which order they finish, never a record.
TEST(VideoPipeline, RecordsAreTheSameOnEverySchedule) {
  TempDir tmp;
  const fs::path in = tmp.path() / "in";
  // Seed 5: videos of 1, 5 and 4 scenes, plus the corrupt file.
  const video::VideoCorpus corpus = video::make_videos(in.string(), small_corpus(3, 5));
  std::vector<std::string> paths;
  for (const auto& v : corpus.videos) paths.push_back((in / v.file).string());
  paths.push_back((in / "corrupt.mp4").string());

  // One line per input: the record, or the failure's cause.
  auto lines = [](const auto& result) {
    std::vector<std::string> out;
    for (const auto& o : result.outputs) {
      out.push_back(o.ok() ? video::to_json_line(o.value()) : "failed: " + o.issue().cause);
    }
    return out;
  };
  video::PipelineConfig base;
  base.sampling.per_scene = 2;
  base.ocr.replicas = 1;
  ro::testing::SyncExecutor sync(video::compile_pipeline(base));
  const std::vector<std::string> reference = lines(sync.run(paths));
  ASSERT_EQ(reference.size(), paths.size());
  for (std::size_t i = 0; i < corpus.videos.size(); ++i) {
    const video::VideoRecord r = video::parse_json_line(reference[i]);
    EXPECT_EQ(r.scenes.size(), corpus.videos[i].scenes.size()) << reference[i];
  }
  EXPECT_TRUE(reference.back().starts_with("failed: ")) << reference.back();

  struct Schedule {
    const char* name;
    int replicas;
    int batch_size;
    std::size_t input_batch_size;
    std::size_t max_active_input_batches;
  };
  for (const Schedule& s :
       {Schedule{"one of everything", 1, 1, 1, 1}, Schedule{"wide pools, small calls", 3, 1, 1, 3},
        Schedule{"large calls, one batch", 2, 7, 0, 1}, Schedule{"mixed", 2, 3, 2, 2}}) {
    SCOPED_TRACE(s.name);
    video::PipelineConfig c = base;
    for (video::StageConfig* stage :
         {&c.open, &c.detect, &c.sample, &c.decode, &c.ocr, &c.signature, &c.scene, &c.assemble}) {
      *stage = {.replicas = s.replicas, .batch_size = s.batch_size};
    }
    ro::Executor ex(video::compile_pipeline(c));
    ro::RunOptions options;
    options.input_batch_size = s.input_batch_size;
    options.max_active_input_batches = s.max_active_input_batches;
    options.progress = false;
    EXPECT_EQ(lines(ex.run(paths, options)), reference);
  }
}
