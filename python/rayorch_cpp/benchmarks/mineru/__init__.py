"""MinerU: PDFs to Markdown with the MinerU2.5 vision-language model on vLLM; pages rendered
on CPU actors, read on GPU actors batched across documents, assembled per document
(benchmark.py)."""
