"""Tampering with verification, tried for real as an agent would (through session steps):
none may raise the reward of a workspace whose code is still wrong.

The workspace's ``add`` is broken (1 of 3 hidden tests fails, reward 2/3). Each trick
leaves ``add`` broken and attacks how the tests are run instead; the verification must still
count that test as failed. Every trick runs against a task whose hidden tests need pytest
(fixtures, so the full pytest path) and one whose tests run on the fast path.
"""

from __future__ import annotations

import pytest

from assay import Limits, Runner
from assay.sessions import Session
from assay.tasks import AgentTask

BROKEN = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
PLAIN = (
    "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_add_zero():\n    assert add(0, 0) == 0\n\n\ndef test_mul():\n"
    "    assert mul(2, 3) == 6\n"
)
PYTEST = (
    "import pytest\nfrom calc import add, mul\n\n\n@pytest.fixture\ndef two():\n    return 2\n\n\n"
    "def test_add(two):\n    assert add(two, 3) == 5\n\n\ndef test_add_zero():\n"
    "    assert add(0, 0) == 0\n\n\ndef test_mul(two):\n    assert mul(two, 3) == 6\n"
)
VISIBLE = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"

PASSING_CONFTEST = """
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    rep.outcome = "passed"
    rep.longrepr = None
"""
PLUGIN = PASSING_CONFTEST
FAKE_PYTEST = "def main(*a, **k):\n    return 0\n\n\ndef fixture(f=None, **k):\n    return f\n"

# Each trick: shell commands run as session steps (the agent's actions).
TRICKS: dict[str, list[str]] = {
    "patched_conftest": [f"cat > conftest.py <<'EOF'\n{PASSING_CONFTEST}\nEOF"],
    "conftest_in_subdir": [
        f"mkdir -p sub && cat > sub/conftest.py <<'EOF'\n{PASSING_CONFTEST}\nEOF"
    ],
    "edited_visible_test": [
        "printf 'def test_add():\\n    pass\\n' > test_hidden.py",
        "printf 'def test_add():\\n    pass\\n' > test_calc.py",
    ],
    "fake_pytest_on_path": [
        "mkdir -p bin && printf '#!/bin/sh\\necho 3 passed\\nexit 0\\n' > bin/pytest",
        "chmod +x bin/pytest && export PATH=/work/bin:$PATH",
        f"cat > pytest.py <<'EOF'\n{FAKE_PYTEST}\nEOF",
    ],
    "fake_pytest_package": [
        f"mkdir -p _pytest pytest && cat > pytest/__init__.py <<'EOF'\n{FAKE_PYTEST}\nEOF",
        "echo 'raise SystemExit(0)' > _pytest/__init__.py",
    ],
    "sitecustomize": [
        "printf 'import calc\\ncalc.add = lambda a, b: a + b\\n' > sitecustomize.py",
        "printf 'import calc\\ncalc.add = lambda a, b: a + b\\n' > usercustomize.py",
    ],
    "pth_file": ["echo 'import calc; calc.add = lambda a, b: a + b' > evil.pth"],
    "pytest_ini_addopts": [
        f"cat > evilplugin.py <<'EOF'\n{PLUGIN}\nEOF",
        "printf '[pytest]\\naddopts = -p evilplugin --deselect test_hidden.py::test_add\\n'"
        " > pytest.ini",
    ],
    "pyproject_addopts": [
        f"cat > evilplugin.py <<'EOF'\n{PLUGIN}\nEOF",
        "printf '[tool.pytest.ini_options]\\naddopts = \"-p evilplugin\"\\n' > pyproject.toml",
        "printf '[tool:pytest]\\naddopts = -p evilplugin\\n' > setup.cfg",
        "printf '[pytest]\\naddopts = -p evilplugin\\n' > tox.ini",
    ],
    "pythonpath_via_files": [
        "mkdir -p shadow && printf 'def add(a, b):\\n    return a + b\\n'"
        " > shadow/calc.py && printf 'def mul(a, b):\\n    return a * b\\n' >> shadow/calc.py",
        "echo 'PYTHONPATH=/work/shadow' > .env && export PYTHONPATH=/work/shadow",
        "echo 'export PYTHONPATH=/work/shadow' > .bashrc",
    ],
    "sys_exit_in_solution": ["printf 'import sys\\nsys.exit(0)\\n' >> calc.py"],
    "os_exit_in_solution": ["printf 'import os\\nos._exit(0)\\n' >> calc.py"],
    "exit_inside_the_function": [
        "printf 'def add(a, b):\\n    import os\\n    os._exit(0)\\n' >> calc.py"
    ],
    "patch_the_runner_at_import": [
        "cat >> calc.py <<'EOF'\n"
        "import sys\n"
        "for name, mod in list(sys.modules.items()):\n"
        "    if name.startswith('_pytest') and hasattr(mod, 'TestReport'):\n"
        "        mod.TestReport.passed = property(lambda self: True)\n"
        "import builtins\n"
        "builtins.isinstance = lambda *a: True\n"
        "EOF"
    ],
    # The runner's function kept, its code swapped: identity checks alone miss it.
    "swap_the_runners_code": [
        "cat >> calc.py <<'EOF'\n"
        "import sys\n"
        "def _called(pyfuncitem):\n"
        "    return True\n"
        "for name, mod in list(sys.modules.items()):\n"
        "    if name.startswith('_pytest') and hasattr(mod, 'pytest_pyfunc_call'):\n"
        "        mod.pytest_pyfunc_call.__code__ = _called.__code__\n"
        "EOF"
    ],
    "forged_report_lines": [
        "cat >> calc.py <<'EOF'\n"
        "import os\n"
        "for fd in range(3, 10):\n"
        "    for node in ('test_hidden.py::test_add', 'test_hidden.py::test_mul'):\n"
        "        try:\n"
        '            os.write(fd, (\'{"id": "%s", "outcome": "passed"}\\n\' % node).encode())\n'
        '            os.write(fd, b\'{"end": true, "tampered": []}\\n\')\n'
        "        except OSError:\n"
        "            pass\n"
        "EOF"
    ],
    "secret_from_stdin": [
        "cat >> calc.py <<'EOF'\n"
        "import os\n"
        "secret = b''\n"
        "for read in (lambda: os.pread(0, 64, 0), lambda: open('/proc/self/fd/0', 'rb').read(64)):\n"
        "    try:\n"
        "        secret = secret or read().strip()\n"
        "    except OSError:\n"
        "        pass\n"
        "for name in ('test_add', 'test_add_zero', 'test_mul'):\n"
        '    line = \'{"id": "test_hidden.py::%s", "outcome": "passed"}\' % name\n'
        "    os.write(3, secret + b' ' + line.encode() + b'\\n')\n"
        'os.write(3, secret + b\' {"end": true, "tampered": []}\\n\')\n'
        "os._exit(0)\n"
        "EOF"
    ],
    "planted_bytecode": [
        "mkdir -p fixed && printf 'def add(a, b):\\n    return a + b\\n\\ndef mul(a, b):\\n"
        "    return a * b\\n' > fixed/calc.py",
        "cd fixed && python3 -c \"import py_compile; py_compile.compile('calc.py',"
        " cfile='../__pycache__/calc.cpython-311.pyc',"
        ' invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)" && cd ..',
        "rm -rf fixed",
    ],
}


