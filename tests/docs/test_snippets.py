"""Every example marked runnable in the README and the docs runs, and passes (issue 32).

Python blocks run in a fresh interpreter (this venv's), shell blocks with bash (``-e``, so a
failing command fails the example), each in an empty temporary directory with this checkout's
``src`` first on ``PYTHONPATH`` and the venv's ``bin`` (the ``assay`` command) first on
``PATH``. An example asserts what it claims where the claim is cheap to check."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .snippets import MARKER, ROOT, Block, blocks_in, runnable_blocks

#: Seconds one example may take: they are meant to run in seconds, on a loaded machine too.
TIMEOUT_S = 90

BLOCKS = runnable_blocks()


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def run_block(block: Block, cwd: Path) -> subprocess.CompletedProcess[str]:
    if block.language == "python":
        script = cwd / "example.py"
        script.write_text(block.code)
        argv = [sys.executable, str(script)]
    else:
        argv = ["bash", "-e", "-o", "pipefail", "-c", block.code]
    return subprocess.run(
        argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=TIMEOUT_S
    )


@pytest.mark.slow  # each starts an interpreter and a sandbox pool: 1-15 s on a loaded host
@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_example_runs(block: Block, tmp_path: Path) -> None:
    done = run_block(block, tmp_path)
    assert done.returncode == 0, (
        f"{block.id} ({block.language}) exited {done.returncode}\n"
        f"--- code\n{block.code}--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
    )


def test_the_docs_have_runnable_examples_of_both_kinds() -> None:
    kinds = {b.language for b in BLOCKS}
    assert kinds == {"python", "bash"}
    assert len(BLOCKS) >= 10, [b.id for b in BLOCKS]
    assert any(b.path.name == "README.md" for b in BLOCKS)


def test_a_failing_example_fails(tmp_path: Path) -> None:
    """The runner itself: a wrong claim in a Python block and a failing command in a shell
    block are failures, not silent passes."""
    page = tmp_path / "page.md"
    page.write_text(
        f"{MARKER}\n```python\nassert 1 + 1 == 3\n```\n\n"
        f"{MARKER}\n```bash\nfalse\necho never\n```\n"
    )
    py, sh = blocks_in(page)
    assert run_block(py, tmp_path).returncode != 0
    done = run_block(sh, tmp_path)
    assert done.returncode != 0
    assert "never" not in done.stdout


def test_a_marker_without_a_block_is_an_error(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"{MARKER}\nsome prose\n")
    with pytest.raises(ValueError, match=r"page\.md:1"):
        blocks_in(page)
