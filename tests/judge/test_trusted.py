"""The judge's trusted scripts go into the sandbox compiled when the sandbox's interpreter
reads this interpreter's bytecode, and as source otherwise; verdicts are the same."""

from __future__ import annotations

import pytest
from humaneval0 import PROBLEM, PROMPT, SOLUTION

from assay import Runner
from assay.judge import Judge, Submission, _trusted


def test_compiled_when_the_magic_numbers_match(runner: Runner) -> None:
    runner.run("pass")  # the fork server has reported its bytecode magic
    argv0, files = _trusted.script(runner, _trusted.HARNESS, "_assay_harness")
    assert argv0 == "/work/_assay_harness.pyc"
    assert [name for name, _, _ in files] == ["_assay_harness.pyc"]  # the codec inside it
    assert files[0][1][:4] != _trusted.source(_trusted.HARNESS)[:4]


@pytest.mark.parametrize("magic", ["same", "other"])
def test_same_verdicts_compiled_or_as_source(
    runner: Runner, monkeypatch: pytest.MonkeyPatch, magic: str
) -> None:
    runner.run("pass")
    if magic == "other":  # e.g. a sandbox interpreter of another Python version
        monkeypatch.setattr(type(runner), "bytecode_magic", property(lambda self: "00000000"))
        argv0, files = _trusted.script(runner, _trusted.CALLSERVER, "_assay_callserver")
        assert argv0 == "/work/_assay_callserver.py"
        assert [name for name, _, _ in files] == ["_assay_callserver.py"]
        assert files[0][1].startswith(_trusted.source(_trusted.CODEC))  # bundled in front
    judge = Judge(runner)
    good = judge.judge(Submission(PROBLEM, PROMPT + SOLUTION))
    bad = judge.judge(Submission(PROBLEM, PROMPT + "    return True\n"))
    assert (good.verdict, bad.verdict) == ("accepted", "wrong_answer"), (good.reason, bad.reason)


def test_submissions_compile_without_the_codecs_future_import(runner: Runner) -> None:
    # The codec shipped in front of the trusted scripts starts with ``from __future__ import
    # annotations``; compile() would pass it on to the submission, whose annotations would
    # then never be evaluated. Plain Python raises NameError on this definition.
    code = PROMPT.replace("numbers: List[float]", "numbers: Undefined") + SOLUTION
    assert code != PROMPT + SOLUTION
    result = Judge(runner).judge(Submission(PROBLEM, code))
    assert result.verdict == "runtime_error", result.reason
    assert "NameError" in result.reason


@pytest.mark.parametrize("name", [_trusted.CALLSERVER, _trusted.HARNESS])
def test_the_trusted_scripts_import_only_what_the_fork_server_holds(
    runner: Runner, name: str
) -> None:
    # Every judged run loads one of these scripts; a module the fork server has not already
    # imported is imported afresh by every run (``traceback`` cost the harness ~3.7 ms of
    # CPU per run). Imports on the paths of failures only (inside a function or an except
    # clause) are not run by every run, so only the module's own statements count.
    import ast

    result = runner.run("import sys\nprint(' '.join(sorted(sys.modules)))")
    assert result.status == "ok", result.stderr
    held = set(result.stdout.decode().split())
    assert {"json", "os", "sys"} <= held
    body = ast.parse(_trusted.source(name)).body
    imported = {a.name for n in body if isinstance(n, ast.Import) for a in n.names}
    imported |= {
        n.module for n in body if isinstance(n, ast.ImportFrom) and n.module and n.level == 0
    }
    imported -= {"_assay_codec", "__future__"}  # the codec is shipped inside the script
    assert imported, name
    assert imported <= held, f"{name} imports {sorted(imported - held)} at every run"
