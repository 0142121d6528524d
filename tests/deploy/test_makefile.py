"""``make demo`` installs the runtime only, ``make install`` the rest, and every long step
says what it is doing (issue 29: the demo installed the whole dev stack behind ``pip -q``).
Read with ``make -n`` in a copy of the Makefile, so nothing is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _dry_run(target: str, tmp: Path) -> list[str]:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp / name)
    done = subprocess.run(
        ["make", "-n", "-B", target], cwd=tmp, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_demo_installs_the_runtime_only(tmp_path: Path) -> None:
    lines = _dry_run("demo", tmp_path)
    pips = [line for line in lines if " pip install" in line]
    assert any(line.rstrip().endswith("pip install --progress-bar off -e .") for line in pips)
    assert not [p for p in pips if "[" in p or "torch" in p or "verl" in p], pips
    assert not any("apt-get" in line and "APT_LANGUAGES" in line for line in lines)
    assert not any("npm install" in line or "prepare_go" in line for line in lines)


def test_install_adds_the_dev_stack_and_the_trainers(tmp_path: Path) -> None:
    pips = [line for line in _dry_run("install", tmp_path) if " pip install" in line]
    assert any("-e '.[dev]'" in p for p in pips)
    assert any("'torch==2.13.0'" in p for p in pips)  # the CPU build, before the trainers
    assert any("-e '.[dev,trainers]'" in p for p in pips)


@pytest.mark.parametrize("target", ["demo", "install"])
def test_every_install_step_says_what_it_does(target: str, tmp_path: Path) -> None:
    lines = _dry_run(target, tmp_path)
    for i, line in enumerate(lines):
        if "pip install" in line or "apt-get install" in line or "npm install" in line:
            # apt-get -q still shows each package; -qq and pip's -q show nothing for minutes
            assert "-qq" not in line, line
            assert "pip install" not in line or " -q " not in f" {line} ", line
            said = [x for x in lines[max(0, i - 6) : i + 1] if "==>" in x]  # the rule says it
            assert said, f"no line says what this does: {line}"
