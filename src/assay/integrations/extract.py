"""The program inside a model's response.

Chat models wrap code in Markdown fences and often write more than one block (a sketch, then
the fix; or a usage example after the solution). The convention most code-RL recipes share is
to judge the *last* block, preferring blocks tagged with the requested language, so this does
the same: the last block tagged with the language (or an alias), else the last untagged
block, else the last block of any tag, else the whole text. Reasoning in a closed
``<think>...</think>`` section is dropped first: only the final answer is judged.
"""

from __future__ import annotations

import re

__all__ = ["extract_code"]

# An opening fence (``` or ~~~, optional tag), the body, then a closing fence on its own line
# or the end of the text (a response cut off by the generation limit).
_FENCE = re.compile(
    r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<tag>[^\s`]*)[^\n]*\n(?P<body>.*?)"
    r"(?:^[ \t]*(?P=fence)[ \t]*$|\Z)",
    re.DOTALL | re.MULTILINE,
)
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


def _tags(language: str) -> frozenset[str]:
    lang = language.lower()
    for names in _ALIASES.values():
        if lang in names:
            return names
    return frozenset({lang})


def extract_code(response: str, language: str = "python") -> str:
    """The code to judge from ``response`` (see the module docstring for the rule)."""
    text = response.rsplit("</think>", 1)[1] if "</think>" in response else response
    blocks = [(m["tag"].lower(), m["body"]) for m in _FENCE.finditer(text)]
    if not blocks:
        return text.strip("\n")
    wanted = _tags(language)
    for choose in (lambda t: t in wanted, lambda t: t == "", lambda t: True):
        chosen = [body for tag, body in blocks if choose(tag)]
        if chosen:
            return chosen[-1].rstrip("\n") + "\n"
    raise AssertionError("unreachable: blocks is not empty")
