"""The one exception hierarchy of Assay.

Every error Assay raises on purpose derives from :class:`AssayError`, so callers can catch
Assay's failures without catching their own bugs.
"""

from __future__ import annotations

__all__ = [
    "AssayError",
    "ClosedError",
    "ConfigError",
    "InsecureHostError",
    "Overloaded",
    "SandboxError",
    "UnsupportedLanguageError",
    "ValidationError",
]


class AssayError(Exception):
    """Base class of every error Assay raises deliberately."""


class ValidationError(AssayError, ValueError):
    """Bad input from the caller; the message names the offending field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class ClosedError(AssayError, ValueError):
    """The object was closed (a queue, a record writer) and takes no more work (a ValueError,
    as for a closed file)."""


class ConfigError(AssayError):
    """Assay is configured in a way that cannot work on this host."""


class InsecureHostError(ConfigError):
    """A mandatory isolation control is missing and the caller did not opt out."""

    def __init__(self, missing: list[str]) -> None:
        joined = ", ".join(missing)
        super().__init__(
            f"refusing to run untrusted code: mandatory isolation controls are missing ({joined}). "
            "Run `assay doctor` for details, fix the host, or pass --insecure / "
            "SandboxConfig(insecure=True) to run WITHOUT these protections."
        )
        self.missing = missing


class SandboxError(AssayError):
    """Our infrastructure failed (never the program's fault)."""


class UnsupportedLanguageError(ValidationError):
    """The requested language is not known to the registry."""

    def __init__(self, language: str, known: list[str]) -> None:
        super().__init__("language", f"unknown language {language!r}; known: {', '.join(known)}")
        self.language = language


class Overloaded(AssayError):
    """The executor's queue is full; nothing of the batch was accepted.

    ``retry_after`` is a hint in seconds (the server sends it as HTTP 429 ``Retry-After``).
    """

    def __init__(self, queued: int, capacity: int, requested: int, retry_after: float) -> None:
        super().__init__(
            f"overloaded: {queued} jobs queued of {capacity} allowed; a batch of {requested} "
            f"does not fit. Retry in about {retry_after:.0f} s, or submit a smaller batch."
        )
        self.queued = queued
        self.capacity = capacity
        self.requested = requested
        self.retry_after = retry_after
