"""Code quality from ruff findings, with ruff run inside the sandbox.

Linting untrusted code means running a parser on hostile input, so ruff runs in the sandbox
like any submission, never on the host. The sandbox sees the host's /usr read-only, so the
ruff binary must live there (``make install`` puts it in /usr/local/bin). Without ruff the
reward is ``None`` with a reason, never 0: a missing tool is not the program's fault.

quality = 1 / (1 + findings per ``defaults.QUALITY_LINES_PER_UNIT`` non-blank lines).
"""

from __future__ import annotations

import json
import os
import threading

from .. import defaults
from ..judge import Judgement, Problem, Submission
from ..runner import Runner, RunRequest
from ..types import Limits
from .base import Reward, RewardResult

#: Name of the source file inside the sandbox.
_FILE = "main.py"


def find_ruff() -> str | None:
    """The first executable ruff of ``defaults.RUFF_PATHS``, or None.

    Only its presence is checked on the host; it is never run here.
    """
    for path in defaults.RUFF_PATHS:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def score(findings: int, code: str) -> float:
    """1 / (1 + findings per QUALITY_LINES_PER_UNIT non-blank lines); empty code counts 1 line."""
    lines = max(1, sum(1 for line in code.splitlines() if line.strip()))
    return 1.0 / (1.0 + findings * defaults.QUALITY_LINES_PER_UNIT / lines)


class QualityReward(Reward):
    """Scores Python source by its ruff findings (rules: ``defaults.QUALITY_RUFF_SELECT``).

    With ``require_accepted`` (the default) a submission that is not accepted scores 0:
    otherwise an empty or trivially clean but wrong program would earn a perfect score.
    The runner is created on first use if not given; :meth:`close` closes it only then.
    """

    def __init__(
        self,
        runner: Runner | None = None,
        ruff: str | None = None,
        require_accepted: bool = True,
    ) -> None:
        self._runner = runner
        self._own_runner = runner is None
        self._lock = threading.Lock()
        self.ruff = ruff if ruff is not None else find_ruff()
        self.require_accepted = require_accepted

    @property
    def runner(self) -> Runner:
        with self._lock:
            if self._runner is None:
                self._runner = Runner()
            return self._runner

    def close(self) -> None:
        with self._lock:
            if self._own_runner and self._runner is not None:
                self._runner.close()
                self._runner = None

    def score(
        self, judgement: Judgement, problem: Problem, *, submission: Submission | None = None
    ) -> RewardResult:
        if submission is None:
            return RewardResult(
                None, "quality needs the submission's source (submission=)", {"quality": None}
            )
        if submission.language != "python":
            return RewardResult(
                None, f"quality lints Python only, not {submission.language!r}", {"quality": None}
            )
        if self.require_accepted and judgement.verdict != "accepted":
            return RewardResult(0.0, f"not accepted ({judgement.verdict})", {"quality": 0.0})
        return self.lint(submission.code)

    def lint(self, code: str | bytes) -> RewardResult:
        """Run ruff on ``code`` in the sandbox and score its findings."""
        if self.ruff is None:
            searched = ", ".join(defaults.RUFF_PATHS)
            return RewardResult(
                None,
                f"ruff not found (looked at {searched}); run `make install`",
                {"quality": None},
            )
        source = code.encode() if isinstance(code, str) else code
        text = source.decode(errors="replace")
        request = RunRequest(
            "exec",
            [
                self.ruff,
                "check",
                "--output-format",
                "json",
                "--no-cache",
                "--isolated",
                "--select",
                defaults.QUALITY_RUFF_SELECT,
                _FILE,
            ],
            files=[(_FILE, source, 0o644)],
            limits=Limits(time_s=defaults.QUALITY_TIME_S, memory_mb=defaults.QUALITY_MEMORY_MB),
            env=dict(defaults.QUALITY_ENV),
        )
        result = self.runner.execute(request)
        # ruff exits 0 when clean, 1 with findings; anything else is a failure of the tool.
        if result.status not in ("ok", "runtime_error") or result.exit_code not in (0, 1):
            tail = result.stderr.decode(errors="replace")[-300:].strip()
            return RewardResult(
                None,
                f"ruff failed in the sandbox ({result.status}, exit {result.exit_code}): {tail}",
                {"quality": None},
            )
        try:
            diagnostics = json.loads(result.stdout)
            codes = [str(d.get("code") or "invalid-syntax") for d in diagnostics]
        except (ValueError, TypeError, AttributeError, RecursionError) as exc:
            return RewardResult(None, f"unreadable ruff output: {exc}", {"quality": None})
        value = score(len(codes), text)
        summary = ", ".join(sorted(set(codes))) or "none"
        return RewardResult(
            value,
            f"{len(codes)} ruff findings ({summary})",
            {"quality": value, "findings": float(len(codes))},
        )
