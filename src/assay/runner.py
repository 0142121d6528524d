"""Run source code in any registered language: compile (cached) in a sandbox, then run."""

from __future__ import annotations

import asyncio
import atexit
import collections
import hashlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace

from . import languages
from .errors import ValidationError
from .languages.cache import CompileCache
from .sandbox import RunRequest, Sandbox, SandboxConfig
from .telemetry import tracing
from .types import ExecResult, Limits

_CACHE_ENTRIES = 64


class Runner:
    """Source in, :class:`ExecResult` out; owns a sandbox pool and a compile cache.

    Identical sources compile once: RL batches repeat programs often.
    """

    def __init__(
        self,
        sandbox: Sandbox | None = None,
        config: SandboxConfig | None = None,
        compile_cache: CompileCache | None = None,
    ) -> None:
        self.sandbox = sandbox or Sandbox(config)
        #: On-disk artefacts shared across processes and restarts; a small in-memory LRU
        #: sits in front of it.
        self.compile_cache = compile_cache or CompileCache()
        self._cache: collections.OrderedDict[str, bytes] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._building: dict[str, threading.Lock] = {}

    def close(self) -> None:
        self.sandbox.close()

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(
        self,
        code: str | bytes,
        language: str = "python",
        stdin: str | bytes = b"",
        limits: Limits | None = None,
        files: Mapping[str, str | bytes] | None = None,
        args: Sequence[str] = (),
        collect: Sequence[str] = (),
    ) -> ExecResult:
        """Build (cached) and run ``code``; ``args`` follow the program on its command line,
        ``collect`` names work-dir files to return in ``ExecResult.files``."""
        request = self.request(code, language, stdin, limits, files, args, collect)
        if isinstance(request, ExecResult):
            return request
        with tracing.span("assay.run", {"assay.language": language}):
            return self.sandbox.execute(request)

    def request(
        self,
        code: str | bytes,
        language: str = "python",
        stdin: str | bytes = b"",
        limits: Limits | None = None,
        files: Mapping[str, str | bytes] | None = None,
        args: Sequence[str] = (),
        collect: Sequence[str] = (),
    ) -> RunRequest | ExecResult:
        """The sandbox request that runs ``code`` (compiling it first, cached), or the
        ``compile_error`` result."""
        lang = languages.get(language)
        source = code.encode() if isinstance(code, str) else code
        if not isinstance(source, bytes):
            raise ValidationError("code", "must be str or bytes")
        data = stdin.encode() if isinstance(stdin, str) else stdin
        extra = [
            (p, c.encode() if isinstance(c, str) else c, 0o644) for p, c in (files or {}).items()
        ]
        artifact = None
        build = lang.build(source)
        if build is not None:
            built = self._build(lang, build)
            if isinstance(built, ExecResult):
                return built
            artifact = built
        program = lang.program(source, artifact)
        req = languages.request(program, data, limits or Limits(), extra)
        if not args and not collect:
            return req
        return replace(req, argv=[*req.argv, *args], collect=list(collect))

    async def run_async(
        self,
        code: str | bytes,
        language: str = "python",
        stdin: str | bytes = b"",
        limits: Limits | None = None,
        files: Mapping[str, str | bytes] | None = None,
    ) -> ExecResult:
        return await asyncio.to_thread(self.run, code, language, stdin, limits, files)

    def _build(self, lang: languages.Language, build: languages.Build) -> bytes | ExecResult:
        key = hashlib.sha256(
            repr(
                (
                    lang.name,
                    lang.toolchain(),
                    build.argv,
                    build.artifact,
                    [(p, m, len(c)) for p, c, m in build.files],
                )
            ).encode()
            + b"\0".join(c for _, c, _ in build.files)
        ).hexdigest()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
            gate = self._building.setdefault(key, threading.Lock())
        with gate:  # concurrent identical sources: one compiles, the others wait for it
            with self._lock:
                hit = self._cache.get(key)
                if hit is not None:
                    return hit
            stored = self.compile_cache.get(key)
            if stored is not None:
                self._remember(key, stored)
                return stored
            with tracing.span("assay.compile", {"assay.language": lang.name}):
                result = self.sandbox.execute(
                    RunRequest(
                        "exec", build.argv, build.files, b"", build.limits, collect=[build.artifact]
                    )
                )
            artifact = result.files.get(build.artifact)
            if result.status == "sandbox_error":
                return result
            if result.status != "ok" or artifact is None:
                message = result.stderr or result.stdout
                if result.status != "ok" and result.status != "runtime_error":
                    message += f"\ncompiler stopped: {result.status}".encode()
                return ExecResult(
                    status="compile_error",
                    exit_code=result.exit_code,
                    signal=result.signal,
                    stdout=b"",
                    stderr=message[-65536:],
                    cpu_s=result.cpu_s,
                    wall_s=result.wall_s,
                    peak_memory_bytes=result.peak_memory_bytes,
                )
            try:
                self.compile_cache.put(key, artifact)
            except OSError:
                pass  # a full or read-only cache disk costs speed, not correctness
            self._remember(key, artifact)
            return artifact

    def _remember(self, key: str, artifact: bytes) -> None:
        with self._lock:
            self._cache[key] = artifact
            while len(self._cache) > _CACHE_ENTRIES:
                self._cache.popitem(last=False)
            self._building.pop(key, None)


_default: Runner | None = None
_default_lock = threading.Lock()


def default_runner() -> Runner:
    """The process-wide runner used by :func:`assay.run` (created on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Runner()
            atexit.register(_default.close)
        return _default


def run(
    code: str | bytes,
    language: str = "python",
    stdin: str | bytes = b"",
    limits: Limits | None = None,
    files: Mapping[str, str | bytes] | None = None,
) -> ExecResult:
    """Run ``code`` in a fresh, fully isolated sandbox and report what it did.

    >>> import assay
    >>> assay.run("print(input()[::-1])", stdin="abc").stdout
    b'cba\\n'
    """
    return default_runner().run(code, language, stdin, limits, files)


async def run_async(
    code: str | bytes,
    language: str = "python",
    stdin: str | bytes = b"",
    limits: Limits | None = None,
    files: Mapping[str, str | bytes] | None = None,
) -> ExecResult:
    """Async form of :func:`run` (the sandbox work happens off the event loop)."""
    return await default_runner().run_async(code, language, stdin, limits, files)
