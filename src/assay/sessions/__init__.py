"""Agent sessions: a sandbox whose workspace and processes live across an agent's steps."""

from ..errors import SessionEnded, SessionRefused, TooManySessions, UnknownSession
from .asyncio import AsyncSession
from .manager import SessionManager
from .session import Session
from .step_reward import RewardWeights
from .types import CellResult, SessionLimits, StepResult
from .verify import EpisodeRewards, VerifyResult

__all__ = [
    "AsyncSession",
    "CellResult",
    "EpisodeRewards",
    "RewardWeights",
    "Session",
    "SessionEnded",
    "SessionLimits",
    "SessionManager",
    "SessionRefused",
    "StepResult",
    "TooManySessions",
    "UnknownSession",
    "VerifyResult",
]
