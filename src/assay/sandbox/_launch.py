"""The exec-mode launcher (``_inside/launcher.c``): building it, and speaking its spec format.

The launcher is compiled once per source version with the host's C compiler (statically
where the C library allows) and kept under the state directory; the fork server copies it
into the sandbox's read-only template root at start. Without a C compiler, exec-mode runs
use the Python program process instead (same isolation, slower start).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
import threading

from .. import defaults

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_inside", "launcher.c")
_lock = threading.Lock()
_built: dict[str, str | None] = {}


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


def ensure_launcher() -> str | None:
    """Path of the compiled launcher, building it if needed; None when it cannot be built."""
    try:
        with open(SOURCE, "rb") as fh:
            source = fh.read()
    except OSError:
        return None
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        return None
    key = hashlib.sha256(source + os.fsencode(os.path.realpath(cc))).hexdigest()[:16]
    with _lock:
        if key in _built:
            return _built[key]
        path = _build(cc, key)
        _built[key] = path
        return path


def _build(cc: str, key: str) -> str | None:
    directory = os.path.join(str(defaults.state_dir()), "launcher")
    target = os.path.join(directory, f"launch-{key}")
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError:
        return None
    if os.path.exists(target):
        return target if _trusted(target) else None
    fd, tmp = tempfile.mkstemp(prefix=".launch-", dir=directory)
    os.close(fd)
    try:
        for extra in (["-static"], []):  # static when libc.a is installed: no ld.so per spawn
            proc = subprocess.run(
                [cc, "-O2", "-Wall", *extra, "-o", tmp, SOURCE],
                capture_output=True,
                timeout=120,
                check=False,
            )
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


def encode_spec(
    argv: list[str],
    env: dict[str, str],
    rlimits: dict[str, int],
    files: list[tuple[str, bytes, int]],
    collect_payload: bytes,
) -> tuple[bytes, bytes]:
    """The launcher's spec (NUL-terminated tokens) and the concatenated file contents."""
    tokens: list[bytes] = [str(len(argv)).encode(), *(os.fsencode(a) for a in argv)]
    tokens.append(str(len(env)).encode())
    tokens += [os.fsencode(f"{k}={v}") for k, v in env.items()]
    tokens += [
        str(int(rlimits[k])).encode() for k in ("file_bytes", "open_files", "stack_bytes", "cpu_s")
    ]
    tokens.append(str(len(files)).encode())
    for path, content, mode in files:
        tokens += [os.fsencode(path), str(len(content)).encode(), str(mode & 0o777).encode()]
    tokens.append(collect_payload)
    for tok in tokens:
        if b"\0" in tok:
            raise ValueError("argv, env and paths cannot contain NUL bytes")
    return b"\0".join(tokens) + b"\0", b"".join(c for _, c, _ in files)
