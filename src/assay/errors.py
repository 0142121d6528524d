"""The one exception hierarchy of Assay.

Every error Assay raises on purpose derives from :class:`AssayError`, so callers can catch
Assay's failures without catching their own bugs. Every public exception is defined here
(the modules that raise them re-export them where callers used to find them)::

    AssayError
    ├── ValidationError (ValueError)      bad input; names the field
    │   ├── UnsupportedLanguageError      an unknown language
    │   └── ImageNotFound                 no stored image by that id, prefix or name
    ├── ClosedError (ValueError)          a closed queue or writer takes no more work
    ├── ConfigError                       configured so that it cannot work on this host
    │   └── InsecureHostError             a mandatory isolation control is missing
    ├── SandboxError                      our infrastructure failed, never the program
    ├── BuildError                        the image build tools failed
    ├── Overloaded                        no room now; retry after ``retry_after`` s
    │   └── TooManySessions               no room for another session
    ├── UnknownSession (KeyError)         no such session (or another tenant's)
    ├── SessionEnded                      a call on an ended session; says why
    ├── SessionRefused (ValueError)       the session's agent refused a request
    ├── SessionFault                      the session's own state failed a request
    ├── DownloadTooLarge                  a session download over the cap
    ├── DownloadFailed                    a session download stopped before its end
    └── RemoteRefused                     a server answered with an error or a bad body
        └── RemoteError                   the session API's server answered off its API
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AssayError",
    "BuildError",
    "ClosedError",
    "ConfigError",
    "DownloadFailed",
    "DownloadTooLarge",
    "ImageNotFound",
    "InsecureHostError",
    "Overloaded",
    "RemoteError",
    "RemoteRefused",
    "SandboxError",
    "SessionEnded",
    "SessionFault",
    "SessionRefused",
    "TooManySessions",
    "UnknownSession",
    "UnsupportedLanguageError",
    "ValidationError",
]


class AssayError(Exception):
    """Base class of every error Assay raises deliberately.

    An Assay error crosses processes whole (pickled by Ray from a node agent to the
    driver, or by ``multiprocessing``): it is rebuilt from its message and attributes, not
    by calling its constructor again with the message (most take several arguments)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuilt, (type(self), self.args, dict(self.__dict__)))


def _rebuilt(cls: type[AssayError], args: tuple[Any, ...], state: dict[str, Any]) -> AssayError:
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


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

    def __init__(
        self,
        queued: int,
        capacity: int,
        requested: int,
        retry_after: float,
        message: str | None = None,
    ) -> None:
        super().__init__(
            message
            or f"overloaded: {queued} jobs queued of {capacity} allowed; a batch of {requested} "
            f"does not fit. Retry in about {retry_after:.0f} s, or submit a smaller batch."
        )
        self.queued = queued
        self.capacity = capacity
        self.requested = requested
        self.retry_after = retry_after


class ImageNotFound(ValidationError):
    """No stored image has this id, id prefix or name."""

    def __init__(self, ref: str, field: str = "image") -> None:
        super().__init__(field, f"no image {ref!r} in the store (see `assay image list`)")
        self.ref = ref


class BuildError(AssayError):
    """The build tools failed (the message carries their output's tail)."""


class TooManySessions(Overloaded):
    """No room for another session (count or memory budget); retry later."""

    def __init__(self, what: str, used: int, capacity: int, retry_after: float = 1.0) -> None:
        super().__init__(
            used,
            capacity,
            1,
            retry_after,
            message=f"too many sessions: {what} {used} of {capacity} in use",
        )


class UnknownSession(AssayError, KeyError):
    """No session by this id: never opened, forgotten, or another tenant's (a KeyError too,
    as a lookup that failed)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self.session_id = session_id

    def __str__(self) -> str:
        return f"no session {self.session_id!r}"


class SessionEnded(AssayError):
    """A call on a session that has ended; ``reason`` says why it ended."""

    def __init__(self, session_id: str, reason: str, detail: str = "") -> None:
        self.session_id = session_id
        self.reason = reason
        self.detail = detail
        extra = f" ({detail})" if detail else ""
        super().__init__(f"session {session_id} has ended: {reason}{extra}")


class SessionFault(AssayError):
    """The session's own state failed a request (not the request's fault): ``kind`` names
    why (``pids_limit``, ``error``). A service fault, never answered as a client error."""

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        super().__init__(message)


class SessionRefused(AssayError, ValueError):
    """The agent inside the session refused a request (a path out of /work, no such
    file, ...); the session is still usable."""


class RemoteRefused(AssayError):
    """The server answered with an error status or a body of the wrong shape."""


class RemoteError(RemoteRefused):
    """The server answered in a way the session API does not (a wrong URL, a version
    mismatch, a proxy's error page): it does not heal by itself and is not hidden."""


class DownloadTooLarge(AssayError):
    """A download holds more than the cap (``limit`` bytes); ``what`` names it."""

    def __init__(self, what: str, size: int, limit: int) -> None:
        super().__init__(f"{what}: {size} bytes, more than the download cap of {limit} bytes")
        self.what, self.size, self.limit = what, size, limit


class DownloadFailed(AssayError):
    """A download stopped before its end (the agent refused, the session ended, the reader
    was too slow); the bytes sent so far are not the whole."""
