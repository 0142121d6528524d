"""Where records live: a target string resolved to a local directory or an fsspec location.

Readers, compaction and remote writers all go through :class:`Store`, so "local path or S3" is
decided once. Local directories also go through fsspec's local filesystem (one code path), but
keep a :class:`~pathlib.Path` so segment locks (``flock``) can be taken there.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..errors import ValidationError
from . import defaults
from ._jsonl import is_segment_name

__all__ = ["Location", "Store", "basename", "check", "resolve"]


@dataclass(frozen=True)
class Location:
    """A resolved target: recording ``off``, a ``local`` directory, or a ``remote`` URL."""

    kind: Literal["off", "local", "remote"]
    url: str
    path: Path | None = None


def resolve(target: str | Path | None) -> Location:
    """Turn what a user typed into a :class:`Location`.

    ``None`` means ``$ASSAY_RECORDS`` or else the per-user default directory; ``"off"`` turns
    recording off; ``file://`` URLs are plain local directories (no spooling needed); any other
    ``scheme://`` goes to fsspec; everything else is a local path (``~`` expanded).
    """
    if target is None:
        env = os.environ.get(defaults.RECORDS_ENV, "").strip()
        target = env if env else defaults.RECORDS_DIR
    if isinstance(target, Path):
        path = target.expanduser()
        return Location("local", str(path), path)
    text = target.strip()
    if not text:
        raise ValidationError("target", "empty records target (use 'off' to disable recording)")
    if text == defaults.OFF:
        return Location("off", defaults.OFF)
    if text.startswith("file://"):
        path = Path(text[len("file://") :]).expanduser()
        return Location("local", str(path), path)
    if "://" in text:
        return Location("remote", text.rstrip("/"))
    path = Path(text).expanduser()
    return Location("local", str(path), path)


#: Schemes of S3 and S3-compatible stores (s3fs), whose credentials :func:`check` looks for.
_S3_SCHEMES = frozenset({"s3", "s3a"})


def check(target: str | Path | None, field: str = "records") -> Location:
    """:func:`resolve`, then what can be told before any work: a remote scheme fsspec knows
    (and whose backend is installed), and for S3 that credentials can be found (the
    variables, a profile, the instance's role): without them every upload would fail later,
    in the background, with a traceback. :class:`ValidationError` naming ``field``."""
    loc = resolve(target)
    if loc.kind != "remote":
        return loc
    import fsspec  # type: ignore[import-untyped]

    scheme = loc.url.split("://", 1)[0].lower()
    try:
        fsspec.get_filesystem_class(scheme)
    except ValueError:
        raise ValidationError(
            field,
            f"unknown URL scheme {scheme}:// (a directory, 'off', or e.g. s3://bucket/prefix)",
        ) from None
    except ImportError as exc:
        hint = " (pip install 'assay[s3]')" if scheme in _S3_SCHEMES else ""
        raise ValidationError(field, f"{scheme}:// needs a package: {exc}{hint}") from None
    if scheme in _S3_SCHEMES and not _s3_credentials():
        raise ValidationError(
            field,
            f"no S3 credentials found for {loc.url}: set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY (or AWS_PROFILE); AWS_ENDPOINT_URL for another S3 service",
        )
    return loc


def _s3_credentials() -> bool:
    """Whether botocore (under s3fs) finds credentials where it looks for them."""
    try:
        import botocore.session  # type: ignore[import-untyped]
    except ImportError:  # s3fs always brings botocore; without it s3:// failed above
        return False
    try:
        return botocore.session.get_session().get_credentials() is not None
    except Exception:  # a broken profile file and the like: botocore says why at upload
        return False


def basename(path: str) -> str:
    """Last component of an fsspec path (always ``/``-separated)."""
    return path.rstrip("/").rsplit("/", 1)[-1]


class Store:
    """The handful of storage operations telemetry needs, for one local or remote root."""

    def __init__(self, location: Location, storage_options: Mapping[str, Any] | None = None):
        import fsspec  # deferred: local writers never need it

        if location.kind == "off":
            raise ValidationError("target", "records are 'off'; there is nothing to read or write")
        self.location = location
        self.local_root: Path | None = None
        if location.path is not None:
            self.local_root = location.path.resolve()
            self.fs: Any = fsspec.filesystem("file")
            self.root: str = self.local_root.as_posix()
        else:
            self.fs, self.root = fsspec.core.url_to_fs(location.url, **(storage_options or {}))
            self.root = self.root.rstrip("/")

    @property
    def is_local(self) -> bool:
        return self.local_root is not None

    def join(self, *parts: str) -> str:
        return "/".join([self.root, *parts])

    def exists(self) -> bool:
        return bool(self.fs.exists(self.root))

    def segments(self) -> list[str]:
        """Paths of the JSONL segments directly under the root, oldest name first."""
        self.fs.invalidate_cache(self.root)  # object-store listings are cached per instance
        try:
            entries = self.fs.ls(self.root, detail=False)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return sorted(p for p in entries if is_segment_name(basename(p)))

    def parquet_files(self) -> list[str]:
        """Paths of compacted Parquet files, ``parquet/date=YYYY-MM-DD/part-*.parquet``."""
        pattern = self.join("parquet", "date=*", "*.parquet")
        self.fs.invalidate_cache(self.join("parquet"))
        return sorted(p for p in self.fs.glob(pattern) if basename(p).startswith("part-"))

    def size(self, path: str) -> int:
        return int(self.fs.size(path))

    def read_lines(self, path: str) -> Iterator[bytes]:
        """The lines of one file; a file that vanished meanwhile (compacted) yields nothing."""
        try:
            with self.fs.open(path, "rb") as f:
                yield from f
        except FileNotFoundError:
            return

    def put_file(self, local: Path, path: str) -> None:
        """Upload a whole file so readers never see part of it."""
        if self.is_local:
            tmp = self._tmp_name(path)
            Path(tmp).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(local, tmp)
            os.replace(tmp, path)
        else:
            self.fs.put_file(str(local), path)  # object stores publish an upload whole

    def put_bytes(self, data: bytes, path: str) -> None:
        """Store bytes under ``path`` atomically (temporary name + rename where that exists)."""
        if self.is_local:
            tmp = self._tmp_name(path)
            Path(tmp).parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        else:
            self.fs.pipe_file(path, data)

    def remove(self, path: str) -> None:
        try:
            self.fs.rm_file(path)
        except FileNotFoundError:
            pass

    def makedirs(self) -> None:
        self.fs.makedirs(self.root, exist_ok=True)

    @staticmethod
    def _tmp_name(path: str) -> str:
        # Hidden, and not matching any name readers look for, so a crash leaves only litter.
        head, _, name = path.rpartition("/")
        return f"{head}/.{name}.{uuid.uuid4().hex}.tmp"
