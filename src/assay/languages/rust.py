"""Rust: Debian's rustc, compiled in the sandbox against prebuilt crates.

HumanEval-X Rust programs start with ``use rand::Rng; use regex::Regex; use md5;``, so those
crates must be linkable, but cargo cannot resolve crates in the sandbox (no network, and a
workspace per submission costs seconds). ``scripts/prepare_rust.sh`` builds them once, at
install time, into :data:`CRATE_DIR` (under /usr, so the sandbox sees it read-only) and lists
them in its ``externs`` file; a program is then one ``rustc`` invocation that links the rlibs.

Compile options, measured on HumanEval-X programs (about 0.2-0.4 s each, 150 MB): the
optimisation level changes compile time by a few hundredths of a second for programs this
small, so programs get ``-O`` (what judges and ``cargo build --release`` use, so integer
overflow wraps instead of panicking as it would under HumanEval-X's original ``cargo test``);
linking is the larger cost, and gold links about 0.1 s faster than bfd.
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache

from .. import defaults
from . import native
from .base import Build, Program, tool_version

#: Debian's rustc (package ``rustc``): an absolute path, so a rustup install earlier on the
#: host's PATH is never used for the version in cache keys.
RUSTC = "/usr/bin/rustc"
#: Where ``scripts/prepare_rust.sh`` installs the prebuilt crates and their ``externs`` list.
CRATE_DIR = "/usr/local/lib/assay/rust"
#: The gold linker, if installed (binutils), links markedly faster than the default bfd.
GOLD = "/usr/bin/ld.gold"
EDITION = "2021"

#: rustc needs ~150 MB and a few threads for a small program, and links with cc, collect2
#: and ld: the same budget as gcc. (``-C codegen-units=1`` keeps rustc's thread count fixed,
#: whatever the host's core count: it otherwise starts an LLVM worker per core and could hit
#: the process limit.)
COMPILE_LIMITS = native.COMPILE_LIMITS


@lru_cache(maxsize=4)
def prebuilt_crates(crate_dir: str = CRATE_DIR) -> tuple[tuple[tuple[str, str], ...], str]:
    """The ``(crate, rlib path)`` pairs in ``crate_dir`` and a digest of that build (its
    identity and file list), or ``((), "missing")`` when ``prepare_rust.sh`` has not run."""
    try:
        with open(os.path.join(crate_dir, "externs"), encoding="utf-8") as f:
            externs = f.read()
        with open(os.path.join(crate_dir, "identity"), encoding="utf-8") as f:
            identity = f.read()
    except OSError:
        return (), "missing"
    pairs = []
    for line in externs.splitlines():
        crate, sep, rlib = line.strip().partition("=")
        if sep and crate and rlib:
            pairs.append((crate, os.path.join(crate_dir, rlib)))
    digest = hashlib.sha256((identity + "\0" + externs).encode()).hexdigest()[:16]
    return tuple(pairs), digest


class Rust:
    """One ``rustc`` call: edition 2021, ``-O``, stripped debug info, warnings off (they
    would bury the errors of a ``compile_error`` message), prebuilt crates as externs."""

    name = "rust"
    extensions: tuple[str, ...] = (".rs",)

    def __init__(self, rustc: str = RUSTC, crate_dir: str = CRATE_DIR) -> None:
        self.rustc = rustc
        self.crate_dir = crate_dir

    def toolchain(self) -> str:
        _, crates = prebuilt_crates(self.crate_dir)
        return f"rustc:{tool_version(self.rustc)}:edition{EDITION}:crates:{crates}"

    def build(self, source: bytes) -> Build:
        pairs, _ = prebuilt_crates(self.crate_dir)
        argv = [
            self.rustc,
            "--edition",
            EDITION,
            "--crate-name",
            "main",
            "-C",
            "opt-level=2",
            "-C",
            "codegen-units=1",
            "-C",
            "strip=debuginfo",
            "-A",
            "warnings",
        ]
        if os.path.exists(GOLD):
            argv += ["-C", "link-arg=-fuse-ld=gold"]
        if pairs:
            argv += ["-L", f"dependency={self.crate_dir}"]
            for crate, rlib in pairs:
                argv += ["--extern", f"{crate}={rlib}"]
        argv += ["-o", "main", "main.rs"]
        return Build(argv, [("main.rs", source, 0o644)], "main", COMPILE_LIMITS)

    def program(self, source: bytes, artifact: bytes | None) -> Program:
        assert artifact is not None
        return Program("exec", [f"{defaults.WORK_DIR}/main"], [("main", artifact, 0o755)])
