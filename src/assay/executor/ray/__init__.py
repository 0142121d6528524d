"""The executor on a Ray cluster: one node agent per node, the scheduler on the driver.

Ray is an optional extra (``pip install 'assay[ray]'``); importing this package does not
import Ray, creating a :class:`RayExecutor` does.
"""

from __future__ import annotations

from .executor import RayExecutor

__all__ = ["RayExecutor"]
