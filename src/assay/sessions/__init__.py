"""Agent sessions: a sandbox whose workspace and processes live across an agent's steps."""

from .asyncio import AsyncSession
from .manager import SessionManager, TooManySessions
from .session import Session
from .types import CellResult, SessionEnded, SessionLimits, SessionRefused, StepResult

__all__ = [
    "AsyncSession",
    "CellResult",
    "Session",
    "SessionEnded",
    "SessionLimits",
    "SessionManager",
    "SessionRefused",
    "StepResult",
    "TooManySessions",
]
