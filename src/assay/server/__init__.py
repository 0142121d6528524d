"""The HTTP service (FastAPI): SandboxFusion-compatible, native ``/v1`` and OpenRLHF routes
around one :class:`~assay.executor.LocalExecutor`. Run it with ``assay serve``."""

from .app import create_app
from .settings import Settings

__all__ = ["Settings", "create_app"]
