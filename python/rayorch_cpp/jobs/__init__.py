"""Pipelines as jobs (docs/JOBS.md): ``python -m rayorch_cpp run MODULE:PIPELINE --input ...
--output DIR`` runs a Pipeline class from its configuration, locally or on Ray, and
``python -m rayorch_cpp submit ...`` sends the same job to a Ray cluster's job server.

The configuration (a TOML or JSON file, ``--set KEY=VALUE``) sets the pipeline's constructor
parameters, each stage's options (a stage is a Module held as an attribute, named by it), the
run's options, the inputs, the outputs and the backend; it is checked whole before anything
runs. The results go into the output folder through a sink, exactly once across a crash and
``--resume``; the run folder ``OUT/_run`` keeps the configuration as resolved, the journal,
the failures, the JSON report and its page, and the summary.
"""

from ._config import BackendSection, InputSection, OutputSection, RunSection
from ._resolve import JobRequest, ResolvedJob, load_pipeline_class, resolve
from ._run import EXIT_ABORTED, EXIT_OK, EXIT_SOME_FAILED, EXIT_USAGE, JobSummary, run_job
from ._typed import ConfigError

__all__ = [
    "EXIT_ABORTED",
    "EXIT_OK",
    "EXIT_SOME_FAILED",
    "EXIT_USAGE",
    "BackendSection",
    "ConfigError",
    "InputSection",
    "JobRequest",
    "JobSummary",
    "OutputSection",
    "ResolvedJob",
    "RunSection",
    "load_pipeline_class",
    "resolve",
    "run_job",
]
