"""SGLang then vLLM, each in its own Python environment (a conda environment per stage): the
first engine drafts, the second refines (benchmark.py)."""
