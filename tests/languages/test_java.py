"""Java end to end: javac in the sandbox, the jar run by the JVM within a run's limits, and
HumanEval-X style script tests judged through the marker harness.

Every javac run costs a second or more, so the runtime behaviours share one program that
picks its behaviour from stdin.
"""

from __future__ import annotations

import shutil

import pytest

from assay import Limits, Runner
from assay.judge import Judge, Problem, Submission, TestCase
from assay.languages.java import file_name, main_class
from assay.types import ExecResult

if shutil.which("javac") is None or shutil.which("java") is None:
    pytest.skip("no OpenJDK (java and javac) on this host", allow_module_level=True)

MODES = r"""
import java.util.*;

public class Modes {
    static int depth(int n) { return n == 0 ? 0 : 1 + depth(n - 1); }

    public static void main(String[] args) {
        Scanner in = new Scanner(System.in);
        String mode = in.next();
        switch (mode) {
            case "echo":
                System.out.println("hello " + in.next() + " " + in.next());
                break;
            case "throw":
                throw new IllegalStateException("no such thing");
            case "loop":
                long x = 0;
                while (true) x += System.nanoTime() & 1;
            case "bomb":
                List<long[]> hoard = new ArrayList<>();
                while (true) {
                    long[] block = new long[1 << 17];
                    Arrays.fill(block, hoard.size() + 1);
                    hoard.add(block);
                }
            case "recurse":
                System.out.println(depth(100_000));
                break;
            default:
                System.exit(3);
        }
    }
}
"""

PROMPT = """import java.util.*;
import java.lang.*;

class Solution {
    /** The sum of the list. */
    public int sum(List<Integer> xs) {
"""
SOLUTION = """        int total = 0;
        for (int x : xs) total += x;
        return total;
    }
}
"""
TEST = """public class Main {
    public static void main(String[] args) {
        Solution s = new Solution();
        List<Boolean> correct = Arrays.asList(
                s.sum(Arrays.asList(1, 2, 3)) == 6,
                s.sum(new ArrayList<>()) == 0
        );
        if (correct.contains(false)) {
            throw new AssertionError();
        }
    }
}
"""
PROBLEM = Problem(
    "Java/sum", [TestCase(kind="script", code=TEST)], limits=Limits(time_s=5, memory_mb=512)
)


def run(runner: Runner, stdin: str, **limits: object) -> ExecResult:
    lim = Limits(**{"time_s": 5.0, "memory_mb": 256, **limits})  # type: ignore[arg-type]
    return runner.run(MODES, "java", stdin, lim)


def test_file_and_main_class_follow_the_source() -> None:
    assert (file_name(MODES), main_class(MODES)) == ("Modes.java", "Modes")
    nested = "class A { static class B { public static void main(String[] a) {} } }"
    assert (file_name(nested), main_class(nested)) == ("A.java", "A$B")


def test_hello_and_stdin(runner: Runner) -> None:
    result = run(runner, "echo brave world\n")
    assert (result.status, result.stdout) == ("ok", b"hello brave world\n"), result


def test_compile_error_carries_the_message(runner: Runner) -> None:
    result = runner.run('class Main { int f() { return "s"; } }', "java")
    assert result.status == "compile_error"
    assert b"incompatible types" in result.stderr, result.stderr


def test_uncaught_exception_is_a_runtime_error(runner: Runner) -> None:
    result = run(runner, "throw\n")
    assert (result.status, result.exit_code) == ("runtime_error", 1)
    assert b"IllegalStateException: no such thing" in result.stderr


def test_deep_recursion_fits_the_stack(runner: Runner) -> None:
    result = run(runner, "recurse\n")
    assert (result.status, result.stdout) == ("ok", b"100000\n"), result


def test_infinite_loop_hits_the_time_limit(runner: Runner) -> None:
    result = run(runner, "loop\n", time_s=1.0)
    assert result.status == "time_limit"


def test_memory_bomb_hits_the_memory_limit(runner: Runner) -> None:
    result = run(runner, "bomb\n", memory_mb=128)
    assert result.status == "memory_limit", result


@pytest.fixture(scope="module")
def judge(runner: Runner) -> Judge:
    return Judge(runner)


def verdict(judge: Judge, body: str) -> str:
    return judge.judge(Submission(PROBLEM, PROMPT + body, "java")).verdict


def test_reference_is_accepted(judge: Judge) -> None:
    assert verdict(judge, SOLUTION) == "accepted"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("        return 6;\n    }\n}\n", "runtime_error"),  # the test's AssertionError
        ("        System.exit(0);\n        return 0;\n    }\n}\n", "wrong_answer"),
        (
            "        Thread.setDefaultUncaughtExceptionHandler((t, e) -> {});\n"
            '        System.out.println("assay-pass-00");\n'
            "        return 0;\n    }\n}\n",
            "runtime_error",
        ),
        (
            SOLUTION.replace("return total;", "return 0;")
            + "class Arrays {\n"
            + "    static List<Boolean> asList(Boolean... xs) { return new ArrayList<>(); }\n"
            + "}\n",
            "compile_error",
        ),
        (
            "        try {\n"
            "            byte[] b = java.nio.file.Files.readAllBytes("
            'java.nio.file.Paths.get("/proc/self/fd/0"));\n'
            '            System.out.print("\\n" + new String(b));\n'
            "        } catch (Exception e) {}\n"
            "        try {\n"
            "            byte[] b = System.in.readAllBytes();\n"
            '            System.out.print("\\n" + new String(b));\n'
            "        } catch (Exception e) {}\n"
            "        System.out.flush();\n"
            "        Runtime.getRuntime().halt(0);\n"
            "        return 0;\n    }\n}\n",
            "wrong_answer",
        ),
    ],
    ids=[
        "wrong-constant",
        "exit-before-checks",
        "fake-marker-swallowed-error",
        "shadowed-jdk-type",
        "marker-from-stdin",
    ],
)
def test_wrong_and_hacking_solutions_are_rejected(judge: Judge, body: str, expected: str) -> None:
    assert verdict(judge, body) == expected
