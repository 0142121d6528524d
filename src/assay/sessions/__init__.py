"""Agent sessions: a sandbox whose workspace and processes live across an agent's steps."""

from ._download import Download, DownloadFailed, DownloadTooLarge
from .asyncio import AsyncSession
from .manager import SessionManager, TooManySessions
from .session import Session
from .step_reward import RewardWeights
from .types import (
    CellResult,
    SessionEnded,
    SessionFault,
    SessionLike,
    SessionLimits,
    SessionRefused,
    StepResult,
)
from .verify import EpisodeRewards, VerifyResult

__all__ = [
    "AsyncSession",
    "CellResult",
    "Download",
    "DownloadFailed",
    "DownloadTooLarge",
    "EpisodeRewards",
    "RewardWeights",
    "Session",
    "SessionEnded",
    "SessionFault",
    "SessionLike",
    "SessionLimits",
    "SessionManager",
    "SessionRefused",
    "StepResult",
    "TooManySessions",
    "VerifyResult",
]
