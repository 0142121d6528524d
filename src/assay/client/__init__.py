"""A Python client for the HTTP session API of ``assay serve``.

``SessionClient(url, token=None).session(...)`` returns a ``RemoteSession`` with the same
methods and results as ``assay.sessions.Session`` (exec, files, tar, fork, run_cell, verify,
episode_rewards, close; a context manager), so a rollout worker on a GPU node holds its
sandboxes on a service and needs no root, namespaces or cgroups of its own.
``AsyncSessionClient`` is its asyncio twin. Error answers become the exceptions ``Session``
raises (``SessionEnded`` with the reason, ``SessionRefused``, ``SessionFault``,
``ValidationError`` naming the field); anything else is a ``RemoteError``.
"""

from ..errors import RemoteError
from ._async import AsyncSessionClient
from ._sync import RemoteSession, SessionClient

__all__ = [
    "AsyncSessionClient",
    "RemoteError",
    "RemoteSession",
    "SessionClient",
]
