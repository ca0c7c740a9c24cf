"""A video captioning topology without a model: videos -> frames -> captions -> a summary
per video (benchmark.py)."""
