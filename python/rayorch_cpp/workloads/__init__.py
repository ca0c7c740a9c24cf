"""Workloads built on the package: real pipelines with real models, for tests, benchmarks and
as examples (each is a subpackage with its own optional dependencies; see ``ocr_pdf``)."""
