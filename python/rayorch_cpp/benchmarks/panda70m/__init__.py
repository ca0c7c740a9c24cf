"""Panda-70M style video captioning: each source video's clips decoded into frames and
captioned by a vision-language teacher on vLLM, the best caption kept per clip, the clips
gathered per source (benchmark.py)."""
