"""The program inside a model's response: one rule for every entry point.

``assay eval``, the trainer integrations (:func:`assay.integrations.extract_code`), the
SandboxFusion ``/submit`` route and OpenRLHF's ``/get_reward`` all judge what this returns.

Chat models wrap code in Markdown fences and often write more than one block (a sketch, then
the fix; or a usage example after the solution). The convention most code-RL recipes share is
to judge the *last* block, preferring blocks tagged with the requested language, so this does
the same: the last block tagged with the language (or an alias), else the last untagged
block, else the last block of any tag, else the whole text. A response that begins with code
and closes a fence the prompt opened (the prompt ends with an opening fence) has that code as
its first block. Reasoning in a closed ``<think>...</think>`` section is dropped first: only
the final answer is judged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

# An opening fence (``` or ~~~, optional tag), the body, then a closing fence on its own line
# or the end of the text (a response cut off by the generation limit).
_FENCE = re.compile(
    r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<tag>[^\s`]*)[^\n]*\n(?P<body>.*?)"
    r"(?:(?P<close>^[ \t]*(?P=fence)[ \t]*$)|\Z)",
    re.DOTALL | re.MULTILINE,
)
# Any fence line (opening or closing): counted to tell a closing fence whose opening is in
# the prompt (the completion of "...```python\n" is "code\n```") from an opening one.
_FENCE_LINE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[ \t]*(?P<tag>[^\s`]*)[^\n]*$", re.MULTILINE)
_ALIASES: dict[str, frozenset[str]] = {
    "python": frozenset({"python", "python3", "py", "py3"}),
    "cpp": frozenset({"cpp", "c++", "cxx", "cc", "hpp"}),
    "c": frozenset({"c", "h"}),
    "java": frozenset({"java"}),
    "javascript": frozenset({"javascript", "js", "node", "nodejs"}),
    "typescript": frozenset({"typescript", "ts"}),
    "go": frozenset({"go", "golang"}),
    "rust": frozenset({"rust", "rs"}),
    "bash": frozenset({"bash", "sh", "shell", "zsh"}),
}

#: How the code was found (SandboxFusion's ``extracted_type``): a closed fenced block, a block
#: cut off by the end of the text, the whole text, or nothing at all.
Kind = Literal["fenced", "incomplete_fenced", "heuristic", "empty"]


@dataclass(frozen=True, slots=True)
class Extracted:
    code: str
    kind: Kind

    @property
    def empty(self) -> bool:
        """True when the response holds no code at all (only blanks, or empty fences)."""
        return not self.code.strip()


def _tags(language: str) -> frozenset[str]:
    lang = language.lower()
    for names in _ALIASES.values():
        if lang in names:
            return names
    return frozenset({lang})


def extract(response: str, language: str = "python") -> Extracted:
    """The code to judge from ``response`` and how it was found (see the module docstring)."""
    text = response.rsplit("</think>", 1)[1] if "</think>" in response else response
    blocks = _continued(text)
    if blocks:
        text = text[blocks[0][3] :]
    blocks += [
        (m["tag"].lower(), m["body"], m["close"] is not None, 0) for m in _FENCE.finditer(text)
    ]
    if not blocks:
        code = text.strip("\n")
        return Extracted(code, "heuristic" if code.strip() else "empty")
    wanted = _tags(language)
    for choose in (lambda t: t in wanted, lambda t: t == "", lambda t: True):
        chosen = [(body, closed) for tag, body, closed, _ in blocks if choose(tag)]
        if chosen:
            body, closed = chosen[-1]
            code = body.rstrip("\n") + "\n"
            if not code.strip():
                return Extracted("", "empty")
            return Extracted(code, "fenced" if closed else "incomplete_fenced")
    raise AssertionError("unreachable: blocks is not empty")


def _continued(text: str) -> list[tuple[str, str, bool, int]]:
    """The block a prompt opened and the response closes: when the prompt ends with an
    opening fence (a line of three backticks and ``python``), the completion is the code,
    then a closing fence, then perhaps more. Told from a response that opens an untagged
    block itself by the count: the first fence line is untagged, text comes before it, and
    the fence lines are odd in number (one of them was opened in the prompt). Returns that
    block (untagged, closed, and where the rest of the text starts), or nothing."""
    lines = list(_FENCE_LINE.finditer(text))
    if not lines or lines[0]["tag"] or len(lines) % 2 == 0:
        return []
    first = lines[0]
    body = text[: first.start()]
    if not body.strip():
        return []
    return [("", body, True, first.end())]
