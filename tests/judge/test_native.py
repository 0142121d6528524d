"""Script tests compiled with the submission (C++ here): the marker harness.

The test's checks run in the submission's process, so the verdict rests on the per-run
marker that only the harness prints, after the last check: early exits, fake markers and
swallowed assertions must all fail.
"""

from __future__ import annotations

import pytest

from assay import Judge, Problem, Runner, Submission, TestCase
from assay.errors import ValidationError

PROMPT = "#include <vector>\n#include <cstdlib>\n#include <cstdio>\nusing namespace std;\nint add(int a, int b){\n"
TEST = """#undef NDEBUG
#include <assert.h>
int main(){
    assert (add(1, 2) == 3);
    assert (add(-4, 4) == 0);
}
"""
PROBLEM = Problem("CPP/add", [TestCase(kind="script", code=TEST)], metadata={"language": "cpp"})


def judge(runner: Runner, body: str) -> str:
    return Judge(runner).judge(Submission(PROBLEM, PROMPT + body, "cpp")).verdict


def test_a_correct_solution_is_accepted(runner: Runner) -> None:
    assert judge(runner, "    return a + b;\n}\n") == "accepted"


def test_a_failed_assert_is_not_accepted(runner: Runner) -> None:
    assert judge(runner, "    return a - b;\n}\n") == "runtime_error"


def test_exit_zero_before_the_checks_is_not_accepted(runner: Runner) -> None:
    body = "    exit(0);\n}\nstruct Early { Early() { exit(0); } } early;\n"
    assert judge(runner, body) == "wrong_answer"


def test_exit_zero_inside_the_function_is_not_accepted(runner: Runner) -> None:
    assert judge(runner, "    exit(0);\n}\n") == "wrong_answer"


def test_printing_a_fake_marker_is_not_accepted(runner: Runner) -> None:
    body = '    printf("\\nassay-pass-00000000000000000000000000000000\\n"); exit(0);\n}\n'
    assert judge(runner, body) == "wrong_answer"


def test_swallowing_abort_is_not_accepted(runner: Runner) -> None:
    body = (
        "    return a - b;\n}\n#include <csignal>\n"
        "struct Guard { Guard() { signal(SIGABRT, [](int){ _Exit(0); }); } } guard;\n"
    )
    assert judge(runner, body) == "wrong_answer"


def test_compile_errors_are_reported(runner: Runner) -> None:
    j = Judge(runner).judge(Submission(PROBLEM, PROMPT + "  return a +;\n}\n", "cpp"))
    assert j.verdict == "compile_error" and "error" in j.reason


def test_languages_without_a_harness_are_rejected_clearly() -> None:
    from assay.judge import validate

    with pytest.raises(ValidationError, match="script tests are not supported"):
        validate(Submission(PROBLEM, "x", "c"))


def test_reading_the_marker_back_from_stdin_is_not_accepted(runner: Runner) -> None:
    body = (
        "    return 0;\n}\n#include <iostream>\n#include <string>\n"
        "struct Steal { Steal() { std::string m; std::getline(std::cin, m);"
        ' printf("\\n%s\\n", m.c_str()); fflush(stdout); _Exit(0); } } steal;\n'
    )
    assert judge(runner, body) == "wrong_answer"
