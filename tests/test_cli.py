"""The ``assay`` command line, run as a user runs it: a subprocess of the installed script.

Exit status contract: 0 whenever the sandbox did its job (whatever the program did), 2 for
usage errors, 3 when the sandbox itself failed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ASSAY = str(Path(sys.executable).parent / "assay")
RESULT_FIELDS = {
    "status",
    "exit_code",
    "signal",
    "stdout",
    "stderr",
    "stdout_truncated",
    "stderr_truncated",
    "cpu_s",
    "wall_s",
    "peak_memory_bytes",
}


def assay_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}
    return subprocess.run(
        [ASSAY, *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd, check=False
    )


def run_json(*args: str, cwd: Path | None = None) -> tuple[int, dict[str, Any]]:
    proc = assay_cli("run", *args, "--json", cwd=cwd)
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, f"expected exactly one JSON line, got {proc.stdout!r} / {proc.stderr!r}"
    return proc.returncode, json.loads(lines[0])


WriteSource = Callable[[str, str], Path]


@pytest.fixture
def src(tmp_path: Path) -> WriteSource:
    """Write a file into the test's temporary directory and return its path."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


def test_run_json_has_exactly_the_exec_result_fields(src: WriteSource) -> None:
    code, out = run_json(str(src("hello.py", "print('hello')\n")))
    assert code == 0
    assert set(out) == RESULT_FIELDS
    assert out["status"] == "ok"
    assert out["stdout"] == "hello\n"
    assert out["stderr"] == ""
    assert out["exit_code"] == 0 and out["signal"] is None
    assert out["stdout_truncated"] is False and out["stderr_truncated"] is False
    assert isinstance(out["cpu_s"], float) and isinstance(out["wall_s"], float)
    assert isinstance(out["peak_memory_bytes"], int) and out["peak_memory_bytes"] > 0


def test_failing_program_exits_zero(src: WriteSource) -> None:
    code, out = run_json(
        str(src("bad.py", "import sys\nprint('no', file=sys.stderr)\nsys.exit(4)\n"))
    )
    assert code == 0
    assert (out["status"], out["exit_code"], out["stderr"]) == ("runtime_error", 4, "no\n")


def test_exception_exits_zero(src: WriteSource) -> None:
    code, out = run_json(str(src("boom.py", "raise ValueError('boom')\n")))
    assert code == 0
    assert out["status"] == "runtime_error"
    assert "ValueError: boom" in out["stderr"]


def test_time_limit_exits_zero(src: WriteSource) -> None:
    code, out = run_json(str(src("spin.py", "while True: pass\n")), "--time-limit", "0.3")
    assert code == 0
    assert out["status"] == "time_limit"
    assert out["cpu_s"] >= 0.3


def test_output_limit_flag(src: WriteSource) -> None:
    code, out = run_json(str(src("loud.py", "print('x' * 100000)\n")), "--output-limit", "1000")
    assert code == 0
    assert out["status"] == "output_limit"
    assert out["stdout_truncated"] is True
    assert len(out["stdout"]) == 1000


def test_memory_limit_flag(src: WriteSource) -> None:
    hog = "blocks = []\nwhile True:\n    blocks.append(bytearray(8 << 20))\n"
    code, out = run_json(str(src("hog.py", hog)), "--memory-limit", "64")
    assert code == 0
    assert out["status"] == "memory_limit"


def test_stdin_file(src: WriteSource) -> None:
    prog = src("rev.py", "import sys\nprint(sys.stdin.read()[::-1])\n")
    data = src("in.txt", "abc")
    code, out = run_json(str(prog), "--stdin", str(data))
    assert (code, out["status"], out["stdout"]) == (0, "ok", "cba\n")


def test_c_source_is_compiled(src: WriteSource) -> None:
    prog = src(
        "x.c",
        '#include <stdio.h>\nint main(void){int a,b;scanf("%d %d",&a,&b);printf("%d\\n",a+b);return 0;}\n',
    )
    data = src("in.txt", "2 40\n")
    code, out = run_json(str(prog), "--stdin", str(data))
    assert (code, out["status"], out["stdout"]) == (0, "ok", "42\n")


