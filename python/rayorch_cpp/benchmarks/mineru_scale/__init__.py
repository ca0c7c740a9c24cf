"""MinerU at scale: the MinerU pipeline over many inputs with fixed pools sized for a
cluster of many GPUs, fractional GPUs per OCR actor (benchmark.py)."""
