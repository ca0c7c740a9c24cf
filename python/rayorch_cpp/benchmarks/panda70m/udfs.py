"""Panda-70M captioning stages. OpenCV and vLLM are imported when an actor is built or runs.

A source is a manifest row ``{"video": path, "clips": [[start_s, end_s], ...]}``; a clip a
record ``{"video", "clip", "start", "end"}``; a decoded clip carries its frames as JPEG bytes
(plain data on every backend)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from ..._atomic_file import write_text_atomically

FRAMES_PER_CLIP = 4
PROMPT = "Describe this video clip in one detailed sentence: the scene, the subjects, the action."


class ExpandClips:
    """A source -> its clips, in order."""

    def run(self, sources: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        out = []
        for source in sources:
            clips = source.get("clips") or []
            out.append(
                [
                    {"video": source["video"], "clip": i, "start": float(s), "end": float(e)}
                    for i, (s, e) in enumerate(clips)
                ]
            )
        return out


class DecodeFrames:
    """A clip -> ``FRAMES_PER_CLIP`` frames evenly spaced inside it, scaled so that the long
    edge is ``long_edge`` pixels, as JPEG."""

    def __init__(self, *, long_edge: int = 448, backend: str = "opencv") -> None:
        if backend != "opencv":
            raise ValueError(f"decode backend {backend!r} is not supported; use 'opencv'")
        self.long_edge = long_edge

    def run(self, clips: list[dict[str, Any]]) -> list[dict[str, Any]]:
        import cv2

        out = []
        for clip in clips:
            capture = cv2.VideoCapture(clip["video"])
            frames = []
            try:
                span = max(clip["end"] - clip["start"], 0.0)
                for k in range(FRAMES_PER_CLIP):
                    at = clip["start"] + span * (k + 0.5) / FRAMES_PER_CLIP
                    capture.set(cv2.CAP_PROP_POS_MSEC, at * 1000.0)
                    ok, frame = capture.read()
                    if not ok:
                        continue
                    h, w = frame.shape[:2]
                    scale = self.long_edge / max(h, w)
                    if scale < 1:
                        frame = cv2.resize(frame, (round(w * scale), round(h * scale)))
                    ok, jpeg = cv2.imencode(".jpg", frame)
                    if ok:
                        frames.append(jpeg.tobytes())
            finally:
                capture.release()
            out.append({**clip, "frames": frames})
        return out


class TeacherCaption:
    """Decoded clips -> caption candidates, from a vision-language model on vLLM (its chat
    interface, the frames as images), ``candidates`` per clip."""

    def __init__(
        self, model: str, *, gpu_memory_utilization: float = 0.9, candidates: int = 1
    ) -> None:
        from vllm import LLM, SamplingParams

        self.llm = LLM(
            model=model,
            gpu_memory_utilization=gpu_memory_utilization,
            limit_mm_per_prompt={"image": FRAMES_PER_CLIP},
        )
        self.sampling = SamplingParams(
            n=candidates, max_tokens=96, temperature=0.7 if candidates > 1 else 0.0
        )

    def run(self, decoded: list[dict[str, Any]]) -> list[list[str]]:
        conversations = []
        for clip in decoded:
            content: list[dict[str, Any]] = [
                {
                    "type": "image_url",
                    "image_url": {"url": "data:image/jpeg;base64," + base64.b64encode(f).decode()},
                }
                for f in clip["frames"]
            ]
            content.append({"type": "text", "text": PROMPT})
            conversations.append([{"role": "user", "content": content}])
        results = self.llm.chat(conversations, self.sampling)
        return [[o.text.strip() for o in r.outputs] for r in results]


class SelectCaption:
    """A clip and its candidates -> its record with the best caption (the most words; a clip
    whose frames could not be decoded has none)."""

    def run(self, clips: list[dict[str, Any]], candidates: list[list[str]]) -> list[dict[str, Any]]:
        out = []
        for clip, found in zip(clips, candidates, strict=True):
            best = max(found, key=lambda c: len(c.split()), default="")
            out.append({k: clip[k] for k in ("video", "clip", "start", "end")} | {"caption": best})
        return out


class SummarizeSource:
    """A source's clip records, in clip order -> ``<video stem>.jsonl`` in ``output_dir``
    and the source's record."""

    def __init__(self, *, output_dir: str) -> None:
        self.output_dir = Path(output_dir)

    def run(
        self, clips: list[list[dict[str, Any]]], sources: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        self.output_dir.mkdir(parents=True, exist_ok=True)
        out = []
        for records, source in zip(clips, sources, strict=True):
            target = self.output_dir / f"{Path(source['video']).stem}.jsonl"
            write_text_atomically(target, "".join(json.dumps(r) + "\n" for r in records))
            captioned = sum(1 for r in records if r["caption"])
            out.append(
                {
                    "video": source["video"],
                    "clips": len(records),
                    "captioned": captioned,
                    "captions": str(target),
                }
            )
        return out
