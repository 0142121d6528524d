"""Agent sessions: a sandbox whose workspace and processes live across an agent's steps."""

from ..errors import (
    DownloadFailed,
    DownloadTooLarge,
    SessionEnded,
    SessionFault,
    SessionRefused,
    TooManySessions,
    UnknownSession,
)
from ._base import SessionBase
from ._download import Download
from .asyncio import AsyncSession
from .manager import SessionManager
from .session import Session, open_session
from .step_reward import RewardWeights
from .types import CellResult, ExecStep, SessionLike, SessionLimits, StepResult
from .verify import EpisodeRewards, VerifyResult

__all__ = [
    "AsyncSession",
    "CellResult",
    "Download",
    "DownloadFailed",
    "DownloadTooLarge",
    "EpisodeRewards",
    "ExecStep",
    "RewardWeights",
    "Session",
    "SessionBase",
    "SessionEnded",
    "SessionFault",
    "SessionLike",
    "SessionLimits",
    "SessionManager",
    "SessionRefused",
    "StepResult",
    "TooManySessions",
    "UnknownSession",
    "VerifyResult",
    "open_session",
]
