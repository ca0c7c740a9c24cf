"""MinerU at scale's Pipeline: MinerU's, with each pool's size given."""

from __future__ import annotations

from ..mineru.pipeline import STAGES, MinerUPipeline

__all__ = ["STAGES", "MinerUPipeline"]
