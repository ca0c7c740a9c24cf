"""The authoring API, where a reference user imports it (``rayorch.api``)."""

from ._modules import RayModule, function
from ._pipeline import Pipeline
from ._tracing import Port

__all__ = ["Pipeline", "Port", "RayModule", "function"]
