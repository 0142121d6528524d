"""What the verification sandbox is given: protected paths reset, runner configs dropped, hidden
tests on top, and which path (fast or pytest) runs them."""

from __future__ import annotations

from assay.sessions._verify_run import (
    external_imports,
    is_runner_config,
    plain_tests,
    prepare,
    static_ids,
)
from assay.tasks import AgentTask

TASK = AgentTask(
    "t",
    "",
    {"a.py": b"A", "conftest.py": b"C", "vis.py": b"V"},
    {
        "test_h.py": "def test_x():\n    pass\n\n\nclass TestY:\n    def test_z(self):\n        pass\n"
    },
    protected=("vis.py",),
)


def test_prepare_resets_protected_and_drops_planted_configs() -> None:
    snap = {
        "a.py": b"A2",
        "conftest.py": b"EVIL",
        "vis.py": b"V2",
        "sub/pytest.ini": b"x",
        "x.pth": b"import os",
        "test_h.py": b"planted",
    }
    work, edits = prepare(TASK, snap)
    assert edits == ["conftest.py", "sub/pytest.ini", "test_h.py", "vis.py", "x.pth"]
    assert work["a.py"] == b"A2" and work["conftest.py"] == b"C" and work["vis.py"] == b"V"
    assert "sub/pytest.ini" not in work and "x.pth" not in work
    assert work["test_h.py"].startswith(b"def test_x")


def test_runner_configs() -> None:
    for name in (
        "conftest.py",
        "a/pytest.ini",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
        "sitecustomize.py",
        "usercustomize.py",
        "z.pth",
    ):
        assert is_runner_config(name), name
    assert not is_runner_config("main.py")


def test_fast_path_only_for_plain_tests() -> None:
    plain = AgentTask("t", "", {"a.py": b""}, {"t.py": "def test_a():\n    assert 1\n"})
    assert plain_tests(plain, {"a.py": b""}) == ["t.py::test_a"]
    assert plain_tests(plain, {"conftest.py": b""}) is None  # a conftest needs pytest
    for source in (
        "import pytest\n",
        "def test_a(tmp_path):\n    pass\n",
        "class TestA:\n    pass\n",
        "@dec\ndef test_a():\n    pass\n",
    ):
        task = AgentTask("t", "", {}, {"t.py": source})
        assert plain_tests(task, {}) is None, source
    assert static_ids(TASK) == ["test_h.py::test_x", "test_h.py::TestY::test_z"]


def test_modules_the_tests_import_from_outside_are_guarded() -> None:
    task = AgentTask(
        "t",
        "",
        {"calc.py": b"", "pkg/__init__.py": b""},
        {
            "test_h.py": "import numpy as np\nimport pkg.x\nfrom calc import a\nfrom . import y\n"
            "from hypothesis import given\nimport test_h\n"
        },
    )
    assert external_imports(task) == ["hypothesis", "numpy"]
