"""Tampering with the verification of ``test_command`` tasks, tried for real through session
steps: as hard to forge as a pytest task.

Two commands: one pytest invocation (``python -m pytest -q test_hidden.py``: run in the
verification's own guarded pytest, one outcome per test) and a script of the task's
(``python3 run_tests.py``, unittest: its exit status is the outcome, counted only if every
Python process it started exited normally). ``add`` stays broken in every trick; the
verification must keep the task failed.
"""

from __future__ import annotations

import pytest

from assay.tasks import AgentTask

BROKEN = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
FIXED = BROKEN.replace("a - b", "a + b")
PYTEST = (
    "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_mul():\n    assert mul(2, 3) == 6\n"
)
SCRIPT = (
    "import sys\nimport unittest\n\nfrom calc import add, mul\n\n\n"
    "class T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
    "    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n\n\n"
    "result = unittest.main(exit=False).result\nsys.exit(0 if result.wasSuccessful() else 1)\n"
)
UNIT = SCRIPT.rpartition("result = ")[0]
INLINE = "from calc import add, mul\nassert add(2, 3) == 5\nassert mul(2, 3) == 6\nprint('ok')"
COMMANDS = {
    "pytest": ("python -m pytest -q test_hidden.py", {"test_hidden.py": PYTEST}),
    "script": ("python3 run_tests.py", {"run_tests.py": SCRIPT}),
    # The standard library's runner: its exit status is the outcome.
    "unittest_module": ("python3 -m unittest test_unit", {"test_unit.py": UNIT}),
    # A plain assert script: nothing in it catches a SystemExit of the code under test.
    "assert_script": ("python3 check.py", {"check.py": INLINE}),
    "inline": (f'python3 -c "{INLINE}"', {}),
}
EXIT_ZERO = "def main(*a, **k):\n    return 0\n\n\nraise SystemExit(0)\n"