def _task(tests: str) -> AgentTask:
    return AgentTask.from_dict(
        {
            "task_id": "calc",
            "instructions": "fix add",
            "files": {"calc.py": BROKEN, "test_calc.py": VISIBLE},
            "tests": {"test_hidden.py": tests},
            "protected": ["test_calc.py"],
        }
    )


@pytest.fixture(scope="module")
def tasks() -> dict[str, AgentTask]:
    return {"plain": _task(PLAIN), "pytest": _task(PYTEST)}


@pytest.mark.parametrize("kind", ["plain", "pytest"])
@pytest.mark.parametrize("trick", sorted(TRICKS))
def test_trick_does_not_raise_the_reward(session_of, kind: str, trick: str) -> None:  # type: ignore[no-untyped-def]
    s = session_of(kind)
    honest = s.verify()
    assert (honest.passed, honest.total) == (2, 3), honest.reason
    for command in TRICKS[trick]:
        step = s.exec(command)
        assert step.exit_code == 0, (command, step.stderr)
    v = s.verify()
    assert v.tests["test_hidden.py::test_add"] == "failed", (trick, v)
    assert v.reward is not None and v.reward <= honest.reward
    assert v.step_reward is not None and v.step_reward <= 0.0
    assert v.verdict == "failed"
    assert "test_hidden.py::test_add" not in v.newly_passing


@pytest.mark.parametrize(
    ("trick", "paths"),
    [
        ("patched_conftest", ["conftest.py"]),
        ("conftest_in_subdir", ["sub/conftest.py"]),
        ("edited_visible_test", ["test_calc.py", "test_hidden.py"]),
        ("sitecustomize", ["sitecustomize.py", "usercustomize.py"]),
        ("pth_file", ["evil.pth"]),
        ("pytest_ini_addopts", ["pytest.ini"]),
        ("pyproject_addopts", ["pyproject.toml", "setup.cfg", "tox.ini"]),
    ],
)
def test_protected_edits_are_reported_and_cost(session_of, trick: str, paths: list[str]) -> None:  # type: ignore[no-untyped-def]
    s = session_of("pytest")
    s.verify()
    for command in TRICKS[trick]:
        s.exec(command)
    v = s.verify()
    assert v.protected_edits == sorted(paths)
    assert v.terms["protected"] == 1.0 and v.step_reward == pytest.approx(-1.0)


def test_the_honest_fix_still_counts_after_a_trick(session_of) -> None:  # type: ignore[no-untyped-def]
    s = session_of("pytest")
    for command in TRICKS["patched_conftest"]:
        s.exec(command)
    s.exec("rm conftest.py && sed -i 's/a - b/a + b/' calc.py")
    v = s.verify()
    assert (v.passed, v.verdict, v.protected_edits) == (3, "accepted", [])


