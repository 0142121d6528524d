"""Unified diffs: the lines a patch changes, and the diff between two workspaces."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class PatchLines:
    """What a unified diff changes: per file, the lines of the *original* file it removes or
    replaces (a pure insertion counts the original line it goes after, or line 1), and how
    many lines it adds and removes in all."""

    lines: dict[str, set[int]] = field(default_factory=dict)
    added: int = 0
    removed: int = 0

    @property
    def size(self) -> int:
        return self.added + self.removed


def _strip(path: str) -> str:
    path = path.split("\t", 1)[0].strip()
    if path.startswith(("a/", "b/")):
        path = path[2:]
    return path


def parse_patch(text: str) -> PatchLines:
    """The changed lines of a unified diff (``git diff`` or ``diff -u`` output)."""
    out = PatchLines()
    current: set[int] | None = None
    old_line = left_old = left_new = 0
    old_path = ""
    for raw in text.splitlines():
        if left_old > 0 or left_new > 0:  # inside a hunk: counts say where it ends
            if current is None:
                break
            if raw.startswith("-"):
                current.add(old_line)
                out.removed += 1
                old_line += 1
                left_old -= 1
            elif raw.startswith("+"):
                current.add(max(old_line - 1, 1))
                out.added += 1
                left_new -= 1
            elif raw.startswith("\\"):  # "\ No newline at end of file"
                pass
            else:
                old_line += 1
                left_old -= 1
                left_new -= 1
            continue
        if raw.startswith("--- "):
            old_path = _strip(raw[4:])
        elif raw.startswith("+++ "):
            new_path = _strip(raw[4:])
            path = new_path if new_path != "/dev/null" else old_path
            current = out.lines.setdefault(path, set())
        elif m := _HUNK.match(raw):
            old_line = int(m.group(1)) or 1
            left_old = int(m.group(2)) if m.group(2) is not None else 1
            left_new = int(m.group(4)) if m.group(4) is not None else 1
    return out


def unified_diff(
    before: Mapping[str, bytes], after: Mapping[str, bytes], max_bytes: int = 1 << 20
) -> str:
    """A unified diff from ``before`` to ``after`` (text files up to ``max_bytes`` each; a
    binary or larger file counts as one changed line)."""
    chunks: list[str] = []
    for path in sorted(set(before) | set(after)):
        a, b = before.get(path), after.get(path)
        if a == b:
            continue
        try:
            if (a is not None and len(a) > max_bytes) or (b is not None and len(b) > max_bytes):
                raise UnicodeDecodeError("utf-8", b"", 0, 1, "too large")
            a_lines = (a or b"").decode().splitlines(keepends=True)
            b_lines = (b or b"").decode().splitlines(keepends=True)
        except UnicodeDecodeError:
            chunks.append(f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-<binary>\n+<binary>\n")
            continue
        chunks.extend(
            difflib.unified_diff(
                a_lines,
                b_lines,
                "/dev/null" if a is None else f"a/{path}",
                "/dev/null" if b is None else f"b/{path}",
                n=1,
            )
        )
    # A file's last line without a newline: the marker git and patch expect after it.
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
        for line in chunks
    )


def diff_size(before: Mapping[str, bytes], after: Mapping[str, bytes]) -> int:
    """Lines added plus lines removed from ``before`` to ``after``."""
    return parse_patch(unified_diff(before, after)).size


__all__ = ["PatchLines", "diff_size", "parse_patch", "unified_diff"]
