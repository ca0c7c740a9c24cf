"""Batched text-line recognition: the PP-OCRv4 recognition model (SVTR-LCNet, CTC) over the
lines of many pages of many documents.

Every line is scaled to the model's height (48 pixels) keeping its aspect ratio and padded on
the right to its width bucket: the smallest of 320 (the width the model was exported for),
480, 736, ... (each about 1.5 times the one before, a multiple of 32) that holds it. The lines
of one call are read with one inference per bucket present, all lines of that bucket
together, whatever pages and documents they come from. A line's input therefore depends on
the line alone, and so does its text: the model's SVTR neck attends over the whole padded
width, so padding a short line to the widest line of its batch changes what it reads (on the
generated corpus, one common width per call read 9 of 123 lines differently and dropped word
recall from 0.998 to 0.957, and cost three times the compute on a CPU). Each line's CTC
decoding reads only the time steps of its own width."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .detect import Image
from .models import open_session, recognition_characters

HEIGHT = 48
MIN_WIDTH = 320  # the width the model was exported for (rapidocr's rec_img_shape)
BUCKET_RATIO = 1.5
MAX_WIDTH = 48 * 64  # a line wider than 64:1 is squeezed to this width, the last bucket


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
    """The width of a line scaled to HEIGHT, keeping its aspect ratio (at most MAX_WIDTH)."""
    height, width = line.shape[:2]
    return max(1, min(MAX_WIDTH, math.ceil(HEIGHT * width / max(1, height))))


def width_buckets() -> list[int]:
    """The padded widths lines are read at, ascending: MIN_WIDTH, then about BUCKET_RATIO
    times the one before (a multiple of 32), the last MAX_WIDTH."""
    buckets = [MIN_WIDTH]
    while buckets[-1] < MAX_WIDTH:
        buckets.append(min(MAX_WIDTH, round(buckets[-1] * BUCKET_RATIO / 32) * 32))
    return buckets


BUCKETS = width_buckets()


def bucket_of(width: int) -> int:
    """The padded width of a line that scales to ``width``: the smallest bucket holding it."""
    return next(b for b in BUCKETS if b >= width)


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
    models.open_session); ``read`` runs one inference per width bucket among its lines."""

    def __init__(self) -> None:
        self.session = open_session("recognition")
        self.input_name = self.session.get_inputs()[0].name
        self.characters = recognition_characters(self.session)
        self.shapes: list[BatchShape] = []  # every inference's shape, for the benchmark

    def read(self, lines: list[Image]) -> list[str]:
        """The text of each line, in order: one model inference per width bucket, over all
        the lines of that bucket."""
        by_bucket: dict[int, list[int]] = {}
        for i, line in enumerate(lines):
            by_bucket.setdefault(bucket_of(scaled_width(line)), []).append(i)
        texts = [""] * len(lines)
        for width in sorted(by_bucket):
            members = by_bucket[width]
            for i, text in zip(members, self.read_bucket([lines[i] for i in members], width)):
                texts[i] = text
        return texts

    def read_bucket(self, lines: list[Image], width: int) -> list[str]:
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
        """CTC greedy decoding: repeats collapsed, blanks (label 0) removed."""
        keep = np.ones(len(labels), dtype=bool)
        keep[1:] = labels[1:] != labels[:-1]
        keep &= labels != 0
        return "".join(self.characters[int(k)] for k in labels[keep]).strip()
