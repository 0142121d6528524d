"""Open sessions by id, and why recently ended ones ended: what a session manager and a Ray
node agent each keep, so that a late call on an ended session learns why it ended."""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

from ..errors import SessionEnded

if TYPE_CHECKING:
    from .session import Session

#: Ended sessions remembered (id -> reason, detail), so a late call learns why.
REMEMBER_ENDED = 10_000


class HeldSessions:
    """The open sessions (``open``, by id) and the last :data:`REMEMBER_ENDED` ended ones'
    reasons. Not locked: its owner's lock guards it."""

    def __init__(self) -> None:
        self.open: dict[str, Session] = {}
        self._ended: collections.OrderedDict[str, tuple[str, str]] = collections.OrderedDict()

    def ended(self, session: Session, reason: str) -> None:
        """``session`` is no longer open: remember why (``reason`` and its end detail)."""
        self.open.pop(session.id, None)
        self._ended[session.id] = (reason, session.end_detail)
        while len(self._ended) > REMEMBER_ENDED:
            self._ended.popitem(last=False)

    def find(self, session_id: str) -> Session | None:
        """The open session ``session_id``; :class:`SessionEnded` (with why) if it ended and
        is remembered; None if it is not known here."""
        session = self.open.get(session_id)
        if session is not None:
            return session
        ended = self._ended.get(session_id)
        if ended is not None:
            raise SessionEnded(session_id, *ended)
        return None
