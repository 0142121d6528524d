"""Parsing someone else's Python without reporting its style."""

from __future__ import annotations

import ast
import warnings

import pytest

from assay._pysource import parse_quietly

OLD_ESCAPE = 'pattern = "\\d+"\n'  # an invalid escape: a warning (an error under -W error)


def test_warnings_of_the_parsed_code_are_not_raised_or_shown() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(SyntaxError):
            ast.parse(OLD_ESCAPE)
        tree = parse_quietly(OLD_ESCAPE)
        assert isinstance(tree.body[0], ast.Assign)
        assert parse_quietly(OLD_ESCAPE.encode()).body[0].lineno == 1


def test_code_that_does_not_parse_still_raises() -> None:
    with pytest.raises(SyntaxError):
        parse_quietly("def f(:\n")
