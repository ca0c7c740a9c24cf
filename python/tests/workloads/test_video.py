"""The C++ stages of the video workload in a Python pipeline, next to a Python UDF.

Runs when the extension was built with the video stages (FFmpeg's libraries, Tesseract,
cairo, which scripts/install-deps.sh installs)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

import rayorch_cpp as ro
from rayorch_cpp import F, _core

pytestmark = pytest.mark.skipif(
    "VideoOcrFrame" not in ro.cpp_udfs(), reason="extension built without the video stages"
)


class Squeeze:
    """Python: collapses the whitespace of each frame's text (already collapsed by the C++
    OCR stage, so the records stay those of the C++ pipeline)."""

    calls = 0

    def run(self, texts: list[str]) -> list[str]:
        Squeeze.calls += 1
        return [" ".join(t.split()) for t in texts]


class VideoToRecords(ro.Pipeline):
    """video::VideoPipeline's graph with its default options, plus the Python stage."""

    def __init__(self) -> None:
        self.open = ro.CppModule("VideoOpen", batch_size=8)
        self.detect = ro.CppModule("VideoDetectCuts").pre_init(3.0, 4.0, 0.4, 3.0)
        self.sample = ro.CppModule("VideoSampleFrames", batch_size=16).pre_init(0, 2)
        self.decode = ro.CppModule("VideoDecodeFrame", batch_size=4).pre_init(1920)
        self.ocr = ro.CppModule("VideoOcrFrame", replicas=2).pre_init("eng", "")
        self.squeeze = ro.RayModule(Squeeze).ray_options(batch_size=8)
        self.signature = ro.CppModule("VideoFrameSignature", batch_size=16)
        self.summarize = ro.CppModule("VideoSummarizeScene", batch_size=16).pre_init(6)
        self.assemble = ro.CppModule("VideoAssemble", batch_size=8)

    def forward(self, path: ro.Port) -> ro.Port:
        info = self.open(path)
        scenes = F.expand(self.detect(info))
        frames = F.expand(self.sample(scenes))
        images = self.decode(F.broadcast(path, like=frames), frames)
        texts, signatures, refs = F.reduce_aligned(
            self.squeeze(self.ocr(images)), self.signature(images), frames
        )
        return self.assemble(F.reduce(self.summarize(texts, signatures, refs, scenes)), info)


def test_python_pipeline_with_the_cpp_video_stages_equals_the_cpp_pipeline(
    tmp_path: Path,
) -> None:
    samples = _core.video_make_samples(str(tmp_path), videos=3, seed=5, corrupt=1)
    paths = [p for p, _ in samples] + [str(tmp_path / "corrupt.mp4")]
    assert Path(paths[-1]).exists()
    Squeeze.calls = 0
    with ro.Executor(VideoToRecords()) as ex:
        out = ex.run(paths, input_batch_size=2, progress=False).outputs
    assert Squeeze.calls >= 1

    read = total = 0
    for (_, scenes), record in zip(samples, out[:-1]):
        assert isinstance(record, _core.VideoRecord), record
        assert [(s.first_frame, s.last_frame) for s in record.scenes] == [
            (first, last) for first, last, _ in scenes
        ]
        read += sum(s.text == text for s, (_, _, text) in zip(record.scenes, scenes))
        total += len(scenes)
    assert read >= 0.9 * total  # captions read exactly (all of them, as measured)
    # The corrupt file: VideoOpen's RecordFailure, carried to the video's output.
    assert out[-1].outcome is ro.ItemOutcome.SUPPRESSED
    assert "corrupt.mp4" in out[-1].cause and out[-1].origin.call == "VideoOpen#0"

    # The same records, byte for byte, as the C++ pipeline's.
    expected = _core.video_cpp_records(paths, every=0, per_scene=2)
    assert [r.to_json() for r in out[:-1]] == expected[:-1]
    # The records pickle through their codecs (how they travel between Ray actors).
    assert [pickle.loads(pickle.dumps(r)).to_json() for r in out[:-1]] == expected[:-1]
    assert expected[-1].startswith("failed: ") and "corrupt.mp4" in expected[-1]
    first = json.loads(expected[0])
    assert first["video"] == Path(paths[0]).stem
