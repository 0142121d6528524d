"""launcher.c, built for this host, and the spec format it reads.

launcher.c is compiled once per source version with the host's C compiler, into the
exec-mode launcher (statically where the C library allows: no dynamic loader per spawn) and
a shared library of the same set-up steps that the fork server loads for Python program
processes. Both are kept under the state directory; the fork server copies the launcher into
the sandbox's read-only template root at start. Without a C compiler each piece falls back to
its Python equivalent (same isolation, slower start).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from typing import NamedTuple

from .. import defaults

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_inside", "launcher.c")
_lock = threading.Lock()
_built: dict[str, Native] = {}


class Native(NamedTuple):
    launcher: str | None
    library: str | None


def _trusted(path: str) -> bool:
    """Owned by us and writable by nobody else (the file and its directory): the fork server
    runs it with our privileges."""
    me = os.geteuid()
    for p in (path, os.path.dirname(path)):
        try:
            st = os.stat(p)
        except OSError:
            return False
        if st.st_uid != me or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return False
    return True


def build_native() -> Native:
    """Paths of the launcher and the library, building them if needed (None: unavailable)."""
    try:
        with open(SOURCE, "rb") as fh:
            source = fh.read()
    except OSError:
        return Native(None, None)
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        return Native(None, None)
    key = hashlib.sha256(source + os.fsencode(os.path.realpath(cc))).hexdigest()[:16]
    directory = os.path.join(str(defaults.state_dir()), "native")
    with _lock:
        built = _built.get(directory)
        if built is None or not all(p and os.path.exists(p) for p in built):
            built = _built[directory] = Native(
                _build(cc, directory, f"launch-{key}", [["-static"], []]),
                _build(cc, directory, f"libassay-{key}.so", [["-shared", "-fPIC"]]),
            )
        return built


def _build(cc: str, directory: str, name: str, variants: list[list[str]]) -> str | None:
    target = os.path.join(directory, name)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError:
        return None
    if os.path.exists(target):
        return target if _trusted(target) else None
    fd, tmp = tempfile.mkstemp(prefix=f".{name}-", dir=directory)
    os.close(fd)
    library = name.endswith(".so")
    try:
        for flags in variants:  # the first that builds: static when libc.a is installed
            cmd = [cc, "-O2", "-Wall", *flags, "-o", tmp, SOURCE]
            if library:
                cmd.insert(1, "-DASSAY_LIBRARY")
            proc = subprocess.run(cmd, capture_output=True, timeout=120, check=False)
            if proc.returncode == 0:
                os.chmod(tmp, 0o700)
                os.replace(tmp, target)
                return target if _trusted(target) else None
        return None
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


_FS_ENCODING = (sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())


def encode_spec(
    mode: str,
    argv: list[str],
    env: dict[str, str],
    rlimits: tuple[int, int, int, int],
    files: list[tuple[str, bytes, int]],
    collect_payload: bytes,
) -> tuple[bytes, bytes]:
    """A run's spec (NUL-terminated tokens, see launcher.c) and its files' contents, back to
    back. ``rlimits``: file bytes, open files, stack bytes, CPU seconds."""
    tokens: list[bytes] = [mode.encode(), str(len(argv)).encode()]
    tokens += [os.fsencode(a) for a in argv]
    tokens.append(str(len(env)).encode())
    # What ``os.fsencode`` makes of a str (these always are), without its Python-level call
    # for each of the ~10 variables of every run.
    enc, errors = _FS_ENCODING
    tokens += [f"{k}={v}".encode(enc, errors) for k, v in env.items()]
    tokens += [str(int(v)).encode() for v in rlimits]
    tokens.append(str(len(files)).encode())
    for path, content, fmode in files:
        tokens += [os.fsencode(path), str(len(content)).encode(), str(fmode & 0o7777).encode()]
    tokens.append(collect_payload)
    for tok in tokens:
        if b"\0" in tok:
            raise ValueError("argv, env and paths cannot contain NUL bytes")
    return b"\0".join(tokens) + b"\0", b"".join(c for _, c, _ in files)
