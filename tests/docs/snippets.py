"""The runnable examples of the documentation: every fenced block that a ``<!-- runnable -->``
line introduces, in README.md and docs/**/*.md.

The marker is an HTML comment on the line just before the fence, so it renders as nothing on
GitHub and in the site, and it does not need an attribute syntax that Material or GitHub
would show or reject. An example that needs a cluster, S3, an image build or a running
service is left unmarked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- runnable -->"
#: Fence language -> how the block runs.
LANGUAGES = {"python": "python", "py": "python", "bash": "bash", "sh": "bash"}


@dataclass(frozen=True)
class Block:
    """One runnable block: where it is (for the test id and the failure message) and its code."""

    path: Path
    line: int  # 1-based line of the opening fence
    language: str  # "python" or "bash"
    code: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def doc_files(root: Path = ROOT) -> list[Path]:
    """README.md and every Markdown page of the site, in a fixed order."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def blocks_in(path: Path) -> list[Block]:
    """The runnable blocks of one file. A marker not followed by a fence of a known language
    is an error (ValueError naming the line), so a typo cannot silently skip an example."""
    lines = path.read_text().splitlines()
    found: list[Block] = []
    for i, line in enumerate(lines):
        if line.strip() != MARKER:
            continue
        fence = lines[i + 1] if i + 1 < len(lines) else ""
        m = re.fullmatch(r"(\s*)(`{3,})\s*([\w+-]*)\s*", fence)
        if m is None or m.group(3) not in LANGUAGES:
            raise ValueError(f"{path}:{i + 1}: {MARKER} must precede a python or bash fence")
        indent, ticks = m.group(1), m.group(2)
        body: list[str] = []
        for j in range(i + 2, len(lines)):
            if lines[j].strip() == ticks:
                break
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j])
        else:
            raise ValueError(f"{path}:{i + 2}: the runnable block is never closed")
        found.append(Block(path, i + 2, LANGUAGES[m.group(3)], "\n".join(body) + "\n"))
    return found


def runnable_blocks(root: Path = ROOT) -> list[Block]:
    return [b for path in doc_files(root) for b in blocks_in(path)]
