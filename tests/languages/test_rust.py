"""Rust end to end: rustc in the sandbox against the prebuilt rand/regex/md5, runs within
their limits, and HumanEval-X style script tests judged through the marker harness.

Every rustc run costs about a second in the sandbox, so the runtime behaviours share one
program that picks its behaviour from stdin.
"""

from __future__ import annotations

import os

import pytest

from assay import Limits, Runner
from assay.judge import Judge, Problem, Submission, TestCase
from assay.judge.harness import rust as harness
from assay.languages.rust import CRATE_DIR, RUSTC, prebuilt_crates
from assay.types import ExecResult

if not os.access(RUSTC, os.X_OK):
    pytest.skip(f"no Debian rustc at {RUSTC} (apt-get install rustc)", allow_module_level=True)
if prebuilt_crates()[1] == "missing":
    pytest.skip(
        f"no prebuilt Rust crates in {CRATE_DIR} (run scripts/prepare_rust.sh as root)",
        allow_module_level=True,
    )

MODES = r"""
use std::io::Read;

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let mut words = input.split_whitespace();
    match words.next().unwrap_or("") {
        "echo" => println!("hello {} {}", words.next().unwrap(), words.next().unwrap()),
        "crates" => {
            use rand::Rng;
            let roll: u32 = rand::thread_rng().gen_range(1..=6);
            let re = regex::Regex::new(r"^a+b$").unwrap();
            println!("{} {} {:x}", (1..=6).contains(&roll), re.is_match("aab"), md5::compute(b"abc"));
        }
        "panic" => panic!("no such thing"),
        "loop" => {
            let mut x: u64 = 1;
            loop {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                if x == 42 {
                    println!("{}", x);
                }
            }
        }
        "bomb" => {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                hoard.push(vec![7u8; 1 << 20]);
            }
        }
        _ => std::process::exit(3),
    }
}
"""


def run(runner: Runner, stdin: str, **limits: object) -> ExecResult:
    lim = Limits(**{"time_s": 2.0, "memory_mb": 256, **limits})  # type: ignore[arg-type]
    return runner.run(MODES, "rust", stdin, lim)


def test_hello_and_stdin(runner: Runner) -> None:
    result = run(runner, "echo brave world\n")
    assert (result.status, result.stdout) == ("ok", b"hello brave world\n"), result


def test_the_humaneval_x_crates_link(runner: Runner) -> None:
    result = run(runner, "crates\n")
    assert result.stdout == b"true true 900150983cd24fb0d6963f7d28e17f72\n", result


def test_compile_error_carries_the_message(runner: Runner) -> None:
    result = runner.run('fn main() { let x: i32 = "s"; }', "rs")
    assert result.status == "compile_error"
    assert b"mismatched types" in result.stderr, result.stderr


def test_panic_is_a_runtime_error(runner: Runner) -> None:
    result = run(runner, "panic\n")
    assert (result.status, result.exit_code) == ("runtime_error", 101), result
    assert b"no such thing" in result.stderr


def test_infinite_loop_hits_the_time_limit(runner: Runner) -> None:
    assert run(runner, "loop\n", time_s=0.5).status == "time_limit"


def test_memory_bomb_hits_the_memory_limit(runner: Runner) -> None:
    result = run(runner, "bomb\n", memory_mb=64)
    assert result.status == "memory_limit", result


# A HumanEval-X task as the dataset has it: declaration (with the three crates every task
# imports), solution body, and a libtest-style test module.
DECLARATION = """
use std::collections::HashMap;
use rand::Rng;
use regex::Regex;
use md5;

fn add(a: i32, b: i32) -> i32 {
"""
SOLUTION = "    a + b\n}\n"
TEST = """
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_add() {
        assert_eq!(add(1, 2), 3);
        assert!(add(-4, 4) == 0);
        let r = rand::thread_rng().gen_range(0, 10);
        assert_eq!(add(r, 0), r);
    }
}
"""
PROBLEM = Problem("Rust/add", [TestCase(kind="script", code=TEST)], limits=Limits(time_s=5))


@pytest.fixture(scope="module")
def judge(runner: Runner) -> Judge:
    return Judge(runner)


def verdict(judge: Judge, code: str) -> str:
    return judge.judge(Submission(PROBLEM, code, "rust")).verdict


def test_reference_is_accepted(judge: Judge) -> None:
    assert verdict(judge, DECLARATION + SOLUTION) == "accepted"


def test_own_main_and_own_tests_do_not_get_in_the_way(judge: Judge) -> None:
    own = (
        'fn main() { println!("{}", add(2, 2)); }\n'
        "#[cfg(test)]\nmod tests {\n    use super::*;\n"
        "    #[test]\n    fn test_add() { assert_eq!(add(0, 0), 1); }\n}\n"
    )
    assert verdict(judge, DECLARATION + SOLUTION + own) == "accepted"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("    a - b\n}\n", "runtime_error"),
        ("    std::process::exit(0)\n}\n", "wrong_answer"),
        # A fake marker, and a panic hook that turns the failed assertion into exit(0).
        (
            '    println!("\\nassay-pass-00000000000000000000000000000000");\n'
            "    std::panic::set_hook(Box::new(|_| std::process::exit(0)));\n"
            "    a - b\n}\n",
            "wrong_answer",
        ),
        # Shadowing the assertion macros would make every check a no-op.
        (
            "    a - b\n}\nmacro_rules! assert_eq { ($($t:tt)*) => {}; }\n"
            "macro_rules! assert { ($($t:tt)*) => {}; }\n",
            "runtime_error",
        ),
        # Reading the marker back from stdin (or /proc/self/fd/0) and printing it.
        (
            "    let mut s = String::new();\n"
            "    let _ = std::io::stdin().read_line(&mut s);\n"
            '    let t = std::fs::read_to_string("/proc/self/fd/0").unwrap_or_default();\n'
            '    println!("\\n{}{}", s.trim(), t.trim());\n'
            "    std::process::exit(0)\n}\n",
            "wrong_answer",
        ),
    ],
    ids=["wrong", "exit-before-checks", "fake-marker-and-panic-hook", "shadowed-asserts", "stdin"],
)
def test_wrong_and_hacking_solutions_are_rejected(judge: Judge, body: str, expected: str) -> None:
    assert verdict(judge, DECLARATION + body) == expected


def test_rewrites_never_touch_literals_or_comments() -> None:
    text = 'let s = "vec![1] // x"; // assert!(false)\nlet c = \'"\'; /* "a /* b */ c" */ x'
    masked = harness.mask(text)
    assert len(masked) == len(text)
    assert "vec" not in masked and "assert" not in masked and masked.endswith(" x")
    program = harness.assemble(
        'fn main() { let s = "fn main("; }\nfn f() -> Vec<u8> { vec![] }',
        "#[cfg(test)]\nmod tests {\n#[test]\n// a comment\nfn t() { assert_eq!(f(), vec![]); }\n}",
        "",
    )
    assert 'fn __assay_user_main() { let s = "fn main("; }' in program
    assert "fn f() -> Vec<u8> { vec![] }" in program
    assert "pub fn t() { ::std::assert_eq!(f(), ::std::vec![]); }" in program
    assert "__assay_harness::Outcome::check(__assay_tests::t());" in program


def test_unknown_test_layouts_are_refused() -> None:
    with pytest.raises(ValueError, match="neither"):
        harness.assemble("fn f() {}", "mod tests { fn helper() {} }", "")
    with pytest.raises(ValueError, match="should_panic"):
        harness.assemble("fn f() {}", "#[test]\n#[should_panic]\nfn t() { f(); }", "")
