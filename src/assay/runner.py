"""Run source code in any registered language: compile (cached) in a sandbox, then run."""

from __future__ import annotations

import atexit
import collections
import contextlib
import functools
import hashlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from . import defaults, languages
from ._threads import threaded
from .errors import ValidationError
from .languages.cache import CompileCache
from .sandbox import (
    COLLECT_MAX_BYTES,
    GVisorSandbox,
    RunRequest,
    Sandbox,
    SandboxConfig,
    check_isolation,
    files_disk_bytes,
    open_sandbox,
)
from .telemetry import tracing
from .types import ExecResult, Limits, Network, Placement, check_network

if TYPE_CHECKING:
    from .images.pools import ImagePools

__all__ = ["RunRequest", "Runner", "default_runner", "run", "run_async"]


class Runner:
    """Source in, :class:`ExecResult` out; owns a sandbox pool and a compile cache.

    Identical sources compile once: RL batches repeat programs often.
    """

    def __init__(
        self,
        sandbox: Sandbox | GVisorSandbox | None = None,
        config: SandboxConfig | None = None,
        compile_cache: CompileCache | None = None,
    ) -> None:
        #: The default tier's pool, or the gVisor tier's (``config.isolation``).
        self.sandbox = sandbox or open_sandbox(config)
        #: On-disk artefacts shared across processes and restarts; a small in-memory LRU
        #: sits in front of it.
        self.compile_cache = compile_cache or CompileCache()
        self._cache: collections.OrderedDict[str, bytes] = collections.OrderedDict()
        self._cache_bytes = 0
        self._lock = threading.Lock()
        self._building: dict[str, threading.Lock] = {}
        self._images: ImagePools[Runner] | None = None
        self._tiers: dict[str, Runner] = {}

    @property
    def isolation(self) -> str:
        """This runner's own tier (``"default"`` or ``"gvisor"``)."""
        return self.sandbox.config.isolation

    def close(self) -> None:
        with self._lock:
            images, self._images = self._images, None
            tiers, self._tiers = list(self._tiers.values()), {}
        if images is not None:
            images.close()
        for tier in tiers:
            tier.close()
        self.sandbox.close()

    def tier(self, isolation: str) -> Runner:
        """The runner of isolation tier ``isolation`` on this runner's root (this runner
        itself for its own tier; another, created on first use, sharing the compile cache)."""
        check_isolation(isolation)
        if isolation == self.isolation:
            return self
        with self._lock:
            other = self._tiers.get(isolation)
            if other is None:
                config = replace(self.sandbox.config, isolation=isolation)
                other = Runner(config=config, compile_cache=self.compile_cache)
                self._tiers[isolation] = other
            return other

    @contextlib.contextmanager
    def placed(self, placement: Placement) -> Iterator[Runner]:
        """The runner of ``placement``: this one, another tier's (``tier``), or the warm
        pool of its image in its tier (held while the block runs, never evicted then)."""
        tier = placement.isolation or self.isolation
        if placement.image is None:
            yield self.tier(tier)
            return
        with self.images.use(placement.image, tier) as inner:
            yield inner

    def hold(self, placement: Placement) -> tuple[Runner, Callable[[], None] | None]:
        """``placed`` for as long as the caller wants (a session: until it ends): the runner,
        and what to call when done (None: nothing is held)."""
        tier = placement.isolation or self.isolation
        if placement.image is None:
            return self.tier(tier), None
        return self.images.hold(placement.image, tier)

    @property
    def images(self) -> ImagePools[Runner]:
        """Warm pools of the task images this runner has run on (created on first use)."""
        with self._lock:
            if self._images is None:
                from .images.pools import ImagePools

                self._images = ImagePools(self.sandbox.config, _image_runner)
            return self._images

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
        *,
        image: str | None = None,
        isolation: str | None = None,
        network: Network = "none",
    ) -> ExecResult:
        """Build (cached) and run ``code``; ``args`` follow the program on its command line,
        ``collect`` names work-dir files to return in ``ExecResult.files``; ``image`` (an
        id, id prefix or name from ``assay image list``) runs it with that image as the
        sandbox's root instead of the host's; ``isolation`` (``"default"``, ``"gvisor"``)
        picks the tier (default: this runner's); ``network="loopback"`` gives the run a
        network namespace of its own with ``lo`` up (default: no network at all)."""
        rest = (language, stdin, limits, files, args, collect)
        tier = check_isolation(isolation) if isolation is not None else None
        with self.placed(Placement(image, tier)) as inner:
            if inner is not self:
                return inner.run(code, *rest, network=network)
        request = self.request(code, *rest, network=network)
        if isinstance(request, ExecResult):
            return request
        with tracing.span("assay.run", {"assay.language": language}):
            return self.execute(request)

    def execute(self, request: RunRequest) -> ExecResult:
        """Run a prepared sandbox request as it is (the judge's trusted scripts, a checker,
        the quality reward's linter): the one way past the runner into its sandbox."""
        return self.sandbox.execute(request)

    @property
    def serves_companions(self) -> bool:
        """Whether a request's ``companion`` is served by the thread that runs it (the default
        tier); otherwise the caller serves it from a thread of its own."""
        return bool(getattr(self.sandbox, "serves_companions", False))

    @property
    def bytecode_magic(self) -> str | None:
        """The sandbox interpreter's bytecode magic number (hex), once its fork server has
        reported it, else None: trusted scripts may be sent compiled when it equals ours."""
        magic = self.sandbox.zygote_info.get("bytecode_magic")
        return magic if isinstance(magic, str) else None

    @property
    def insecure(self) -> bool:
        """True when the sandbox runs without some mandatory isolation control (opted out)."""
        return self.sandbox.insecure

    @property
    def python(self) -> str:
        """The sandbox's Python interpreter, for a request that runs it afresh (``exec``)
        instead of through the warm fork server."""
        return self.sandbox.config.python

    def warm_up(self, slots: int) -> None:
        """Arm up to ``slots`` sandboxes now (at most the pool size) instead of on first use."""
        self.sandbox.warm_up(min(slots, self.sandbox.pool_size))

    def request(
        self,
        code: str | bytes,
        language: str = "python",
        stdin: str | bytes = b"",
        limits: Limits | None = None,
        files: Mapping[str, str | bytes] | None = None,
        args: Sequence[str] = (),
        collect: Sequence[str] = (),
        network: Network = "none",
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
        limits = limits or Limits()
        own = files_disk_bytes(program.files)
        if artifact is None and own > limits.disk_mb << 20:
            # The program's own source does not fit its disk: the program's doing (a
            # verdict), not the caller's (the sandbox refuses the caller's oversized files).
            return ExecResult(
                status="runtime_error",
                stderr=(
                    f"assay: the program ({own / (1 << 20):.1f} MiB) does not fit the run's "
                    f"disk (disk_mb={limits.disk_mb})\n"
                ).encode(),
            )
        req = languages.request(program, data, limits, extra)
        need = own + files_disk_bytes(extra)  # req.files: the caller's files and the program's
        if artifact is not None and need > limits.disk_mb << 20:
            return ExecResult(
                status="compile_error",
                stderr=(
                    f"assay: the build's output ({len(artifact) / (1 << 20):.1f} MiB) and the "
                    f"run's files take {need / (1 << 20):.1f} MiB, more than the run's disk "
                    f"(disk_mb={limits.disk_mb})\n"
                ).encode(),
            )
        if network != "none":
            req = replace(req, network=check_network(network))
        if not args and not collect:
            return req
        return replace(req, argv=[*req.argv, *args], collect=list(collect))

    run_async = threaded(run)

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
        try:
            with gate:  # concurrent identical sources: one compiles, the others wait for it
                return self._build_once(key, build, lang.name)
        finally:
            # Whatever the outcome (an artefact, compile_error, sandbox_error), the gate is
            # done with: failures are not cached, so keeping it would only grow the dict.
            with self._lock:
                if self._building.get(key) is gate:
                    del self._building[key]

    def _build_once(self, key: str, build: languages.Build, language: str) -> bytes | ExecResult:
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                return hit
        stored = self.compile_cache.get(key)
        if stored is not None:
            self._remember(key, stored)
            return stored
        size = files_disk_bytes(build.files)
        if size > build.limits.disk_mb << 20:
            return ExecResult(
                status="compile_error",
                stderr=(
                    f"assay: the source ({size / (1 << 20):.1f} MiB) does not fit the build's "
                    f"disk (disk_mb={build.limits.disk_mb})\n"
                ).encode(),
            )
        with tracing.span("assay.compile", {"assay.language": language}):
            result = self.execute(
                RunRequest(
                    "exec", build.argv, build.files, b"", build.limits, collect=[build.artifact]
                )
            )
        artifact = result.files.get(build.artifact)
        if result.status == "sandbox_error":
            return result
        if result.status != "ok" or artifact is None:
            message = result.stderr or result.stdout
            if result.status == "ok":
                message += (
                    f"\nassay: the build left no {build.artifact} of at most "
                    f"{COLLECT_MAX_BYTES >> 20} MiB\n"
                ).encode()
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
        """Keep ``artifact`` in the in-memory LRU, bounded by bytes: one larger than
        ``RUNNER_ARTIFACT_ENTRY_BYTES`` is served from the on-disk compile cache instead."""
        with self._lock:
            old = self._cache.pop(key, None)
            if old is not None:
                self._cache_bytes -= len(old)
            if len(artifact) <= defaults.RUNNER_ARTIFACT_ENTRY_BYTES:
                self._cache[key] = artifact
                self._cache_bytes += len(artifact)
            while self._cache_bytes > defaults.RUNNER_ARTIFACT_BYTES:
                self._cache_bytes -= len(self._cache.popitem(last=False)[1])


def _image_runner(config: SandboxConfig, pool_size: int, cache: CompileCache) -> Runner:
    """A runner whose sandbox root is ``config.image_root`` (one per image in use)."""
    return Runner(open_sandbox(config, pool_size=pool_size), compile_cache=cache)


P = ParamSpec("P")
R = TypeVar("R")
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


def _on_default_runner(method: Callable[Concatenate[Runner, P], R]) -> Callable[P, R]:
    """``method`` of the process-wide runner, as a function with the method's parameters."""

    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        return method(default_runner(), *args, **kwargs)

    return call


run = _on_default_runner(Runner.run)
run.__doc__ = """Run ``code`` in a fresh, fully isolated sandbox and report what it did
(:meth:`Runner.run` of the process-wide runner: same parameters).

>>> import assay
>>> assay.run("print(input()[::-1])", stdin="abc").stdout
b'cba\\n'
"""
run_async = threaded(run)
