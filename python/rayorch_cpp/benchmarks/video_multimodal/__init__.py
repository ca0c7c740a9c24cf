"""A multimodal video topology without a model: each video's frames captioned and its audio
chunks transcribed on two branches, joined per video (benchmark.py)."""
