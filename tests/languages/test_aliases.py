"""Language aliases (issue 14): the names HumanEval-X, MultiPL-E, SandboxFusion and people use
(``js``, ``py``, ``c++``, ...) are accepted wherever a language is named."""

from __future__ import annotations

import pytest

from assay import languages
from assay.errors import UnsupportedLanguageError
from assay.formats import humanevalx, multiple
from assay.judge import Problem, Submission, TestCase

ALIASES = {
    "js": "javascript",
    "node": "javascript",
    "nodejs": "javascript",
    "ts": "typescript",
    "py": "python",
    "python3": "python",
    "c++": "cpp",
    "golang": "go",
    "rs": "rust",
    "sh": "bash",
    "JS": "javascript",
    "Python": "python",
}


@pytest.mark.parametrize(("alias", "name"), sorted(ALIASES.items()))
def test_every_usual_alias_names_its_language(alias: str, name: str) -> None:
    assert languages.canonical(alias) == name
    assert languages.get(alias).name == name


def test_unknown_names_stay_unknown() -> None:
    assert languages.canonical("klingon") == "klingon"
    with pytest.raises(UnsupportedLanguageError):
        languages.get("klingon")


@pytest.mark.parametrize(("alias", "name"), [("py", "python"), ("js", "javascript")])
def test_a_submission_stores_the_languages_own_name(alias: str, name: str) -> None:
    problem = Problem("p", [TestCase(input="", expected="")])
    assert Submission(problem, "x", alias).language == name


def test_humanevalx_takes_an_alias_for_its_language() -> None:
    rec = {
        "task_id": "JavaScript/0",
        "prompt": "const f = () => {\n",
        "canonical_solution": "  return 1;\n};\n",
        "test": "const testF = () => { console.assert(f() === 1) }\ntestF()\n",
        "declaration": "const f = () => {\n",
    }
    for alias in ("js", "node", "nodejs", "JavaScript"):
        (problem,) = humanevalx.load([rec], alias)
        assert problem.metadata["language"] == "javascript"


def test_multiple_takes_an_alias_for_its_language() -> None:
    rec = {"name": "HumanEval_0_f", "language": "go", "prompt": "func f() {", "tests": "x"}
    for alias in ("go", "golang", "Go"):
        (problem,) = multiple.load([rec], alias)
        assert problem.metadata["language"] == "go"