def test_c_compile_error_exits_zero(src: WriteSource) -> None:
    code, out = run_json(str(src("broken.c", "int main(void) { return nope; }\n")))
    assert code == 0
    assert out["status"] == "compile_error"
    assert "nope" in out["stderr"]


def test_language_option_overrides_extension(src: WriteSource) -> None:
    code, out = run_json(str(src("prog.txt", "print(2 + 2)\n")), "--language", "python")
    assert (code, out["status"], out["stdout"]) == (0, "ok", "4\n")


def test_human_output(src: WriteSource) -> None:
    proc = assay_cli("run", str(src("hello.py", "print('hello there')\n")))
    assert proc.returncode == 0, proc.stderr
    assert "ok" in proc.stdout
    assert "hello there" in proc.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["missing.py"], "missing.py"),
        (["prog.py", "--language", "cobol"], "cobol"),
        (["prog.py", "--time-limit", "-1"], "time"),
        (["prog.py", "--memory-limit", "0"], "memory"),
        (["prog.unknownext"], "language"),
        (["prog.py", "--stdin", "nowhere.txt"], "nowhere.txt"),
    ],
    ids=["missing-file", "unknown-language", "negative-time", "zero-memory", "no-ext", "no-stdin"],
)
def test_usage_errors_exit_two(tmp_path: Path, args: list[str], needle: str) -> None:
    (tmp_path / "prog.py").write_text("print(1)\n")
    (tmp_path / "prog.unknownext").write_text("print(1)\n")
    proc = assay_cli("run", *args, cwd=tmp_path)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert needle in proc.stderr.replace("\n", "")
    assert proc.stdout == ""


def test_usage_errors_exit_two_with_json(tmp_path: Path) -> None:
    proc = assay_cli("run", "missing.py", "--json", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""


def test_doctor_json() -> None:
    proc = assay_cli("doctor", "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == (0 if not doc["missing_mandatory"] else 3)
    for key in ("root", "userns", "namespaces", "cgroup_version", "cgroup_controllers", "seccomp"):
        assert key in doc
    if os.geteuid() == 0:
        assert doc["missing_mandatory"] == []
    if shutil.which("gcc"):  # the C set-up is built on first use and reported with its path
        for key in ("launcher", "library"):
            assert doc["fast_start"][key] and os.path.exists(doc["fast_start"][key])


def test_doctor_human() -> None:
    proc = assay_cli("doctor")
    assert "seccomp" in proc.stdout
    if os.geteuid() == 0:
        assert proc.returncode == 0
        assert "All mandatory controls are available" in proc.stdout


@pytest.mark.parametrize("command", ["run", "doctor", "demo"])
def test_every_command_help_has_an_example(command: str) -> None:
    proc = assay_cli(command, "--help")
    assert proc.returncode == 0, proc.stderr
    assert "Example" in proc.stdout
    assert f"assay {command}" in proc.stdout


def test_top_level_help_lists_commands() -> None:
    proc = assay_cli("--help")
    assert proc.returncode == 0
    for command in ("run", "doctor", "demo"):
        assert command in proc.stdout


def test_version() -> None:
    from importlib.metadata import version

    import assay

    proc = assay_cli("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"assay {assay.__version__}" == f"assay {version('assay')}"


def test_help_says_what_the_code_does() -> None:
    # Issue 14: `run --help` listed "python, c, cpp, executable"; `eval --help` showed
    # `--tests` with a default for every format.
    from assay import languages

    run_help = " ".join(assay_cli("run", "--help").stdout.split())
    for name in [*languages.names(), "js", "c++", "golang"]:
        assert name in run_help, name
    eval_help = " ".join(assay_cli("eval", "--help").stdout.split())
    tests_help = eval_help[eval_help.index("--tests") :][:200]
    assert "humanevalplus and mbppplus only" in tests_help
    assert "default: plus" not in tests_help


def test_the_judging_guide_names_every_humaneval_x_language() -> None:
    readme = (Path(__file__).resolve().parents[1] / "docs/guides/judging.md").read_text()
    assert "`humaneval-x` (Python)" not in readme
    assert "`humaneval-x` (C++, Go, Java, JavaScript, Python, Rust" in readme
