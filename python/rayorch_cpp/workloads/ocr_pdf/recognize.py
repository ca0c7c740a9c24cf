"""Batched text-line recognition: the PP-OCRv4 recognition model (SVTR-LCNet, CTC) over the
lines of many pages of many documents.

Every line is scaled to the model's height (48 pixels) keeping its aspect ratio and padded on
the right to its width class: the next multiple of WIDTH_STEP (32) pixels, at least 320 (the
width the model was exported for), with no upper bound, so a line as long as a page of small
type is read at its own width rather than squeezed. A line's input therefore depends on the
line alone, and so does its text: the model's SVTR neck attends over the whole padded width,
so padding a line to anything else (the widest line of its batch, as rapidocr does, or a
coarse bucket) changes what it reads and costs compute that reads nothing.

The lines of one call, whatever pages and documents they come from, are grouped by width
class; each group is read in inferences of at most ``lines_per_inference`` lines. On a CPU one
line per inference is the fastest (a larger input runs no faster per line and touches more
memory); a GPU wants whole groups. Lines of one class read the same alone or together: an
inference reads each line of its batch independently (no batch statistics at inference)."""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .detect import Image
from .models import CPU_PROVIDER, open_session, recognition_characters

HEIGHT = 48
MIN_WIDTH = 320  # the width the model was exported for (rapidocr's rec_img_shape)
WIDTH_STEP = 32  # width classes are multiples of this (the model's total horizontal stride)
GPU_LINES_PER_INFERENCE = 64


@dataclass(frozen=True, slots=True)
class BatchShape:
    """The input of one recognition inference: lines x width (height is HEIGHT), and the
    widths the lines themselves fill (the rest is padding)."""

    lines: int
    width: int
    filled: int

    @property
    def padding_fraction(self) -> float:
        """The share of the batch's pixels that are padding."""
        total = self.lines * self.width
        return 1.0 - self.filled / total if total else 0.0


def scaled_width(line: Image) -> int:
    """The width of a line scaled to HEIGHT, keeping its aspect ratio."""
    height, width = line.shape[:2]
    return max(1, math.ceil(HEIGHT * width / max(1, height)))


def width_class(width: int) -> int:
    """The padded width of a line that scales to ``width``: the next multiple of WIDTH_STEP,
    at least MIN_WIDTH."""
    return max(MIN_WIDTH, math.ceil(width / WIDTH_STEP) * WIDTH_STEP)


def batch_tensor(
    lines: list[Image], width: int
) -> tuple[npt.NDArray[np.float32], list[int], BatchShape]:
    """The model input of ``lines`` padded to ``width`` (N x 3 x HEIGHT x width, normalised
    to [-1, 1], zero padding as the model was trained with), each line's scaled width, and
    the input's shape."""
    import cv2

    widths = [min(width, scaled_width(line)) for line in lines]
    tensor = np.zeros((len(lines), 3, HEIGHT, width), dtype=np.float32)
    for i, (line, w) in enumerate(zip(lines, widths)):
        resized = cv2.resize(line, (w, HEIGHT)).astype(np.float32)
        tensor[i, :, :, :w] = resized.transpose(2, 0, 1) / 127.5 - 1.0
    return tensor, widths, BatchShape(len(lines), width, sum(widths))


class TextLineRecognizer:
    """Reads text lines. One onnxruntime session (threads from the actor's resources,
    models.open_session); ``read`` groups its lines by width class and reads each group in
    inferences of at most ``lines_per_inference`` lines (default: 1 on a CPU,
    GPU_LINES_PER_INFERENCE on a GPU)."""

    def __init__(self, lines_per_inference: int | None = None) -> None:
        self.session = open_session("recognition")
        self.input_name = self.session.get_inputs()[0].name
        self.characters = recognition_characters(self.session)
        on_cpu = self.session.get_providers()[0] == CPU_PROVIDER
        default = 1 if on_cpu else GPU_LINES_PER_INFERENCE
        self.lines_per_inference = lines_per_inference or default
        if self.lines_per_inference < 1:
            raise ValueError(f"lines_per_inference must be at least 1, not {lines_per_inference}")
        self.shapes: list[BatchShape] = []  # every inference's shape, for the benchmark

    def read(self, lines: list[Image]) -> list[str]:
        """The text of each line, in order: the lines grouped by width class, each group read
        in inferences of at most ``lines_per_inference`` lines."""
        by_width: dict[int, list[int]] = {}
        for i, line in enumerate(lines):
            by_width.setdefault(width_class(scaled_width(line)), []).append(i)
        texts = [""] * len(lines)
        step = self.lines_per_inference
        for width in sorted(by_width):
            members = by_width[width]
            for start in range(0, len(members), step):
                part = members[start : start + step]
                for i, text in zip(part, self.read_group([lines[i] for i in part], width)):
                    texts[i] = text
        return texts

    def read_group(self, lines: list[Image], width: int) -> list[str]:
        """The text of each line, padded to ``width``: one model inference."""
        tensor, widths, shape = batch_tensor(lines, width)
        self.shapes.append(shape)
        probabilities = self.session.run(None, {self.input_name: tensor})[0]
        steps = probabilities.shape[1]
        labels = probabilities.argmax(axis=2)
        return [
            self.decode(labels[i, : max(1, math.ceil(w * steps / width))])
            for i, w in enumerate(widths)
        ]

    def decode(self, labels: npt.NDArray[np.int64]) -> str:
        """CTC greedy decoding (repeats collapsed, blanks, label 0, removed), then Unicode
        compatibility forms folded (NFKC): the model's dictionary is Chinese first and writes
        punctuation full-width ("，", "：", "（"), which reads as ASCII in an English text."""
        keep = np.ones(len(labels), dtype=bool)
        keep[1:] = labels[1:] != labels[:-1]
        keep &= labels != 0
        text = "".join(self.characters[int(k)] for k in labels[keep]).strip()
        return unicodedata.normalize("NFKC", text)
