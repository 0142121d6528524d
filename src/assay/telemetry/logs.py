"""Structured logs: one JSON object per line, with the job and batch ids of the event.

Log calls stay plain :mod:`logging` calls; context travels in ``extra`` (``job_id``,
``batch_id``, ``caller``, ``event``...), and :class:`JsonFormatter` writes every such field.
Fields that may carry submitted code, program output or credentials (:data:`SENSITIVE`) are
written only for records at DEBUG level or below, so an INFO log never holds them, whatever a
caller passed.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import UTC, datetime
from typing import Any, Literal

__all__ = ["SENSITIVE", "JsonFormatter", "configure_logging"]

#: ``extra`` keys dropped from records above DEBUG.
SENSITIVE = frozenset(
    {
        "code",
        "source",
        "stdin",
        "stdout",
        "stderr",
        "files",
        "tests",
        "authorization",
        "api_token",
        "api_tokens",
        "token",
        "password",
        "secret",
        "aws_secret_access_key",
    }
)
#: Attributes every LogRecord has; anything else on a record came from ``extra``.
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}

LEVEL_ENV = "ASSAY_LOG_LEVEL"
FORMAT_ENV = "ASSAY_LOG_FORMAT"


def _plain(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "logger", "message", ...extra fields, "exc"}`` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        debug = record.levelno <= logging.DEBUG
        for key, value in vars(record).items():
            if key in _STANDARD or key.startswith("_"):
                continue
            if key.lower() in SENSITIVE and not debug:
                continue
            out[key] = _plain(value)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def configure_logging(
    level: str | int | None = None,
    fmt: Literal["json", "text"] | None = None,
    stream: Any = None,
) -> logging.Handler:
    """Send every log record (Assay's, uvicorn's) to one handler on stderr.

    ``level`` defaults to ``$ASSAY_LOG_LEVEL`` or ``info``; ``fmt`` to ``$ASSAY_LOG_FORMAT`` or
    ``json``. Replaces handlers installed by an earlier call, so it is safe to call twice.
    Raises ``ValueError`` naming the bad level or format.
    """
    raw_level = level if level is not None else os.environ.get(LEVEL_ENV, "info")
    if isinstance(raw_level, str):
        resolved = logging.getLevelName(raw_level.upper())
        if not isinstance(resolved, int):
            raise ValueError(f"log level: unknown level {raw_level!r} (debug, info, warning...)")
        raw_level = resolved
    chosen = fmt or os.environ.get(FORMAT_ENV, "json")
    if chosen not in ("json", "text"):
        raise ValueError(f"log format: must be 'json' or 'text', got {chosen!r}")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(
        JsonFormatter()
        if chosen == "json"
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    handler._assay = True  # type: ignore[attr-defined]  # marks ours, for the next call
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_assay", False)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(raw_level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    return handler
