"""JavaScript on Node.js end to end: runs within a run's limits, and HumanEval-X style tests
(top-level ``console.assert`` calls) judged through the marker harness, which must not be
fooled by exiting early, printing a marker, or patching what the test compares with."""

from __future__ import annotations

import shutil

import pytest

from assay import Limits, Runner
from assay.judge import Judge, Problem, Submission, TestCase
from assay.types import ExecResult

if shutil.which("node") is None:
    pytest.skip("no Node.js (node) on this host", allow_module_level=True)

PROMPT = """/* The element-wise sum of two lists.
  >>> addLists([1, 2], [3, 4])
  [4, 6]
  */
const addLists = (xs, ys) => {
"""
SOLUTION = "  return xs.map((x, i) => x + ys[i])\n}\n"
TEST = """const testAddLists = () => {
  console.assert(JSON.stringify(addLists([1, 2], [3, 4])) === JSON.stringify([4, 6]))
  console.assert(JSON.stringify(addLists([], [])) === JSON.stringify([]))
  console.assert(addLists([0.5], [0.25])[0] === 0.75)
}

testAddLists()
"""
PROBLEM = Problem("JavaScript/add", [TestCase(kind="script", code=TEST)], limits=Limits(time_s=5))


def run(runner: Runner, code: str, stdin: str = "", **limits: object) -> ExecResult:
    lim = Limits(**{"time_s": 2.0, "memory_mb": 256, **limits})  # type: ignore[arg-type]
    return runner.run(code, "javascript", stdin, lim)


def test_hello_and_stdin(runner: Runner) -> None:
    code = "const s = require('fs').readFileSync(0, 'utf8');\nconsole.log('hello ' + s.trim());\n"
    result = run(runner, code, "brave world\n")
    assert (result.status, result.stdout) == ("ok", b"hello brave world\n"), result


def test_alias_and_npm_globals(runner: Runner) -> None:
    result = runner.run("console.log(typeof require('js-md5'))", "js")
    if b"Cannot find module" in result.stderr:
        pytest.skip("js-md5 is not installed globally (npm install -g js-md5)")
    assert (result.status, result.stdout) == ("ok", b"function\n"), result


def test_syntax_error_is_a_runtime_error_with_the_message(runner: Runner) -> None:
    result = run(runner, "const x = ;\n")
    assert result.status == "runtime_error"
    assert b"SyntaxError" in result.stderr, result.stderr


def test_uncaught_exception_is_a_runtime_error(runner: Runner) -> None:
    result = run(runner, "throw new RangeError('no such thing')\n")
    assert (result.status, result.exit_code) == ("runtime_error", 1)
    assert b"RangeError: no such thing" in result.stderr


def test_deep_recursion_fits_the_stack(runner: Runner) -> None:
    code = "const f = (n) => (n === 0 ? 0 : 1 + f(n - 1));\nconsole.log(f(200000));\n"
    result = run(runner, code)
    assert (result.status, result.stdout) == ("ok", b"200000\n"), result


def test_infinite_loop_hits_the_time_limit(runner: Runner) -> None:
    assert run(runner, "for (;;) {}\n", time_s=0.5).status == "time_limit"


@pytest.mark.parametrize(
    "code",
    [
        "const a = [];\nfor (let i = 1; ; i++) a.push(new Array(1 << 17).fill(i));\n",
        "const a = [];\nfor (let i = 1; ; i++) a.push(Buffer.alloc(1 << 20, i % 255));\n",
    ],
    ids=["heap", "buffers"],
)
def test_memory_bomb_hits_the_memory_limit(runner: Runner, code: str) -> None:
    result = run(runner, code, memory_mb=128, time_s=5.0)
    assert result.status == "memory_limit", result


@pytest.fixture(scope="module")
def judge(runner: Runner) -> Judge:
    return Judge(runner)


def verdict(judge: Judge, body: str) -> str:
    return judge.judge(Submission(PROBLEM, PROMPT + body, "javascript")).verdict


def test_reference_is_accepted(judge: Judge) -> None:
    assert verdict(judge, SOLUTION) == "accepted"


@pytest.mark.parametrize(
    "body",
    [
        "  return [4, 6]\n}\n",
        "  process.exit(0)\n}\n",
        SOLUTION + "process.exit(0)\n",
        SOLUTION + "return\n",
        "  return []\n}\nconsole.log('assay-pass-00')\n",
        "  return []\n}\nprocess.on('uncaughtException', () => {})\n",
        "  return 1\n}\nJSON.stringify = () => '1'\n",
        "  return 1\n}\nArray.prototype.toJSON = () => 1\nNumber.prototype.toJSON = () => 1\n",
        "  return 1\n}\nvar console = { assert() {}, log() {} }\n",
        "  return 1\n}\nconst fs = require('fs')\n"
        "for (const p of [0, '/proc/self/fd/0', '/dev/stdin']) {\n"
        "  try { process.stdout.write('\\n' + fs.readFileSync(p)) } catch (e) {}\n"
        "}\nprocess.exit(0)\n",
    ],
    ids=[
        "wrong-constant",
        "exit-during-checks",
        "exit-before-checks",
        "return-before-checks",
        "fake-marker",
        "swallowed-exception",
        "patched-stringify",
        "tojson-hook",
        "shadowed-console",
        "marker-from-stdin",
    ],
)
def test_wrong_and_hacking_solutions_are_rejected(judge: Judge, body: str) -> None:
    assert verdict(judge, body) in ("wrong_answer", "runtime_error")


def test_polyfills_are_allowed(judge: Judge) -> None:
    body = SOLUTION + "Array.prototype.last = function () { return this[this.length - 1] }\n"
    assert verdict(judge, body) == "accepted"