TRICKS: dict[str, list[str]] = {
    "pytest_py_exits_0": [f"cat > pytest.py <<'EOF'\n{EXIT_ZERO}EOF"],
    "pytest_package_exits_0": [
        f"mkdir -p pytest _pytest && cat > pytest/__init__.py <<'EOF'\n{EXIT_ZERO}EOF",
        "cp pytest/__init__.py pytest/__main__.py && cp pytest/__init__.py _pytest/__init__.py",
    ],
    "unittest_py_exits_0": [f"cat > unittest.py <<'EOF'\n{EXIT_ZERO}EOF"],
    "sys_py_shadow": ["printf 'raise SystemExit(0)\\n' > sys.py && cp sys.py os.py"],
    # A standard module the boot imports, shadowed in the workspace's import root: a boot
    # that failed would leave the process unregistered, its os._exit(0) uncounted.
    "socket_py_shadow_then_os_exit": [
        "printf 'raise ImportError\\n' > socket.py",
        "printf 'import os\\nos._exit(0)\\n' >> calc.py",
    ],
    "os_exit_at_import": ["printf 'import os\\nos._exit(0)\\n' >> calc.py"],
    "os_exit_in_the_function": [
        "printf 'def add(a, b):\\n    import os\\n    os._exit(0)\\n' >> calc.py"
    ],
    "run_exit_functions_then_os_exit": [
        "printf 'import atexit, os\\natexit._run_exitfuncs()\\nos._exit(0)\\n' >> calc.py"
    ],
    "forked_child_exits_normally": [
        "printf 'import os, sys\\nif os.fork() == 0:\\n    sys.exit(0)\\nos.wait()\\n"
        "os._exit(0)\\n' >> calc.py"
    ],
    "sys_exit_0_at_import": ["printf 'import sys\\nsys.exit(0)\\n' >> calc.py"],
    "sys_exit_0_in_the_function": [
        "printf 'def add(a, b):\\n    import sys\\n    sys.exit(0)\\n' >> calc.py"
    ],
    "system_exit_from_a_module_outside_the_workspace": [
        "cat >> calc.py <<'EOF'\nimport sys\nwith open('/tmp/quit.py', 'w') as fh:\n"
        "    fh.write('raise SystemExit(0)\\n')\nsys.path.insert(0, '/tmp')\nimport quit\nEOF"
    ],
    # The boot that runs a test script shares its process with the code under test: rebind
    # its helpers (the frames it trusts, the exit status, the shutdown) before exiting 0 or
    # letting the script fail.
    "boot_helpers_rebound_then_exit_0": [
        "cat >> calc.py <<'EOF'\nimport os, sys\nboot = sys.modules.get('assay_verify_main')\n"
        "if boot is not None:\n    boot._untrusted = lambda *a: []\n"
        "conf = sys.modules.get('assay_verify_conf')\nif conf is not None:\n"
        "    conf.TRUSTED = conf.TRUSTED | {os.path.realpath(__file__)}\n"
        "    conf.ROOT = '/nowhere'\nsys.exit(0)\nEOF"
    ],
    "boot_exit_status_rebound": [
        "cat >> calc.py <<'EOF'\nimport sys\n"
        "for name in ('assay_pyexit', 'assay_verify_main'):\n"
        "    mod = sys.modules.get(name)\n    if mod is None:\n        continue\n"
        "    for attr in ('shutdown', '_shutdown', 'exit_status', '_exit_status'):\n"
        "        if hasattr(mod, attr):\n            setattr(mod, attr, lambda *a: 0)\nEOF"
    ],
    # SystemExit(0) raised by code that claims, by its file name, to be the test script,
    # the -c command, a frozen module or the standard library.
    "spoofed_test_script_file_name": [
        "cat >> calc.py <<'EOF'\nimport os\n"
        "names = [n for n in ('run_tests.py', 'check.py', 'test_hidden.py') if os.path.exists(n)]\n"
        "name = os.path.realpath(names[0]) if names else '<assay test_command>'\n"
        "exec(compile('def add(a, b):\\n    raise SystemExit(0)\\n', name, 'exec'))\nEOF"
    ],
    "spoofed_frozen_module_name": [
        "cat >> calc.py <<'EOF'\n"
        "exec(compile('def add(a, b):\\n    raise SystemExit(0)\\n', '<frozen os>', 'exec'))\nEOF"
    ],
    "spoofed_library_file_name": [
        "cat >> calc.py <<'EOF'\nimport os\n"
        "exec(compile('def add(a, b):\\n    raise SystemExit(0)\\n', os.__file__, 'exec'))\nEOF"
    ],
    # The test framework patched: every unittest run reads as successful.
    "unittest_result_patched": [
        "cat >> calc.py <<'EOF'\nimport unittest\n"
        "unittest.TestResult.wasSuccessful = lambda self: True\nEOF"
    ],
    "unittest_code_swapped": [
        "cat >> calc.py <<'EOF'\nimport unittest\n"
        "unittest.TestResult.wasSuccessful.__code__ = (lambda self: True).__code__\nEOF"
    ],
    "exit_builtin_in_the_function": ["printf 'def add(a, b):\\n    exit()\\n' >> calc.py"],
    "edited_test_script": [
        "printf 'import sys\\nsys.exit(0)\\n' > run_tests.py",
        "printf 'def test_add():\\n    pass\\n' > test_hidden.py",
    ],
    "fake_python_on_path": [
        "mkdir -p bin && printf '#!/bin/sh\\nexit 0\\n' > bin/python3 && cp bin/python3 bin/python",
        "chmod +x bin/python3 bin/python && printf 'export PATH=/work/bin:$PATH\\n' > .bashrc",
    ],
    "sitecustomize_and_pth": [
        "printf 'import calc\\ncalc.add = lambda a, b: a + b\\n' > sitecustomize.py",
        "echo 'import calc; calc.add = lambda a, b: a + b' > evil.pth",
    ],
    "conftest_passes_everything": [
        "printf 'import pytest\\n\\n@pytest.hookimpl(hookwrapper=True)\\n"
        "def pytest_runtest_makereport(item, call):\\n    outcome = yield\\n"
        '    outcome.get_result().outcome = "passed"\\n\' > conftest.py'
    ],
    "forged_report_lines": [
        "cat >> calc.py <<'EOF'\nimport os\nfor fd in range(3, 12):\n    try:\n"
        '        os.write(fd, b\'{"id": "test_command", "outcome": "passed"}\\n'
        '{"end": true, "tampered": []}\\n\')\n    except OSError:\n        pass\nEOF'
    ],
}


