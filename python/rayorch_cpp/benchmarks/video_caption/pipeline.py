"""The video captioning topology's Pipeline: expand frames, caption, gather per video."""

from __future__ import annotations

from ... import F, Pipeline, Port, RayModule
from .udfs import CaptionFrame, SampleFrames, SummarizeVideo


class VideoCaptionTopology(Pipeline):
    def __init__(self, frames_per_video: int, workers: int, batch_size: int) -> None:
        options = {"replicas": workers, "batch_size": batch_size, "num_cpus": 0.25}
        self.frames = RayModule(SampleFrames).pre_init(frames_per_video).ray_options(**options)
        self.caption = RayModule(CaptionFrame).ray_options(**options)
        self.summarize = RayModule(SummarizeVideo).ray_options(**options)

    def forward(self, video: Port) -> Port:
        frame = F.expand(self.frames(video))
        out: Port = self.summarize(F.reduce(self.caption(frame)), video)
        return out
