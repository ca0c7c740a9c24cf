"""YOLO and SAM stages. Pillow, numpy, ultralytics and segment-anything are imported when an
actor is built or runs. Images travel as numpy arrays (H x W x 3, uint8), masks as boolean
arrays of the image's size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..._atomic_file import write_bytes_atomically


class LoadImage:
    """An image's path -> its pixels and its record (path, stem, size)."""

    def run(self, paths: list[str]) -> tuple[list[Any], list[dict[str, Any]]]:
        import numpy as np
        from PIL import Image

        images, infos = [], []
        for path in paths:
            with Image.open(path) as image:
                pixels = np.asarray(image.convert("RGB"))
            images.append(pixels)
            infos.append(
                {
                    "path": path,
                    "stem": Path(path).stem,
                    "height": int(pixels.shape[0]),
                    "width": int(pixels.shape[1]),
                }
            )
        return images, infos


class DetectObjects:
    """Images -> their detections (box, label, confidence), by a YOLO model."""

    def __init__(self, model: str, *, device: str = "cuda", confidence: float = 0.25) -> None:
        from ultralytics import YOLO

        self.model = YOLO(model)
        self.device = device
        self.confidence = confidence

    def run(self, images: list[Any]) -> list[list[dict[str, Any]]]:
        results = self.model.predict(
            list(images), conf=self.confidence, device=self.device, verbose=False
        )
        out = []
        for result in results:
            names = result.names
            boxes = result.boxes
            xyxy = boxes.xyxy.cpu().numpy().tolist()
            classes = boxes.cls.cpu().numpy().astype(int).tolist()
            scores = boxes.conf.cpu().numpy().tolist()
            out.append(
                [
                    {"box": [float(v) for v in box], "label": str(names[c]), "confidence": float(s)}
                    for box, c, s in zip(xyxy, classes, scores, strict=True)
                ]
            )
        return out


class SegmentObjects:
    """An image and its detections -> one mask per detection, by SAM prompted with the box."""

    def __init__(self, checkpoint: str, *, model_type: str = "vit_b", device: str = "cuda") -> None:
        from segment_anything import SamPredictor, sam_model_registry

        sam = sam_model_registry[model_type](checkpoint=checkpoint)
        sam.to(device=device)
        self.predictor = SamPredictor(sam)

    def run(self, images: list[Any], detections: list[list[dict[str, Any]]]) -> list[list[Any]]:
        import numpy as np

        out = []
        for image, found in zip(images, detections, strict=True):
            self.predictor.set_image(image)
            masks = []
            for detection in found:
                predicted, _, _ = self.predictor.predict(
                    box=np.array(detection["box"]), multimask_output=False
                )
                masks.append(predicted[0].astype(bool))
            out.append(masks)
        return out


class RenderMasks:
    """An image and its masks -> the image with each mask tinted in a colour of its own."""

    def __init__(self, *, alpha: float = 0.35, seed: int = 1234) -> None:
        self.alpha = alpha
        self.seed = seed

    def run(self, images: list[Any], masks: list[list[Any]]) -> list[Any]:
        import numpy as np

        colours = np.random.default_rng(self.seed).integers(0, 256, size=(256, 3))
        out = []
        for image, image_masks in zip(images, masks, strict=True):
            canvas = image.astype(np.float32)
            for index, mask in enumerate(image_masks):
                colour = colours[index % len(colours)].astype(np.float32)
                canvas[mask] = (1 - self.alpha) * canvas[mask] + self.alpha * colour
            out.append(canvas.clip(0, 255).astype(np.uint8))
        return out


class SaveImage:
    """An overlay and its image's record -> ``<stem>.png`` in ``output_dir``, its path."""

    def __init__(self, output_dir: str) -> None:
        self.output_dir = Path(output_dir)

    def run(self, overlays: list[Any], infos: list[dict[str, Any]]) -> list[str]:
        import io

        from PIL import Image

        self.output_dir.mkdir(parents=True, exist_ok=True)
        out = []
        for overlay, info in zip(overlays, infos, strict=True):
            buffer = io.BytesIO()
            Image.fromarray(overlay).save(buffer, format="PNG")
            target = self.output_dir / f"{info['stem']}.png"
            write_bytes_atomically(target, buffer.getvalue())
            out.append(str(target))
        return out


class SaveMetadata:
    """An image's record, detections and overlay -> ``<stem>.json`` in ``output_dir``."""

    def __init__(self, output_dir: str) -> None:
        self.output_dir = Path(output_dir)

    def run(
        self,
        infos: list[dict[str, Any]],
        detections: list[list[dict[str, Any]]],
        overlays: list[str],
    ) -> list[dict[str, Any]]:
        self.output_dir.mkdir(parents=True, exist_ok=True)
        out = []
        for info, found, overlay in zip(infos, detections, overlays, strict=True):
            record = {**info, "objects": len(found), "detections": found, "overlay": overlay}
            target = self.output_dir / f"{info['stem']}.json"
            write_bytes_atomically(target, json.dumps(record, indent=2).encode())
            out.append(record)
        return out