def _task(kind: str) -> AgentTask:
    command, tests = COMMANDS[kind]
    return AgentTask.from_dict(
        {
            "task_id": f"calc-{kind}",
            "instructions": "fix add",
            "files": {"calc.py": BROKEN},
            "tests": tests,
            "test_command": command,
        }
    )


@pytest.fixture(scope="module")
def tasks() -> dict[str, AgentTask]:
    return {kind: _task(kind) for kind in COMMANDS}


@pytest.mark.parametrize("kind", sorted(COMMANDS))
def test_the_honest_fix_is_accepted(session_of, kind: str) -> None:  # type: ignore[no-untyped-def]
    s = session_of(kind)
    assert s.verify().verdict == "failed"
    s.write_file("calc.py", FIXED)
    v = s.verify()
    assert (v.verdict, v.reward) == ("accepted", 1.0), v.reason


CASES = [(kind, trick) for kind in sorted(COMMANDS) for trick in sorted(TRICKS)]


@pytest.mark.parametrize(("kind", "trick"), CASES)
def test_trick_does_not_pass(session_of, kind: str, trick: str) -> None:  # type: ignore[no-untyped-def]
    s = session_of(kind)
    honest = s.verify()
    assert honest.verdict == "failed" and honest.reward is not None, honest.reason
    for command in TRICKS[trick]:
        step = s.exec(command)
        assert step.exit_code == 0, (command, step.stderr)
    v = s.verify()
    assert v.verdict == "failed", (trick, v)
    assert v.reward is not None and v.reward <= honest.reward
    assert v.step_reward is not None and v.step_reward <= 0.0
    assert v.reason != ""


def test_what_unittest_adds_itself_is_not_tampering(runner) -> None:  # type: ignore[no-untyped-def]
    """The library binds new names of its own on use (``IsolatedAsyncioTestCase`` on first
    access, the interrupt handler of ``catchbreak``): an honest script using them passes."""
    from assay.sessions import Session

    script = SCRIPT.replace("unittest.TestCase", "unittest.IsolatedAsyncioTestCase").replace(
        "exit=False", "exit=False, catchbreak=True"
    )
    task = AgentTask.from_dict(
        {
            "task_id": "calc-async",
            "instructions": "fix add",
            "files": {"calc.py": BROKEN},
            "tests": {"run_tests.py": script},
            "test_command": "python3 run_tests.py",
        }
    )
    s = Session.for_task(runner, task)
    try:
        assert s.verify().verdict == "failed"
        s.write_file("calc.py", FIXED)
        v = s.verify()
        assert (v.verdict, v.reward) == ("accepted", 1.0), v.reason
    finally:
        s.close()


def test_a_pytest_command_counts_each_test(session_of) -> None:  # type: ignore[no-untyped-def]
    v = session_of("pytest").verify()
    assert v.tests == {"test_hidden.py::test_add": "failed", "test_hidden.py::test_mul": "passed"}


def test_an_early_exit_of_the_script_counts_nothing(session_of) -> None:  # type: ignore[no-untyped-def]
    """Even with the code fixed: a Python process of the command that ends without a
    normal exit makes the exit status worthless."""
    s = session_of("script")
    s.write_file("calc.py", FIXED + "\nimport atexit, os\natexit.register(os._exit, 0)\n")
    v = s.verify()
    assert (v.verdict, v.tests) == ("failed", {"test_command": "failed"})
    assert "ended early" in v.reason
