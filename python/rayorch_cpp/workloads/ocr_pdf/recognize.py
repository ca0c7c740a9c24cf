"""Batched text-line recognition: the PP-OCRv4 recognition model (SVTR-LCNet, CTC) over the
lines of many pages of many documents in one inference.

Every line is scaled to the model's height (48 pixels) keeping its aspect ratio; the batch is
padded on the right to one width, the widest line's rounded up to a width bucket (a multiple
of BUCKET_WIDTH, at least the model's 320), so the runtime sees few distinct input shapes.
Each line's CTC decoding reads only the time steps of its own width, so the padding a batch
adds for its widest line does not reach the text of the others."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .detect import Image
from .models import open_session, recognition_characters

HEIGHT = 48
MIN_WIDTH = 320  # the width the model was exported for (rapidocr's rec_img_shape)
BUCKET_WIDTH = 64
MAX_WIDTH = 48 * 64  # a line wider than 64:1 is squeezed to this width


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


def bucket_width(widths: list[int]) -> int:
    """The padded width of a batch whose lines scale to ``widths``."""
    widest = max([MIN_WIDTH, *widths])
    return min(MAX_WIDTH, math.ceil(widest / BUCKET_WIDTH) * BUCKET_WIDTH)


def batch_tensor(lines: list[Image]) -> tuple[npt.NDArray[np.float32], list[int], BatchShape]:
    """The model input of ``lines`` (N x 3 x HEIGHT x width, normalised to [-1, 1], zero
    padding as the model was trained with), each line's scaled width, and the batch's shape."""
    import cv2

    widths = [scaled_width(line) for line in lines]
    width = bucket_width(widths)
    tensor = np.zeros((len(lines), 3, HEIGHT, width), dtype=np.float32)
    for i, (line, w) in enumerate(zip(lines, widths)):
        resized = cv2.resize(line, (w, HEIGHT)).astype(np.float32)
        tensor[i, :, :, :w] = resized.transpose(2, 0, 1) / 127.5 - 1.0
    return tensor, widths, BatchShape(len(lines), width, sum(widths))


class TextLineRecognizer:
    """Reads text lines. One onnxruntime session (threads from the actor's resources,
    models.open_session); ``read`` is one inference however many lines it gets."""

    def __init__(self) -> None:
        self.session = open_session("recognition")
        self.input_name = self.session.get_inputs()[0].name
        self.characters = recognition_characters(self.session)
        self.shapes: list[BatchShape] = []  # every inference's shape, for the benchmark

    def read(self, lines: list[Image]) -> list[str]:
        """The text of each line, in order: one model inference over all of them."""
        if not lines:
            return []
        tensor, widths, shape = batch_tensor(lines)
        self.shapes.append(shape)
        probabilities = self.session.run(None, {self.input_name: tensor})[0]
        steps = probabilities.shape[1]
        labels = probabilities.argmax(axis=2)
        return [
            self.decode(labels[i, : max(1, math.ceil(w * steps / shape.width))])
            for i, w in enumerate(widths)
        ]

    def decode(self, labels: npt.NDArray[np.int64]) -> str:
        """CTC greedy decoding: repeats collapsed, blanks (label 0) removed."""
        keep = np.ones(len(labels), dtype=bool)
        keep[1:] = labels[1:] != labels[:-1]
        keep &= labels != 0
        return "".join(self.characters[int(k)] for k in labels[keep]).strip()