@pytest.mark.parametrize(
    ("kind", "patch"),
    [
        (
            "pytest",
            "import _pytest.reports\n_pytest.reports.TestReport.passed = property(lambda s: True)\n",
        ),
        ("plain", "import builtins\nbuiltins.abs = lambda x: 0\n"),
    ],
)
def test_runner_patching_is_detected(session_of, kind: str, patch: str) -> None:  # type: ignore[no-untyped-def]
    s = session_of(kind)
    s.exec(f"cat >> calc.py <<'EOF'\n{patch}EOF")
    v = s.verify()
    assert v.passed == 0 and "patched the test runner" in v.reason


REWRITE_LATER_TEST = """
import glob, os, py_compile
for path in glob.glob('/work/ws/**/test_b*.py', recursive=True):
    fake = path + '.fake.py'
    with open(fake, 'w') as fh:
        fh.write('def test_add():\\n    pass\\n\\n\\ndef test_add_zero():\\n    pass\\n')
    os.chmod(path, 0o644)
    with open(path, 'w') as fh:
        fh.write(open(fake).read())
    # and a cached "rewritten" test, as pytest's assertion rewriter would look for it
    cache = os.path.join(os.path.dirname(path), '__pycache__')
    os.makedirs(cache, exist_ok=True)
    for tag in ('pytest-7.2.1', 'pytest-8.0.0', 'pytest-9.0.3'):
        py_compile.compile(path, cfile=os.path.join(cache, 'test_b.cpython-311-%s.pyc' % tag))
"""


@pytest.mark.parametrize("kind", ["plain", "pytest"])
def test_rewriting_a_later_test_file_at_run_time(runner: Runner, kind: str) -> None:
    head = "import pytest\n" if kind == "pytest" else ""
    task = AgentTask.from_dict(
        {
            "task_id": "two-files",
            "instructions": "fix add",
            "files": {"calc.py": BROKEN},
            "tests": {
                "test_a.py": head
                + "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
                "test_b.py": head + PLAIN.split("\n\n\ndef test_mul")[0] + "\n",
            },
        }
    )
    with Session.for_task(runner, task) as s:
        assert s.verify().tests["test_b.py::test_add"] == "failed"
        s.exec(f"cat >> calc.py <<'EOF'\n{REWRITE_LATER_TEST}\nEOF")
        v = s.verify()
        assert v.tests["test_b.py::test_add"] == "failed", v
        assert v.tests["test_a.py::test_mul"] == "passed"


def test_shadowing_a_module_the_tests_import(runner: Runner) -> None:
    """A workspace ``numpy.py`` whose ``allclose`` always agrees (numpy is Debian's
    python3-numpy in the sandbox; the fix must still pass with the real one)."""
    # Generous limits: importing numpy under gVisor on a busy host passed the default ones,
    # and a time_limit read as "no numpy" skipped the test.
    probe = runner.run("import numpy", limits=Limits(time_s=30, memory_mb=1024))
    if probe.status == "runtime_error" and b"ModuleNotFoundError" in probe.stderr:
        # an image without it (make security-image)
        pytest.skip("the sandbox's root has no numpy (Debian package python3-numpy)")
    assert probe.status == "ok", probe
    tests = (
        "import numpy as np\nfrom calc import add\n\n\ndef test_add():\n"
        "    assert np.allclose(add(2, 3), 5)\n"
    )
    task = AgentTask.from_dict(
        {
            "task_id": "np",
            "instructions": "",
            "files": {"calc.py": BROKEN},
            "tests": {"t_np.py": tests},
        }
    )
    with Session.for_task(runner, task) as s:
        s.exec("printf 'def allclose(*a, **k):\\n    return True\\n' > numpy.py")
        s.exec("mkdir -p np_pkg && touch np_pkg/__init__.py")
        assert s.verify().tests["t_np.py::test_add"] == "failed"
        s.exec("rm numpy.py && sed -i 's/a - b/a + b/' calc.py")
        assert s.verify().tests["t_np.py::test_add"] == "passed"


def test_lying_eq_on_a_strict_task(runner: Runner) -> None:
    """A repair task (strict values, as the CodeT converter makes them): an object whose
    ``__eq__`` always agrees does not pass the hidden asserts."""
    from assay.tasks.codet import repair_task

    rec = {
        "task_id": "HumanEval/53",
        "prompt": 'def add(x: int, y: int):\n    """Add two numbers x and y"""\n',
        "canonical_solution": "    return x + y\n",
        "entry_point": "add",
        "test": "def check(candidate):\n    assert candidate(0, 1) == 1\n"
        "    assert candidate(5, 7) == 12\n",
    }
    liar = (
        "    class Yes(int):\n        def __eq__(self, other):\n            return True\n"
        "        __hash__ = int.__hash__\n    return Yes(0)\n"
    )
    task = repair_task(rec, "    return x - y\n", 0)
    assert task.strict_values
    with Session.for_task(runner, task) as s:
        s.write_file("solution.py", rec["prompt"] + liar)
        v = s.verify()
        assert v.passed == 0 and v.reward == 0.0
