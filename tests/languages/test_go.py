"""Go end to end: ``go build`` / ``go test -c`` in the sandbox, runs within a run's limits, and
HumanEval-X style test files (testify) judged through the marker harness.

Every build costs around a second, so the runtime behaviours share one program that picks
its behaviour from stdin, and the judged submissions are few and small.
"""

from __future__ import annotations

import os

import pytest

from assay import Limits, Runner
from assay.judge import Judge, Problem, Submission, TestCase
from assay.judge.harness.go import assemble
from assay.languages.go import GO, is_test_file
from assay.types import ExecResult

if not os.access(GO, os.X_OK):
    pytest.skip(f"no Go toolchain at {GO} (apt-get install golang-go)", allow_module_level=True)

MODES = r"""package main

import (
	"bufio"
	"fmt"
	"os"
)

func depth(n int) int {
	if n == 0 {
		return 0
	}
	return 1 + depth(n-1)
}

func main() {
	in := bufio.NewReader(os.Stdin)
	var mode string
	fmt.Fscan(in, &mode)
	switch mode {
	case "echo":
		var a, b string
		fmt.Fscan(in, &a, &b)
		fmt.Println("hello", a, b)
	case "panic":
		var xs []int
		fmt.Println(xs[len(mode)])
	case "loop":
		x := 0
		for {
			x += len(os.Args)
		}
	case "bomb":
		var hoard [][]byte
		for {
			block := make([]byte, 16<<20)
			for i := range block {
				block[i] = byte(len(hoard) + 1)
			}
			hoard = append(hoard, block)
		}
	case "recurse":
		fmt.Println(depth(1000000))
	default:
		os.Exit(3)
	}
}
"""

# HumanEval-X shape: the prompt repeats an import of the setup ("math") and imports a package
# the solution does not use ("strings"); the solution uses "strconv" without importing it.
SETUP = 'package main\n\nimport (\n    "testing"\n    "math"\n    "github.com/stretchr/testify/assert"\n)\n'
PROMPT = """import (
    "math"
    "strings"
)

// Digits returns the decimal digits of the square root of n, rounded down.
func Digits(n int) string {
"""
SOLUTION = "    return strconv.Itoa(int(math.Sqrt(float64(n))))\n}\n"
TEST = """func TestDigits(t *testing.T) {
    assert := assert.New(t)
    assert.Equal("3", Digits(9))
    assert.Equal("10", Digits(120))
    assert.Equal(2.0, math.Sqrt(4))
}
"""
PROBLEM = Problem(
    "Go/digits",
    [TestCase(kind="script", code=TEST, options={"setup": SETUP})],
    limits=Limits(time_s=5, memory_mb=512),
    metadata={"language": "go"},
)


def run(runner: Runner, stdin: str, **limits: object) -> ExecResult:
    lim = Limits(**{"time_s": 5.0, "memory_mb": 256, **limits})  # type: ignore[arg-type]
    return runner.run(MODES, "go", stdin, lim)


def test_test_files_are_told_from_programs() -> None:
    assert not is_test_file(MODES.encode())
    assert is_test_file(assemble(PROMPT + SOLUTION, TEST, SETUP).encode())
    assert not is_test_file(b'package main\nimport "testing"\nfunc main() { testing.Init() }\n')


def test_imports_are_merged_like_humaneval_x() -> None:
    program = assemble(PROMPT + SOLUTION, TEST, SETUP)
    imports = program.split("\n)\n", 2)[1]
    assert imports.count('"math"') == 1, program
    assert '"strings"' not in imports and '"strconv"' in imports, program


def test_hello_and_stdin(runner: Runner) -> None:
    result = run(runner, "echo brave world\n")
    assert (result.status, result.stdout) == ("ok", b"hello brave world\n"), result


def test_golang_is_an_alias(runner: Runner) -> None:
    result = runner.run(MODES, "golang", "echo a b\n", Limits(time_s=5))
    assert (result.status, result.stdout) == ("ok", b"hello a b\n"), result


def test_compile_error_carries_the_message(runner: Runner) -> None:
    result = runner.run('package main\nfunc main() { var x int = "s" }\n', "go")
    assert result.status == "compile_error"
    assert b"cannot use" in result.stderr and b"main.go:2" in result.stderr, result.stderr


def test_panic_is_a_runtime_error(runner: Runner) -> None:
    result = run(runner, "panic\n")
    assert (result.status, result.exit_code) == ("runtime_error", 2), result
    assert b"index out of range" in result.stderr


def test_deep_recursion_grows_the_stack(runner: Runner) -> None:
    result = run(runner, "recurse\n")
    assert (result.status, result.stdout) == ("ok", b"1000000\n"), result


def test_infinite_loop_hits_the_time_limit(runner: Runner) -> None:
    result = run(runner, "loop\n", time_s=1.0)
    assert result.status == "time_limit", result


def test_memory_bomb_hits_the_memory_limit(runner: Runner) -> None:
    result = run(runner, "bomb\n", memory_mb=128)
    assert result.status == "memory_limit", result
    assert result.peak_memory_bytes <= (128 + 1) << 20


@pytest.fixture(scope="module")
def judge(runner: Runner) -> Judge:
    return Judge(runner)


def verdict(judge: Judge, body: str, imports: str = "") -> str:
    return judge.judge(Submission(PROBLEM, imports + PROMPT + body, "go")).verdict


def test_reference_is_accepted(judge: Judge) -> None:
    assert verdict(judge, SOLUTION) == "accepted"


@pytest.mark.parametrize(
    "body",
    [
        '    return "3"\n}\n',
        '    os.Exit(0)\n    return ""\n}\n',
        # Before any test runs, in the process's init.
        '    return ""\n}\n\nfunc init() { os.Exit(0) }\n',
        # No test runs at all (m.Run() returns 0), and a fake pass line.
        '    return ""\n}\n\nfunc init() {\n'
        '    os.Args = append(os.Args, "-test.run=^$")\n'
        '    fmt.Println("PASS\\nassay-pass-00000000000000000000000000000000")\n}\n',
        # The test goroutine leaves before its assertions (as t.FailNow would).
        '    runtime.Goexit()\n    return ""\n}\n',
        # Reads the marker back from stdin, prints it and leaves before any test runs.
        '    return ""\n}\n\nfunc init() {\n'
        "    b := make([]byte, 200)\n    n, _ := os.Stdin.Read(b)\n"
        '    fmt.Print("\\n" + string(b[:n]))\n    runtime.GC()\n    os.Exit(0)\n}\n',
    ],
    ids=[
        "wrong-constant",
        "exit-in-solution",
        "exit-in-init",
        "skip-tests-fake-marker",
        "goexit",
        "marker-from-stdin",
    ],
)
def test_wrong_and_hacking_solutions_are_rejected(judge: Judge, body: str) -> None:
    imports = 'import (\n    "fmt"\n    "os"\n    "runtime"\n)\n'
    assert verdict(judge, body, imports) in ("wrong_answer", "runtime_error")
