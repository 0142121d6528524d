"""JavaScript on Node.js, and TypeScript compiled to JavaScript by esbuild in the sandbox.

Node runs the source as a CommonJS script (``require`` works, as the HumanEval-X and MultiPL-E
tests expect). Flags: a fixed, generous old-space cap, so a program that outgrows its memory
limit is stopped by the cgroup (``memory_limit``) instead of by a heap limit V8 would derive
from the host's memory; a V8 stack of half the sandbox's stack limit (about a million frames
of simple recursion, with room left for native frames); one V8 worker thread instead of one
per CPU, since every thread counts against ``Limits.processes`` and burns the CPU-time budget.
Globally installed npm packages are importable (``NODE_PATH``), as in HumanEval-X's own image.

esbuild only strips types (milliseconds, one static binary): type errors are not reported,
syntax errors are a ``compile_error``. ``--format=cjs`` turns ``import`` statements into
``require`` calls, so TypeScript that imports ``node:assert`` runs as a script too.
"""

from __future__ import annotations

from .. import defaults
from .base import Build, Interpreted, Program, tool_version
from .native import COMPILE_LIMITS

NODE = "/usr/bin/node"
ESBUILD = "/usr/bin/esbuild"
#: Packages installed with ``npm install -g`` (HumanEval-X's JavaScript/162 requires
#: ``js-md5``); Node does not search there by itself.
NODE_PATH = "/usr/lib/node_modules"

NODE_FLAGS: tuple[str, ...] = (
    "--max-old-space-size=16384",
    f"--stack-size={defaults.STACK_MB * 512}",
    "--v8-pool-size=1",
)

ESBUILD_FLAGS: tuple[str, ...] = (
    "--format=cjs",
    "--platform=node",
    "--target=node18",
    "--log-level=error",
    "--color=false",
)


class JavaScript(Interpreted):
    """Source run as is by Node.js."""

    def __init__(self) -> None:
        node = ["/usr/bin/env", f"NODE_PATH={NODE_PATH}", NODE, *NODE_FLAGS]
        flags = [" ".join(NODE_FLAGS), NODE_PATH]
        super().__init__("javascript", (".js", ".cjs"), "main.js", node, tool="node", details=flags)


class TypeScript:
    """Types stripped by esbuild (build step), the JavaScript run by Node.js."""

    name = "typescript"
    extensions: tuple[str, ...] = (".ts",)

    def toolchain(self) -> str:
        node = JavaScript().toolchain()
        return f"esbuild:{tool_version('esbuild')}:{' '.join(ESBUILD_FLAGS)}:{node}"

    def build(self, source: bytes) -> Build:
        argv = [ESBUILD, "main.ts", "--outfile=main.js", *ESBUILD_FLAGS]
        return Build(argv, [("main.ts", source, 0o644)], "main.js", COMPILE_LIMITS)

    def program(self, source: bytes, artifact: bytes | None) -> Program:
        assert artifact is not None
        return JavaScript().program(artifact, None)
