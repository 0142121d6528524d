"""Assay: execution feedback for reinforcement learning of code models.

The public API lives here; everything else is private to the package.
"""

from .client import AsyncSessionClient, RemoteSession, SessionClient
from .errors import (
    AssayError,
    ClosedError,
    ConfigError,
    InsecureHostError,
    Overloaded,
    SandboxError,
    UnsupportedLanguageError,
    ValidationError,
)
from .executor import BatchHandle, JobResult, LocalExecutor, RunJob
from .executor.queue import QueueExecutor  # imports redis only when one is created
from .executor.ray import RayExecutor  # imports Ray only when one is created
from .images import ImageSpec, ImageStore
from .judge import Judge, Judgement, Problem, Submission, TestCase, TestResult, Verdict
from .reward import (
    BinaryReward,
    CompositeReward,
    EfficiencyReward,
    FractionReward,
    MemoryReward,
    QualityReward,
    Reward,
    RewardFn,
    RewardResult,
    WeightedFractionReward,
)
from .reward import get as get_reward
from .runner import Runner, run, run_async
from .sandbox import HostReport, RunRequest, Sandbox, SandboxConfig, probe_host
from .sessions import (
    AsyncSession,
    ExecStep,
    Session,
    SessionEnded,
    SessionLimits,
    SessionManager,
    StepResult,
    TooManySessions,
)
from .tasks import AgentTask
from .types import ExecResult, Limits, Status

__version__ = "0.1.0"

__all__ = [
    "AgentTask",
    "AssayError",
    "AsyncSession",
    "AsyncSessionClient",
    "BatchHandle",
    "BinaryReward",
    "ClosedError",
    "CompositeReward",
    "ConfigError",
    "EfficiencyReward",
    "ExecResult",
    "ExecStep",
    "FractionReward",
    "HostReport",
    "ImageSpec",
    "ImageStore",
    "InsecureHostError",
    "JobResult",
    "Judge",
    "Judgement",
    "Limits",
    "LocalExecutor",
    "MemoryReward",
    "Overloaded",
    "Problem",
    "QualityReward",
    "QueueExecutor",
    "RayExecutor",
    "RemoteSession",
    "Reward",
    "RewardFn",
    "RewardResult",
    "RunJob",
    "RunRequest",
    "Runner",
    "Sandbox",
    "SandboxConfig",
    "SandboxError",
    "Session",
    "SessionClient",
    "SessionEnded",
    "SessionLimits",
    "SessionManager",
    "Status",
    "StepResult",
    "Submission",
    "TestCase",
    "TestResult",
    "TooManySessions",
    "UnsupportedLanguageError",
    "ValidationError",
    "Verdict",
    "WeightedFractionReward",
    "__version__",
    "get_reward",
    "probe_host",
    "run",
    "run_async",
]
