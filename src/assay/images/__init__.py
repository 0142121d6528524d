"""Task images: read-only root file systems a sandbox can run on instead of the host's.

Images enter the store by import (an OCI layout or a ``docker save`` archive, unpacked in
Python with whiteouts, nothing executed) or by build (Debian packages through mmdebstrap,
plus pip requirements, from a small spec). ``Runner.run(..., image=...)`` runs on one.
"""

from __future__ import annotations

from ..errors import BuildError, ImageNotFound
from .build import ImageSpec, build_image
from .importer import import_image
from .pools import ImagePools
from .store import Image, ImageStore

__all__ = [
    "BuildError",
    "Image",
    "ImageNotFound",
    "ImagePools",
    "ImageSpec",
    "ImageStore",
    "build_image",
    "import_image",
]
