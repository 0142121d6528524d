from __future__ import annotations

import asyncio

import pytest

import assay
from assay import Limits, ValidationError


def test_run_python_roundtrip() -> None:
    r = assay.run("print(input()[::-1])", stdin="abc")
    assert r.status == "ok"
    assert r.stdout == b"cba\n"
    assert r.exit_code == 0 and r.signal is None
    assert r.cpu_s > 0 and r.wall_s > 0 and r.peak_memory_bytes > 0


def test_run_async() -> None:
    async def main() -> list[assay.ExecResult]:
        return list(await asyncio.gather(*(assay.run_async(f"print({i})") for i in range(4))))

    results = asyncio.run(main())
    assert [r.stdout for r in results] == [b"0\n", b"1\n", b"2\n", b"3\n"]


def test_exit_code_and_stderr() -> None:
    r = assay.run("import sys\nprint('oops', file=sys.stderr)\nsys.exit(3)")
    assert r.status == "runtime_error"
    assert r.exit_code == 3
    assert r.stderr == b"oops\n"


def test_traceback_starts_at_program() -> None:
    r = assay.run("def f():\n    raise KeyError('k')\nf()\n")
    assert r.status == "runtime_error"
    text = r.stderr.decode()
    assert text.startswith('Traceback (most recent call last):\n  File "/work/main.py"')
    assert "KeyError: 'k'" in text


def test_extra_files_visible() -> None:
    r = assay.run("print(open('data/in.txt').read())", files={"data/in.txt": "hello"})
    assert r.stdout == b"hello\n"


def test_c_and_cpp() -> None:
    c = assay.run(
        '#include <stdio.h>\nint main(){int a;scanf("%d",&a);printf("%d\\n",a*2);}', "c", "21"
    )
    assert (c.status, c.stdout) == ("ok", b"42\n")
    cpp = assay.run('#include <iostream>\nint main(){std::cout<<"hi\\n";}', "cpp")
    assert (cpp.status, cpp.stdout) == ("ok", b"hi\n")


def test_compile_error_is_reported() -> None:
    r = assay.run("int main() { return nope; }", "c")
    assert r.status == "compile_error"
    assert b"nope" in r.stderr


def test_unknown_language_names_field() -> None:
    with pytest.raises(ValidationError) as info:
        assay.run("x", "cobol")
    assert info.value.field == "language"


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("limits.time_s", {"time_s": -1}),
        ("limits.memory_mb", {"memory_mb": 10**9}),
        ("limits.time_s", {"time_s": float("nan")}),
    ],
)
def test_limits_validation(field: str, kwargs: dict[str, float]) -> None:
    with pytest.raises(ValidationError) as info:
        Limits(**kwargs)  # type: ignore[arg-type]
    assert info.value.field == field


def test_bad_file_path_rejected() -> None:
    for path in ("../x", "/etc/passwd", "a/../../b"):
        with pytest.raises(ValidationError):
            assay.run("pass", files={path: "x"})
