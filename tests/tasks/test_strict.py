"""Strict equality in hidden tests' asserts."""

from __future__ import annotations

from assay.tasks.strict import strict_source


def _run(test: str, candidate: object) -> bool:
    env: dict[str, object] = {"candidate": candidate}
    exec(compile(strict_source(test), "<t>", "exec"), env)
    try:
        env["test_x"]()  # type: ignore[operator]
    except AssertionError:
        return False
    return True


class Liar:
    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = object.__hash__


class Sneaky(str):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


def test_plain_values_compare_as_before() -> None:
    test = "def test_x():\n    assert candidate() == [1, (2, 'a')] and candidate() != [0]\n"
    assert _run(test, lambda: [1, (2, "a")])
    assert not _run(test, lambda: [1, (2, "b")])
    assert _run("def test_x():\n    assert candidate() == 3.0\n", lambda: 3)  # 3 == 3.0
    assert _run("def test_x():\n    assert candidate() == True\n", lambda: 1)


def test_lying_objects_fail() -> None:
    test = "def test_x():\n    assert candidate() == 5\n"
    assert not _run(test, Liar)
    assert not _run("def test_x():\n    assert candidate() == 'ok'\n", lambda: Sneaky("no"))
    assert not _run("def test_x():\n    assert candidate() == [5]\n", lambda: [Liar()])
    assert not _run("def test_x():\n    assert not (candidate() != 5)\n", Liar)


def test_objects_of_the_code_under_test_compare_with_their_own_eq() -> None:
    assert _run("def test_x():\n    assert candidate() == candidate()\n", Liar)


def test_only_asserts_are_rewritten() -> None:
    out = strict_source("x = 1 == 1\n\ndef test_x():\n    assert x == True\n")
    assert out.startswith("x = 1 == 1") and "assert _assay_eq(x, True)" in out
    assert strict_source("def broken(:\n") == "def broken(:\n"
