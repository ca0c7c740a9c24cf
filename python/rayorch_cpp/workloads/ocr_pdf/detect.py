"""Text-line detection on one page: the PP-OCRv4 DB model, its boxes in reading order, and
each line cut out of the page as an upright crop for recognition.

The pre- and post-processing are rapidocr's (its ``DetPreProcess``, resize to multiples of 32
and normalise, written again here in float32 as DetectionInput, which gives the same tensor;
its ``DBPostProcess``: binarise the probability map, boxes from its contours, expanded by the
unclip ratio), with the thresholds of rapidocr's configuration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .models import open_session

Image = npt.NDArray[np.uint8]
Box = npt.NDArray[np.float32]  # 4 corners (x, y): top-left, top-right, bottom-right, bottom-left

# The page is scaled down so that its longer side is at most DETECT_SIDE pixels before
# detection; the crops are cut from the full render (stages.RENDER_DPI, 200), where a line of
# 10-point body text is about 30 pixels tall, close to the recogniser's 48. At 1280 such a
# line is about 18 pixels tall in the detector's input, which it finds as reliably as at full
# size, for 0.6 times the compute; at 640 (9 pixels) its boxes cut letters off (on 16 real
# pages of 9 Debian manuals, word recall 0.59). The thresholds are rapidocr's (its
# config.yaml): pixels above 0.3 are text, boxes scoring below 0.5 dropped, boxes grown by 1.6.
DETECT_SIDE = 1280
# Large type needs no such resolution: a page whose text bands are at least TALL_LINE pixels
# tall at PROBE_SIDE (type of about 15 points or larger on a letter page; body text at 9-12
# points makes bands of 4-6 there) is detected there, for a quarter of the compute. The bands
# are read from the page itself, before any model runs (line_height).
PROBE_SIDE = 640
TALL_LINE = 8
INK = 160  # a pixel darker than this in every channel is ink
# A row crosses text when it enters ink at least this often: the strokes of a few letters. The
# rules of a table or a frame enter ink a few times a row, so they join no band of text.
TEXT_ROW_STROKES = 12
THRESHOLD = 0.3
BOX_THRESHOLD = 0.5
UNCLIP_RATIO = 1.6
MAX_CANDIDATES = 1000


@dataclass(frozen=True, slots=True)
class TextLine:
    """One detected line of a page: its crop (height x width x 3, BGR) and the text row it
    belongs to (boxes side by side on one row share it; rows count from the top)."""

    image: Image
    row: int


class TextLineDetector:
    """Finds the text lines of page images. One onnxruntime session (threads from the actor's
    resources, models.open_session); one or two inferences per page, since pages differ in
    size: at ``side`` (DETECT_SIDE), or at PROBE_SIDE when its type is large."""

    def __init__(self, side: int = DETECT_SIDE) -> None:
        from rapidocr_onnxruntime.ch_ppocr_det.utils import DBPostProcess

        if side < 32:
            raise ValueError(f"the detection side must be at least 32 pixels, not {side}")
        self.side = side
        self.session = open_session("detection")
        self.input_name = self.session.get_inputs()[0].name
        self.preprocess = DetectionInput(side)
        self.large = DetectionInput(PROBE_SIDE) if side > PROBE_SIDE else None
        self.last_side = side  # the side the last page was detected at (for the benchmark)
        self.postprocess: Any = DBPostProcess(
            thresh=THRESHOLD,
            box_thresh=BOX_THRESHOLD,
            max_candidates=MAX_CANDIDATES,
            unclip_ratio=UNCLIP_RATIO,
            use_dilation=True,
            score_mode="fast",
        )

    def boxes(self, page: Image) -> list[Box]:
        """The text boxes of a page (height x width x 3, BGR), in reading order."""
        if self.large is not None:
            scale = min(1.0, PROBE_SIDE / max(page.shape[:2]))
            if line_height(page) * scale >= TALL_LINE:
                self.last_side = PROBE_SIDE
                return reading_order(self.detect(page, self.large))
        self.last_side = self.side
        return reading_order(self.detect(page, self.preprocess))

    def detect(self, page: Image, preprocess: DetectionInput) -> list[Box]:
        """The text boxes of a page, scaled by ``preprocess`` for the model, in no order."""
        height, width = page.shape[:2]
        tensor = preprocess(page)
        if tensor is None:
            return []
        probabilities = self.session.run(None, {self.input_name: tensor})[0]
        found, _ = self.postprocess(probabilities, (height, width))
        kept = []
        for box in found:
            corners = clip(order_corners(np.asarray(box, dtype=np.float32)), height, width)
            if box_width(corners) > 3 and box_height(corners) > 3:
                kept.append(corners)
        return kept

    def lines(self, page: Image) -> list[TextLine]:
        """The lines of a page as upright crops, in reading order, each with its row."""
        boxes = self.boxes(page)
        rows = row_numbers(boxes)
        return [TextLine(crop(page, box), row) for box, row in zip(boxes, rows)]


class DetectionInput:
    """A page as the detection model's input, as rapidocr's DetPreProcess makes it: scaled so
    that its longer side is at most ``side`` (never up), each side rounded to a multiple of
    32, normalised to [-1, 1], 1 x 3 x H x W. Computed in float32 in one pass (rapidocr's
    goes through float64, a quarter of a page's non-model time)."""

    def __init__(self, side: int) -> None:
        self.side = side

    def __call__(self, page: Image) -> npt.NDArray[np.float32] | None:
        import cv2

        height, width = page.shape[:2]
        ratio = min(1.0, self.side / max(height, width))
        size = [int(round(int(n * ratio) / 32) * 32) for n in (width, height)]
        if min(size) <= 0:
            return None
        scaled = cv2.resize(page, (size[0], size[1]))
        tensor = np.empty((1, 3, size[1], size[0]), dtype=np.float32)
        np.multiply(scaled.transpose(2, 0, 1), np.float32(1 / 127.5), out=tensor[0])
        tensor -= 1.0
        return tensor


def line_height(page: Image) -> float:
    """The median height, in pixels, of the bands of consecutive rows that cross text (0 on
    a page without text): about a text line's x-height and ascenders on a text page. Read on
    every other row of the green channel (dark for black, red and blue type alike)."""
    ink = page[::2, :, 1] < INK
    strokes = np.count_nonzero(ink[:, 1:] & ~ink[:, :-1], axis=1)
    rows = strokes >= TEXT_ROW_STROKES
    edges = np.diff(np.concatenate(([0], rows.astype(np.int8), [0])))
    heights = np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)
    return 2.0 * float(np.median(heights)) if len(heights) else 0.0


