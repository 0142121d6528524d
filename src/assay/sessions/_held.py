"""Open sessions by id, and why recently ended ones ended: what a session manager and a Ray
node agent each keep, so that a late call on an ended session learns why it ended."""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

from ..errors import SessionEnded

if TYPE_CHECKING:
    from ._base import SessionBase

#: Ended sessions remembered (id -> reason, detail), so a late call learns why.
REMEMBER_ENDED = 10_000


class HeldSessions:
    """The open sessions (``open``, by id) with their owners, and the last
    :data:`REMEMBER_ENDED` ended ones' reasons and owners. Not locked: its owner's lock
    guards it.

    An owner is an opaque name (the service's tenant). A session held with one is found
    only by a lookup for that owner (or for any, ``owner=None``): to any other it does not
    exist, ended or not, so its id is never confirmed to someone it does not belong to."""

    def __init__(self) -> None:
        self.open: dict[str, SessionBase] = {}
        self.owners: dict[str, str] = {}
        self._ended: collections.OrderedDict[str, tuple[str, str, str | None]] = (
            collections.OrderedDict()
        )

    def hold(self, session: SessionBase, owner: str | None = None) -> None:
        """``session`` is open (``owner``'s, when given)."""
        self.open[session.id] = session
        if owner is not None:
            self.owners[session.id] = owner

    def ended(self, session: SessionBase, reason: str) -> None:
        """``session`` is no longer open: remember why (``reason`` and its end detail)."""
        self.open.pop(session.id, None)
        owner = self.owners.pop(session.id, None)
        self._ended[session.id] = (reason, session.end_detail, owner)
        while len(self._ended) > REMEMBER_ENDED:
            self._ended.popitem(last=False)

    def find(self, session_id: str, owner: str | None = None) -> SessionBase | None:
        """The open session ``session_id``; :class:`SessionEnded` (with why) if it ended and
        is remembered; None if it is not known here, or (``owner`` given) not ``owner``'s."""
        session = self.open.get(session_id)
        if session is not None:
            return session if owner is None or self.owners.get(session_id) == owner else None
        ended = self._ended.get(session_id)
        if ended is not None and (owner is None or ended[2] == owner):
            raise SessionEnded(session_id, ended[0], ended[1])
        return None
