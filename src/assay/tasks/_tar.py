"""A fast reader of the plain tarballs a session's workspace comes back as.

``tarfile`` spends ~80 µs parsing each member's header in Python; a workspace of real size
(thousands of files) is read at every verification, where that was half the time. This
reader handles what ``tarfile`` writes for a tree of files, directories and symlinks (ustar
headers, pax ``x`` headers for long or non-ASCII names, GNU ``L``/``K`` long names) by
slicing the header fields, and returns ``None`` for anything else (compression, other
extended headers), which the caller then reads with ``tarfile``.
"""

from __future__ import annotations

from collections.abc import Callable

_BLOCK = 512
#: Pax keys about ownership: a sandbox uid is too large for the ustar field. Ignored.
_OWNER = ("uid", "gid", "uname", "gname")


def _octal(field: bytes) -> int:
    text = field.rstrip(b"\0 ").lstrip(b" ")
    if field[:1] in (b"\x80", b"\xff"):  # base-256 sizes: let tarfile handle them
        raise ValueError("base-256 number")
    return int(text, 8) if text else 0


def _pax(data: bytes) -> dict[str, str]:
    out, pos = {}, 0
    while pos < len(data):
        space = data.index(b" ", pos)
        length = int(data[pos:space])
        key, _, value = data[space + 1 : pos + length - 1].partition(b"=")
        out[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
        pos += length
    return out


def read_tree(
    data: bytes, accept: Callable[[str, int], None] | None = None
) -> tuple[list[tuple[str, bytes]], list[tuple[str, str]]] | None:
    """Regular files ``(name, content)`` and symlinks ``(name, target)`` of a plain tar, in
    order, names as stored; ``accept(name, size)`` is called before a file is read (it may
    raise to stop). ``None`` if the tar uses anything this reader does not know."""
    files: list[tuple[str, bytes]] = []
    links: list[tuple[str, str]] = []
    view = memoryview(data)
    pos, end = 0, len(data)
    long_name: str | None = None
    long_link: str | None = None
    try:
        while pos + _BLOCK <= end:
            header = bytes(view[pos : pos + _BLOCK])
            if header == b"\0" * _BLOCK:
                return files, links
            if header[257:262] != b"ustar":
                return None
            size = _octal(header[124:136])
            kind = header[156:157]
            body_at = pos + _BLOCK
            pos = body_at + -(-size // _BLOCK) * _BLOCK
            if kind in (b"x", b"L", b"K"):
                body = bytes(view[body_at : body_at + size])
                if kind == b"x":
                    pax = _pax(body)
                    if set(pax) - {"path", "linkpath", "size", "mtime", "atime", "ctime", *_OWNER}:
                        return None
                    long_name, long_link = pax.get("path"), pax.get("linkpath")
                    if "size" in pax:
                        return None  # a size only the pax header knows: tarfile's job
                elif kind == b"L":
                    long_name = body.rstrip(b"\0").decode("utf-8", "surrogateescape")
                else:
                    long_link = body.rstrip(b"\0").decode("utf-8", "surrogateescape")
                continue
            name = long_name
            if name is None:
                raw = header[0:100].split(b"\0", 1)[0]
                prefix = header[345:500].split(b"\0", 1)[0]
                if prefix:
                    raw = prefix + b"/" + raw
                name = raw.decode("utf-8", "surrogateescape")
            link = long_link or header[157:257].split(b"\0", 1)[0].decode(
                "utf-8", "surrogateescape"
            )
            long_name = long_link = None
            if kind in (b"0", b"\0", b"7"):
                if accept is not None:
                    accept(name, size)
                files.append((name, bytes(view[body_at : body_at + size])))
            elif kind == b"2":
                links.append((name, link))
            elif kind not in (b"5", b"1", b"3", b"4", b"6"):
                return None
    except (ValueError, IndexError):
        return None
    return None  # no end-of-archive block: not a tar this reader understands


__all__ = ["read_tree"]
