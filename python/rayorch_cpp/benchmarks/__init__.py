"""The built-in benchmarks, one package each (``benchmark.py``: the configuration class with
``run()`` and ``submit()``; ``pipeline.py``: the Pipeline; ``udfs.py``: its UDFs, which import
their models' libraries only when an actor is built; ``env.json``: the Ray runtime environment
they need; ``README.md``). Registered in ``rayorch_cpp.benchmark.registry``."""

__all__: list[str] = []
