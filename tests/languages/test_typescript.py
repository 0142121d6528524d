"""TypeScript end to end: esbuild strips the types in the sandbox, Node.js runs the result;
MultiPL-E style tests (``assert`` from ``node:assert``) are judged through the JavaScript
marker harness."""

from __future__ import annotations

import shutil

import pytest

from assay import Limits, Runner
from assay.judge import Judge, Problem, Submission, TestCase
from assay.types import ExecResult

if shutil.which("node") is None or shutil.which("esbuild") is None:
    pytest.skip(
        "no Node.js and esbuild (npm install -g esbuild) on this host", allow_module_level=True
    )

PROMPT = """//The element-wise sum of two lists.
function add_lists(xs: number[], ys: number[]): number[] {
"""
SOLUTION = "    return xs.map((x: number, i: number): number => x + ys[i]);\n}\n"
TEST = """
declare var require: any;
const assert = require('node:assert');

function test() {
  let candidate = add_lists;
  assert.deepEqual(candidate([1, 2], [3, 4]),[4, 6]);
  assert.deepEqual(candidate([], []),[]);
}

test();
"""
PROBLEM = Problem("HumanEval_ts/add", [TestCase(kind="script", code=TEST)], limits=Limits(time_s=5))


def run(runner: Runner, code: str, stdin: str = "", **limits: object) -> ExecResult:
    lim = Limits(**{"time_s": 2.0, "memory_mb": 256, **limits})  # type: ignore[arg-type]
    return runner.run(code, "ts", stdin, lim)


def test_hello_and_stdin(runner: Runner) -> None:
    code = (
        "import { readFileSync } from 'fs';\n"
        "interface Greeting { text: string }\n"
        "const g: Greeting = { text: readFileSync(0, 'utf8').trim() };\n"
        "console.log(`hello ${g.text}`);\n"
    )
    result = run(runner, code, "brave world\n")
    assert (result.status, result.stdout) == ("ok", b"hello brave world\n"), result


def test_syntax_error_is_a_compile_error_with_the_message(runner: Runner) -> None:
    result = run(runner, "const x: number = ;\n")
    assert result.status == "compile_error"
    assert b"main.ts:1:" in result.stderr and b"Unexpected" in result.stderr, result.stderr


def test_type_errors_are_not_checked(runner: Runner) -> None:
    result = run(runner, "const n: number = 'seven' as any as number;\nconsole.log(n);\n")
    assert (result.status, result.stdout) == ("ok", b"seven\n"), result


def test_uncaught_exception_is_a_runtime_error(runner: Runner) -> None:
    result = run(runner, "throw new TypeError('no such thing');\n")
    assert (result.status, result.exit_code) == ("runtime_error", 1)
    assert b"TypeError: no such thing" in result.stderr


def test_infinite_loop_hits_the_time_limit(runner: Runner) -> None:
    assert run(runner, "while (true) {}\n", time_s=0.5).status == "time_limit"


def test_memory_bomb_hits_the_memory_limit(runner: Runner) -> None:
    code = "const a: number[][] = [];\nfor (let i = 1; ; i++) a.push(new Array(1 << 17).fill(i));\n"
    assert run(runner, code, memory_mb=128, time_s=5.0).status == "memory_limit"


@pytest.fixture(scope="module")
def judge(runner: Runner) -> Judge:
    return Judge(runner)


def verdict(judge: Judge, body: str) -> str:
    return judge.judge(Submission(PROBLEM, PROMPT + body, "typescript")).verdict


def test_reference_is_accepted(judge: Judge) -> None:
    assert verdict(judge, SOLUTION) == "accepted"


@pytest.mark.parametrize(
    "body",
    [
        "    return [4, 6];\n}\n",
        "    process.exit(0);\n}\n",
        "    return [];\n}\nconst a = require('node:assert'); a.deepEqual = () => {};\n",
        "    return [];\n}\nvar require: any = () => ({ deepEqual() {} });\n",
    ],
    ids=["wrong-constant", "exit-during-checks", "patched-assert", "rebound-require"],
)
def test_wrong_and_hacking_solutions_are_rejected(judge: Judge, body: str) -> None:
    assert verdict(judge, body) in ("wrong_answer", "runtime_error")
