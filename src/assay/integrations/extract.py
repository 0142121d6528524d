"""The program inside a model's response (the rule is :mod:`assay._extract`'s, shared with
``assay eval`` and the server's ``/submit`` and ``/get_reward``)."""

from __future__ import annotations

from .._extract import extract

__all__ = ["extract_code"]


def extract_code(response: str, language: str = "python") -> str:
    """The code to judge from ``response``: the last fenced block tagged with ``language``
    (or an alias), else the last untagged block, else the last block, else the whole text;
    reasoning in a closed ``<think>...</think>`` section is dropped first."""
    return extract(response, language).code
