"""A document topology without a model: documents -> pages -> tables, every level batched
across its parents and gathered back in order (benchmark.py)."""
