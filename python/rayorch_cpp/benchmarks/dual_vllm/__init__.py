"""Two vLLM models in one pipeline: model A answers each prompt, a refinement prompt is built
from its answer, model B refines it (benchmark.py)."""