def order_corners(points: Box) -> Box:
    """The 4 corners as top-left, top-right, bottom-right, bottom-left."""
    by_x = points[np.argsort(points[:, 0])]
    left = by_x[:2][np.argsort(by_x[:2, 1])]
    right = by_x[2:][np.argsort(by_x[2:, 1])]
    return np.array([left[0], right[0], right[1], left[1]], dtype=np.float32)


def clip(box: Box, height: int, width: int) -> Box:
    out = box.copy()
    out[:, 0] = np.clip(np.floor(out[:, 0]), 0, width - 1)
    out[:, 1] = np.clip(np.floor(out[:, 1]), 0, height - 1)
    return out


def box_width(box: Box) -> float:
    return float(np.linalg.norm(box[0] - box[1]))


def box_height(box: Box) -> float:
    return float(np.linalg.norm(box[0] - box[3]))


def same_row(a: Box, b: Box) -> bool:
    """Whether two boxes sit on one text row: their vertical centres are within half the
    smaller box's height of each other."""
    centre_a = (a[0][1] + a[3][1]) / 2
    centre_b = (b[0][1] + b[3][1]) / 2
    return bool(abs(centre_a - centre_b) < min(box_height(a), box_height(b)) / 2)


def reading_order(boxes: list[Box]) -> list[Box]:
    """Top to bottom, and left to right within a row."""
    by_top = sorted(boxes, key=lambda b: (float(b[0][1]), float(b[0][0])))
    rows: list[list[Box]] = []
    for box in by_top:
        if rows and same_row(rows[-1][0], box):
            rows[-1].append(box)
        else:
            rows.append([box])
    return [box for row in rows for box in sorted(row, key=lambda b: float(b[0][0]))]


def row_numbers(boxes: list[Box]) -> list[int]:
    """The row of each box of a reading-ordered list."""
    rows: list[int] = []
    for i, box in enumerate(boxes):
        rows.append(0 if i == 0 else rows[-1] + (0 if same_row(boxes[i - 1], box) else 1))
    return rows


def crop(page: Image, box: Box) -> Image:
    """The box cut out of the page and straightened (a perspective warp onto its own width and
    height); a crop much taller than wide is turned on its side, as the recogniser reads rows."""
    import cv2

    width = max(1, int(max(box_width(box), float(np.linalg.norm(box[2] - box[3])))))
    height = max(1, int(max(box_height(box), float(np.linalg.norm(box[1] - box[2])))))
    target = np.array([[0, 0], [width, 0], [width, height], [0, height]], dtype=np.float32)
    warp = cv2.getPerspectiveTransform(box, target)
    out = cv2.warpPerspective(
        page, warp, (width, height), borderMode=cv2.BORDER_REPLICATE, flags=cv2.INTER_CUBIC
    )
    if height / width >= 1.5:
        out = np.rot90(out)
    return np.ascontiguousarray(out, dtype=np.uint8)
